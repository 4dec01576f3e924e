// Defines what a replay predicts (replay_result, the critical path) and how it models effects beyond the graph (replay_options).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REPLAY_RESULT_HPP
#define DAYDREAM_REPLAY_RESULT_HPP

#include <daydream/dependency.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace daydream {

/// Why a task started when it did, as recorded by the replay.
enum class binding : std::uint8_t {
  none,       ///< a root task: started at time 0
  dependency, ///< started as soon as its last dependency finished (see `edge`)
  resource,   ///< waited for its resource (previous task, or the CPU gap after it)
};

/// The name of a binding value ("resource").
inline constexpr std::string_view to_string(binding b) noexcept {
  switch (b) {
  case binding::none: return "none";
  case binding::dependency: return "dependency";
  case binding::resource: return "resource";
  }
  return "?";
}

/// One step of a critical path: the task, and how it was reached from the step before.
struct critical_step {
  task_id task = no_task;      ///< the task
  binding why = binding::none; ///< why it started when it did
  dep_kind edge = dep_kind::control; ///< meaningful when `why == binding::dependency`
  friend constexpr bool operator==(const critical_step&, const critical_step&) = default;
};

/// What a replay predicts: per-task start and end, makespan, per-resource busy time,
/// peak memory and the critical path. Indexed by the task ids of the replayed graph: a
/// later change to the graph does not change it, compact() makes its ids stale.
///
///     auto r = daydream::replay(g);
///     std::cout << r.makespan << " ns, kernel ran " << r.start[k] << ".." << r.end[k];
///     for (auto step : r.critical_path()) std::cout << g.name(step.task) << '\n';
struct replay_result {
  std::vector<time_ns> start;  ///< by task id; -1 for removed ids
  std::vector<time_ns> end;    ///< by task id; -1 for removed ids
  std::vector<time_ns> busy;   ///< by resource id: time with at least one task running
  std::vector<task_id> pred;   ///< by task id: the task that determined its start, or no_task
  std::vector<binding> why;    ///< by task id
  std::vector<dep_kind> edge;  ///< by task id: the kind of the binding edge
  time_ns makespan = 0;        ///< latest end (the first task starts at 0)
  std::int64_t peak_memory = 0;///< highest running sum of mem_delta, in start order
  std::size_t tasks = 0;       ///< live tasks replayed

  /// The chain of tasks that determined the makespan, first task first: from the task
  /// that ends last (the smallest id among equals), follow `pred` back to a root. Each
  /// step says why its task started when it did: after its latest dependency (with the
  /// edge kind), or after its resource freed up.
  std::vector<critical_step> critical_path() const {
    std::vector<critical_step> path;
    task_id last = no_task;
    for (task_id t = 0; t < end.size(); ++t)
      if (end[t] >= 0 && (last == no_task || end[t] > end[last])) last = t;
    for (auto t = last; t != no_task; t = pred[t]) path.push_back({t, why[t], edge[t]});
    std::reverse(path.begin(), path.end());
    return path;
  }
  /// How long task `t` took in the replay (longer than its duration on a shared link).
  time_ns duration(task_id t) const { return end[t] - start[t]; }
};

/// How the replay models effects beyond the graph itself. The defaults change nothing.
///
///     daydream::replay_options o;
///     o.overlap_slowdown = 1.3; // kernels run 1.3x slower while a transfer is active
///     auto r = daydream::replay(g, daydream::trace_order_policy{}, o);
struct replay_options {
  /// Proteus' overlap factor (Duan et al., "Proteus: Simulating the Performance of
  /// Distributed DNN Training", 2023): while at least one task runs on a `link` resource
  /// of node k, every task on an exclusive `gpu_stream` resource of node k progresses
  /// this many times slower (communication kernels compete with computation for SMs and
  /// memory bandwidth). A kernel that overlaps communication for only part of its run is
  /// slowed for that part only. 1 (the default) turns the effect off; must be >= 1.
  double overlap_slowdown = 1.0;
};

} // namespace daydream

#endif
