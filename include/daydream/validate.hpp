// Defines the graph checks: cycle search, invariants, and task descriptions for errors.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_VALIDATE_HPP
#define DAYDREAM_VALIDATE_HPP

#include <daydream/config.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace daydream {

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// A cycle among the tasks marked in `among` (all live tasks if empty), first task
/// repeated at the end; empty if there is none. Iterative DFS (no recursion limit).
inline std::vector<task_id> find_cycle_among(const graph_core& c,
                                             const std::vector<std::uint8_t>& among) {
  const task_id n = c.id_bound();
  auto in_set = [&](task_id t) { return c.alive[t] && (among.empty() || among[t]); };
  std::vector<std::uint8_t> color(n, 0); // 0 new, 1 on stack, 2 done
  std::vector<task_id> parent(n, no_task);
  std::vector<std::pair<task_id, edge_id>> stack;
  for (task_id root = 0; root < n; ++root) {
    if (!in_set(root) || color[root]) continue;
    stack.push_back({root, c.head_out[root]});
    color[root] = 1;
    while (!stack.empty()) {
      auto& [u, e] = stack.back();
      if (e == no_edge) { color[u] = 2; stack.pop_back(); continue; }
      auto v = c.edges[e].dst;
      e = c.edges[e].next_out;
      if (!in_set(v)) continue;
      if (color[v] == 1) {
        std::vector<task_id> cyc{v};
        for (auto it = stack.rbegin(); it != stack.rend() && it->first != v; ++it)
          cyc.push_back(it->first);
        cyc.push_back(v);
        std::reverse(cyc.begin(), cyc.end());
        return cyc;
      }
      if (color[v] == 0) {
        color[v] = 1;
        parent[v] = u;
        stack.push_back({v, c.head_out[v]});
      }
    }
  }
  return {};
}

inline std::string describe_task(const graph_core& c, task_id t) {
  return "#" + std::to_string(t) + " \"" + std::string(c.names[c.name[t]]) + "\"";
}

inline std::string describe_tasks(const graph_core& c, const std::vector<task_id>& ts,
                                  std::size_t limit = 12) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i == limit) { s += " -> ... (" + std::to_string(ts.size()) + " tasks)"; break; }
    if (i) s += " -> ";
    s += describe_task(c, ts[i]);
  }
  return s;
}

} // namespace detail
//! @endcond

/// A cycle of `g` as a list of task ids, the first repeated at the end; empty if `g`
/// is acyclic. O(V + E).
template <class Graph> std::vector<task_id> find_cycle(const Graph& g) {
  return detail::find_cycle_among(g.core(), {});
}

/// Throws daydream::error naming the tasks of a cycle, if `g` has one.
template <class Graph> void check_acyclic(const Graph& g) {
  auto cyc = find_cycle(g);
  if (!cyc.empty())
    throw error("daydream: the graph has a cycle: " + detail::describe_tasks(g.core(), cyc));
}

/// Checks the structural invariants of `g` (every edge between live tasks, in/out lists
/// agree, counts match, no cycle) and throws daydream::error naming the first violation.
template <class Graph> void check_invariants(const Graph& g) {
  const auto& c = g.core();
  std::size_t live = 0, edges = 0;
  for (task_id t = 0; t < c.id_bound(); ++t) {
    if (!c.alive[t]) {
      if (c.head_out[t] != detail::no_edge || c.head_in[t] != detail::no_edge)
        throw error("daydream: invariant: removed task #" + std::to_string(t) + " still has edges");
      continue;
    }
    ++live;
    std::uint32_t outs = 0, ins = 0;
    for (auto d : c.out(t)) {
      ++outs; ++edges;
      if (!c.is_alive(d.to))
        throw error("daydream: invariant: dependency " + detail::describe_task(c, t) +
                    " -> #" + std::to_string(d.to) + " reaches a removed task");
    }
    for (auto d : c.in(t)) {
      ++ins;
      if (!c.is_alive(d.from))
        throw error("daydream: invariant: dependency #" + std::to_string(d.from) + " -> " +
                    detail::describe_task(c, t) + " comes from a removed task");
    }
    if (outs != c.n_out[t] || ins != c.n_in[t])
      throw error("daydream: invariant: degree counts of " + detail::describe_task(c, t) +
                  " disagree with its lists");
    if (c.res[t] != no_resource && c.res[t] >= c.resources.size())
      throw error("daydream: invariant: " + detail::describe_task(c, t) + " names a missing resource");
  }
  if (live != c.live_tasks || edges != c.live_edges)
    throw error("daydream: invariant: task or dependency counts disagree with the graph");
  check_acyclic(g);
}

} // namespace daydream

#endif
