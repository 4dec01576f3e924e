// Defines testing::training_step, testing::shared_channel and testing::standard_fixtures: representative graphs for pass tests.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_FIXTURES_HPP
#define DAYDREAM_TESTS_SUPPORT_FIXTURES_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <support/random_dag.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace daydream::testing {

/// A named graph that pass laws are checked on.
template <class Graph = graph> struct fixture {
  std::string name; ///< shown when a law fails
  Graph graph;      ///< the input of the pass
};

/// The shape of a synthetic training step.
struct training_options {
  int layers = 3;            ///< layers of conv + batch norm + relu
  int iterations = 1;        ///< iterations, back to back on the same thread and stream
  bool data_parallel = true; ///< an all-reduce per layer on a fair-share link, before its update
  bool input_copy = true;    ///< an H2D copy of the batch at the start of each iteration
};

/// A synthetic single-GPU (or data-parallel) training step shaped like an ingested
/// PyTorch trace: one CPU thread ("thread 1") running framework ops and launch calls
/// (with gaps), one compute stream ("stream 7"), a copy engine, and a fair-share link
/// "nic0" (25 Gbit/s) for NCCL all-reduces on "stream 20"'s behalf. Per layer l
/// (layer "layer<l>"): forward aten::conv2d / aten::batch_norm / aten::relu, each a CPU
/// op followed by a cudaLaunchKernel and its kernel (volta_sgemm_128x64_nn,
/// cudnn::bn_fw_tr_1C11_kernel_NCHW, elementwise_kernel); a loss; backward in reverse
/// (volta_sgemm_128x64_nt, cudnn::bn_bw_1C11_kernel_new, elementwise_kernel); with data
/// parallelism an ncclKernel_AllReduce_RING_LL_Sum_float per layer (comm edge from the
/// layer's last backward kernel, launch edge from a CPU call); the optimizer step
/// (Optimizer.step#SGD.step, multi_tensor_apply_kernel per layer, after that layer's
/// all-reduce) and a final cudaDeviceSynchronize with sync edges. Forward kernels
/// allocate activations (mem_delta > 0), backward kernels free them. Program order
/// chains every thread, stream and copy engine. trace_start follows a plausible
/// timeline. Deterministic.
inline graph training_step(const training_options& o = {}) {
  graph g;
  auto thread = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto stream = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  auto copier = g.add_resource({"copy engine 0", resource_kind::copy_engine, sharing::exclusive, 0, 0, 12e9});
  auto link = g.add_resource({"nic0", resource_kind::link, sharing::fair, 0, -1, 25e9 / 8});

  task_id last_cpu = no_task, last_gpu = no_task, last_copy = no_task;
  time_ns cpu_clock = 0, gpu_clock = 0, copy_clock = 0;
  std::uint64_t correlation = 1;

  auto cpu = [&](cpu_call call, std::string_view name, time_ns dur, time_ns gap, std::string_view layer,
                 phase ph, std::int32_t it) {
    auto t = g.add(cpu_task{call, no_name, call == cpu_call::op ? 0 : correlation, 0},
                   {.name = name, .duration = dur, .resource = thread, .gap = gap,
                    .trace_start = cpu_clock, .layer = layer, .phase = ph, .iteration = it});
    if (last_cpu != no_task) g.add_dependency(last_cpu, t, dep_kind::cpu_order);
    last_cpu = t;
    cpu_clock += dur + gap;
    return t;
  };
  auto kernel = [&](task_id launch, std::string_view name, time_ns dur, std::string_view layer, phase ph,
                    std::int32_t it, std::int64_t mem) {
    auto start = std::max(gpu_clock, g.trace_start(launch) + g.duration(launch));
    auto k = g.add(gpu_kernel{0, 7, correlation++, 0},
                   {.name = name, .duration = dur, .resource = stream, .trace_start = start,
                    .layer = layer, .phase = ph, .iteration = it});
    g.add_dependency(launch, k, dep_kind::launch);
    if (last_gpu != no_task) g.add_dependency(last_gpu, k, dep_kind::stream_order);
    g.set_mem_delta(k, mem);
    last_gpu = k;
    gpu_clock = start + dur;
    return k;
  };
  auto op_and_kernel = [&](std::string_view op, std::string_view kname, time_ns kdur, std::string_view layer,
                           phase ph, std::int32_t it, std::int64_t mem) {
    cpu(cpu_call::op, op, 18'000, 3'000, layer, ph, it);
    auto launch = cpu(cpu_call::launch, "cudaLaunchKernel", 5'000, 2'000, layer, ph, it);
    return kernel(launch, kname, kdur, layer, ph, it, mem);
  };

  for (std::int32_t it = 0; it < o.iterations; ++it) {
    if (o.input_copy) {
      auto call = cpu(cpu_call::memcpy, "cudaMemcpyAsync", 9'000, 1'000, "", phase::forward, it);
      auto start = std::max(copy_clock, g.trace_start(call) + g.duration(call));
      auto c = g.add(memcpy_task{copy_kind::h2d, 32ull * 3 * 224 * 224 * 4, 0, 7, correlation++},
                     {.name = "Memcpy HtoD (Pageable -> Device)", .duration = 1'600'000,
                      .resource = copier, .trace_start = start, .phase = phase::forward, .iteration = it});
      g.add_dependency(call, c, dep_kind::launch);
      if (last_copy != no_task) g.add_dependency(last_copy, c, dep_kind::stream_order);
      last_copy = c;
      copy_clock = start + 1'600'000;
      // The first kernel reads the batch.
      auto first = op_and_kernel("aten::conv2d", "volta_sgemm_128x64_nn", 150'000, "layer0",
                                 phase::forward, it, 8 << 20);
      g.add_dependency(c, first, dep_kind::data);
      gpu_clock = std::max(gpu_clock, copy_clock);
    } else {
      op_and_kernel("aten::conv2d", "volta_sgemm_128x64_nn", 150'000, "layer0", phase::forward, it, 8 << 20);
    }
    for (int l = 0; l < o.layers; ++l) {
      auto layer = "layer" + std::to_string(l);
      if (l > 0)
        op_and_kernel("aten::conv2d", "volta_sgemm_128x64_nn", 150'000, layer, phase::forward, it, 8 << 20);
      op_and_kernel("aten::batch_norm", "cudnn::bn_fw_tr_1C11_kernel_NCHW", 40'000, layer, phase::forward, it,
                    4 << 20);
      op_and_kernel("aten::relu", "elementwise_kernel", 20'000, layer, phase::forward, it, 4 << 20);
    }
    op_and_kernel("aten::nll_loss", "nll_loss_forward_reduce_cuda_kernel_2d", 10'000, "loss", phase::forward,
                  it, 1 << 10);
    std::vector<task_id> grads(static_cast<std::size_t>(o.layers));
    for (int l = o.layers - 1; l >= 0; --l) {
      auto layer = "layer" + std::to_string(l);
      op_and_kernel("autograd::engine::evaluate_function: ReluBackward0", "elementwise_kernel", 25'000,
                    layer, phase::backward, it, -(4 << 20));
      op_and_kernel("autograd::engine::evaluate_function: NativeBatchNormBackward0",
                    "cudnn::bn_bw_1C11_kernel_new", 80'000, layer, phase::backward, it, -(4 << 20));
      grads[static_cast<std::size_t>(l)] =
          op_and_kernel("autograd::engine::evaluate_function: ConvolutionBackward0", "volta_sgemm_128x64_nt",
                        300'000, layer, phase::backward, it, -(8 << 20));
    }
    std::vector<task_id> reduced(static_cast<std::size_t>(o.layers), no_task);
    if (o.data_parallel) {
      for (int l = o.layers - 1; l >= 0; --l) {
        auto layer = "layer" + std::to_string(l);
        auto grad = grads[static_cast<std::size_t>(l)];
        auto call = cpu(cpu_call::launch, "ncclAllReduce", 7'000, 1'000, layer, phase::backward, it);
        auto start = std::max(g.trace_start(grad) + g.duration(grad), g.trace_start(call) + g.duration(call));
        auto ar = g.add(comm_task{comm_op::all_reduce, 4u << 20, 4, 0, 20, correlation++},
                        {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .duration = 1'300'000,
                         .resource = link, .trace_start = start, .layer = layer,
                         .phase = phase::backward, .iteration = it});
        g.add_dependency(call, ar, dep_kind::launch);
        g.add_dependency(grad, ar, dep_kind::comm);
        reduced[static_cast<std::size_t>(l)] = ar;
      }
    }
    cpu(cpu_call::op, "Optimizer.step#SGD.step", 30'000, 5'000, "", phase::weight_update, it);
    for (int l = 0; l < o.layers; ++l) {
      auto layer = "layer" + std::to_string(l);
      auto launch = cpu(cpu_call::launch, "cudaLaunchKernel", 5'000, 2'000, layer, phase::weight_update, it);
      auto k = kernel(launch, "multi_tensor_apply_kernel", 30'000, layer, phase::weight_update, it, 0);
      if (auto ar = reduced[static_cast<std::size_t>(l)]; ar != no_task) g.add_dependency(ar, k, dep_kind::comm);
    }
    auto sync = cpu(cpu_call::sync, "cudaDeviceSynchronize", 10'000, 4'000, "", phase::other, it);
    g.add_dependency(last_gpu, sync, dep_kind::sync);
    for (auto ar : reduced)
      if (ar != no_task) g.add_dependency(ar, sync, dep_kind::sync);
  }
  return g;
}

/// Graphs every pass should handle: a training step (single GPU, data parallel, two
/// iterations, without input copy), a lone CPU thread, a lone stream, and random DAGs
/// of every kind and resource. Deterministic.
/// One thread and a channel that a kernel and a push share: the thread's 10 ns call
/// launches the 40 ns kernel (trace start 10) and the 20 ns push (trace start 20). Trace
/// order runs the kernel first; a priority for the push runs the push first.
inline graph shared_channel() {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto ch = g.add_resource({"channel", resource_kind::link});
  auto x = g.add(cpu_task{}, {.name = "backward", .duration = 10, .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "volta_sgemm", .duration = 40, .resource = ch, .trace_start = 10});
  auto c = g.add(comm_task{}, {.name = "push", .duration = 20, .resource = ch, .trace_start = 20});
  g.add_dependency(x, k, dep_kind::launch);
  g.add_dependency(x, c, dep_kind::comm);
  return g;
}

inline std::vector<fixture<graph>> standard_fixtures() {
  std::vector<fixture<graph>> f;
  f.push_back({"training step, data parallel", training_step()});
  f.push_back({"training step, one GPU", training_step({.layers = 4, .data_parallel = false})});
  f.push_back({"training step, two iterations",
               training_step({.layers = 2, .iterations = 2, .input_copy = false})});
  {
    graph g;
    auto thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
    task_id prev = no_task;
    for (int i = 0; i < 5; ++i) {
      auto t = g.add(cpu_task{}, {.name = "aten::add", .duration = 10'000, .resource = thr, .gap = 1'000,
                                  .trace_start = i * 11'000, .layer = "layer0", .phase = phase::forward});
      if (prev != no_task) g.add_dependency(prev, t, dep_kind::cpu_order);
      prev = t;
    }
    f.push_back({"CPU only", std::move(g)});
  }
  {
    graph g;
    auto st = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
    task_id prev = no_task;
    for (int i = 0; i < 4; ++i) {
      auto t = g.add(gpu_kernel{}, {.name = "volta_sgemm_128x64_nn", .duration = 50'000, .resource = st,
                                    .trace_start = i * 50'000, .layer = "layer0", .phase = phase::backward});
      if (prev != no_task) g.add_dependency(prev, t, dep_kind::stream_order);
      prev = t;
    }
    f.push_back({"GPU only, no launches", std::move(g)});
  }
  for (std::uint64_t seed : {11u, 12u, 13u})
    f.push_back({"random DAG, seed " + std::to_string(seed), random_dag(seed, {.tasks = 40})});
  return f;
}

} // namespace daydream::testing

#endif
