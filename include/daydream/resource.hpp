// Defines execution resources: CPU threads, GPU streams, copy engines and links.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_RESOURCE_HPP
#define DAYDREAM_RESOURCE_HPP

#include <daydream/task.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream {

enum class resource_kind : std::uint8_t { cpu_thread, gpu_stream, copy_engine, link, other };

inline constexpr std::string_view to_string(resource_kind k) noexcept {
  switch (k) {
  case resource_kind::cpu_thread: return "cpu_thread";
  case resource_kind::gpu_stream: return "gpu_stream";
  case resource_kind::copy_engine: return "copy_engine";
  case resource_kind::link: return "link";
  case resource_kind::other: return "other";
  }
  return "?";
}

/// How tasks share a resource during replay.
enum class sharing : std::uint8_t {
  exclusive, ///< one task at a time, in the order the selection policy picks (threads, streams)
  fair,      ///< all ready tasks run at once and split its capacity evenly (a network link)
};

/// An execution resource. `node` is the worker (rank / process) it belongs to,
/// `device` the GPU index or -1. `bandwidth` (bytes per second) is informative for
/// links and copy engines: cost models read it, the replay does not.
struct resource {
  std::string name;
  resource_kind kind = resource_kind::other;
  sharing share = sharing::exclusive;
  std::int32_t node = 0;
  std::int32_t device = -1;
  double bandwidth = 0;
};

/// The dependency kind that expresses program order on a resource of kind `k`.
inline constexpr bool is_cpu(resource_kind k) noexcept { return k == resource_kind::cpu_thread; }

} // namespace daydream

#endif
