// Defines how daydream reads Kineto event names: runtime call kinds, phase markers, collectives.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_NAMES_HPP
#define DAYDREAM_IO_DETAIL_KINETO_NAMES_HPP

#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <cstdint>
#include <string_view>

namespace daydream::io::detail {

inline bool contains(std::string_view s, std::string_view p) noexcept {
  return s.find(p) != std::string_view::npos;
}
inline bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.substr(0, p.size()) == p;
}
/// Case-insensitive search of an ASCII lower-case pattern.
inline bool icontains(std::string_view s, std::string_view lower) noexcept {
  if (lower.size() > s.size()) return false;
  for (std::size_t i = 0; i + lower.size() <= s.size(); ++i) {
    std::size_t k = 0;
    for (; k < lower.size(); ++k) {
      char c = s[i + k];
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      if (c != lower[k]) break;
    }
    if (k == lower.size()) return true;
  }
  return false;
}

/// What a CUDA / HIP runtime or driver call does to the timeline.
enum class call_semantics : std::uint8_t {
  plain,         ///< no GPU-visible effect (cudaGetDevice, cudaStreamIsCapturing, ...)
  launch,        ///< enqueues a kernel (cudaLaunchKernel, cuLaunchKernel, hipExtModuleLaunchKernel, cudaGraphLaunch)
  async_copy,    ///< enqueues a copy or memset without waiting (cudaMemcpyAsync, hipMemsetAsync)
  blocking_copy, ///< copies and waits for the copy (cudaMemcpy, hipMemcpy, hipMemcpyWithStream)
  device_sync,   ///< waits for every stream (cudaDeviceSynchronize, cuCtxSynchronize, cudaFree)
  stream_sync,   ///< waits for one stream (cudaStreamSynchronize)
  event_sync,    ///< waits for an event (cudaEventSynchronize)
  stream_wait,   ///< makes a stream wait for an event, host does not block (cudaStreamWaitEvent)
  event_record,  ///< records an event on a stream (cudaEventRecord)
};

/// The semantics of a runtime or driver call, from its name (CUDA runtime `cuda*`,
/// driver `cu*` and HIP `hip*` spellings alike).
inline call_semantics classify_call(std::string_view n) noexcept {
  if (contains(n, "Synchronize")) {
    if (contains(n, "DeviceSynchronize") || contains(n, "CtxSynchronize")) return call_semantics::device_sync;
    if (contains(n, "StreamSynchronize")) return call_semantics::stream_sync;
    if (contains(n, "EventSynchronize")) return call_semantics::event_sync;
    return call_semantics::device_sync;
  }
  if (contains(n, "StreamWaitEvent")) return call_semantics::stream_wait;
  if (contains(n, "EventRecord")) return call_semantics::event_record;
  if (contains(n, "Launch")) return call_semantics::launch;
  if (contains(n, "Memcpy") || contains(n, "Memset")) {
    if (contains(n, "Async")) return call_semantics::async_copy;
    // hipMemcpyWithStream blocks the host like cudaMemcpy; a plain memset does not
    if (contains(n, "Memset")) return call_semantics::async_copy;
    return call_semantics::blocking_copy;
  }
  // cudaFree / hipFree / cuMemFree synchronize the device before freeing.
  if ((contains(n, "Free")) && !contains(n, "Async") && !contains(n, "FreeArray") &&
      (starts_with(n, "cuda") || starts_with(n, "hip") || starts_with(n, "cuMem")))
    return call_semantics::device_sync;
  return call_semantics::plain;
}

/// The cpu_call of a runtime call with these semantics.
inline cpu_call call_kind(call_semantics s) noexcept {
  switch (s) {
  case call_semantics::launch: return cpu_call::launch;
  case call_semantics::async_copy:
  case call_semantics::blocking_copy: return cpu_call::memcpy;
  case call_semantics::device_sync:
  case call_semantics::stream_sync:
  case call_semantics::event_sync: return cpu_call::sync;
  default: return cpu_call::runtime;
  }
}

/// Phase markers: 0 none, else 1 + phase. The innermost marker around a slice wins.
inline std::uint8_t phase_mark(std::string_view name, bool is_op, bool is_python,
                               bool is_annotation) noexcept {
  auto mark = [](phase p) { return static_cast<std::uint8_t>(1 + static_cast<int>(p)); };
  // Cheap first-character tests first: this runs for every CPU event.
  if (name.empty()) return 0;
  const char c = name[0];
  if (c == 'O' && starts_with(name, "Optimizer.")) {
    if (starts_with(name, "Optimizer.step")) return mark(phase::weight_update);
    if (starts_with(name, "Optimizer.zero_grad")) return mark(phase::other);
  }
  if (c == 'e' && starts_with(name, "enumerate(DataLoader)")) return mark(phase::other);
  if (c == 'a' && starts_with(name, "autograd::engine::evaluate_function")) return mark(phase::backward);
  if (is_op && c != 'a' && contains(name, "Backward")) return mark(phase::backward); // aten:: ops never are
  if (is_python && c == 'n' && starts_with(name, "nn.Module:")) return mark(phase::forward);
  if (is_annotation && !starts_with(name, "ProfilerStep#")) {
    // Pipeline schedules name their work by pass: `attn(F)` forward, `mlp(B)` backward of
    // the activations, `mlp(W)` backward of the weights (zero-bubble schedules).
    if (name.size() > 3 && name[name.size() - 3] == '(' && name.back() == ')') {
      const char p = name[name.size() - 2];
      if (p == 'F') return mark(phase::forward);
      if (p == 'B' || p == 'W') return mark(phase::backward);
    }
    if (contains(name, "DataLoader")) return mark(phase::other);
    if (icontains(name, "zero_grad")) return mark(phase::other);
    if (icontains(name, "backward")) return mark(phase::backward);
    if (icontains(name, "optimizer")) return mark(phase::weight_update);
    if (icontains(name, "forward")) return mark(phase::forward);
  }
  return 0;
}

