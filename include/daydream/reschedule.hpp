// Defines the selection policies of the replay kernel and the reschedule primitive.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_RESCHEDULE_HPP
#define DAYDREAM_RESCHEDULE_HPP

#include <daydream/task.hpp>

#include <compare>
#include <concepts>
#include <cstdint>
#include <limits>

namespace daydream {

/// The order among tasks ready on one resource: lexicographic, smaller runs first.
/// Tasks with equal keys run in id order.
struct priority_key {
  std::int64_t major = 0; ///< compared first
  std::int64_t minor = 0; ///< compared when `major` ties
  std::int64_t tie = 0;   ///< compared when both tie
  friend constexpr auto operator<=>(const priority_key&, const priority_key&) = default;
};

/// A selection policy: when an exclusive resource is free and several tasks are ready
/// on it, the replay starts the one with the smallest key. `key` is called at most once
/// per task, with the time `ready` at which all its dependencies had ended, and only
/// when the task competes with another one for its resource: it must depend on its
/// arguments only. Tasks on fair-share resources or on none start when ready and are
/// not keyed.
///
///     struct shortest_first {
///       template <class G> daydream::priority_key key(const G& g, daydream::task_id t,
///                                                      daydream::time_ns) const {
///         return {g.duration(t), g.trace_start(t), t};
///       }
///     };
template <class P, class G>
concept selection_policy = requires(const P& p, const G& g, task_id t, time_ns ready) {
  { p.key(g, t, ready) } -> std::same_as<priority_key>;
};

/// The default: the original trace order (earliest ready first, ties by the task's
/// start time in the trace, then by id). With program-order edges on every thread and
/// stream, this is Daydream's replay.
struct trace_order_policy {
  /// `{ready, trace_start, id}`.
  template <class G> priority_key key(const G& g, task_id t, time_ns ready) const {
    return {ready, g.trace_start(t), static_cast<std::int64_t>(t)};
  }
};

/// Priorities set with reschedule() first (smaller first), then trace order. P3 and
/// TicTac ship this one.
///
///     daydream::reschedule(g, first_layer_allreduce, daydream::as_soon_as_ready);
///     auto r = daydream::replay(g, daydream::priority_policy{});
struct priority_policy {
  /// `{priority, ready, trace_start}`.
  template <class G> priority_key key(const G& g, task_id t, time_ns ready) const {
    return {g.priority(t), ready, g.trace_start(t)};
  }
};

/// The priority that runs a task before any other ready task on its resource.
inline constexpr std::int64_t as_soon_as_ready = std::numeric_limits<std::int64_t>::min();
/// The priority every task starts with.
inline constexpr std::int64_t default_priority = 0;

/// Sets the replay priority of task `t` (read by priority_policy and user policies;
/// trace_order_policy ignores it). Invalidates nothing.
///
///     daydream::reschedule(g, t, daydream::as_soon_as_ready);
template <class Graph> void reschedule(Graph& g, task_id t, std::int64_t priority) {
  g.core().check_task(t, "reschedule");
  g.core().priority[t] = priority;
}

} // namespace daydream

#endif
