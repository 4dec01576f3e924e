// Defines graph_difference: the first difference between two graphs, in words.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_GRAPH_DIFFERENCE_HPP
#define DAYDREAM_GRAPH_DIFFERENCE_HPP

#include <daydream/dependency.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <concepts>
#include <string>
#include <vector>

namespace daydream {

/// The first difference between two graphs, in words; empty when they are the same:
/// same ids alive, same kinds, payloads (where the kind has ==), names, layers, every
/// common field, same resources, and the same dependencies. With `edge_order`, the
/// adjacency lists must also list the dependencies in the same order (what a restored
/// copy gives); without, they are compared as sets.
template <class Graph>
std::string graph_difference(const Graph& a, const Graph& b, bool edge_order = true) {
  auto id = [](task_id t) { return "task #" + std::to_string(t); };
  if (a.id_bound() != b.id_bound())
    return "id bounds differ: " + std::to_string(a.id_bound()) + " vs " + std::to_string(b.id_bound());
  if (a.size() != b.size())
    return "live task counts differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  if (a.dependency_count() != b.dependency_count())
    return "dependency counts differ: " + std::to_string(a.dependency_count()) + " vs " +
           std::to_string(b.dependency_count());
  if (a.resource_count() != b.resource_count()) return "resource counts differ";
  for (resource_id r = 0; r < a.resource_count(); ++r) {
    auto &x = a.resource_at(r), &y = b.resource_at(r);
    if (x.name != y.name || x.kind != y.kind || x.share != y.share || x.node != y.node ||
        x.device != y.device || x.bandwidth != y.bandwidth)
      return "resource #" + std::to_string(r) + " differs";
  }
  for (task_id t = 0; t < a.id_bound(); ++t) {
    if (a.contains(t) != b.contains(t)) return id(t) + " is alive in one graph only";
    if (!a.contains(t)) continue;
    if (a.kind_name(t) != b.kind_name(t)) return id(t) + ": kinds differ";
    if (a.name(t) != b.name(t)) return id(t) + ": names differ";
    if (a.layer(t) != b.layer(t)) return id(t) + ": layers differ";
    if (a.duration(t) != b.duration(t)) return id(t) + ": durations differ";
    if (a.gap(t) != b.gap(t)) return id(t) + ": gaps differ";
    if (a.trace_start(t) != b.trace_start(t)) return id(t) + ": trace starts differ";
    if (a.resource_of(t) != b.resource_of(t)) return id(t) + ": resources differ";
    if (a.phase_of(t) != b.phase_of(t)) return id(t) + ": phases differ";
    if (a.iteration(t) != b.iteration(t)) return id(t) + ": iterations differ";
    if (a.priority(t) != b.priority(t)) return id(t) + ": priorities differ";
    if (a.mem_delta(t) != b.mem_delta(t)) return id(t) + ": mem_delta differ";
    const bool same_payload = a.visit(t, [&]<class K>(handle<K> h, const K& p) {
      if constexpr (std::equality_comparable<K>) return p == b.payload(h);
      else return true;
    });
    if (!same_payload) return id(t) + ": payloads differ";
    for (int dir = 0; dir < 2; ++dir) {
      std::vector<dependency> x, y;
      if (dir == 0) {
        for (auto d : a.successors(t)) x.push_back(d);
        for (auto d : b.successors(t)) y.push_back(d);
      } else {
        for (auto d : a.predecessors(t)) x.push_back(d);
        for (auto d : b.predecessors(t)) y.push_back(d);
      }
      if (!edge_order) {
        auto by_ends = [](const dependency& p, const dependency& q) {
          return p.from != q.from ? p.from < q.from : p.to < q.to;
        };
        std::sort(x.begin(), x.end(), by_ends);
        std::sort(y.begin(), y.end(), by_ends);
      }
      if (x != y) return id(t) + (dir == 0 ? ": successors differ" : ": predecessors differ");
    }
  }
  return {};
}

} // namespace daydream

#endif
