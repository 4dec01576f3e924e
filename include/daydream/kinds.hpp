// Defines the four built-in task kinds and kind_traits, the hook for user-defined kinds.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_KINDS_HPP
#define DAYDREAM_KINDS_HPP

#include <daydream/detail/traits.hpp>
#include <daydream/fwd.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace daydream {

/// What a CPU task does; passes use it to find launches and synchronizations.
enum class cpu_call : std::uint8_t {
  op,       ///< framework operator / annotation time (the default)
  launch,   ///< a runtime call that launches GPU work (cudaLaunchKernel, hipLaunchKernel, ...)
  memcpy,   ///< a runtime call that enqueues a copy or memset
  sync,     ///< a runtime call that waits for the GPU
  runtime,  ///< any other runtime/driver call
};

/// Whether a CPU task is a slice of a PyTorch DataLoader batch fetch: named by the
/// profiler's annotation `enumerate(DataLoader)#<iterator>.__next__`.
inline constexpr bool is_dataloader_fetch(std::string_view name) noexcept {
  return name.starts_with("enumerate(DataLoader)") && name.ends_with("__next__");
}

/// The name of a cpu_call value ("launch").
inline constexpr std::string_view to_string(cpu_call c) noexcept {
  switch (c) {
  case cpu_call::op: return "op";
  case cpu_call::launch: return "launch";
  case cpu_call::memcpy: return "memcpy";
  case cpu_call::sync: return "sync";
  case cpu_call::runtime: return "runtime";
  }
  return "?";
}

/// Time on a CPU thread: a framework op, a runtime call, or the thread's own work.
/// Runs on a resource_kind::cpu_thread; has no byte count (set_bytes refuses it).
///
///     g.add(daydream::cpu_task{.call = daydream::cpu_call::launch, .correlation = 42},
///           {.name = "cudaLaunchKernel", .duration = 5'000, .resource = thread});
struct cpu_task {
  static constexpr std::string_view name = "cpu_task";
  static constexpr resource_kind resource = resource_kind::cpu_thread;
  cpu_call call = cpu_call::op;
  name_id op = no_name;            ///< innermost framework operator around this time slice
  std::uint64_t correlation = 0;   ///< runtime correlation id (launches, copies), else 0
  /// Bytes of the tensors of the enclosing operator, from the recorded input shapes and
  /// dtypes (AccumulateGrad: the gradient); 0 when the trace recorded no shapes.
  std::uint64_t tensor_bytes = 0;
  friend constexpr bool operator==(const cpu_task&, const cpu_task&) = default;
};

/// How a kernel was launched, as the profiler recorded it (Kineto's kernel `args`): what
/// occupancy and wave counts are computed from. 16 bytes, kept in the kernel's payload.
/// `blocks == 0` when the trace gives no grid; `has_resources()` is false when it gives
/// no `registers per thread` (ROCm traces carry grid and block only).
struct kernel_launch {
  std::uint32_t blocks = 0;        ///< grid x * y * z (saturated at 2^32 - 1)
  std::uint32_t shared_memory = 0; ///< `shared memory`: bytes per block, static plus dynamic
  std::uint16_t threads = 0;       ///< block x * y * z
  std::uint8_t registers = 0;      ///< `registers per thread`
  /// `est. achieved occupancy %` (0 to 100), or 255 when the trace gives none.
  std::uint8_t occupancy_pct = 255;
  std::uint8_t recorded = 0;       ///< bit 0: registers and shared memory were recorded
  /// Whether the grid and the block are known.
  constexpr bool has_shape() const noexcept { return blocks > 0 && threads > 0; }
  /// Whether registers per thread and shared memory were recorded too.
  constexpr bool has_resources() const noexcept { return has_shape() && (recorded & 1) != 0; }
  friend constexpr bool operator==(const kernel_launch&, const kernel_launch&) = default;
};

/// A GPU kernel on a stream (a resource_kind::gpu_stream).
///
///     g.add(daydream::gpu_kernel{.device = 0, .stream = 7, .correlation = 42},
///           {.name = "volta_sgemm_128x64_nn", .duration = 31'000, .resource = stream});
struct gpu_kernel {
  static constexpr std::string_view name = "gpu_kernel";
  static constexpr resource_kind resource = resource_kind::gpu_stream;
  std::int32_t device = 0;         ///< GPU index
  std::int32_t stream = 0;         ///< CUDA stream id in the trace
  std::uint64_t correlation = 0;   ///< correlation id of the launching runtime call, else 0
  /// Bytes the kernel touches when known, else 0: a memset's size, or the kernel's share
  /// of its operator's tensors read and written (from recorded shapes, with `flops`).
  std::uint64_t bytes = 0;
  kernel_launch launch{};          ///< grid, block, registers, shared memory when recorded
  /// Floating-point operations: the kernel's share of its operator's FLOPs, computed at
  /// ingest from the recorded shapes of GEMMs, convolutions and attention; 0 when unknown.
  std::uint64_t flops = 0;
  friend constexpr bool operator==(const gpu_kernel&, const gpu_kernel&) = default;
};

/// Direction of a memory copy.
enum class copy_kind : std::uint8_t { h2d, d2h, d2d, peer, memset };

/// The name of a copy_kind value ("h2d").
inline constexpr std::string_view to_string(copy_kind c) noexcept {
  switch (c) {
  case copy_kind::h2d: return "h2d";
  case copy_kind::d2h: return "d2h";
  case copy_kind::d2d: return "d2d";
  case copy_kind::peer: return "peer";
  case copy_kind::memset: return "memset";
  }
  return "?";
}

