// Defines the vocabulary shared by every task: ids, time, phases and typed handles.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TASK_HPP
#define DAYDREAM_TASK_HPP

#include <compare>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

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
/// Handles are made by the graph (add(), as<K>(), for_each<K>(), visit()), so a handle
/// names a task of its kind. To turn a bare id into a handle, ask the graph:
/// `g.as<K>(t)` is empty when `t` is not of kind K. Code that has proved the kind some
/// other way may say so with `handle<K>::unchecked(t)`; accessors such as
/// basic_graph::payload() check the kind with DAYDREAM_ASSERT (on unless NDEBUG).
///
/// Lifetime: valid while the task is alive. remove() invalidates the handles of the
/// removed tasks only; compact() invalidates all handles. Every other primitive keeps
/// every handle valid.
///
///     daydream::handle<daydream::gpu_kernel> k = g.add(daydream::gpu_kernel{}, {...});
///     g.payload(k).stream = 13;      // typed access
///     daydream::scale_duration(g, k, 0.5); // works as a task_id
///     if (auto call = g.as<daydream::cpu_task>(t)) g.payload(call).call = ...;
template <class Kind> struct handle {
  /// The task's id (read it; to make a handle from an id, see as<K>() and unchecked()).
  task_id id = no_task;

  /// An empty handle.
  constexpr handle() noexcept = default;
  /// A handle of task `t`, whose kind the caller has proved to be `Kind` (prefer
  /// `g.as<Kind>(t)`, which checks). No check here: a wrong kind is caught by the
  /// accessors' DAYDREAM_ASSERT, or read out of bounds when assertions are off.
  static constexpr handle unchecked(task_id t) noexcept {
    handle h;
    h.id = t;
    return h;
  }
  /// Refused: a handle is not made from a bare id, whose kind nothing checked.
  template <class Id>
    requires std::is_integral_v<Id>
  explicit constexpr handle(Id) noexcept {
    static_assert(!std::is_integral_v<Id>,
                  "daydream::handle<K>{id}: a handle is not made from a bare id; use "
                  "g.as<K>(id) (empty if the task is not of kind K) or, where the kind is "
                  "proved, daydream::handle<K>::unchecked(id).");
  }

  /// Whether the handle names a task.
  constexpr explicit operator bool() const noexcept { return id != no_task; }
  /// The task's id.
  constexpr operator task_id() const noexcept { return id; } // NOLINT: handles are ids
  friend constexpr auto operator<=>(handle, handle) = default;
};

} // namespace daydream

#endif
