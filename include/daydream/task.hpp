// Defines the vocabulary shared by every task: ids, time, phases and typed handles.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TASK_HPP
#define DAYDREAM_TASK_HPP

#include <compare>
#include <cstdint>
#include <limits>
#include <string_view>

namespace daydream {

/// Dense task id: an index into the graph's flat arrays. Stable until compact().
using task_id = std::uint32_t;
/// The id that names no task.
inline constexpr task_id no_task = std::numeric_limits<task_id>::max();

/// Time and durations, in integer nanoseconds.
using time_ns = std::int64_t;

/// Interned string id (task names, layer names). 0 is the empty string.
using name_id = std::uint32_t;
/// The id of the empty string.
inline constexpr name_id no_name = 0;

/// Index of an execution resource (CPU thread, GPU stream, copy engine, link).
using resource_id = std::uint32_t;
/// The id that names no resource: a task without one runs unconstrained in replay.
inline constexpr resource_id no_resource = std::numeric_limits<resource_id>::max();

/// Where in a training iteration a task belongs.
enum class phase : std::uint8_t {
  forward,       ///< forward pass
  backward,      ///< backward pass (gradients)
  weight_update, ///< optimizer step
  other,         ///< data loading, set-up, anything else
};

/// The name of a phase ("backward").
inline constexpr std::string_view to_string(phase p) noexcept {
  switch (p) {
  case phase::forward: return "forward";
  case phase::backward: return "backward";
  case phase::weight_update: return "weight_update";
  case phase::other: return "other";
  }
  return "?";
}

/// A typed handle to a task of kind `Kind`: a trivially copyable wrapper of its id that
/// converts to task_id, so it works wherever an id does. A default-constructed handle
/// is empty (false).
///
/// Lifetime: valid while the task is alive. remove() invalidates the handles of the
/// removed tasks only; compact() invalidates all handles. Every other primitive keeps
/// every handle valid.
///
///     daydream::handle<daydream::gpu_kernel> k = g.add(daydream::gpu_kernel{}, {...});
///     g.payload(k).stream = 13;      // typed access
///     daydream::scale_duration(g, k, 0.5); // works as a task_id
template <class Kind> struct handle {
  task_id id = no_task; ///< the task's id
  /// Whether the handle names a task.
  constexpr explicit operator bool() const noexcept { return id != no_task; }
  /// The task's id.
  constexpr operator task_id() const noexcept { return id; } // NOLINT: handles are ids
  friend constexpr auto operator<=>(handle, handle) = default;
};

} // namespace daydream

#endif
