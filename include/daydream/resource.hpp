// Defines execution resources: CPU threads, GPU streams, copy engines and links.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_RESOURCE_HPP
#define DAYDREAM_RESOURCE_HPP

#include <daydream/task.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream {

/// What an execution resource is. Program order on a cpu_thread is dep_kind::cpu_order,
/// on every other kind dep_kind::stream_order.
enum class resource_kind : std::uint8_t {
  cpu_thread,  ///< a CPU thread of the framework
  gpu_stream,  ///< a GPU stream (kernels run one after another)
  copy_engine, ///< a DMA copy engine
  link,        ///< a network link or channel (often sharing::fair)
  other,       ///< anything a user models
};

/// The name of a resource_kind value ("gpu_stream").
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

/// The name of a sharing value ("fair").
inline constexpr std::string_view to_string(sharing s) noexcept {
  return s == sharing::fair ? "fair" : "exclusive";
}

/// An execution resource, added with basic_graph::add_resource.
///
///     g.add_resource({"thread 4242", daydream::resource_kind::cpu_thread});
///     g.add_resource({"nic0", daydream::resource_kind::link, daydream::sharing::fair,
///                     /*node*/ 0, /*device*/ -1, /*bandwidth*/ 25e9 / 8});
struct resource {
  std::string name;                          ///< for people: "thread 4242", "stream 7"
  resource_kind kind = resource_kind::other; ///< what it is
  sharing share = sharing::exclusive;        ///< how its tasks share it in replay
  std::int32_t node = 0;   ///< the worker (rank, process) it belongs to
  std::int32_t device = -1;///< the GPU index, or -1
  /// Bytes per second, for links and copy engines. Informative: cost models read it to
  /// turn bytes into durations, the replay does not.
  double bandwidth = 0;
};

/// Whether a resource of kind `k` is a CPU thread (its program order is cpu_order).
inline constexpr bool is_cpu(resource_kind k) noexcept { return k == resource_kind::cpu_thread; }

} // namespace daydream

#endif
