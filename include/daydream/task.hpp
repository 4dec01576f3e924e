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
inline constexpr name_id no_name = 0;

/// Index of an execution resource (CPU thread, GPU stream, copy engine, link).
using resource_id = std::uint32_t;
inline constexpr resource_id no_resource = std::numeric_limits<resource_id>::max();

/// Where in a training iteration a task belongs.
enum class phase : std::uint8_t { forward, backward, weight_update, other };

inline constexpr std::string_view to_string(phase p) noexcept {
  switch (p) {
  case phase::forward: return "forward";
  case phase::backward: return "backward";
  case phase::weight_update: return "weight_update";
  case phase::other: return "other";
  }
  return "?";
}

/// A typed handle to a task of kind `Kind`: a trivially copyable wrapper of its id.
///
/// Lifetime: valid while the task is alive. remove() invalidates the handles of the
/// removed tasks only; compact() invalidates all handles. Every other primitive keeps
/// every handle valid.
template <class Kind> struct handle {
  task_id id = no_task;
  constexpr explicit operator bool() const noexcept { return id != no_task; }
  constexpr operator task_id() const noexcept { return id; } // NOLINT: handles are ids
  friend constexpr auto operator<=>(handle, handle) = default;
};

} // namespace daydream

#endif
