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
///
/// An iteration a next one follows lasts from its first task's start to the next one's
/// first task's start: the period the loop repeats with, which its CPU side decides (the
/// step markers measure the same). A *last* iteration (no next one follows) has no such
/// period; it lasts the longer of two windows of its own work:
/// - its CPU work: from its first task's start to the end of its last CPU-side task (the
///   step marker's span, the period a next step would have started with);
/// - its GPU work: from when its GPU-side tasks (kernels, copies, communication) began
///   their own work to the end of the last of them. They begin with the first of them, or,
///   when earlier GPU-side work was still running then (the previous iteration's kernels
///   a GPU that lags its CPU was still executing, kernels queued before a one-step
///   window), when that work ended (`device_begin`): that backlog belongs to the steps
///   before.
/// In a loop of such steps the longer side bounds the step; neither counts the other's
/// lead (the CPU's time before its first launch, the GPU's tail after the CPU ended), and
/// as either side's work grows or shrinks, the length changes continuously.
struct iteration_span {
  std::int32_t iteration = 0; ///< its number
  time_ns begin = 0;      ///< where its window begins (see above)
  time_ns end = 0;        ///< where it ends: the next iteration's first start, or its window's end
  time_ns last_end = 0;   ///< latest end of its own tasks
  std::size_t tasks = 0;  ///< its live tasks
  time_ns first_start = 0; ///< earliest start of its tasks
  time_ns cpu_end = 0;     ///< latest end of its CPU-side tasks (first_start when it has none)
  /// Earliest start of its GPU-side tasks (tasks on a resource that is not a CPU thread);
  /// -1 when it has none, like device_begin and device_end.
  time_ns device_first = -1;
  /// When its GPU-side tasks began their own work: device_first, or the end of earlier
  /// GPU-side work (of earlier iterations, or of none, started before device_first) when
  /// later, at most device_end.
  time_ns device_begin = -1;
  time_ns device_end = -1; ///< latest end of its GPU-side tasks
  /// When the earlier GPU-side work still running at its first start ended (of earlier
  /// iterations, or of none started before its GPU work), at most device_end;
  /// first_start when none was running, or it has no GPU-side task.
  time_ns backlog_end = 0;
  /// How long the iteration took: `end - begin`.
  time_ns duration() const noexcept { return end - begin; }
  /// How long the GPU was still busy with earlier work when it began
  /// (`backlog_end - first_start`; 0 for most).
  time_ns backlog() const noexcept { return backlog_end - first_start; }
  /// Whether it is measured by its GPU window (a last iteration whose GPU work lasted
  /// longer than its CPU work).
  bool by_device = false;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// When the work of `outside` (intervals of GPU-side work) that started before `first`
/// (an iteration's first GPU work) ended: the backlog that iteration waited for; the lowest
/// time when none did.
inline time_ns end_of_work_queued_before(const std::vector<std::pair<time_ns, time_ns>>& outside, time_ns first) {
  time_ns prior = std::numeric_limits<time_ns>::min();
  for (auto [b, e] : outside)
    if (b < first) prior = std::max(prior, e);
  return prior;
}

/// The window a last iteration is measured by (iteration_span): the longer of its CPU
/// window [first, cpu_end] and its GPU window [device_begin, device_end] (the CPU one on a
/// tie, and when it has no GPU work). `prior`: the end of the earlier GPU-side work its own
/// could have waited for (the lowest time when none). The rule of iteration_spans and of
/// the ingest's measured step (kineto_trace::measured) alike.
struct own_window {
  time_ns begin = 0, end = 0;
  time_ns device_begin = -1; ///< when its GPU work began its own (-1: none)
};
inline own_window last_iteration_window(time_ns first, time_ns cpu_end, time_ns device_first, time_ns device_end,
                                        time_ns prior) {
  own_window w{first, std::max(first, cpu_end), -1};
  if (device_first < 0) return w;
  w.device_begin = std::min(std::max(device_first, prior), device_end);
  if (device_end - w.device_begin > w.end - w.begin) {
    w.begin = w.device_begin;
    w.end = device_end;
  }
  return w;
}

/// Gathers a graph's iteration spans task by task and closes them (the rule of
/// iteration_spans): `add` each replayed task, then `close`.
struct span_builder {
  /// The iterations met so far, in the order met (a graph's tasks come iteration by
  /// iteration, so the last one met is looked up first).
  std::vector<iteration_span> spans;
  std::size_t last = 0;                              ///< index of the last iteration met
  std::map<std::int32_t, std::size_t> index;         ///< iteration -> its index in `spans`
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
    bool fresh = false;
    if (last >= spans.size() || spans[last].iteration != i) {
      auto [at, added] = index.try_emplace(i, spans.size());
      last = at->second;
      fresh = added;
    }
    if (fresh) spans.emplace_back();
    auto& s = spans[last];
    if (fresh) {
      s.iteration = i;
      s.first_start = start;
      s.last_end = end;
      s.cpu_end = std::numeric_limits<time_ns>::min();
    }
    extend(s, start, end, device);
  }

  /// Adds a task that ran over [start, end) (on the GPU side when `device`) to span `s`.
  static void extend(iteration_span& s, time_ns start, time_ns end, bool device) noexcept {
    s.first_start = std::min(s.first_start, start);
    s.last_end = std::max(s.last_end, end);
    ++s.tasks;
    if (device) {
      s.device_first = s.device_first < 0 ? start : std::min(s.device_first, start);
      s.device_end = std::max(s.device_end, end);
    } else {
      s.cpu_end = std::max(s.cpu_end, end);
    }
  }

  std::vector<iteration_span> close() const {
    std::vector<iteration_span> out = spans;
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.iteration < b.iteration; });
    time_ns earlier = std::numeric_limits<time_ns>::min(); // latest end of the earlier iterations' GPU-side work
    for (std::size_t k = 0; k < out.size(); ++k) {
      auto& s = out[k];
      if (s.cpu_end == std::numeric_limits<time_ns>::min()) s.cpu_end = s.first_start;
      const auto prior = s.device_first < 0 ? earlier : std::max(earlier, end_of_work_queued_before(outside, s.device_first));
      const auto w = last_iteration_window(s.first_start, s.cpu_end, s.device_first, s.device_end, prior);
      s.device_begin = w.device_begin;
      s.backlog_end = s.device_first >= 0 && prior > s.first_start ? std::min(prior, s.device_end) : s.first_start;
      earlier = std::max(earlier, s.device_end);
      if (k + 1 < out.size() && out[k + 1].iteration == s.iteration + 1) {
        s.begin = s.first_start;
        s.end = out[k + 1].first_start;
      } else {
        s.begin = w.begin;
        s.end = w.end;
        s.by_device = w.begin != s.first_start || w.end != s.cpu_end;
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
/// next iteration's tasks (the period a training loop repeats with); the last one lasts
/// the longer of its CPU work and its GPU work, the latter without the earlier GPU work it
/// waited for (the previous step's kernels, kernels queued before a one-step window): see
/// iteration_span. Passes may remove any task: the spans are computed from whatever is
/// left. Throws daydream::error if `r` is
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