/// A memory copy (or memset) on a copy engine or a stream.
///
///     g.add(daydream::memcpy_task{.direction = daydream::copy_kind::h2d, .bytes = 1 << 20},
///           {.name = "Memcpy HtoD (Pageable -> Device)", .duration = 90'000, .resource = ce});
struct memcpy_task {
  static constexpr std::string_view name = "memcpy_task";
  static constexpr resource_kind resource = resource_kind::copy_engine;
  copy_kind direction = copy_kind::d2d; ///< what is copied where
  std::uint64_t bytes = 0;              ///< bytes copied (set)
  std::int32_t device = 0;              ///< GPU index
  std::int32_t stream = 0;              ///< CUDA stream id in the trace
  std::uint64_t correlation = 0;        ///< correlation id of the runtime call, else 0
  friend constexpr bool operator==(const memcpy_task&, const memcpy_task&) = default;
};

/// The operation a communication task performs.
enum class comm_op : std::uint8_t {
  all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all,
  send, recv, push, pull, other
};

/// The name of a comm_op value ("all_reduce").
inline constexpr std::string_view to_string(comm_op c) noexcept {
  switch (c) {
  case comm_op::all_reduce: return "all_reduce";
  case comm_op::reduce_scatter: return "reduce_scatter";
  case comm_op::all_gather: return "all_gather";
  case comm_op::broadcast: return "broadcast";
  case comm_op::reduce: return "reduce";
  case comm_op::all_to_all: return "all_to_all";
  case comm_op::send: return "send";
  case comm_op::recv: return "recv";
  case comm_op::push: return "push";
  case comm_op::pull: return "pull";
  case comm_op::other: return "other";
  }
  return "?";
}

/// A collective or point-to-point transfer on a channel or link. On a link with
/// sharing::fair, concurrent transfers split its bandwidth in replay.
///
///     g.add(daydream::comm_task{.op = daydream::comm_op::all_reduce, .bytes = 25 << 20,
///                               .group_size = 16},
///           {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .duration = 2'000'000,
///            .resource = link});
struct comm_task {
  static constexpr std::string_view name = "comm_task";
  static constexpr resource_kind resource = resource_kind::link;
  comm_op op = comm_op::other;
  std::uint64_t bytes = 0;       ///< payload per worker (message size)
  std::uint32_t group_size = 1;  ///< participants, when known
  std::int32_t device = 0;       ///< GPU index
  std::int32_t stream = 0;       ///< CUDA stream id of the communication kernel, if any
  std::uint64_t correlation = 0; ///< correlation id of the launching call, else 0
  /// The process group as the trace names it (`Process Group Name`), empty when unknown.
  std::string group{};
  /// The global ranks of the process group (`Process Group Ranks`), empty when unknown.
  std::vector<std::int32_t> group_ranks{};
  friend bool operator==(const comm_task&, const comm_task&) = default;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
template <class K> constexpr std::string_view kind_name_or() {
  if constexpr (has_constant_name<K>) return std::string_view(K::name);
  else return "user_kind";
}
template <class K> constexpr resource_kind kind_resource_or() {
  if constexpr (has_constant_member_resource<K, resource_kind>) return K::resource;
  else return resource_kind::other;
}
} // namespace detail
//! @endcond

/// What daydream knows about a task kind. Defaults come from the kind's members
/// (`name`, `resource`, a `bytes` data member); specialize it for a kind you cannot edit.
///
///     struct decode_task { static constexpr std::string_view name = "decode"; std::uint64_t bytes; };
///     static_assert(daydream::kind_traits<decode_task>::has_bytes);
template <class Kind> struct kind_traits {
  /// Shown in diagnostics, formatting and exported traces ("gpu_kernel").
  static constexpr std::string_view name = detail::kind_name_or<Kind>();
  /// The kind of resource tasks of this kind usually run on.
  static constexpr resource_kind resource = detail::kind_resource_or<Kind>();
  /// Whether the kind has a byte count that set_bytes() can change.
  static constexpr bool has_bytes = requires(Kind k) { k.bytes = std::uint64_t{}; };
};

/// Whether a task of a kind whose kind_traits<K>::resource is `of_kind` may run on a
/// resource of kind `r`: CPU work (cpu_thread) runs on CPU threads, GPU-side work
/// (gpu_stream, copy_engine, link) anywhere but on a CPU thread; `other` on either side
/// fits anything. A memcpy_task on a stream and a comm_task on a stream (as traced) fit.
inline constexpr bool resource_fits(resource_kind of_kind, resource_kind r) noexcept {
  return of_kind == resource_kind::other || r == resource_kind::other ||
         is_cpu(of_kind) == is_cpu(r);
}

/// Whether a launch dependency may join a task of a kind that runs on `from` to one of a
/// kind that runs on `to`: the CPU launches GPU-side work, so `from` is not GPU-side and
/// `to` not a CPU thread (`other` fits anything).
inline constexpr bool launch_fits(resource_kind from, resource_kind to) noexcept {
  return (from == resource_kind::other || is_cpu(from)) && !is_cpu(to);
}

/// A type usable as a task kind: a default-constructible, copyable class. The optional
/// members `name`, `resource` and `bytes` are read through kind_traits.
///
///     struct decode_task { std::uint64_t bytes = 0; };
///     static_assert(daydream::task_kind<decode_task>);
///     using my_graph = daydream::basic_graph<daydream::cpu_task, decode_task>;
template <class K>
concept task_kind = std::is_class_v<K> && std::is_copy_constructible_v<K> &&
                    std::is_default_constructible_v<K>;

} // namespace daydream

#endif