/// Whether an event starts a backward computation (its layer comes from the forward op).
inline bool is_backward_root(std::string_view name, bool is_op) noexcept {
  if (name.empty()) return false;
  if (name[0] == 'a') return starts_with(name, "autograd::engine::evaluate_function");
  return is_op && contains(name, "Backward");
}

/// Whether a kernel is communication: NCCL / RCCL / MSCCL(++) kernels, and the ones that
/// move data between GPUs without those libraries: DeepEP's dispatch and combine
/// (`deep_ep::intranode::dispatch`, `notify_dispatch`, `notify_combine`), the custom
/// all-reduces of inference engines (`cross_device_reduce_1stage`,
/// `oneShotAllReduceKernel`) and other kernels named for a collective. A Triton kernel
/// (`triton_poi_fused_all_reduce_0`: the copies around a functional collective) is not.
inline bool is_comm_kernel(std::string_view name) noexcept {
  if (icontains(name, "nccl") || icontains(name, "rccl") || icontains(name, "msccl") || icontains(name, "deep_ep") ||
      icontains(name, "notify_dispatch") || icontains(name, "notify_combine") || icontains(name, "cross_device_reduce"))
    return true;
  if (starts_with(name, "triton")) return false;
  return icontains(name, "allreduce") || icontains(name, "all_reduce") || icontains(name, "alltoall") ||
         icontains(name, "all_to_all") || icontains(name, "allgather") || icontains(name, "all_gather") ||
         icontains(name, "reducescatter") || icontains(name, "reduce_scatter");
}

/// The collective of a `Collective name` argument or a `nccl:` annotation suffix.
inline bool collective_from_name(std::string_view n, comm_op& out) noexcept {
  if (starts_with(n, "nccl:")) n.remove_prefix(5);
  if (starts_with(n, "c10d::")) n.remove_prefix(6);
  while (!n.empty() && n.front() == '_') n.remove_prefix(1);
  if (icontains(n, "reduce_scatter") || icontains(n, "reducescatter")) { out = comm_op::reduce_scatter; return true; }
  if (icontains(n, "all_reduce") || icontains(n, "allreduce")) { out = comm_op::all_reduce; return true; }
  if (icontains(n, "all_gather") || icontains(n, "allgather")) { out = comm_op::all_gather; return true; }
  if (icontains(n, "all_to_all") || icontains(n, "alltoall")) { out = comm_op::all_to_all; return true; }
  if (icontains(n, "broadcast")) { out = comm_op::broadcast; return true; }
  if (icontains(n, "reduce")) { out = comm_op::reduce; return true; }
  if (icontains(n, "send")) { out = comm_op::send; return true; }
  if (icontains(n, "recv")) { out = comm_op::recv; return true; }
  return false;
}

/// The collective of a NCCL kernel from its name (ncclKernel_AllReduce_RING_LL_Sum_float,
/// ncclDevKernel_AllGather_RING_LL, ...); comm_op::other for SendRecv and unknown ones.
inline comm_op collective_of_kernel(std::string_view n) noexcept {
  if (contains(n, "ReduceScatter")) return comm_op::reduce_scatter;
  if (contains(n, "AllReduce")) return comm_op::all_reduce;
  if (contains(n, "AllGather")) return comm_op::all_gather;
  if (contains(n, "Broadcast")) return comm_op::broadcast;
  if (contains(n, "Reduce")) return comm_op::reduce;
  if (contains(n, "SendRecv")) return comm_op::other;
  if (contains(n, "Send")) return comm_op::send;
  if (contains(n, "Recv")) return comm_op::recv;
  // Kernels of other libraries: DeepEP's dispatch and combine exchange tokens between
  // experts' GPUs (an all-to-all); a custom all-reduce names itself in lower case.
  if (icontains(n, "deep_ep") || icontains(n, "notify_dispatch") || icontains(n, "notify_combine"))
    return comm_op::all_to_all;
  if (icontains(n, "cross_device_reduce")) return comm_op::all_reduce;
  comm_op op = comm_op::other;
  collective_from_name(n, op);
  return op;
}

/// The direction of a copy from its Kineto name ("Memcpy HtoD (Pageable -> Device)").
inline copy_kind copy_direction(std::string_view n, bool memset) noexcept {
  if (memset) return copy_kind::memset;
  if (contains(n, "HtoD")) return copy_kind::h2d;
  if (contains(n, "DtoH")) return copy_kind::d2h;
  if (contains(n, "PtoP") || contains(n, "Peer")) return copy_kind::peer;
  return copy_kind::d2d;
}

/// Whether a copy's host side is pageable memory ("Memcpy HtoD (Pageable -> Device)"). A
/// copy from pageable memory is staged through pinned buffers by the calling thread, so
/// even cudaMemcpyAsync keeps the host busy for most of the copy.
inline bool copy_is_pageable(std::string_view n) noexcept { return contains(n, "Pageable"); }

/// Parses N of "ProfilerStep#N"; false if `name` is not a step marker.
inline bool profiler_step_number(std::string_view name, std::int32_t& n) noexcept {
  if (!starts_with(name, "ProfilerStep#")) return false;
  name.remove_prefix(13);
  if (name.empty()) return false;
  std::int64_t v = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
    if (v > 2000000000) return false;
  }
  n = static_cast<std::int32_t>(v);
  return true;
}

} // namespace daydream::io::detail

#endif
