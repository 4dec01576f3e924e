// Defines the graph checks: find_cycle, check_acyclic and check_invariants.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_VALIDATE_HPP
#define DAYDREAM_VALIDATE_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/diagnostics.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace daydream {

/// A cycle of `g` as a list of task ids, the first repeated at the end; empty if `g`
/// is acyclic. O(V + E).
///
///     auto cyc = daydream::find_cycle(g);   // {a, b, c, a} for a -> b -> c -> a
template <class Graph> std::vector<task_id> find_cycle(const Graph& g) {
  return detail::find_cycle_among(g.core(), {});
}

/// Throws daydream::error naming the tasks of a cycle (`#3 "a" -> #4 "b" -> #3 "a"`),
/// if `g` has one. O(V + E).
template <class Graph> void check_acyclic(const Graph& g) {
  auto cyc = find_cycle(g);
  if (!cyc.empty())
    throw error("daydream: the graph has a cycle: " + detail::describe_tasks(g.core(), cyc));
}

/// Checks the structural invariants of `g` and throws daydream::error naming the first
/// violation: every edge joins two live tasks and appears in the out-list of its source
/// and the in-list of its target, no pair of tasks has two edges, no task depends on
/// itself, degree and live counts match the lists, durations and gaps are not negative,
/// every resource exists and fits its task's kind (resource_fits), no launch dependency
/// ends at CPU work, every payload index is in range, and there is no cycle. (It does not
/// ask that a launch start at CPU work: remove() re-parents a launched task onto the
/// call's predecessors, which may be GPU work the call waited for.)
/// apply() runs it after every pass. O(V + E).
template <class Graph> void check_invariants(const Graph& g) {
  const auto& c = g.core();
  const task_id n = c.id_bound();
  auto fail = [](const std::string& what) { throw error("daydream: invariant: " + what); };
  auto same_size = [n](const auto& v) { return v.size() == n; };
  if (!(same_size(c.gap) && same_size(c.trace_start) && same_size(c.priority) &&
        same_size(c.mem_delta) && same_size(c.res) && same_size(c.name) &&
        same_size(c.layer) && same_size(c.iteration) && same_size(c.local) &&
        same_size(c.kind) && same_size(c.ph) && same_size(c.alive) &&
        same_size(c.head_out) && same_size(c.head_in) && same_size(c.n_in) &&
        same_size(c.n_out)))
    fail("the per-task columns have different lengths");
  std::size_t live = 0, outs_total = 0, ins_total = 0;
  std::vector<task_id> seen(n, no_task); // seen[v] == t: t -> v was met while scanning t
  // Mark the edges of every in-list first, so each out-list edge is checked in O(1).
  std::vector<std::uint8_t> in_listed(c.edges.size(), 0);
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t])
      for (auto it = c.in(t).begin(); it != c.in(t).end(); ++it)
        if (it.edge() < in_listed.size()) in_listed[it.edge()] = 1;
  for (task_id t = 0; t < n; ++t) {
    if (!c.alive[t]) {
      if (c.head_out[t] != detail::no_edge || c.head_in[t] != detail::no_edge)
        fail("removed task #" + std::to_string(t) + " still has edges");
      continue;
    }
    ++live;
    if (c.kind[t] >= Graph::kind_count)
      fail(detail::describe_task(c, t) + " has an unknown kind");
    const bool payload_ok = g.visit(t, [&]<class K>(handle<K>, const K&) {
      return c.local[t] < g.template ids_of<K>().size() && g.template ids_of<K>()[c.local[t]] == t;
    });
    if (!payload_ok) fail(detail::describe_task(c, t) + " has no payload of its kind");
    if (c.duration[t] < 0 || c.gap[t] < 0)
      fail(detail::describe_task(c, t) + " has a negative duration or gap");
    if (c.res[t] != no_resource && c.res[t] >= c.resources.size())
      fail(detail::describe_task(c, t) + " names a missing resource #" + std::to_string(c.res[t]));
    if (c.res[t] != no_resource && !resource_fits(g.kind_resource(t), c.resources[c.res[t]].kind))
      fail(detail::describe_task(c, t) + ", a " + std::string(g.kind_name(t)) + ", runs on resource #" +
           std::to_string(c.res[t]) + " (a " + std::string(to_string(c.resources[c.res[t]].kind)) +
           "), which does not fit its kind (it runs on a " +
           std::string(to_string(g.kind_resource(t))) + ")");
    std::uint32_t outs = 0, ins = 0;
    for (auto it = c.out(t).begin(); it != c.out(t).end(); ++it) {
      auto d = *it;
      ++outs;
      if (it.edge() >= c.edges.size() || d.from != t)
        fail("the out-list of " + detail::describe_task(c, t) + " holds a foreign edge");
      if (d.to >= n || !c.alive[d.to])
        fail("dependency " + detail::describe_task(c, t) + " -> #" + std::to_string(d.to) +
             " reaches a removed task");
      if (d.to == t) fail(detail::describe_task(c, t) + " depends on itself");
      if (d.kind == dep_kind::launch && d.to < n && c.alive[d.to] && c.kind[d.to] < Graph::kind_count &&
          is_cpu(g.kind_resource(d.to)))
        fail("launch dependency " + detail::describe_task(c, t) + " -> " +
             detail::describe_task(c, d.to) + " launches CPU work (a launch ends at GPU-side work)");
      if (seen[d.to] == t)
        fail("two dependencies " + detail::describe_task(c, t) + " -> " +
             detail::describe_task(c, d.to));
      seen[d.to] = t;
      if (!in_listed[it.edge()])
        fail("dependency " + detail::describe_task(c, t) + " -> " +
             detail::describe_task(c, d.to) + " is missing from the in-list of its target");
    }
    for (auto it = c.in(t).begin(); it != c.in(t).end(); ++it) {
      auto d = *it;
      ++ins;
      if (it.edge() >= c.edges.size() || d.to != t)
        fail("the in-list of " + detail::describe_task(c, t) + " holds a foreign edge");
      if (d.from >= n || !c.alive[d.from])
        fail("dependency #" + std::to_string(d.from) + " -> " + detail::describe_task(c, t) +
             " comes from a removed task");
    }
    if (outs != c.n_out[t] || ins != c.n_in[t])
      fail("degree counts of " + detail::describe_task(c, t) + " disagree with its lists");
    outs_total += outs;
    ins_total += ins;
  }
  if (live != c.live_tasks)
    fail("the graph counts " + std::to_string(c.live_tasks) + " live tasks, the lists hold " +
         std::to_string(live));
  if (outs_total != c.live_edges || ins_total != c.live_edges)
    fail("the graph counts " + std::to_string(c.live_edges) + " dependencies, the lists hold " +
         std::to_string(outs_total) + " out and " + std::to_string(ins_total) + " in");
  check_acyclic(g);
}

} // namespace daydream

#endif
