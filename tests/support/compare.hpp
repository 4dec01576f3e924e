// Defines testing::replay_difference (what differs between two replays) and brings daydream::graph_difference.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_COMPARE_HPP
#define DAYDREAM_TESTS_SUPPORT_COMPARE_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph_difference.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <concepts>
#include <string>
#include <vector>

namespace daydream::testing {

using daydream::graph_difference;

/// The first difference between two replays of graphs with the same ids, in words;
/// empty when every task starts and ends at the same time and the makespans, busy times
/// and peak memory agree. Only ids below `bound` are compared (all when no_task).
inline std::string replay_difference(const replay_result& a, const replay_result& b,
                                     task_id bound = no_task) {
  const auto n = std::min<std::size_t>(std::min(a.start.size(), b.start.size()), bound);
  if (bound == no_task && a.start.size() != b.start.size()) return "different numbers of ids";
  for (task_id t = 0; t < n; ++t)
    if (a.start[t] != b.start[t] || a.end[t] != b.end[t])
      return "task #" + std::to_string(t) + " runs [" + std::to_string(a.start[t]) + ", " +
             std::to_string(a.end[t]) + ") vs [" + std::to_string(b.start[t]) + ", " +
             std::to_string(b.end[t]) + ")";
  if (bound == no_task) {
    if (a.makespan != b.makespan) return "makespans differ";
    if (a.busy != b.busy) return "busy times differ";
    if (a.peak_memory != b.peak_memory) return "peak memory differs";
  }
  return {};
}

} // namespace daydream::testing

#endif
