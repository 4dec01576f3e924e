// Defines the event tables of a decoded Kineto trace (io::detail::decoded_trace): categories, CPU and GPU events, flows, memory and sync records.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_EVENTS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_EVENTS_HPP

#include <daydream/kinds.hpp>
#include <daydream/recorded_device.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::io::detail {
/// The categories of Kineto events daydream understands (current and legacy names).
enum class ecat : std::uint8_t {
  other,             ///< a category daydream does not model
  cpu_op,            ///< "cpu_op", legacy "Operator"
  user_annotation,   ///< "user_annotation" (record_function ranges, ProfilerStep#N)
  python_function,   ///< "python_function" (Python frames, `nn.Module: ...`)
  runtime,           ///< "cuda_runtime", legacy "Runtime" (CUDA and HIP runtime calls)
  driver,            ///< "cuda_driver" (cuLaunchKernel, ...)
  kernel,            ///< "kernel", legacy "Kernel"
  memcpy,            ///< "gpu_memcpy", legacy "Memcpy"
  memset,            ///< "gpu_memset", legacy "Memset"
  cuda_sync,         ///< "cuda_sync" (CUPTI synchronization records)
  gpu_annotation,    ///< "gpu_user_annotation"
  launch_flow,       ///< "ac2g", "async_cpu_to_gpu", legacy "async"
  fwdbwd_flow,       ///< "fwdbwd"
  cpu_instant,       ///< "cpu_instant_event" ([memory] and other instants)
  trace_span,        ///< "Trace" (the profiler's own span)
};

/// The category of a `cat` string.
inline ecat classify_category(std::string_view c) noexcept {
  switch (c.size()) {
  case 4: if (c == "ac2g") return ecat::launch_flow; break;
  case 5:
    if (c == "async") return ecat::launch_flow;
    if (c == "Trace") return ecat::trace_span;
    break;
  case 6:
    if (c == "cpu_op") return ecat::cpu_op;
    if (c == "kernel" || c == "Kernel") return ecat::kernel;
    if (c == "Memset") return ecat::memset;
    if (c == "Memcpy") return ecat::memcpy;
    if (c == "fwdbwd") return ecat::fwdbwd_flow;
    break;
  case 7: if (c == "Runtime") return ecat::runtime; break;
  case 8: if (c == "Operator") return ecat::cpu_op; break;
  case 9: if (c == "cuda_sync") return ecat::cuda_sync; break;
  case 10:
    if (c == "gpu_memcpy") return ecat::memcpy;
    if (c == "gpu_memset") return ecat::memset;
    break;
  case 11: if (c == "cuda_driver") return ecat::driver; break;
  case 12: if (c == "cuda_runtime") return ecat::runtime; break;
  case 15:
    if (c == "user_annotation") return ecat::user_annotation;
    if (c == "python_function") return ecat::python_function;
    break;
  case 16: if (c == "async_cpu_to_gpu") return ecat::launch_flow; break;
  case 17: if (c == "cpu_instant_event") return ecat::cpu_instant; break;
  case 19: if (c == "gpu_user_annotation") return ecat::gpu_annotation; break;
  default: break;
  }
  return ecat::other;
}

/// Whether events of category `c` run on a CPU thread.
inline constexpr bool is_cpu_category(ecat c) noexcept {
  return c == ecat::cpu_op || c == ecat::user_annotation || c == ecat::python_function ||
         c == ecat::runtime || c == ecat::driver;
}
/// Whether events of category `c` run on a GPU stream.
inline constexpr bool is_gpu_category(ecat c) noexcept {
  return c == ecat::kernel || c == ecat::memcpy || c == ecat::memset;
}

/// A `pid`/`tid` pair. Numbers are kept as they are; strings ("Spans") are mapped to
/// ids far below any real one.
struct pidtid {
  std::int64_t pid = 0, tid = 0;
  friend bool operator==(const pidtid&, const pidtid&) = default;
};
//! @cond DAYDREAM_INTERNAL
struct pidtid_hash {
  std::size_t operator()(const pidtid& k) const noexcept {
    // Unsigned: string ids are near INT64_MIN / 2, where the signed product overflows.
    return std::hash<std::uint64_t>{}(std::uint64_t(k.pid) * 1000003u ^ std::uint64_t(k.tid));
  }
};
//! @endcond

