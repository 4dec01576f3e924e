// Defines the kinds of dependency between tasks and masks to filter them.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DEPENDENCY_HPP
#define DAYDREAM_DEPENDENCY_HPP

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace daydream {

/// Why a task waits for another one.
enum class dep_kind : std::uint8_t {
  cpu_order,    ///< program order on a CPU thread
  stream_order, ///< program order on a GPU stream (or any other exclusive resource)
  launch,       ///< a CPU call launches GPU work (correlation id)
  sync,         ///< a CPU call waits for GPU work (device/stream/event sync, blocking copy)
  comm,         ///< communication: gradient ready -> collective -> consumer
  data,         ///< data between layers or iterations
  control,      ///< anything else a pass needs to force
};
inline constexpr int dep_kind_count = 7;

inline constexpr std::string_view to_string(dep_kind k) noexcept {
  constexpr std::string_view names[] = {"cpu_order", "stream_order", "launch", "sync",
                                        "comm",      "data",         "control"};
  auto i = static_cast<unsigned>(k);
  return i < dep_kind_count ? names[i] : std::string_view("?");
}

/// A set of dependency kinds, for queries that filter edges.
struct dep_mask {
  std::uint8_t bits = 0;
  constexpr dep_mask() = default;
  constexpr dep_mask(dep_kind k) noexcept : bits(std::uint8_t(1u << unsigned(k))) {} // NOLINT
  constexpr dep_mask(std::initializer_list<dep_kind> ks) noexcept {
    for (auto k : ks) bits |= std::uint8_t(1u << unsigned(k));
  }
  constexpr bool contains(dep_kind k) const noexcept { return (bits >> unsigned(k)) & 1u; }
  friend constexpr dep_mask operator|(dep_mask a, dep_mask b) noexcept {
    dep_mask m; m.bits = std::uint8_t(a.bits | b.bits); return m;
  }
  static constexpr dep_mask all() noexcept { dep_mask m; m.bits = 0x7f; return m; }
  static constexpr dep_mask order() noexcept { return {dep_kind::cpu_order, dep_kind::stream_order}; }
};

} // namespace daydream

#endif
