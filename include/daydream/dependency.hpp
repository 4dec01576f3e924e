// Defines dependencies between tasks: their kinds, masks to filter them, and the edge type.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DEPENDENCY_HPP
#define DAYDREAM_DEPENDENCY_HPP

#include <daydream/task.hpp>

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace daydream {

/// Why a task waits for another one. Every edge carries one; the replay treats them
/// alike (a task starts after all its predecessors end), queries and the critical path
/// tell them apart.
enum class dep_kind : std::uint8_t {
  cpu_order,    ///< program order on a CPU thread
  stream_order, ///< program order on a GPU stream (or any other exclusive resource)
  launch,       ///< a CPU call launches GPU work (correlation id)
  sync,         ///< a CPU call waits for GPU work (device/stream/event sync, blocking copy)
  comm,         ///< communication: gradient ready -> collective -> consumer
  data,         ///< data between layers or iterations
  control,      ///< anything else a pass needs to force
};
/// Number of dep_kind values.
inline constexpr int dep_kind_count = 7;

/// The name of a dependency kind ("launch"); "?" for a value out of range.
inline constexpr std::string_view to_string(dep_kind k) noexcept {
  constexpr std::string_view names[] = {"cpu_order", "stream_order", "launch", "sync",
                                        "comm",      "data",         "control"};
  auto i = static_cast<unsigned>(k);
  return i < dep_kind_count ? names[i] : std::string_view("?");
}

/// A set of dependency kinds, for queries that filter edges.
///
///     daydream::dep_mask m = {daydream::dep_kind::launch, daydream::dep_kind::sync};
///     for (auto d : g.successors(t)) if (m.contains(d.kind)) ...;
struct dep_mask {
  std::uint8_t bits = 0; ///< bit `k` set: kind `k` is in the set
  /// The empty set.
  constexpr dep_mask() = default;
  /// The set of one kind.
  constexpr dep_mask(dep_kind k) noexcept : bits(std::uint8_t(1u << unsigned(k))) {} // NOLINT
  /// The set of the given kinds.
  constexpr dep_mask(std::initializer_list<dep_kind> ks) noexcept {
    for (auto k : ks) bits |= std::uint8_t(1u << unsigned(k));
  }
  /// Whether kind `k` is in the set.
  constexpr bool contains(dep_kind k) const noexcept { return (bits >> unsigned(k)) & 1u; }
  /// Whether the set is empty.
  constexpr bool empty() const noexcept { return bits == 0; }
  /// The union of two sets.
  friend constexpr dep_mask operator|(dep_mask a, dep_mask b) noexcept {
    dep_mask m; m.bits = std::uint8_t(a.bits | b.bits); return m;
  }
  /// Whether two sets are equal.
  friend constexpr bool operator==(dep_mask, dep_mask) = default;
  /// Every kind.
  static constexpr dep_mask all() noexcept { dep_mask m; m.bits = 0x7f; return m; }
  /// The program-order kinds: cpu_order and stream_order.
  static constexpr dep_mask order() noexcept { return {dep_kind::cpu_order, dep_kind::stream_order}; }
};

/// One dependency: `to` waits for `from`, for the reason `kind`. What successors() and
/// predecessors() yield, and what insert() takes (no_task on one side: the new task).
struct dependency {
  task_id from = no_task; ///< the task waited for
  task_id to = no_task;   ///< the waiting task
  dep_kind kind = dep_kind::control;
  friend constexpr bool operator==(const dependency&, const dependency&) = default;
};

} // namespace daydream

#endif
