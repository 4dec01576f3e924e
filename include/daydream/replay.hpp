// Defines replay() and replay_into(): Daydream's Algorithm 1 over a graph, with a selection policy and replay options.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REPLAY_HPP
#define DAYDREAM_REPLAY_HPP

#include <daydream/detail/replay_kernel.hpp>
#include <daydream/detail/replay_queue.hpp>
#include <daydream/fwd.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/task.hpp>

namespace daydream {

/// replay() into a result the caller owns and reuses: `out` gets exactly what
/// replay(g, policy, options) returns, every field, and its arrays keep their memory
/// when they have room for `g`'s tasks (no allocation, no page faults, no clearing of
/// entries the replay writes anyway). What was in `out` before does not matter (it may
/// come from another graph, larger or smaller). For a loop that replays many times, as
/// a search does: the arrays of a fresh result cost about as much as the replay itself
/// on a chained graph (22 bytes per task, allocated and zero-filled). Returns `out`.
/// If the replay throws, `out` is left valid but unspecified.
///
///     daydream::replay_result r;
///     for (const auto& candidate : candidates) {
///       daydream::replay_into(candidate, r);  // reuses r's arrays
///       best = std::min(best, r.makespan);
///     }
template <class Graph, class Policy = trace_order_policy>
replay_result& replay_into(const Graph& g, replay_result& out, const Policy& policy = {},
                           const replay_options& options = {}) {
  static_assert(selection_policy<Policy, Graph>,
                "daydream::replay_into(g, out, policy): the policy must have a member "
                "`priority_key key(const Graph&, task_id, time_ns ready) const`.");
  if constexpr (selection_policy<Policy, Graph>) {
    auto policy_key = [&](task_id t, time_ns ready) { return policy.key(g, t, ready); };
    const detail::key_ref key(policy_key);
    detail::replay_flat_into(g.core(), key, options, out);
  }
  return out;
}

/// Replays `g` and predicts when every task runs.
///
/// Daydream's Algorithm 1 as a discrete-event simulation: a task becomes ready when all
/// its dependencies have finished; an exclusive resource (thread, stream) runs one ready
/// task at a time, chosen by `policy`, and stays idle for the task's `gap` after it, so
/// CPU gaps of the trace are preserved; a fair-share resource (a link) runs all of its
/// ready tasks at once, splitting its capacity evenly. Deterministic: equal inputs give
/// equal results. Throws daydream::error naming the tasks of a cycle if there is one.
/// `options` adds effects beyond the graph (replay_options; by default none).
/// Complexity: O(V + E + F log F) when every exclusive resource is a chain of
/// dependencies (as a trace's threads and streams are) and there is no overlap slowdown,
/// F being the transfers on fair-share resources (one topological pass: no policy ever
/// chooses); else O(V log R + E) for R resources (with an overlap slowdown, plus the
/// re-timing of the running kernels of a node when its transfers start and end). The
/// policy's key is computed only for tasks that compete for a busy resource. Both paths
/// give the same result.
///
///     auto r = daydream::replay(g);                          // trace order
///     auto p = daydream::replay(g, daydream::priority_policy{});
///     auto s = daydream::replay(g, daydream::trace_order_policy{}, {.overlap_slowdown = 1.2});
template <class Graph, class Policy = trace_order_policy>
replay_result replay(const Graph& g, const Policy& policy = {}, const replay_options& options = {}) {
  static_assert(selection_policy<Policy, Graph>,
                "daydream::replay(g, policy): the policy must have a member "
                "`priority_key key(const Graph&, task_id, time_ns ready) const`.");
  replay_result r;
  if constexpr (selection_policy<Policy, Graph>) replay_into(g, r, policy, options);
  return r; // (without a key the assertion above fails first)
}

} // namespace daydream

#endif
