// Defines the reconstruct_bn pass: batch normalization split and fused with its neighbours.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_RECONSTRUCT_BN_HPP
#define DAYDREAM_PASSES_RECONSTRUCT_BN_HPP

#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/remove.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/kernel_classifier.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::passes {

/// Reconstructing batch normalization (Jung et al., "Restructuring Batch Normalization
/// to Accelerate CNN Training", MLSys'19; modeled as in Daydream, Zhu et al., ATC'20,
/// §6): BN is split in two sub-layers that are fused with the convolution before and the
/// activation after it, so the activation's memory passes disappear and BN's own passes
/// halve.
///
/// Cost model: batch-norm kernels (kernel or launching operator name matching
/// `batch_norm`) take 1/`bn_speedup` of their time. Activation kernels (launching
/// operator matching `activation`; when the trace names no operator, a memory-bound
/// kernel whose name matches it) that sit next to a batch-norm kernel on their stream
/// (ReLU right after BN in the forward, its gradient right before BN's in the backward)
/// are removed, with their launch calls, and with the CPU tasks of their operator when
/// that operator launches nothing else. Activations elsewhere (after a residual
/// addition) stay.
///
///     daydream::apply(g, daydream::passes::reconstruct_bn{});
struct reconstruct_bn {
  static constexpr std::string_view name = "reconstruct_bn"; ///< the --pass name
  double bn_speedup = 2; ///< speedup of the batch-norm kernels
  /// Batch-norm kernels: searched (case-insensitive) in the kernel and operator names.
  std::string batch_norm = "bn_fw|bn_bw|batch_?norm|batchnorm";
  /// Activations: searched (case-insensitive) in the launching operator's name.
  std::string activation = "relu|threshold|clamp_min|hardtanh";

  /// Whether `g` has batch-norm kernels.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }
  /// Why the pass changes nothing on `g` ("" when it does): no batch-norm kernel.
  static std::string not_applicable(const graph& g) {
    reconstruct_bn r;
    auto m = r.matcher(g);
    auto bn = tasks<gpu_kernel>(g) | where(pred([&](const auto& k) { return m.is_bn(k); }));
    if (bn.begin() != bn.end()) return {};
    return "no batch-norm kernel (no kernel or operator name matches bn_fw|bn_bw|batch_?norm): the model "
           "normalizes otherwise (LayerNorm, RMSNorm) or not at all";
  }

  /// Speeds up batch norm and removes the activations next to it; returns the counts
  /// and times. Invalidates the handles of the removed tasks.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    auto m = matcher(g);
    std::vector<task_id> bn, act;
    const auto is_bn = pred([&](const auto& k) { return m.is_bn(k); });
    for (auto k : tasks<gpu_kernel>(g) | where(is_bn)) bn.push_back(k);
    // Activations right before or after a batch norm on the same stream.
    auto bn_at = [&](task_id t) { return t != no_task && g.is<gpu_kernel>(t) && m.is_bn(t); };
    const auto activation = pred([&](const auto& k) { return m.is_activation(k); });
    const auto next_to_bn = pred([&](const auto& k) {
      return bn_at(prev_on_resource(g, k)) || bn_at(next_on_resource(g, k));
    });
    for (auto k : tasks<gpu_kernel>(g) | where((in_phase(phase::forward) || in_phase(phase::backward)) &&
                                               !is_bn && activation && next_to_bn))
      act.push_back(k);
    time_ns bn_before = 0, bn_after = 0, act_time = 0, cpu_time = 0;
    for (auto t : bn) {
      bn_before += g.duration(t);
      scale_duration(g, t, 1.0 / bn_speedup);
      bn_after += g.duration(t);
    }
    // Remove each activation kernel, its launch call when it launches nothing else, and
    // the rest of its operator's CPU tasks when those launch nothing either.
    const std::set<task_id> kernels(act.begin(), act.end());
    std::set<task_id> gone(kernels);
    auto launches_only_removed = [&](task_id c) {
      for (auto k : launched_by(g, c))
        if (!kernels.count(k)) return false;
      return true;
    };
    for (auto k : act) {
      act_time += g.duration(k);
      auto call = launch_of(g, k);
      if (call == no_task || !launches_only_removed(call)) continue;
      auto ops = operator_tasks(g, call);
      if (!std::all_of(ops.begin(), ops.end(), launches_only_removed)) ops = {call};
      gone.insert(ops.begin(), ops.end());
    }
    for (auto t : gone)
      if (g.is<cpu_task>(t)) cpu_time += g.duration(t);
    remove(g, gone);
    rep.add("batch-norm kernels", std::to_string(bn.size()) + ", " + format_time(bn_before) + " -> " + format_time(bn_after),
            report_value::of_change(report_kind::time, double(bn_before), double(bn_after))
                .with_count(std::int64_t(bn.size())));
    rep.add("activation kernels removed", std::to_string(act.size()) + ", " + format_time(act_time),
            report_value::of_time(double(act_time)).with_count(std::int64_t(act.size())));
    rep.add("CPU tasks removed", std::to_string(gone.size() - act.size()) + ", " + format_time(cpu_time),
            report_value::of_time(double(cpu_time)).with_count(std::int64_t(gone.size() - act.size())));
    if (bn.empty()) {
      const auto why = not_applicable(g);
      rep.not_applied((why.empty() ? std::string("no batch-norm kernel matches the pass's patterns") : why) +
                      ": nothing to reconstruct");
    }
    return rep;
  }

private:
  // Regex searches memoized by interned name: real traces repeat a few hundred names.
  struct matcher_t {
    static constexpr auto flags = std::regex::ECMAScript | std::regex::icase | std::regex::optimize;
    matcher_t(const graph& gr, const std::string& bn_rx, const std::string& act_rx)
        : g(&gr), bn(bn_rx, flags), act(act_rx, flags) {}
    const graph* g;
    std::regex bn, act;
    kernel_classifier classes = kernel_classifier::defaults();
    std::unordered_map<name_id, bool> memo[3]; // bn by name, activation by name, by op
    name_id op_of(task_id k) const {
      auto call = launch_of(*g, k);
      return call == no_task ? no_name : g->payload(g->as<cpu_task>(call)).op;
    }
    bool test(int which, const std::regex& rx, name_id n) {
      auto [it, fresh] = memo[which].try_emplace(n, false);
      if (fresh) {
        auto s = g->str(n);
        it->second = std::regex_search(s.begin(), s.end(), rx) &&
                     (which != 1 || classes.classify(s) == kernel_class::memory_bound);
      }
      return it->second;
    }
    bool is_bn(task_id k) {
      auto op = op_of(k);
      return test(0, bn, g->name_id_of(k)) || (op != no_name && test(0, bn, op));
    }
    bool is_activation(task_id k) {
      auto op = op_of(k);
      return op != no_name ? test(2, act, op) : test(1, act, g->name_id_of(k));
    }
  };
  matcher_t matcher(const graph& g) const { return {g, batch_norm, activation}; }
};

} // namespace daydream::passes

#endif
