// Defines the substitute pass: the tasks of a set of layers replaced by given kernels (layer fusion).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_SUBSTITUTE_HPP
#define DAYDREAM_PASSES_SUBSTITUTE_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/edit.hpp>
#include <daydream/passes/format.hpp>
#include <daydream/passes/layers.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

using daydream::operator|;

/// Layer substitution (MetaFlow, Jia et al., "Optimizing DNN Computation with Relaxed
/// Graph Substitutions", MLSys'19): the work of a set of layers is replaced by kernels the
/// user gives, e.g. a fused convolution + batch norm + ReLU.
///
/// Cost model: in each iteration and for each phase that has kernels in `kernels`, every
/// task of the layers selected by `layers` in that phase is removed (CPU ops and runtime
/// calls, GPU kernels and copies; communication is kept), and the phase's kernels are
/// inserted, in the order given, where the removed group's first kernel was, each with
/// a launch call where its first CPU task was (see replace_with_kernels). A kernel's
/// duration is `duration` when given (>= 0), else `scale` times the summed duration of
/// the GPU tasks it replaces (divided evenly when a phase has several kernels). So the
/// default, one kernel per phase with scale 1, saves exactly the launches and framework
/// overhead of the fused layers. Phases without kernels in `kernels` are untouched.
///
///     daydream::passes::substitute fuse{.layers = "layer1\\.0\\.(conv1|bn1|relu)",
///         .kernels = {{"fused_cbr", daydream::phase::forward, 120'000},
///                     {"fused_cbr_grad", daydream::phase::backward, -1, 0.8}}};
///     daydream::apply(g, fuse);
struct substitute {
  /// One kernel that takes the place of the selected layers' tasks in one phase.
  struct kernel {
    std::string name = "fused";
    enum phase phase = phase::forward;
    time_ns duration = -1; ///< nanoseconds; negative: `scale` x the replaced GPU time
    double scale = 1.0;    ///< used when `duration` is negative
  };

  static constexpr std::string_view name = "substitute";
  static constexpr std::string_view help =
      "replace the tasks of the layers matching a regex (whole name) with one fused kernel "
      "per phase. params: layers=REGEX (required), name=fused, forward=DURATION or "
      "forward_scale=1, backward=DURATION or backward_scale=1";
  std::string layers = {}; ///< the layers to replace (whole-name regex; empty: every layer)
  /// The new kernels; by default one per phase taking as long as what it replaces.
  std::vector<kernel> kernels = {{"fused", phase::forward}, {"fused", phase::backward}};

  /// Reads `layers` (required), `name`, and per phase (`forward`, `backward`) either a
  /// duration or a `_scale`.
  static substitute from_params(const pass_params& p) {
    substitute s;
    if (!p.has("layers"))
      throw error("daydream: pass 'substitute' needs layers=REGEX (the layers to replace)");
    s.layers = p.get_string("layers", "");
    const auto n = p.get_string("name", "fused");
    s.kernels.clear();
    for (auto [key, ph] : {std::pair{"forward", phase::forward}, std::pair{"backward", phase::backward}}) {
      kernel k{n + "_" + key, ph};
      k.scale = p.get_double(std::string(key) + "_scale", 1.0);
      if (p.has(key)) k.duration = static_cast<time_ns>(std::llround(p.get_time_ns(key, 0)));
      s.kernels.push_back(k);
    }
    p.finish();
    return s;
  }

  /// Whether `g` has tasks in layers.
  static bool applicable(const graph& g) {
    bool any = false;
    g.for_each_task([&](task_id t) { any = any || g.layer_id(t) != no_name; });
    return any;
  }

  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    const layer_filter selected(layers);
    // (iteration, phase) -> the tasks to replace
    std::map<std::pair<std::int32_t, phase>, std::vector<task_id>> groups;
    std::map<phase, std::vector<const kernel*>> by_phase;
    for (auto& k : kernels) by_phase[k.phase].push_back(&k);
    std::map<name_id, bool> memo;
    g.for_each_task([&](task_id t) {
      if (g.layer_id(t) == no_name || g.is<comm_task>(t) || !by_phase.count(g.phase_of(t))) return;
      auto [it, fresh] = memo.try_emplace(g.layer_id(t), false);
      if (fresh) it->second = selected(g.layer(t));
      if (it->second) groups[{g.iteration(t), g.phase_of(t)}].push_back(t);
    });
    std::size_t removed = 0, inserted = 0;
    time_ns old_gpu = 0, new_gpu = 0, old_cpu = 0;
    for (auto& [key, ts] : groups) {
      const auto& specs = by_phase[key.second];
      time_ns gpu = 0;
      for (auto t : ts)
        if (!g.is<cpu_task>(t)) gpu += g.duration(t);
      std::vector<new_kernel> ks;
      for (auto* s : specs)
        ks.push_back({s->name, s->duration >= 0
                                   ? s->duration
                                   : static_cast<time_ns>(std::llround(double(gpu) * s->scale /
                                                                       double(specs.size())))});
      const auto first = first_in_trace(g, ts);
      auto r = replace_with_kernels(g, ts, ks, {.layer = g.layer(first), .phase = key.second,
                                                .iteration = key.first});
      if (r.kernels.empty() && !ks.empty())
        rep.note("iteration " + std::to_string(key.first) + ", " + std::string(to_string(key.second)) +
                 ": the layers had no kernel to take the place of; their tasks were removed");
      removed += ts.size();
      inserted += r.kernels.size();
      old_gpu += r.gpu_time;
      old_cpu += r.cpu_time;
      for (auto& k : r.kernels) new_gpu += g.duration(k.task);
    }
    rep.add("layer pattern", layers.empty() ? "(all layers)" : layers);
    rep.add("groups replaced", std::to_string(groups.size()));
    rep.add("tasks removed", std::to_string(removed));
    rep.add("kernels inserted", std::to_string(inserted));
    rep.add("GPU time", format_time(old_gpu) + " -> " + format_time(new_gpu));
    rep.add("CPU time removed", format_time(old_cpu));
    if (groups.empty()) rep.note("no task of the selected layers in the phases given: nothing replaced");
    return rep;
  }
};

} // namespace daydream::passes

#endif
