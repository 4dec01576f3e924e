// Defines iteration queries on a graph and its replay: which iterations exist and how long each took.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_ITERATION_HPP
#define DAYDREAM_ITERATION_HPP

#include <daydream/config.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
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
  /// Where its step begins: the earliest start of its tasks (first_start), except for a
  /// last iteration (no next one follows) whose own GPU work waited for GPU work queued
  /// before the trace's iterations (kernels launched before a one-step window, outside
  /// any iteration): then when that work ended. That backlog is not this iteration's.
  time_ns begin = 0;
  time_ns end = 0;        ///< earliest start of the next iteration's tasks, or its latest end
  time_ns last_end = 0;   ///< latest end of its own tasks
  std::size_t tasks = 0;  ///< its live tasks
  time_ns first_start = 0; ///< earliest start of its tasks
  /// How long the iteration took: `end - begin`.
  time_ns duration() const noexcept { return end - begin; }
  /// The earlier work it waited for at its start (`begin - first_start`, 0 for most).
  time_ns backlog() const noexcept { return begin - first_start; }
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// When the work of `outside` (intervals of GPU work of no iteration) that started before
/// `first` (an iteration's first GPU work) ended: the backlog that iteration waited for;
/// the lowest time when none did. The rule of iteration_spans and of the ingest's
/// measured step (kineto_trace::measured) alike.
inline time_ns end_of_work_queued_before(const std::vector<std::pair<time_ns, time_ns>>& outside, time_ns first) {
  time_ns prior = std::numeric_limits<time_ns>::min();
  for (auto [b, e] : outside)
    if (b < first) prior = std::max(prior, e);
  return prior;
}

/// Gathers a graph's iteration spans task by task and closes them (the rule of
/// iteration_spans): `add` each replayed task, then `close`.
struct span_builder {
  std::map<std::int32_t, iteration_span> spans;
  std::map<std::int32_t, time_ns> device_first; ///< earliest start of each iteration's GPU-side tasks
  std::vector<std::pair<time_ns, time_ns>> outside; ///< GPU-side tasks of no iteration

  /// Adds task `t` of `g` as replay `r` ran it (a task the replay did not run is left out).
  template <class Graph> void add(const Graph& g, task_id t, const replay_result& r) {
    if (r.start[t] < 0) return;
    const auto res = g.resource_of(t);
    add(g.iteration(t), r.start[t], r.end[t], res != no_resource && !is_cpu(g.resource_at(res).kind));
  }

  void add(std::int32_t i, time_ns start, time_ns end, bool device) {
    if (i < 0) {
      if (device) outside.push_back({start, end});
      return;
    }
    auto [it, fresh] = spans.try_emplace(i);
    auto& s = it->second;
    if (fresh) {
      s.iteration = i;
      s.first_start = start;
      s.last_end = end;
    }
    s.first_start = std::min(s.first_start, start);
    s.last_end = std::max(s.last_end, end);
    ++s.tasks;
    if (device) {
      auto [d, first] = device_first.try_emplace(i, start);
      if (!first) d->second = std::min(d->second, start);
    }
  }

  std::vector<iteration_span> close() const {
    std::vector<iteration_span> out;
    for (auto& [i, s] : spans) out.push_back(s);
    for (std::size_t k = 0; k < out.size(); ++k) {
      auto& s = out[k];
      s.begin = s.first_start;
      if (k + 1 < out.size() && out[k + 1].iteration == s.iteration + 1) {
        s.end = out[k + 1].first_start;
      } else {
        s.end = s.last_end;
        // GPU work queued before the iterations that its own GPU work waited for.
        if (auto d = device_first.find(s.iteration); d != device_first.end())
          if (auto prior = end_of_work_queued_before(outside, d->second); prior > s.first_start && prior < s.last_end)
            s.begin = prior;
      }
    }
    return out;
  }
};
} // namespace detail
//! @endcond

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
/// iteration number (outside any iteration: set-up, profiler overhead) are ignored, except
/// as the earlier work a last iteration may wait for.
///
/// An iteration runs from the earliest start of its tasks to the earliest start of the
/// next iteration's tasks (the period a training loop repeats with), or, for the last
/// one, to the latest end of its own tasks. A last iteration whose GPU work waited for
/// GPU work queued before the trace's iterations (kernels launched before a one-step
/// window) is measured from the end of that work instead (iteration_span::begin,
/// backlog()). The previous iteration's GPU work running into the last one still counts. Passes may remove any
/// task: the spans are computed from whatever is left. Throws daydream::error if `r` is
/// not a replay of `g` (check_replay_of). O(V log I).
template <class Graph>
std::vector<iteration_span> iteration_spans(const Graph& g, const replay_result& r) {
  check_replay_of(g, r, "iteration_spans");
  detail::span_builder b;
  g.for_each_task([&](task_id t) { b.add(g, t, r); });
  return b.close();
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
