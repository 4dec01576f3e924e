// Defines the cycle search among a graph's tasks and the task descriptions that errors quote.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_DIAGNOSTICS_HPP
#define DAYDREAM_DETAIL_DIAGNOSTICS_HPP

#include <daydream/detail/core.hpp>
#include <daydream/detail/quote.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

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

/// Task `t` as errors name it: `#3 "aten::conv2d"`, the name quoted and escaped.
inline std::string describe_task(const graph_core& c, task_id t) {
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
  // "literal" + std::string&&.
  std::string s = "#";
  s += std::to_string(t);
  s += ' ';
  append_quoted(s, c.names[c.name[t]]); // escaped: names come from traces
  return s;
}

/// The tasks `ts` joined by " -> ", at most `limit` of them, then the count.
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

} // namespace daydream::detail
//! @endcond

#endif