/// The strings the event tables keep (names, argument texts, thread labels), each
/// stored once: the decoder reads the JSON a window at a time and reuses the window, so
/// what outlives an event is copied here. Views returned stay valid as long as the pool
/// lives, also when it is moved (the text lives in chunks that never move).
class string_pool {
public:
  string_pool() = default;
  /// A moved-from pool is empty (and stores nothing in the chunks it gave away).
  string_pool(string_pool&& o) noexcept
      : chunks_(std::move(o.chunks_)), cur_(std::exchange(o.cur_, nullptr)), left_(std::exchange(o.left_, 0)),
        bytes_(std::exchange(o.bytes_, 0)), used_(std::exchange(o.used_, 0)), slots_(std::move(o.slots_)) {
    o.chunks_.clear();
    o.slots_.clear();
  }
  string_pool& operator=(string_pool&& o) noexcept {
    if (this != &o) {
      string_pool t(std::move(o));
      swap(t);
    }
    return *this;
  }
  /// A copy shares the text (so views taken from either stay valid while either lives)
  /// and stores what it interns later in chunks of its own.
  string_pool(const string_pool& o) : chunks_(o.chunks_), bytes_(o.bytes_), used_(o.used_), slots_(o.slots_) {}
  string_pool& operator=(const string_pool& o) {
    if (this != &o) *this = string_pool(o);
    return *this;
  }

  /// The pooled copy of `s` (the same view for the same text).
  std::string_view intern(std::string_view s) {
    if (s.empty()) return {};
    const std::size_t h = std::hash<std::string_view>{}(s);
    if (used_ * 2 >= slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      auto& e = slots_[i];
      if (e.text.data() == nullptr) {
        e = {store(s), h};
        ++used_;
        return e.text;
      }
      if (e.hash == h && e.text == s) return e.text;
    }
  }
  /// Distinct strings held.
  std::size_t size() const noexcept { return used_; }
  /// Bytes of text held (chunks allocated).
  std::size_t bytes() const noexcept { return bytes_; }

