// Defines iteration queries on a graph and its replay: which iterations exist and how long each took.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_ITERATION_HPP
#define DAYDREAM_ITERATION_HPP

#include <daydream/config.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace daydream {

/// The median of the non-negative step times of `v` (the lower middle one for an even
/// count: always a value that was measured or replayed), -1 when there is none.
inline time_ns median_of(std::vector<time_ns> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](time_ns x) { return x < 0; }), v.end());
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

/// Where one iteration lies in a replay.
struct iteration_span {
  std::int32_t iteration = 0; ///< its number
  time_ns begin = 0;      ///< earliest start of its tasks
  time_ns end = 0;        ///< earliest start of the next iteration's tasks, or its latest end
  time_ns last_end = 0;   ///< latest end of its own tasks
  std::size_t tasks = 0;  ///< its live tasks
  /// How long the iteration took: `end - begin`.
  time_ns duration() const noexcept { return end - begin; }
};

/// Throws daydream::error unless `r` can be a replay of `g`: one start and one end per
/// task id of `g` (a replay of another graph, or of `g` before compact() or before tasks
/// were added, has another size). `what` names the caller in the message.
template <class Graph>
void check_replay_of(const Graph& g, const replay_result& r, const char* what) {
  if (r.start.size() != g.id_bound() || r.end.size() != g.id_bound())
    throw error(std::string("daydream: ") + what + ": the replay result covers " +
                std::to_string(r.start.size()) + " task ids, the graph has " +
                std::to_string(g.id_bound()) +
                "; it is not a replay of this graph (replay the graph again after changing it)");
}

/// The iterations of a replayed graph in increasing order. Tasks with a negative
/// iteration number (outside any iteration: set-up, profiler overhead) are ignored.
///
/// An iteration runs from the earliest start of its tasks to the earliest start of the
/// next iteration's tasks (the period a training loop repeats with), or, for the last
/// one, to the latest end of its own tasks. Passes may remove any task: the spans are
/// computed from whatever is left. Throws daydream::error if `r` is not a replay of `g`
/// (check_replay_of). O(V log I).
template <class Graph>
std::vector<iteration_span> iteration_spans(const Graph& g, const replay_result& r) {
  check_replay_of(g, r, "iteration_spans");
  std::map<std::int32_t, iteration_span> m;
  g.for_each_task([&](task_id t) {
    auto i = g.iteration(t);
    if (i < 0 || r.start[t] < 0) return;
    auto [it, fresh] = m.try_emplace(i);
    auto& s = it->second;
    if (fresh) {
      s.iteration = i;
      s.begin = r.start[t];
      s.last_end = r.end[t];
    }
    s.begin = std::min(s.begin, r.start[t]);
    s.last_end = std::max(s.last_end, r.end[t]);
    ++s.tasks;
  });
  std::vector<iteration_span> out;
  for (auto& [i, s] : m) out.push_back(s);
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k].end = k + 1 < out.size() && out[k + 1].iteration == out[k].iteration + 1
                     ? out[k + 1].begin
                     : out[k].last_end;
  return out;
}

/// The replayed duration of iteration `i` (see iteration_spans), or -1 if `g` has no
/// task of that iteration. `r` must be a replay of `g` (else daydream::error).
///
///     auto before = daydream::iteration_time(g, daydream::replay(g), 3);
template <class Graph>
time_ns iteration_time(const Graph& g, const replay_result& r, std::int32_t i) {
  for (auto& s : iteration_spans(g, r))
    if (s.iteration == i) return s.duration();
  return -1;
}

} // namespace daydream

#endif
