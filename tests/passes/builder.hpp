// Shared by the tests of the single-GPU passes: a builder of launch + kernel graphs, a
// two-layer MLP step whose replay is worked out by hand, and the fixtures the pass laws run on.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_PASSES_BUILDER_HPP
#define DAYDREAM_TESTS_PASSES_BUILDER_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/semantics/memory.hpp>
#include <support/fixtures.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

namespace daydream::testing::pass_graphs {

/// Builds graphs of "ops": a launch call on thread 1 followed by its kernel on stream 7,
/// both in program order, with a launch dependency. Each call takes `launch` ns and no
/// gap, so the replay is easy to follow by hand.
struct builder {
  graph g;
  resource_id thread = g.add_resource({"thread 1", resource_kind::cpu_thread});
  resource_id stream = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  task_id last_cpu = no_task, last_gpu = no_task;
  time_ns clock = 0;

  struct op_t { task_id call, kernel; };
  op_t op(std::string_view kernel, time_ns kdur, std::string_view layer, phase ph, std::int32_t it = 0,
          std::uint64_t bytes = 0, std::string_view op_name = "", time_ns launch = 10) {
    auto opn = g.intern(op_name);
    auto c = g.add(cpu_task{cpu_call::launch, opn, 0, bytes},
                   {.name = "cudaLaunchKernel", .duration = launch, .resource = thread,
                    .trace_start = clock++, .layer = layer, .phase = ph, .iteration = it});
    auto k = g.add(gpu_kernel{0, 7, 0, 0}, {.name = kernel, .duration = kdur, .resource = stream,
                                            .trace_start = clock++, .layer = layer, .phase = ph,
                                            .iteration = it});
    if (last_cpu != no_task) g.add_dependency(last_cpu, c, dep_kind::cpu_order);
    if (last_gpu != no_task) g.add_dependency(last_gpu, k, dep_kind::stream_order);
    g.add_dependency(c, k, dep_kind::launch);
    last_cpu = c;
    last_gpu = k;
    return {c, k};
  }
  /// A CPU task of an operator (no launch), in program order.
  task_id cpu(std::string_view op_name, time_ns dur, std::string_view layer, phase ph) {
    auto t = g.add(cpu_task{cpu_call::op, g.intern(op_name), 0, 0},
                   {.name = op_name, .duration = dur, .resource = thread, .trace_start = clock++,
                    .layer = layer, .phase = ph});
    if (last_cpu != no_task) g.add_dependency(last_cpu, t, dep_kind::cpu_order);
    last_cpu = t;
    return t;
  }
};

/// A two-layer MLP step: fc1 (GEMM) and relu forward, their backward, two optimizer
/// kernels. GPU bound. Baseline replay (by hand): launches at 0, 10, ..., 50; kernels
/// k1 [10,130) k2 [130,170) k3 [170,210) k4 [210,450) k5 [450,480) k6 [480,510).
struct mlp {
  builder b;
  builder::op_t fc1_f, relu_f, relu_b, fc1_b, opt1, opt2;
  mlp() {
    fc1_f = b.op("volta_sgemm_128x64_tn", 120, "fc1", phase::forward, 0, 1000, "aten::addmm");
    relu_f = b.op("vectorized_elementwise_kernel<relu>", 40, "relu", phase::forward, 0, 400, "aten::relu");
    relu_b = b.op("vectorized_elementwise_kernel<threshold_backward>", 40, "relu", phase::backward, 0, 0,
                  "aten::threshold_backward");
    fc1_b = b.op("volta_sgemm_128x64_nt", 240, "fc1", phase::backward, 0, 0, "aten::mm");
    opt1 = b.op("multi_tensor_apply_kernel<adam>", 30, "", phase::weight_update, 0, 0, "aten::_foreach_add_");
    opt2 = b.op("multi_tensor_apply_kernel<adam>", 30, "", phase::weight_update, 0, 0, "aten::_foreach_mul_");
  }
};

inline time_ns makespan(const graph& g) { return replay(g).makespan; }


/// The standard fixtures plus the two-layer MLP, without and with a memory model: what
/// every single-GPU pass's laws are checked on.
inline std::vector<fixture<graph>> pass_fixtures() {
  auto fx = standard_fixtures();
  mlp m;
  fx.push_back({"two-layer MLP", m.b.g});
  daydream::passes::estimate_activation_memory(m.b.g);
  fx.push_back({"two-layer MLP with a memory model", m.b.g});
  return fx;
}

} // namespace daydream::testing::pass_graphs

#endif
