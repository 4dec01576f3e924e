// Defines the fused_adam pass: the optimizer step as one fused kernel.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_FUSED_ADAM_HPP
#define DAYDREAM_PASSES_FUSED_ADAM_HPP

#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// What the optimizer step of one iteration cost in the trace: the input of a fused
/// kernel's duration estimator.
struct optimizer_step {
  std::int32_t iteration = 0; ///< the iteration of the step
  std::size_t kernels = 0;   ///< GPU kernels and copies of the step
  time_ns kernel_time = 0;   ///< their summed duration
  std::size_t cpu_tasks = 0; ///< CPU tasks of the step
  time_ns cpu_time = 0;      ///< their summed duration
};

/// How the CPU side of one optimizer step splits for fused_adam: the work a fused step
/// runs too, and the operator calls it replaces.
struct optimizer_cpu {
  /// The step's CPU tasks before its first operator and after its last, on the thread
  /// that runs the step: the optimizer's own Python (gathering parameters, gradients and
  /// state, the step annotation's own time), which a fused step runs as well.
  std::vector<task_id> kept;
  time_ns kept_time = 0;        ///< their summed duration
  std::size_t calls = 0;        ///< operator calls between (the per-tensor or foreach operators)
  /// The median CPU time of one of those calls, with the Python time just before it (its
  /// launches included); -1 when the step runs no operator (a trace without operator
  /// events: only the launches).
  time_ns per_call = -1;
};

/// The split of an optimizer step's CPU tasks `cpu` (any order) of graph `g` (see
/// optimizer_cpu). Operator calls are runs of tasks of an operator (cpu_task::op) in one
/// layer (the top-level operator instance, which holds the operators it calls), in trace
/// order on the step's thread.
inline optimizer_cpu split_optimizer_cpu(const graph& g, std::vector<task_id> cpu) {
  optimizer_cpu out;
  std::stable_sort(cpu.begin(), cpu.end(), [&](task_id a, task_id b) { return g.trace_start(a) < g.trace_start(b); });
  if (cpu.empty()) return out;
  const auto thread = g.resource_of(cpu.front());
  std::vector<task_id> seq;
  for (auto t : cpu)
    if (g.resource_of(t) == thread) seq.push_back(t);
  auto op_of = [&](task_id t) { return g.payload(g.as<cpu_task>(t)).op; };
  std::size_t first = seq.size(), last = 0;
  for (std::size_t k = 0; k < seq.size(); ++k)
    if (op_of(seq[k]) != no_name) {
      first = std::min(first, k);
      last = k;
    }
  if (first == seq.size()) return out;
  for (std::size_t k = 0; k < seq.size(); ++k)
    if (k < first || k > last) {
      out.kept.push_back(seq[k]);
      out.kept_time += g.duration(seq[k]);
    }
  std::vector<time_ns> costs;
  time_ns python = 0; // the operator-less time since the last call
  for (std::size_t k = first; k <= last; ++k) {
    const auto t = seq[k];
    if (op_of(t) == no_name) {
      python += g.duration(t);
      continue;
    }
    // One call: the tasks of one top-level operator instance (its layer, "aten::add_#69",
    // holds the operators it calls and its launches), or of one operator without a layer.
    auto call_of = [&](task_id u) { return g.layer_id(u) != no_name ? g.layer_id(u) : op_of(u); };
    const bool same = k > first && op_of(seq[k - 1]) != no_name && call_of(seq[k - 1]) == call_of(t);
    if (!same) {
      costs.push_back(python);
      python = 0;
    }
    costs.back() += g.duration(t);
  }
  out.calls = costs.size();
  out.per_call = median_of(std::move(costs));
  return out;
}

