// Defines the fused_adam pass: the optimizer step as one fused kernel.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_FUSED_ADAM_HPP
#define DAYDREAM_PASSES_FUSED_ADAM_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/support/edit.hpp>
#include <daydream/passes/support/format.hpp>

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

/// FusedAdam (Daydream, Zhu et al., ATC'20, §6; NVIDIA Apex's FusedAdam): the optimizer
/// step as one multi-tensor kernel.
///
/// Cost model: in each iteration, every task of the weight-update phase (CPU ops and
/// runtime calls, GPU kernels and copies; communication is kept) is removed, and one
/// launch call plus one fused kernel are inserted where the step's first CPU task and
/// first kernel were. The fused kernel's duration comes from `estimate`; by default it
/// is `traffic` times the summed duration of the removed kernels. The default traffic
/// ratio 0.35 counts memory passes over a parameter-sized tensor: PyTorch's unfused
/// Adam reads or writes such a tensor 20 times per parameter (2 for `exp_avg.mul_`,
/// 3 for `exp_avg.add_`, 2 for `exp_avg_sq.mul_`, 3 for `addcmul_`, 2 each for the
/// `sqrt`, the division and the `add_` of the denominator, 4 for `param.addcdiv_`),
/// the fused kernel 7 times (read param, grad, exp_avg, exp_avg_sq; write param,
/// exp_avg, exp_avg_sq), and the step is memory bound, so 7/20. The launch call costs
/// what the step's first launch cost. All the CPU time of the step disappears.
///
///     daydream::apply(g, daydream::passes::fused_adam{});
///     daydream::apply(g, daydream::passes::fused_adam{.estimate = [](const auto& s) {
///       return s.kernel_time / 4; }});
struct fused_adam {
  static constexpr std::string_view name = "fused_adam"; ///< the --pass name
  /// One line for daydream-whatif --help.
  static constexpr std::string_view help =
      "fused optimizer: each weight-update phase becomes one launch + one kernel of "
      "traffic x the removed kernel time. params: traffic=0.35";
  double traffic = 0.35; ///< fused kernel time / removed kernel time (memory-traffic ratio)
  /// Duration of the fused kernel; empty: `traffic` x the removed kernel time.
  std::function<time_ns(const optimizer_step&)> estimate = {};

  /// Reads `traffic`.
  static fused_adam from_params(const pass_params& p) {
    fused_adam f;
    f.traffic = p.get_double("traffic", f.traffic);
    p.finish();
    return f;
  }

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
      rep.add("optimizer steps", "0");
      rep.not_applied(std::move(why));
      return rep;
    }
    const auto optimizers = traced_optimizers(g); // before the step's tasks are replaced
    std::map<std::int32_t, std::vector<task_id>> steps;
    for (auto t : tasks(g) | where(in_phase(phase::weight_update) && !of_kind<comm_task>))
      steps[t.iteration()].push_back(t);
    std::size_t removed = 0, fused = 0;
    time_ns old_time = 0, new_time = 0, cpu_time = 0;
    for (auto& [it, ts] : steps) {
      optimizer_step s{.iteration = it};
      for (auto t : ts) {
        if (g.is<cpu_task>(t)) { ++s.cpu_tasks; s.cpu_time += g.duration(t); }
        else { ++s.kernels; s.kernel_time += g.duration(t); }
      }
      const time_ns d = estimate ? estimate(s)
                                 : static_cast<time_ns>(std::llround(double(s.kernel_time) * traffic));
      auto r = replace_with_kernels(g, ts, {{"fused_adam", d}},
                                    {.phase = phase::weight_update, .iteration = it});
      if (r.kernels.empty() && s.kernels > 0)
        rep.note("iteration " + std::to_string(it) + ": no kernel to take the place of");
      removed += ts.size();
      fused += r.kernels.size();
      old_time += s.kernel_time;
      cpu_time += s.cpu_time;
      if (!r.kernels.empty()) new_time += d;
    }
    rep.add("optimizer steps", std::to_string(steps.size()));
    rep.add("tasks removed", std::to_string(removed));
    rep.add("fused kernels", std::to_string(fused));
    rep.add("optimizer kernel time", format_time(old_time) + " -> " + format_time(new_time));
    rep.add("optimizer CPU time removed", format_time(cpu_time));
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
