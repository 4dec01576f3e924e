// Defines the substitute pass: the tasks of a set of layers replaced by given kernels (layer fusion).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_SUBSTITUTE_HPP
#define DAYDREAM_PASSES_SUBSTITUTE_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/layers.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// Layer substitution (MetaFlow, Jia et al., "Optimizing DNN Computation with Relaxed
/// Graph Substitutions", MLSys'19): the work of a set of layers is replaced by kernels the
/// user gives, e.g. a fused convolution + batch norm + ReLU.
///
/// Cost model: in each iteration and for each phase that has kernels in `kernels`
/// (forward or backward), the layer instances selected by `layers` that follow each other
/// in that phase form runs (an unselected layer in between ends a run; tasks outside any
/// layer do not). The CPU tasks and kernels of each run are removed (its memory copies
/// and communication stay), and the phase's kernels are inserted, in the order given,
/// where the run's first kernel was, each with a launch call where its first CPU task was
/// (see replace_with_kernels). A kernel's duration is `duration` when given (>= 0), else
/// `scale` times the summed duration of the GPU tasks it replaces (divided evenly when a
/// phase has several kernels). Each new kernel's call takes the run's CPU time per kernel
/// it replaced: the fused operator is still dispatched by the framework, as one of the
/// run's operators was on average. So the default, one kernel per phase with scale 1,
/// saves the launches and framework overhead of all but one kernel's operator per run. With
/// `layers = ".*(batch_?norm|relu).*"` every batch norm is fused with the ReLU after it,
/// everywhere in the model (layer patterns ignore case, so "BatchNorm2d_0" matches).
///
///     daydream::passes::substitute fuse{.layers = "layer1\\.0\\.(conv1|bn1|relu)",
///         .kernels = {{"fused_cbr", daydream::phase::forward, 120'000},
///                     {"fused_cbr_grad", daydream::phase::backward, -1, 0.8}}};
///     daydream::apply(g, fuse);
struct substitute {
  /// One kernel that takes the place of the selected layers' tasks in one phase.
  struct kernel {
    std::string name = "fused";        ///< the kernel's name
    enum phase phase = phase::forward; ///< the phase whose runs it replaces
    time_ns duration = -1; ///< nanoseconds; negative: `scale` x the replaced GPU time
    double scale = 1.0;    ///< used when `duration` is negative
  };

  /// The layers the default what-if scenario fuses: each batch norm with the ReLU after
  /// it, whatever the layer names look like: attribute paths ("layer1.0.bn1"), module
  /// classes as PyTorch numbers them ("BatchNorm2d_0", "ReLU_0") or operators
  /// ("aten::batch_norm#2", "aten::relu_#3"). Layer patterns ignore case (layer_filter).
  static constexpr std::string_view default_fusion = ".*(batch_?norm|bn|relu).*";

  static constexpr std::string_view name = "substitute"; ///< the --pass name
  std::string layers = {}; ///< the layers to replace (whole-name regex; empty: every layer)
  /// The new kernels; by default one per phase taking as long as what it replaces.
  std::vector<kernel> kernels = {{"fused", phase::forward}, {"fused", phase::backward}};

  /// Whether `g` has layers the default scenario fuses (batch norm or ReLU layers).
  static bool applicable(const graph& g) {
    const layer_filter fusible{std::string(default_fusion)};
    for (auto& l : layer_instances(g))
      if (fusible(g.str(l.layer))) return true;
    return false;
  }