/// FusedAdam (Daydream, Zhu et al., ATC'20, §6; NVIDIA Apex's FusedAdam; PyTorch's
/// `Adam(fused=True)`): the optimizer step as one multi-tensor kernel.
///
/// Cost model: in each iteration, the weight-update phase's GPU kernels and copies
/// (communication is kept) become one fused kernel, inserted where the first of them
/// was. The fused kernel's duration comes from `estimate`; by default it is `traffic`
/// times the summed duration of the removed kernels. The default traffic ratio 0.35
/// counts memory passes over a parameter-sized tensor: PyTorch's unfused Adam reads or
/// writes such a tensor 20 times per parameter (2 for `exp_avg.mul_`, 3 for
/// `exp_avg.add_`, 2 for `exp_avg_sq.mul_`, 3 for `addcmul_`, 2 each for the `sqrt`, the
/// division and the `add_` of the denominator, 4 for `param.addcdiv_`), the fused kernel
/// 7 times (read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq),
/// and the step is memory bound, so 7/20.
///
/// On the CPU, a fused step still runs the optimizer's Python around its operators
/// (gathering each parameter's gradient and state: 0.5-0.9 ms for ResNet-50's 161
/// parameters on the recorded H100 and H200 runs, the same with and without fusion):
/// the step's CPU tasks before its first operator and after its last are kept
/// (split_optimizer_cpu). The operator calls between (one per tensor and operation, or
/// the foreach operators) become `ops` calls launching the fused kernel, each costing
/// the median of the step's calls (PyTorch's fused Adam makes two: `_foreach_add_` for
/// the step counts, `_fused_adam_`; apex's one; a step that made fewer keeps its count).
/// A trace without operator events keeps
/// nothing and gives the one call the duration of the step's first launch.
///
///     daydream::apply(g, daydream::passes::fused_adam{});
///     daydream::apply(g, daydream::passes::fused_adam{.estimate = [](const auto& s) {
///       return s.kernel_time / 4; }});
struct fused_adam {
  static constexpr std::string_view name = "fused_adam"; ///< the --pass name
  double traffic = 0.35; ///< fused kernel time / removed kernel time (memory-traffic ratio)
  /// Operator calls the fused step makes (PyTorch's Adam(fused=True): 2; apex: 1).
  std::int64_t ops = 2;
  /// Duration of the fused kernel; empty: `traffic` x the removed kernel time.
  std::function<time_ns(const optimizer_step&)> estimate = {};

  /// The optimizers the trace's step annotations name (`Optimizer.step#NAME.step`, as
  /// PyTorch's profiler marks each optimizer step): "SGD", "Adam", "FusedAdam", ... in
  /// order of first appearance; empty when the trace marks none.
  static std::vector<std::string> traced_optimizers(const graph& g) {
    constexpr std::string_view marker = "Optimizer.step#";
    std::vector<std::string> out;
    for (auto t : tasks<cpu_task>(g) | where(in_phase(phase::weight_update))) {
      const auto n = g.name(t);
      if (!n.starts_with(marker)) continue;
      auto opt = n.substr(marker.size());
      if (opt.ends_with(".step")) opt.remove_suffix(5);
      if (std::find(out.begin(), out.end(), opt) == out.end()) out.emplace_back(opt);
    }
    return out;
  }

  /// Why the pass changes nothing on `g` ("" when it applies): no weight-update phase, or
  /// an optimizer step that is fused already (a `Fused...` optimizer, or fused Adam
  /// kernels: apex's and PyTorch's `fused=True`).
  static std::string not_applicable(const graph& g) {
    auto update = tasks(g) | where(in_phase(phase::weight_update) && !of_kind<comm_task>);
    if (update.begin() == update.end())
      return "no weight-update phase: the trace has no optimizer step (PyTorch's profiler marks one "
             "`Optimizer.step#NAME.step` when the optimizer runs inside the profiled steps)";
    for (auto& opt : traced_optimizers(g))
      if (opt.find("Fused") != std::string::npos || opt.find("fused") != std::string::npos)
        return "the optimizer step is fused already (Optimizer.step#" + opt + ".step): nothing to fuse";
    for (auto t : update) {
      const auto n = g.name(t);
      if (n.find("FusedAdam") != std::string_view::npos || n.find("fused_adam") != std::string_view::npos)
        return "the optimizer step is fused already (its kernel " + std::string(n.substr(0, 80)) +
               "): nothing to fuse";
    }
    return {};
  }

