// Defines trace order (trace start, then id) and the queries built on it: first_in_trace, sort_in_trace_order, phase_entries.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TRACE_ORDER_HPP
#define DAYDREAM_TRACE_ORDER_HPP

#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

namespace daydream {

/// Trace order of the tasks of one graph, as a strict weak ordering on task ids: by the
/// time a task started in the trace (`trace_start`), ties broken by id, so it is total
/// and deterministic even among inserted tasks that share a trace start. This is the
/// order the replay's default policy uses among tasks ready at the same time. Holds a
/// pointer to the graph: valid as long as the graph is.
///
///     std::sort(ts.begin(), ts.end(), daydream::trace_order(g));
template <class Graph> struct trace_order {
  const Graph* g; ///< the graph whose trace starts are compared

  /// Reads the trace starts of `graph`.
  explicit trace_order(const Graph& graph) noexcept : g(&graph) {}
  /// Whether task `a` comes before task `b` in the trace.
  bool operator()(task_id a, task_id b) const {
    const time_ns sa = g->trace_start(a), sb = g->trace_start(b);
    return sa != sb ? sa < sb : a < b;
  }
};

/// The earliest of `ts` in trace order (see trace_order), or no_task when `ts` is empty.
///
///     auto first_kernel = daydream::first_in_trace(g, layer_kernels);
template <class Graph, class Range> task_id first_in_trace(const Graph& g, const Range& ts) {
  auto it = std::min_element(std::begin(ts), std::end(ts), trace_order<Graph>(g));
  return it == std::end(ts) ? no_task : task_id(*it);
}

/// The latest of `ts` in trace order, or no_task when `ts` is empty.
template <class Graph, class Range> task_id last_in_trace(const Graph& g, const Range& ts) {
  auto it = std::max_element(std::begin(ts), std::end(ts), trace_order<Graph>(g));
  return it == std::end(ts) ? no_task : task_id(*it);
}

/// Sorts `ts` into trace order. Returns `ts`.
///
///     auto ks = daydream::sort_in_trace_order(g, std::move(kernels));
template <class Graph> std::vector<task_id>& sort_in_trace_order(const Graph& g, std::vector<task_id>& ts) {
  std::sort(ts.begin(), ts.end(), trace_order<Graph>(g));
  return ts;
}
/// Sorts `ts` into trace order and returns it.
template <class Graph> std::vector<task_id> sort_in_trace_order(const Graph& g, std::vector<task_id>&& ts) {
  std::sort(ts.begin(), ts.end(), trace_order<Graph>(g));
  return std::move(ts);
}

/// Where phase `p` of each iteration starts, for every iteration at once (one scan of the
/// graph): per iteration, on every resource other than a CPU thread, the first task of
/// phase `p` in trace order, by resource id; communication tasks (comm_task) are left
/// out, since they belong to the network rather than to the phase's compute. An
/// iteration whose phase has no such task gets the first CPU task of the phase instead;
/// iterations without tasks of phase `p` are absent. What must finish before a phase
/// starts (an all-reduce before phase::weight_update) gets a dependency to these.
///
///     for (auto& [it, entries] : daydream::phase_entries(g, daydream::phase::weight_update))
///       for (auto t : entries) g.add_dependency(allreduce_of[it], t, daydream::dep_kind::data);
template <class Graph> std::map<std::int32_t, std::vector<task_id>> phase_entries(const Graph& g, phase p) {
  struct firsts {
    std::map<resource_id, task_id> device; // first task per non-CPU resource
    task_id cpu = no_task;
  };
  std::map<std::int32_t, firsts> by_it;
  const trace_order<Graph> before(g);
  g.for_each_task([&](task_id t) {
    if (g.phase_of(t) != p) return;
    if constexpr (Graph::template has_kind<comm_task>)
      if (g.template is<comm_task>(t)) return;
    auto& f = by_it[g.iteration(t)];
    bool on_cpu = false;
    if constexpr (Graph::template has_kind<cpu_task>) on_cpu = g.template is<cpu_task>(t);
    if (on_cpu) {
      if (f.cpu == no_task || before(t, f.cpu)) f.cpu = t;
      return;
    }
    auto [it, fresh] = f.device.try_emplace(g.resource_of(t), t);
    if (!fresh && before(t, it->second)) it->second = t;
  });
  std::map<std::int32_t, std::vector<task_id>> out;
  for (auto& [i, f] : by_it) {
    auto& v = out[i];
    for (auto& [r, t] : f.device) v.push_back(t);
    if (v.empty() && f.cpu != no_task) v.push_back(f.cpu);
  }
  return out;
}

} // namespace daydream

#endif
