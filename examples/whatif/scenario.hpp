// Defines the scenarios of daydream-whatif: a baseline replay and one replay per pass chain.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_EXAMPLES_WHATIF_SCENARIO_HPP
#define DAYDREAM_EXAMPLES_WHATIF_SCENARIO_HPP

#include <daydream/daydream.hpp>
#include <daydream/passes/support/registry.hpp>

#include <optional>
#include <string>
#include <vector>

namespace whatif {

using daydream::graph;
using daydream::time_ns;

/// One predicted variant of the traced run.
struct scenario {
  std::string name;                         ///< the spec as given ("amp+fused_adam")
  std::vector<std::string> passes;          ///< pass names, in order
  graph g;                                  ///< the transformed graph
  daydream::replay_result r;
  time_ns predicted = -1;                   ///< iteration time, ns
  std::optional<std::int64_t> peak_memory;  ///< bytes, when the graph carries memory data
  std::vector<daydream::pass_report> reports;
  std::string error;                        ///< why the scenario could not be predicted
};

inline bool has_memory_data(const graph& g) {
  bool any = false;
  g.for_each_task([&](daydream::task_id t) { any = any || g.mem_delta(t) != 0; });
  return any;
}

/// Replays `g` unchanged: the baseline.
inline scenario baseline(const graph& g, std::int32_t iteration, const daydream::replay_options& o = {}) {
  scenario s;
  s.name = "baseline";
  s.g = g;
  s.r = daydream::replay(s.g, daydream::trace_order_policy{}, o);
  s.predicted = daydream::iteration_time(s.g, s.r, iteration);
  if (has_memory_data(s.g)) s.peak_memory = s.r.peak_memory;
  return s;
}

/// Applies the chain `spec` to a copy of `g` and replays it. A refused pass becomes
/// the scenario's error, not an exit: the other scenarios still run.
inline scenario run_scenario(const graph& g, const daydream::passes::registry<graph>& reg,
                             const std::string& spec, std::int32_t iteration,
                             const daydream::replay_options& o = {}) {
  scenario s;
  s.name = spec;
  try {
    auto chain = reg.make_chain(spec);
    for (auto& p : chain) s.passes.push_back(p.name);
    s.g = g;
    auto [r, reports] = daydream::passes::run_chain(s.g, chain, o);
    s.r = std::move(r);
    s.reports = std::move(reports);
    s.predicted = daydream::iteration_time(s.g, s.r, iteration);
    if (s.predicted < 0) s.error = "the scenario's graph has no task left in the chosen iteration";
    if (has_memory_data(s.g)) s.peak_memory = s.r.peak_memory;
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

} // namespace whatif

#endif
