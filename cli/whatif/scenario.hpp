// Defines the scenarios of the what-if program: a baseline replay and one replay per pass chain.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_SCENARIO_HPP
#define DAYDREAM_CLI_WHATIF_SCENARIO_HPP

#include <daydream/daydream.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/registry.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace whatif {

using daydream::graph;
using daydream::time_ns;

/// The median of the non-negative values of `v` (daydream::median_of).
inline time_ns median(const std::vector<time_ns>& v) { return daydream::median_of(v); }

/// Smallest and largest non-negative value of `v`, {-1, -1} if there is none.
inline std::pair<time_ns, time_ns> extremes(const std::vector<time_ns>& v) {
  time_ns lo = -1, hi = -1;
  for (auto x : v) {
    if (x < 0) continue;
    lo = lo < 0 ? x : std::min(lo, x);
    hi = std::max(hi, x);
  }
  return {lo, hi};
}

/// One predicted variant of the traced run.
struct scenario {
  std::string name;                         ///< the spec as given ("amp+fused_adam")
  std::vector<std::string> passes;          ///< pass names, in order
  graph g;                                  ///< the transformed graph
  daydream::replay_result r;
  std::vector<time_ns> per_iteration;       ///< steady-state step of each analysed iteration (-1: none)
  /// Per analysed iteration: the replayed span and the busiest resource's work, whose
  /// larger is the step (daydream::steady_step).
  std::vector<daydream::steady_step> steps;
  time_ns predicted = -1;                   ///< the median of per_iteration, ns
  std::optional<std::int64_t> peak_memory;  ///< bytes, when memory is modelled
  std::vector<daydream::pass_report> reports;
  std::string error;                        ///< why the scenario could not be predicted

  /// Data-parallel workers the scenario models (the largest pass_report::workers; 0: none).
  std::int32_t workers() const {
    std::int32_t w = 0;
    for (auto& rep : reports) w = std::max(w, rep.workers);
    return w;
  }
  /// Whether some pass of the chain changed the graph.
  bool applied() const {
    if (reports.empty()) return true;
    return std::any_of(reports.begin(), reports.end(), [](auto& rep) { return rep.applied; });
  }
  /// Why passes of the chain changed nothing, "pass: reason; ..." (empty when all applied).
  std::string reason() const {
    std::string out;
    for (auto& rep : reports)
      if (!rep.applied)
        out += (out.empty() ? "" : "; ") + (reports.size() > 1 ? rep.pass + ": " : std::string()) +
               (rep.reason.empty() ? std::string("the pass found nothing to change") : rep.reason);
    return out;
  }
};

/// How memory is modelled, and from where peak memory starts.
struct memory_model {
  /// trace: the trace's [memory] events; estimate: the tensor-size model (activations only).
  enum class source { none, trace, estimate } from = source::none;
  std::int64_t initial = 0; ///< bytes allocated before the first modelled event (trace only)
};

/// Fills the scenario's steady-state step for each of `iterations` from its replay (the
/// replayed span, or the work of a resource that falls behind when that is longer:
/// daydream::steady_steps) and its peak memory.
inline void measure(scenario& s, const std::vector<std::int32_t>& iterations, const memory_model& mem) {
  s.steps = daydream::steady_steps(s.g, s.r, iterations);
  s.per_iteration.clear();
  for (auto& st : s.steps) s.per_iteration.push_back(st.step());
  s.predicted = median(s.per_iteration);
  if (mem.from != memory_model::source::none) s.peak_memory = mem.initial + s.r.peak_memory;
}

/// Replays `g` unchanged: the baseline.
inline scenario baseline(const graph& g, const std::vector<std::int32_t>& iterations, const memory_model& mem,
                         const daydream::replay_options& o = {}) {
  scenario s;
  s.name = "baseline";
  s.g = g;
  s.r = daydream::replay(s.g, daydream::trace_order_policy{}, o);
  measure(s, iterations, mem);
  return s;
}

/// Applies `chain` (built from `spec`) to a copy of `g` and replays it. A pass refused on
/// this graph becomes the scenario's error, not an exit: the other scenarios still run. A
/// usage_error (a parameter that only the graph shows to be wrong) propagates.
inline scenario run_scenario(const graph& g, const std::vector<daydream::passes::erased_pass<graph>>& chain,
                             const std::string& spec, const std::vector<std::int32_t>& iterations,
                             const memory_model& mem, const daydream::replay_options& o = {}) {
  scenario s;
  s.name = spec;
  for (auto& p : chain) s.passes.push_back(p.name);
  try {
    s.g = g;
    auto [r, reports] = daydream::passes::run_chain(s.g, chain, o);
    s.r = std::move(r);
    s.reports = std::move(reports);
    measure(s, iterations, mem);
    if (s.predicted < 0) s.error = "the scenario's graph has no task left in the analysed iterations";
  } catch (const daydream::usage_error&) {
    throw;
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

} // namespace whatif

#endif