  /// Whether the pass changes `g`: a weight-update phase that is not fused already.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Replaces each iteration's weight-update tasks by one launch and one fused kernel;
  /// returns the counts and times. Invalidates the handles of the removed tasks.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    if (auto why = not_applicable(g); !why.empty()) {
      rep.add_count("optimizer steps", 0);
      rep.not_applied(std::move(why));
      return rep;
    }
    const auto optimizers = traced_optimizers(g); // before the step's tasks are replaced
    std::map<std::int32_t, std::vector<task_id>> steps;
    for (auto t : tasks(g) | where(in_phase(phase::weight_update) && !of_kind<comm_task>))
      steps[t.iteration()].push_back(t);
    std::size_t removed = 0, fused = 0, calls = 0;
    time_ns old_time = 0, new_time = 0, cpu_time = 0, kept_time = 0, new_cpu = 0;
    std::vector<time_ns> per_call;
    for (auto& [it, ts] : steps) {
      optimizer_step s{.iteration = it};
      std::vector<task_id> cpu;
      for (auto t : ts) {
        if (g.is<cpu_task>(t)) { ++s.cpu_tasks; s.cpu_time += g.duration(t); cpu.push_back(t); }
        else { ++s.kernels; s.kernel_time += g.duration(t); }
      }
      const time_ns d = estimate ? estimate(s)
                                 : static_cast<time_ns>(std::llround(double(s.kernel_time) * traffic));
      const auto split = split_optimizer_cpu(g, cpu);
      std::erase_if(ts, [&](task_id t) { return std::find(split.kept.begin(), split.kept.end(), t) != split.kept.end(); });
      // A step that makes fewer calls than the fused step would keeps its count.
      const time_ns call =
          split.per_call < 0 ? -1 : time_ns(std::min<std::size_t>(std::size_t(ops), split.calls)) * split.per_call;
      auto r = replace_with_kernels(g, ts, {{"fused_adam", d, call}},
                                    {.phase = phase::weight_update, .iteration = it});
      if (r.kernels.empty() && s.kernels > 0)
        rep.note("iteration " + std::to_string(it) + ": no kernel to take the place of");
      removed += ts.size();
      fused += r.kernels.size();
      old_time += s.kernel_time;
      cpu_time += s.cpu_time;
      kept_time += split.kept_time;
      calls += split.calls;
      if (split.per_call >= 0) per_call.push_back(split.per_call);
      for (auto& k : r.kernels)
        if (k.launch) new_cpu += g.duration(k.launch);
      if (!r.kernels.empty()) new_time += d;
    }
    const auto n = std::max<std::size_t>(steps.size(), 1);
    rep.add_count("optimizer steps", std::int64_t(steps.size()));
    rep.add_count("tasks removed", std::int64_t(removed));
    rep.add_count("fused kernels", std::int64_t(fused));
    rep.add("optimizer kernel time", format_time(old_time) + " -> " + format_time(new_time),
            report_value::of_change(report_kind::time, double(old_time), double(new_time)));
    rep.add("optimizer CPU time removed", format_time(cpu_time - kept_time),
            report_value::of_time(double(cpu_time - kept_time)));
    const time_ns per_step = cpu_time / time_ns(n), per_step_after = (kept_time + new_cpu) / time_ns(n);
    rep.add("optimizer CPU time per step", format_time(per_step) + " -> " + format_time(per_step_after),
            report_value::of_change(report_kind::time, double(per_step), double(per_step_after)));
    if (!per_call.empty())
      rep.note("the optimizer's Python around its operators stays (" + format_time(kept_time / time_ns(n)) +
               " per step: gathering parameters and state, which a fused step runs too); " +
               std::to_string(calls / n) + " operator calls per step become " +
               std::to_string(std::min<std::size_t>(std::size_t(ops), calls / n)) +
               " launching the fused kernel, at " + format_time(median_of(per_call)) +
               " each (the median of the step's calls)");
    else
      rep.note("the trace records no operator in the optimizer step: its CPU time is taken to be launches only, "
               "and one launch stays (record operators to keep the optimizer's Python)");
    // The traffic ratio is Adam's: say so when the trace steps another optimizer.
    for (auto& opt : optimizers)
      if (opt.find("Adam") == std::string::npos && !estimate)
        rep.note("the trace's optimizer is " + opt + " (Optimizer.step#" + opt +
                 ".step): this pass models Adam's fused step (traffic=" + fmt::format("{:g}", traffic) +
                 ": 7 of Adam's 20 memory passes per parameter); give traffic= for " + opt + "'s fused kernel");
    return rep;
  }
};

} // namespace daydream::passes

#endif