  /// Replaces each run of selected layers by the given kernels; returns the runs, counts
  /// and times. Invalidates the handles of the removed tasks.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    const layer_filter selected(layers);
    std::map<phase, std::vector<const kernel*>> by_phase;
    for (auto& k : kernels) by_phase[k.phase].push_back(&k);
    const auto instances = layer_instances(g);
    std::map<name_id, bool> memo;
    auto picked = [&](name_id l) {
      auto [it, fresh] = memo.try_emplace(l, false);
      if (fresh) it->second = selected(g.str(l));
      return it->second;
    };
    // The runs to replace: per iteration and phase, maximal sequences of selected layer
    // instances that follow each other (by their first task in that phase).
    std::vector<std::pair<phase, std::vector<task_id>>> runs;
    for (std::size_t lo = 0; lo < instances.size();) {
      std::size_t hi = lo;
      while (hi < instances.size() && instances[hi].iteration == instances[lo].iteration) ++hi;
      for (auto& [ph, specs] : by_phase) {
        std::vector<std::pair<task_id, const layer_instance*>> order;
        for (auto i = lo; i < hi; ++i) {
          auto& l = instances[i];
          auto ts = tasks_in(l, ph);
          if (!ts.empty()) order.push_back({first_in_trace(g, ts), &l});
        }
        std::sort(order.begin(), order.end(),
                  [before = trace_order(g)](auto& a, auto& b) { return before(a.first, b.first); });
        bool open = false;
        for (auto& [first, l] : order) {
          if (!picked(l->layer)) { open = false; continue; }
          if (!open) runs.push_back({ph, {}});
          open = true;
          auto ts = tasks_in(*l, ph);
          runs.back().second.insert(runs.back().second.end(), ts.begin(), ts.end());
        }
      }
      lo = hi;
    }
    std::size_t removed = 0, inserted = 0;
    time_ns old_gpu = 0, new_gpu = 0, old_cpu = 0, kept_cpu = 0;
    for (auto& [ph, ts] : runs) {
      const auto& specs = by_phase[ph];
      time_ns gpu = 0, cpu = 0;
      std::size_t launched = 0; // the run's kernels
      for (auto t : ts) {
        if (g.is<cpu_task>(t)) cpu += g.duration(t);
        else gpu += g.duration(t);
        launched += g.is<gpu_kernel>(t);
      }
      std::vector<new_kernel> ks;
      for (auto* s : specs)
        ks.push_back({s->name, s->duration >= 0
                                   ? s->duration
                                   : static_cast<time_ns>(std::llround(double(gpu) * s->scale /
                                                                       double(specs.size())))});
      // The fused operator is still dispatched by the framework: each new kernel's call
      // takes the run's CPU time per kernel it launched (a batch norm + ReLU fused into one
      // operator costs what one of the two did on average); the rest of the CPU time goes.
      if (launched > 0 && cpu > 0)
        for (auto& k : ks) k.call = std::max<time_ns>(1, cpu / time_ns(launched));
      const auto first = first_in_trace(g, ts);
      const auto it = g.iteration(first);
      auto r = replace_with_kernels(g, ts, ks, {.layer = g.layer(first), .phase = ph, .iteration = it});
      if (r.kernels.empty() && !ks.empty())
        rep.note("iteration " + std::to_string(it) + ", " + std::string(to_string(ph)) +
                 ": a run of layers had no kernel to take the place of; its tasks were removed");
      removed += ts.size();
      inserted += r.kernels.size();
      old_gpu += r.gpu_time;
      old_cpu += r.cpu_time;
      for (auto& k : r.kernels) {
        new_gpu += g.duration(k.task);
        if (k.launch) kept_cpu += g.duration(k.launch);
      }
    }
    rep.add("layer pattern", layers.empty() ? "(all layers)" : layers);
    rep.add_count("runs replaced", std::int64_t(runs.size()));
    rep.add_count("tasks removed", std::int64_t(removed));
    rep.add_count("kernels inserted", std::int64_t(inserted));
    rep.add("GPU time", format_time(old_gpu) + " -> " + format_time(new_gpu),
            report_value::of_change(report_kind::time, double(old_gpu), double(new_gpu)));
    rep.add("CPU time",
            format_time(old_cpu) + " -> " + format_time(kept_cpu) +
                " (each fused kernel's call keeps the run's CPU time per kernel it replaced)",
            report_value::of_change(report_kind::time, double(old_cpu), double(kept_cpu)));
    if (layers == default_fusion)
      rep.note("reconstruct_bn models this fusion with a kernel cost model (batch-norm kernels 2x faster, the "
               "ReLU's removed, the batch norm's CPU calls kept); this pass keeps the GPU time as traced "
               "(forward_scale=, backward_scale= change it) and one operator's CPU time per fused kernel");
    if (runs.empty()) rep.not_applied("no task of the selected layers in the phases given: nothing replaced");
    return rep;
  }

private:
  /// The CPU tasks and kernels of layer instance `l` in phase `ph`.
  static std::vector<task_id> tasks_in(const layer_instance& l, phase ph) {
    std::vector<task_id> v;
    if (ph == phase::forward) {
      v = l.forward_cpu;
      v.insert(v.end(), l.forward_gpu.begin(), l.forward_gpu.end());
    } else if (ph == phase::backward) {
      v = l.backward_cpu;
      v.insert(v.end(), l.backward_gpu.begin(), l.backward_gpu.end());
    }
    return v;
  }
};

} // namespace daydream::passes

#endif
