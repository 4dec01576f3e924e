// Defines the benchmark workloads: data-parallel training graphs of a real iteration's shape, from one GPU to a thousand workers.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_BENCH_WORKLOADS_HPP
#define DAYDREAM_BENCH_WORKLOADS_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::bench {

/// A small deterministic generator (splitmix64): equal seeds give equal graphs.
class rng {
public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi], in nanoseconds.
  time_ns between(time_ns lo, time_ns hi) {
    return lo + static_cast<time_ns>(uniform() * double(hi - lo + 1));
  }
  /// Log-normal with the given median: kernel durations of a real trace are heavy-tailed
  /// (the bundled ResNet-50 trace: median 28 us, mean 108 us).
  time_ns lognormal(double median, double sigma) {
    double z = (uniform() + uniform() + uniform() + uniform() - 2.0) * 1.7320508; // ~N(0,1)
    return std::max<time_ns>(1'000, static_cast<time_ns>(median * std::exp(sigma * z)));
  }

private:
  std::uint64_t s_;
};

/// The shape of a data-parallel training job (PyTorch DDP): what one iteration of one
/// worker looks like, and how many workers and iterations there are.
///
/// One iteration of one worker, as in a Kineto trace of a CNN:
/// - the main CPU thread copies the input batch to the GPU (cudaMemcpyAsync -> H2D copy
///   on the copy engine), then runs the forward pass: per layer, one framework operator
///   and `kernels_per_layer` cudaLaunchKernel calls, each launching a kernel on the
///   compute stream; CPU calls are separated by the gaps of the trace;
/// - `loss.backward()` hands over to the autograd thread, which runs the layers in
///   reverse with twice as many kernels each; when the gradients of a bucket are ready
///   it launches an all-reduce (a comm_task on the node's network link, shared fairly by
///   the node's workers, in program order on the worker's NCCL channel). The all-reduce
///   of a bucket also waits for the same bucket of the previous worker in the ring: the
///   workers are joined by communication, as in a global (dPRO) graph;
/// - the main thread waits for the backward pass, then launches one optimizer kernel
///   per bucket (each waits for its bucket's all-reduce), and synchronizes with the
///   stream at the end of the iteration (cudaStreamSynchronize: a sync dependency).
///
/// Forward operators allocate their activations and backward operators free them
/// (mem_delta) when `memory` is set. Durations are log-normal per kernel slot, with a
/// few percent of jitter per worker and iteration.
struct training_shape {
  std::uint32_t workers = 1;           ///< data-parallel workers, one GPU each
  std::uint32_t workers_per_node = 8;  ///< workers sharing one network link
  std::uint32_t iterations = 1;        ///< training iterations per worker
  std::uint32_t layers = 48;           ///< modules in the forward pass
  std::uint32_t kernels_per_layer = 3; ///< forward kernels per module (backward: twice as many)
  std::uint32_t buckets = 4;           ///< gradient buckets (all-reduces and optimizer kernels)
  bool memory = true;                  ///< record activation allocations (mem_delta)
  bool communication = true;           ///< all-reduce gradients between workers (when workers > 1)
  std::uint64_t seed = 1;

  /// Tasks of one iteration of one worker.
  std::size_t tasks_per_iteration() const {
    std::size_t per_layer = 2 + 6 * std::size_t(kernels_per_layer);
    return 6 + std::size_t(layers) * per_layer + 2 * std::size_t(buckets) +
           (workers > 1 && communication ? 2 * std::size_t(buckets) : 0);
  }
  /// Tasks of the whole graph.
  std::size_t tasks() const { return tasks_per_iteration() * iterations * workers; }
};

