// Defines what-if scenarios: a traced run's baseline replay and one replay per pass chain, each with its steady-state step, throughput inputs and peak memory.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_WHATIF_SCENARIO_HPP
#define DAYDREAM_WHATIF_SCENARIO_HPP

#include <daydream/analysis.hpp>
#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/report.hpp>
#include <daydream/task.hpp>
#include <daydream/registry/registry.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace daydream::whatif {

/// How peak memory is modelled, and from where it starts.
struct memory_model {
  /// trace: the trace's [memory] events; estimate: the tensor-size model (activations only).
  enum class source { none, trace, estimate } from = source::none;
  std::int64_t initial = 0; ///< bytes allocated before the first modelled event (trace only)
};

/// One predicted variant of a traced run: a pass chain applied to a copy of its graph and
/// replayed, measured over the analysed iterations.
struct scenario {
  std::string name;                         ///< the spec as given ("amp+fused_adam"), "baseline"
  std::vector<std::string> passes;          ///< pass names, in order
  graph g;                                  ///< the transformed graph
  replay_result r;                          ///< its replay
  std::vector<time_ns> per_iteration;       ///< steady-state step of each analysed iteration (-1: none)
  /// Per analysed iteration: the replayed span and the busiest resource's work, whose
  /// larger is the step (steady_step).
  std::vector<steady_step> steps;
  time_ns predicted = -1;                   ///< the median of per_iteration, ns
  std::optional<std::int64_t> peak_memory;  ///< bytes, when memory is modelled
  std::vector<pass_report> reports;         ///< one per pass of the chain
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
  /// What the scenario says instead of a prediction when it has none ("refused: ...",
  /// "no change: ..."), empty when it has one.
  std::string no_result() const {
    if (!error.empty()) return "refused: " + error;
    if (!applied()) return "no change: " + reason();
    return {};
  }
};

/// The prediction of a replay `r` of `g`, or of a duration_overlay over `g` (a what-if
/// that changes only durations and gaps, replayed without a copy of the graph): the
/// median of the steady-state steps of `iterations`, as scenario::predicted is measured.
inline time_ns median_step(const graph& g, const replay_result& r, const std::vector<std::int32_t>& iterations) {
  std::vector<time_ns> per;
  for (auto& st : steady_steps(g, r, iterations)) per.push_back(st.step());
  return median_of(std::move(per));
}

/// median_step(g, r, plan.iterations()) with the graph's side of the steps read once
/// (steady_plan over `g`): for the many replays of one graph's duration_overlay.
inline time_ns median_step(steady_plan& plan, const replay_result& r) {
  std::vector<time_ns> per;
  for (auto& st : plan.steps(r)) per.push_back(st.step());
  return median_of(std::move(per));
}

/// Fills `s`'s steady-state step for each of `iterations` from its replay (the replayed
/// span, or the work of a resource that falls behind when that is longer: steady_steps)
/// and its peak memory under `mem`.
inline void measure(scenario& s, const std::vector<std::int32_t>& iterations, const memory_model& mem) {
  s.steps = steady_steps(s.g, s.r, iterations);
  s.per_iteration.clear();
  for (auto& st : s.steps) s.per_iteration.push_back(st.step());
  s.predicted = median_of(s.per_iteration);
  if (mem.from != memory_model::source::none) s.peak_memory = mem.initial + s.r.peak_memory;
}

/// The baseline: `g` replayed unchanged, in trace order. The scenario keeps `g`: a
/// caller done with its own graph moves it in (`baseline(std::move(trace.g), ...)`, then
/// reads the trace's graph as the baseline's `g`) and holds it once instead of twice.
inline scenario baseline(graph g, const std::vector<std::int32_t>& iterations, const memory_model& mem,
                         const replay_options& o = {}) {
  scenario s;
  s.name = "baseline";
  s.g = std::move(g);
  s.r = replay(s.g, trace_order_policy{}, o);
  measure(s, iterations, mem);
  return s;
}

/// Applies `chain` (built from `spec` by a pass registry) to a copy of `g` and replays it
/// with the chain's policy. A pass refused on this graph becomes the scenario's `error`,
/// not an exception, so that other scenarios still run; a usage_error (a parameter only
/// the graph shows to be wrong) propagates.
inline scenario run_scenario(const graph& g, const std::vector<passes::erased_pass<graph>>& chain,
                             const std::string& spec, const std::vector<std::int32_t>& iterations,
                             const memory_model& mem, const replay_options& o = {}) {
  scenario s;
  s.name = spec;
  for (auto& p : chain) s.passes.push_back(p.name);
  try {
    s.g = g;
    // The copy is the transaction: a pass that fails drops it, so no second copy is kept.
    auto [r, reports] = passes::run_chain_in_place(s.g, chain, o);
    s.r = std::move(r);
    s.reports = std::move(reports);
    measure(s, iterations, mem);
    if (s.predicted < 0) s.error = "the scenario's graph has no task left in the analysed iterations";
  } catch (const usage_error&) {
    throw;
  } catch (const std::exception& e) {
    s.error = e.what();
    s.g = graph{}; // as the failed pass left it: no graph of the scenario's
  }
  return s;
}

/// Why `s`'s step is longer than its replayed span, "" when it is not: a resource whose
/// work per iteration exceeds the span falls behind, so the steady-state step is that
/// work (steady_step).
inline std::string backlog_note(const scenario& s) {
  auto ms = [](time_ns t) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f ms", double(t) / 1e6);
    return std::string(buf);
  };
  for (auto& st : s.steps)
    if (st.backlogged())
      return "iteration " + std::to_string(st.iteration) + " replays in " + ms(st.span) + ", but " +
             (st.busiest < s.g.resource_count() ? s.g.resource_at(st.busiest).name : std::string("a resource")) +
             " works " + ms(st.work) + " in it: its backlog would grow every step, so the steady-state step is " +
             ms(st.step());
  return {};
}

} // namespace daydream::whatif

#endif