  /// Takes over the memory of `o`: its views stay valid as long as this pool lives. Its
  /// strings are not indexed here (interning one of them again stores another copy).
  void adopt(string_pool&& o) {
    chunks_.insert(chunks_.end(), std::make_move_iterator(o.chunks_.begin()), std::make_move_iterator(o.chunks_.end()));
    bytes_ += o.bytes_;
    o = string_pool();
  }

private:
  struct slot { std::string_view text; std::size_t hash = 0; };
  void swap(string_pool& o) noexcept {
    std::swap(chunks_, o.chunks_);
    std::swap(cur_, o.cur_);
    std::swap(left_, o.left_);
    std::swap(bytes_, o.bytes_);
    std::swap(used_, o.used_);
    std::swap(slots_, o.slots_);
  }
  std::string_view store(std::string_view s) {
    if (s.size() > left_) {
      const std::size_t n = s.size() > chunk / 4 ? s.size() : chunk;
      chunks_.push_back(std::shared_ptr<char[]>(new char[n]));
      bytes_ += n;
      if (n != chunk) { // a long string gets a chunk of its own; the current one goes on
        std::memcpy(chunks_.back().get(), s.data(), s.size());
        return {chunks_.back().get(), s.size()};
      }
      cur_ = chunks_.back().get();
      left_ = n;
    }
    std::memcpy(cur_, s.data(), s.size());
    std::string_view out(cur_, s.size());
    cur_ += s.size();
    left_ -= s.size();
    return out;
  }
  void grow() {
    std::vector<slot> old(slots_.empty() ? 256 : slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (auto& e : old) {
      if (e.text.data() == nullptr) continue;
      std::size_t i = e.hash & mask;
      while (slots_[i].text.data() != nullptr) i = (i + 1) & mask;
      slots_[i] = e;
    }
  }
  static constexpr std::size_t chunk = 64 * 1024;
  std::vector<std::shared_ptr<char[]>> chunks_;
  char* cur_ = nullptr;
  std::size_t left_ = 0, bytes_ = 0, used_ = 0;
  std::vector<slot> slots_;
};

/// No entry (in op_meta and similar side tables).
inline constexpr std::uint32_t no_index = std::numeric_limits<std::uint32_t>::max();

/// An `X` event on a CPU thread.
struct cpu_event {
  time_ns ts = 0, dur = 0;            ///< nanoseconds
  std::string_view name;
  std::uint32_t index = 0;            ///< position in traceEvents
  std::uint32_t thread = 0;           ///< index into decoded_trace::threads
  std::int64_t correlation = -1;      ///< runtime correlation id, -1 if none
  std::int64_t seq = -1;              ///< autograd sequence number, -1 if none
  std::uint32_t meta = no_index;      ///< index into decoded_trace::metas
  ecat cat = ecat::other;
};

/// An `X` event on a GPU stream: a kernel, copy or memset.
struct gpu_event {
  time_ns ts = 0, dur = 0;
  std::string_view name;
  std::uint32_t index = 0;
  std::int32_t device = 0, stream = 0;
  std::int64_t correlation = -1;
  std::uint64_t bytes = 0;
  std::uint32_t meta = no_index;
  ecat cat = ecat::other;
  kernel_launch launch{}; ///< a kernel's grid, block and resources
};

/// A flow event (`s`, `f` or `t`).
struct flow_event {
  time_ns ts = 0;
  std::int64_t id = 0;
  std::uint32_t index = 0;
  pidtid where;
  std::int64_t stream = 0;  ///< `tid` read as a GPU stream ("stream 7" -> 7)
  char ph = 's';
  ecat cat = ecat::launch_flow;
};

/// A `[memory]` instant event.
struct memory_event {
  time_ns ts = 0;
  std::int64_t bytes = 0, total = -1;
  std::uint32_t index = 0, thread = 0;
  std::int32_t device_type = -1, device_id = -1;
};

/// A `cuda_sync` record.
struct sync_event {
  time_ns ts = 0, dur = 0;
  std::uint32_t index = 0;
  std::int64_t correlation = -1, stream = -1, wait_stream = -1, record_correlation = -1;
  std::int32_t device = 0;
  std::string_view kind;
};

/// Arguments of operators and collectives, kept only for events that carry them.
struct op_meta {
  std::string_view input_dims, input_types; ///< raw JSON text
  std::string_view collective, dtype;
  std::int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  std::string_view pg_name, pg_ranks; ///< process group of a collective: name, ranks ("[0, 1]")
  std::string_view concrete_inputs;   ///< raw JSON text of `Concrete Inputs`, kept for convolutions only
};

/// Everything decode_kineto keeps of a trace.
struct decoded_trace {
  std::vector<cpu_event> cpu;
  std::vector<gpu_event> gpu;
  std::vector<flow_event> flows;
  std::vector<memory_event> memory;
  std::vector<sync_event> syncs;
  std::vector<op_meta> metas;
  std::vector<pidtid> threads;          ///< CPU threads, by first appearance
  /// Per thread: its `pid` and `tid` as the trace writes them (a number's digits or a
  /// string's contents; "0" when absent), for names shown to people.
  struct thread_label { std::string_view pid, tid; };
  std::vector<thread_label> thread_labels;
  std::size_t events = 0;               ///< elements of traceEvents
  std::map<std::string, std::size_t> ignored; ///< events not kept, by reason
  std::vector<std::string> gpus;        ///< deviceProperties names
  std::vector<recorded_device> devices; ///< deviceProperties, every field
  std::int32_t rank = -1, world_size = -1;
  std::string backend;
  /// Whether annotations name layers (as `nn.Module:` frames do): set for traces without
  /// PyTorch operators, whose NVTX ranges are the only names of the program's parts
  /// (Nsight Systems exports). A range that marks a step or a phase names no layer.
  bool annotation_layers = false;
  /// Every string the tables above point to (unescaped): never into the JSON text nor
  /// the parser, which can both go once decoding is done.
  string_pool strings;
};

} // namespace daydream::io::detail

#endif