/// A shape of about `tasks` tasks (never fewer than one iteration): one worker up to
/// 10^4 tasks, then more workers as the graph grows (16 at 10^5, 128 at 10^6, 1024 at
/// 10^7 and beyond), each running as many iterations as fit.
inline training_shape shape_for(std::size_t tasks, std::uint32_t workers = 0) {
  training_shape s;
  if (workers == 0)
    workers = tasks <= 10'000 ? 1 : tasks <= 100'000 ? 16 : tasks <= 1'000'000 ? 128 : 1024;
  s.workers = workers;
  s.iterations = 1;
  const auto per = s.tasks_per_iteration() * workers;
  s.iterations = static_cast<std::uint32_t>(std::max<std::size_t>(1, (tasks + per / 2) / per));
  // Below one iteration per worker, shrink the model instead.
  if (per > tasks && workers == 1) {
    s.layers = static_cast<std::uint32_t>(
        std::max<std::size_t>(1, (tasks - std::min<std::size_t>(tasks, 14)) / (2 + 6 * s.kernels_per_layer)));
  }
  return s;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {

inline constexpr std::string_view forward_ops[] = {"aten::conv2d", "aten::batch_norm",
                                                   "aten::relu", "aten::linear"};
inline constexpr std::string_view backward_ops[] = {
    "ConvolutionBackward0", "NativeBatchNormBackward0", "ReluBackward0", "AddmmBackward0"};
inline constexpr std::string_view forward_kernels[] = {
    "volta_scudnn_128x64_relu_interior_nn_v1",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
    "void at::native::vectorized_elementwise_kernel<4, at::native::launch_clamp_scalar>",
    "volta_sgemm_128x64_nn"};
inline constexpr std::string_view backward_kernels[] = {
    "volta_scudnn_128x128_stridedB_splitK_small_nn_v1",
    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>",
    "void at::native::vectorized_elementwise_kernel<4, at::native::threshold_backward>",
    "volta_sgemm_64x64_nt"};

/// Emits the graph of a training_shape; see make_training_graph.
class training_builder {
public:
  training_builder(graph& g, const training_shape& s) : g_(g), s_(s) {}

  void build() {
    const auto W = s_.workers, I = s_.iterations, B = std::max(1u, s_.buckets);
    g_.reserve(s_.tasks());
    // About 1.5 dependencies per task: program order plus a launch edge per kernel.
    g_.core().edges.reserve(s_.tasks() * 3 / 2 + std::size_t(W) * I * B * 4);
    for (std::uint32_t l = 0; l < s_.layers; ++l) layer_names_.push_back("layer" + std::to_string(l));

    // The model: per (layer, kernel slot) a base duration, shared by every worker.
    rng model(s_.seed);
    const std::uint32_t K = s_.kernels_per_layer;
    for (std::uint32_t i = 0; i < s_.layers * K; ++i) {
      fwd_kernel_.push_back(model.lognormal(30'000, 0.9));
      bwd_kernel_.push_back(model.lognormal(45'000, 0.9));
      bwd_kernel_.push_back(model.lognormal(40'000, 0.9));
    }
    for (std::uint32_t l = 0; l < s_.layers; ++l) activation_.push_back(std::int64_t(1 + model.next() % 48) << 20);

    const std::uint32_t nodes = (W + s_.workers_per_node - 1) / s_.workers_per_node;
    for (std::uint32_t n = 0; n < nodes && comm(); ++n)
      links_.push_back(g_.add_resource({"node" + std::to_string(n) + "/nic", resource_kind::link,
                                        sharing::fair, std::int32_t(n), -1, 100e9 / 8}));
    ready_.assign(std::size_t(W) * I * B, no_task);
    comm_.assign(std::size_t(W) * I * B, no_task);
    for (std::uint32_t w = 0; w < W; ++w) worker(w);
    // Join the workers: the all-reduce of bucket b waits for the gradients of bucket b
    // on the previous worker of the ring.
    if (comm())
      for (std::uint32_t w = 0; w < W; ++w)
        for (std::size_t ib = 0; ib < std::size_t(I) * B; ++ib)
          g_.add_dependency(ready_[std::size_t((w + W - 1) % W) * I * B + ib],
                            comm_[std::size_t(w) * I * B + ib], dep_kind::comm);
  }

private:
  struct lane { // one resource with its program order and trace clock
    resource_id id = no_resource;
    task_id last = no_task;
    time_ns clock = 0;
    dep_kind order = dep_kind::cpu_order;
  };

  template <class Kind>
  task_id emit(lane& on, Kind payload, std::string_view name, time_ns dur, time_ns gap,
               std::string_view layer, phase ph, std::int32_t it, time_ns not_before = 0) {
    on.clock = std::max(on.clock, not_before);
    auto t = g_.add(payload, {.name = name, .duration = dur, .resource = on.id, .gap = gap,
                              .trace_start = on.clock, .layer = layer, .phase = ph,
                              .iteration = it}).id;
    if (on.last != no_task) g_.add_dependency(on.last, t, on.order);
    on.last = t;
    on.clock += dur + gap;
    return t;
  }

  // A CPU launch call on `cpu` and the GPU task it launches on `gpu`.
  template <class Kind>
  task_id launch(lane& cpu, lane& gpu, Kind payload, std::string_view call, std::string_view name,
                 time_ns dur, std::string_view layer, phase ph, std::int32_t it,
                 cpu_call what = cpu_call::launch) {
    auto c = emit(cpu, cpu_task{what, no_name, ++correlation_, 0}, call,
                  r_->between(4'000, 7'000), r_->between(1'000, 3'000), layer, ph, it);
    auto k = emit(gpu, payload, name, dur, 0, layer, ph, it, cpu.clock);
    g_.add_dependency(c, k, dep_kind::launch);
    return k;
  }

  time_ns jitter(time_ns d) { return std::max<time_ns>(1, time_ns(double(d) * (0.95 + 0.1 * r_->uniform()))); }

  void worker(std::uint32_t w) {
    rng r(s_.seed * 1'000'003 + w);
    r_ = &r;
    const auto I = s_.iterations, B = std::max(1u, s_.buckets), K = s_.kernels_per_layer;
    const auto L = s_.layers;
    const auto ws = std::to_string(w);
    lane main{g_.add_resource({"w" + ws + "/main", resource_kind::cpu_thread, sharing::exclusive, std::int32_t(w)})};
    lane autograd{g_.add_resource({"w" + ws + "/autograd", resource_kind::cpu_thread, sharing::exclusive, std::int32_t(w)})};
    lane stream{g_.add_resource({"w" + ws + "/stream7", resource_kind::gpu_stream, sharing::exclusive, std::int32_t(w), 0}),
                no_task, 0, dep_kind::stream_order};
    lane copy{g_.add_resource({"w" + ws + "/copy", resource_kind::copy_engine, sharing::exclusive, std::int32_t(w), 0, 12e9}),
              no_task, 0, dep_kind::stream_order};
    lane nccl{comm() ? links_[w / s_.workers_per_node] : no_resource, no_task, 0, dep_kind::stream_order};
    const gpu_kernel kern{0, 7, 0, 0};

    for (std::uint32_t it = 0; it < I; ++it) {
      const auto i = std::int32_t(it);
      // Input batch.
      emit(main, cpu_task{}, "aten::to", r.between(8'000, 15'000), r.between(1'000, 2'000), {}, phase::forward, i);
      auto h2d = launch(main, copy, memcpy_task{copy_kind::h2d, 38u << 20, 0, 7, 0}, "cudaMemcpyAsync",
                        "Memcpy HtoD (Pageable -> Device)", r.between(180'000, 220'000), {},
                        phase::forward, i, cpu_call::memcpy);
      bool first = true;
      // Forward.
      for (std::uint32_t l = 0; l < L; ++l) {
        auto& ln = layer_names_[l];
        auto op = emit(main, cpu_task{}, forward_ops[l % 4], r.between(8'000, 25'000), r.between(1'000, 2'000), ln, phase::forward, i);
        if (s_.memory) g_.set_mem_delta(op, activation_[l]);
        for (std::uint32_t k = 0; k < K; ++k) {
          auto kt = launch(main, stream, kern, "cudaLaunchKernel", forward_kernels[(l + k) % 4],
                           jitter(fwd_kernel_[l * K + k]), ln, phase::forward, i);
          if (first) g_.add_dependency(h2d, kt, dep_kind::data);
          first = false;
        }
      }
      // Backward, on the autograd thread.
      auto bwd_call = emit(main, cpu_task{}, "autograd::engine::evaluate_function", r.between(5'000, 9'000), 0, {}, phase::backward, i);
      autograd.clock = std::max(autograd.clock, main.clock);
      task_id bwd_first = no_task;
      std::uint32_t bucket = 0;
      for (std::uint32_t l = L; l-- > 0;) {
        auto& ln = layer_names_[l];
        auto op = emit(autograd, cpu_task{}, backward_ops[l % 4], r.between(10'000, 30'000), r.between(1'000, 3'000), ln, phase::backward, i);
        if (bwd_first == no_task) { bwd_first = op; g_.add_dependency(bwd_call, op, dep_kind::control); }
        if (s_.memory) g_.set_mem_delta(op, -activation_[l]);
        task_id kt = no_task;
        for (std::uint32_t k = 0; k < 2 * K; ++k)
          kt = launch(autograd, stream, kern, "cudaLaunchKernel", backward_kernels[(l + k) % 4],
                      jitter(bwd_kernel_[l * 2 * K + k]), ln, phase::backward, i);
        // The gradients of bucket b are ready once (b + 1) / B of the layers are done.
        while (bucket < B && std::uint64_t(L - l) * B >= std::uint64_t(bucket + 1) * L) {
          auto at = (std::size_t(w) * I + it) * B + bucket;
          ready_[at] = kt;
          if (comm()) {
            auto c = launch(autograd, nccl, comm_task{comm_op::all_reduce, 25u << 20, W(), 0, 20, 0},
                            "ncclAllReduce", "ncclKernel_AllReduce_RING_LL_Sum_float",
                            r.between(1'500'000, 2'500'000), ln, phase::backward, i);
            g_.add_dependency(kt, c, dep_kind::comm);
            comm_[at] = c;
          }
          ++bucket;
        }
      }
      // Weight update: waits for the backward pass, then one kernel per bucket.
      main.clock = std::max(main.clock, autograd.clock);
      auto step = emit(main, cpu_task{}, "Optimizer.step#SGD.step", r.between(20'000, 40'000), r.between(1'000, 2'000), {}, phase::weight_update, i);
      g_.add_dependency(autograd.last, step, dep_kind::control);
      task_id upd = no_task;
      for (std::uint32_t b = 0; b < B; ++b) {
        upd = launch(main, stream, kern, "cudaLaunchKernel", "void at::native::multi_tensor_apply_kernel",
                     r.between(60'000, 120'000), {}, phase::weight_update, i);
        auto at = (std::size_t(w) * I + it) * B + b;
        if (comm()) g_.add_dependency(comm_[at], upd, dep_kind::comm);
      }
      auto sync = emit(main, cpu_task{cpu_call::sync, no_name, 0, 0}, "cudaStreamSynchronize",
                       r.between(5'000, 10'000), r.between(20'000, 40'000), {}, phase::other, i,
                       stream.clock);
      g_.add_dependency(upd, sync, dep_kind::sync);
    }
    r_ = nullptr;
  }

  std::uint32_t W() const { return s_.workers; }
  bool comm() const { return s_.workers > 1 && s_.communication; }

  graph& g_;
  const training_shape& s_;
  rng* r_ = nullptr;
  std::uint64_t correlation_ = 0;
  std::vector<std::string> layer_names_;
  std::vector<time_ns> fwd_kernel_, bwd_kernel_;
  std::vector<std::int64_t> activation_;
  std::vector<resource_id> links_;
  std::vector<task_id> ready_, comm_; // by (worker, iteration, bucket)
};

} // namespace detail
//! @endcond

/// Builds the graph of a data-parallel training job of shape `s` (see training_shape):
/// s.tasks() tasks, about 1.5 dependencies per task.
///
///     auto g = daydream::bench::make_training_graph(daydream::bench::shape_for(1'000'000));
inline graph make_training_graph(const training_shape& s) {
  graph g;
  detail::training_builder(g, s).build();
  return g;
}

/// Where the memory of a graph goes, in bytes. Vectors count their capacity.
struct memory_use {
  std::size_t task_columns = 0; ///< the flat per-task arrays of the core
  std::size_t edges = 0;        ///< dependency records (live and unlinked)
  std::size_t payloads = 0;     ///< per-kind payloads and id lists (by element count)
  std::size_t names = 0;        ///< the interned strings (not counted per task)
  std::size_t total() const { return task_columns + edges + payloads; }
};

/// Measures the memory of `g` (see memory_use).
inline memory_use measure_memory(const graph& g) {
  const auto& c = g.core();
  memory_use m;
  auto col = [&](const auto& v) { m.task_columns += v.capacity() * sizeof(v[0]); };
  col(c.duration); col(c.gap); col(c.trace_start); col(c.priority); col(c.mem_delta);
  col(c.res); col(c.name); col(c.layer); col(c.iteration); col(c.local); col(c.kind);
  col(c.ph); col(c.alive); col(c.head_out); col(c.head_in); col(c.n_in); col(c.n_out);
  m.edges = c.edges.capacity() * sizeof(c.edges[0]);
  m.payloads = g.ids_of<cpu_task>().size() * (sizeof(cpu_task) + sizeof(task_id)) +
               g.ids_of<gpu_kernel>().size() * (sizeof(gpu_kernel) + sizeof(task_id)) +
               g.ids_of<memcpy_task>().size() * (sizeof(memcpy_task) + sizeof(task_id)) +
               g.ids_of<comm_task>().size() * (sizeof(comm_task) + sizeof(task_id));
  for (name_id i = 0; i < c.names.size(); ++i) m.names += c.names[i].size() + 48;
  return m;
}

/// Peak and current resident memory of this process, in bytes (Linux; 0 elsewhere).
struct rss_info {
  std::size_t peak = 0;
  std::size_t current = 0;
};
inline rss_info resident_memory() {
  rss_info r;
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    std::size_t kb = 0;
    if (key == "VmHWM:") { f >> kb; r.peak = kb * 1024; }
    else if (key == "VmRSS:") { f >> kb; r.current = kb * 1024; }
    else f.ignore(1 << 12, '\n');
  }
  return r;
}

/// Kahn's topological traversal of a graph's live tasks, the floor any replay stands on:
/// a counter per task from the core's in-degrees, every task and every dependency touched
/// once through the intrusive out-lists the replay reads, no resources, no times. Its
/// buffers are kept between runs, as the replay keeps its working memory.
class kahn_traversal {
public:
  /// Traverses `g` once; returns how many tasks it reached (fewer than g.size(): a cycle).
  std::size_t run(const graph& g) {
    const auto& c = g.core();
    const task_id n = c.id_bound();
    const daydream::detail::edge_rec* const edges = c.edges.data();
    wait_.assign(c.n_in.begin(), c.n_in.end());
    order_.clear();
    order_.reserve(n);
    for (task_id t = 0; t < n; ++t)
      if (c.alive[t] && wait_[t] == 0) order_.push_back(t);
    for (std::size_t i = 0; i < order_.size(); ++i)
      for (auto e = c.head_out[order_[i]]; e != daydream::detail::no_edge; e = edges[e].next_out)
        if (--wait_[edges[e].dst] == 0) order_.push_back(edges[e].dst);
    return order_.size();
  }
  const std::vector<task_id>& order() const noexcept { return order_; }

private:
  std::vector<std::uint32_t> wait_;
  std::vector<task_id> order_;
};

} // namespace daydream::bench


#endif
