// Defines the neighbourhood of a task and its dump as text or Graphviz DOT, for looking at a graph while writing a pass.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_NEIGHBOURHOOD_HPP
#define DAYDREAM_NEIGHBOURHOOD_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/quote.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace daydream {

/// The tasks within `depth` dependencies of `t`, following dependencies both ways (a
/// predecessor of a successor is 2 away), as (task, distance) pairs: `t` first (distance
/// 0), then by distance, ties by id. Throws daydream::error if `t` is not a live task.
/// O(tasks and dependencies visited).
///
///     for (auto [u, d] : daydream::neighbourhood(g, kernel, 2)) ...
template <class Graph>
std::vector<std::pair<task_id, std::size_t>> neighbourhood(const Graph& g, task_id t, std::size_t depth) {
  g.core().check_task(t, "neighbourhood");
  std::vector<std::pair<task_id, std::size_t>> out{{t, 0}};
  std::vector<task_id> seen{t}; // sorted
  for (std::size_t begin = 0, d = 1; d <= depth && begin < out.size(); ++d) {
    const std::size_t end = out.size();
    std::vector<task_id> found;
    for (std::size_t i = begin; i < end; ++i) {
      for (auto e : g.successors(out[i].first)) found.push_back(e.to);
      for (auto e : g.predecessors(out[i].first)) found.push_back(e.from);
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    for (auto u : found)
      if (!std::binary_search(seen.begin(), seen.end(), u)) out.push_back({u, d});
    for (std::size_t i = end; i < out.size(); ++i)
      seen.insert(std::upper_bound(seen.begin(), seen.end(), out[i].first), out[i].first);
    begin = end;
  }
  return out;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
// "#3 gpu_kernel \"sgemm\" on \"stream 7\", 30 ns"
template <class Graph> std::string neighbour_line(const Graph& g, task_id u) {
  std::string s = "#" + std::to_string(u) + " " + std::string(g.kind_name(u)) + " ";
  append_quoted(s, g.name(u));
  const auto res = g.resource_of(u);
  if (res == no_resource) {
    s += " on no resource";
  } else {
    s += " on ";
    append_quoted(s, g.resource_at(res).name);
  }
  s += ", " + std::to_string(g.duration(u)) + " ns";
  return s;
}
// The dependencies between tasks of `set` (sorted ids), by source then target.
template <class Graph>
std::vector<dependency> edges_among(const Graph& g, const std::vector<std::pair<task_id, std::size_t>>& set) {
  std::vector<task_id> ids;
  for (auto& [u, d] : set) ids.push_back(u);
  std::sort(ids.begin(), ids.end());
  std::vector<dependency> out;
  for (auto u : ids)
    for (auto e : g.successors(u))
      if (std::binary_search(ids.begin(), ids.end(), e.to)) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const dependency& a, const dependency& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  return out;
}
} // namespace detail
//! @endcond

/// The neighbourhood of `t` within `depth` dependencies (see neighbourhood()) as text:
/// a header line, one line per task (distance, id, kind, name, resource, duration), then
/// one line per dependency among them, by source then target. For a quick look while
/// writing a pass, the way taskflow's `dump` shows a graph.
///
///     std::cout << daydream::neighbourhood_text(g, kernel, 1);
///     // neighbourhood of #1 within 1 dependency: 2 tasks, 1 dependency
///     //   0  #1 gpu_kernel "sgemm" on "stream 7", 30 ns
///     //   1  #0 cpu_task "cudaLaunchKernel" on "thread 1", 5 ns
///     //   #0 -> #1 launch
template <class Graph> std::string neighbourhood_text(const Graph& g, task_id t, std::size_t depth) {
  const auto set = neighbourhood(g, t, depth);
  const auto edges = detail::edges_among(g, set);
  auto plural = [](std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::string s = "neighbourhood of #" + std::to_string(t) + " within " +
                  plural(depth, "dependency", "dependencies") + ": " +
                  plural(set.size(), "task", "tasks") + ", " +
                  plural(edges.size(), "dependency", "dependencies") + "\n";
  for (auto& [u, d] : set) s += "  " + std::to_string(d) + "  " + detail::neighbour_line(g, u) + "\n";
  for (auto& e : edges)
    s += "  #" + std::to_string(e.from) + " -> #" + std::to_string(e.to) + " " +
         std::string(to_string(e.kind)) + "\n";
  return s;
}

/// The neighbourhood of `t` within `depth` dependencies as a Graphviz DOT digraph: one
/// node per task (labelled with its id, kind, name and duration; `t` drawn bold), one
/// edge per dependency among them, labelled with its kind. Render it with
/// `dot -Tsvg neighbourhood.dot -o neighbourhood.svg`.
///
///     std::ofstream("neighbourhood.dot") << daydream::neighbourhood_dot(g, kernel, 2);
template <class Graph> std::string neighbourhood_dot(const Graph& g, task_id t, std::size_t depth) {
  const auto set = neighbourhood(g, t, depth);
  std::string s = "digraph neighbourhood {\n  node [shape=box];\n";
  for (auto& [u, d] : set) {
    std::string label = "#" + std::to_string(u) + " " + std::string(g.kind_name(u)) + "\n" +
                        std::string(g.name(u)) + "\n" + std::to_string(g.duration(u)) + " ns";
    s += "  t" + std::to_string(u) + " [label=";
    detail::append_quoted(s, label);
    s += u == t ? ", style=bold];\n" : "];\n";
  }
  for (auto& e : detail::edges_among(g, set))
    s += "  t" + std::to_string(e.from) + " -> t" + std::to_string(e.to) + " [label=\"" +
         std::string(to_string(e.kind)) + "\"];\n";
  s += "}\n";
  return s;
}

} // namespace daydream

#endif
