// Tests of the single-GPU passes and the memory model on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/validate.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/support/estimate.hpp>
#include <daydream/passes/fused_adam.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/passes/support/kernel_classifier.hpp>
#include <daydream/passes/support/layers.hpp>
#include <daydream/passes/support/memory.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include <daydream/passes/substitute.hpp>
#include <daydream/passes/vdnn.hpp>
#include <support/fixtures.hpp>
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;

namespace {

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

time_ns makespan(const graph& g) { return replay(g).makespan; }

} // namespace

// ---------------------------------------------------------------- kernel classifier

TEST_CASE("the default classifier sorts real kernel names into their classes") {
  auto c = kernel_classifier::defaults();
  for (auto n : {"volta_sgemm_64x64_nt", "cudnn_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
                 "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
                 "void wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int)",
                 "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "sm80_xmma_gemm_f16f16_f16f32",
                 "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"})
    CHECK_MESSAGE(c.classify(n) == kernel_class::compute_bound, n);
  for (auto n : {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
                 "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1, true>(x)",
                 "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float)",
                 "void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(float const*)",
                 "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(x)",
                 "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(x)",
                 "void gemv2N_kernel<int, int, float, float, float, float, 128, 1, 4, 4, 1, false>(x)",
                 "void gemmk1_kernel<int, float, 256, 5, false, false, false, false>(x)",
                 "void splitKreduce_kernel<32, 16, int, float, float, float, float, true>(x)",
                 "Memcpy DtoD (Device -> Device)", "Memset (Device)",
                 "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<x>(y)"})
    CHECK_MESSAGE(c.classify(n) == kernel_class::memory_bound, n);
  for (auto n : {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                 "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"})
    CHECK_MESSAGE(c.classify(n) == kernel_class::communication, n);
  CHECK(c.classify("my_custom_kernel_v2") == kernel_class::unknown);
}

TEST_CASE("a user rule put first overrides the bundled ones and an empty classifier knows nothing") {
  auto c = kernel_classifier::defaults();
  CHECK(c.classify("fused_mlp_relu_fwd") == kernel_class::memory_bound);
  c.prepend(kernel_class::compute_bound, "fused_mlp");
  CHECK(c.classify("fused_mlp_relu_fwd") == kernel_class::compute_bound);
  CHECK(c.rules().front().pattern == "fused_mlp");
  CHECK(kernel_classifier{}.classify("volta_sgemm_64x64_nt") == kernel_class::unknown);
}

// ---------------------------------------------------------------- layers and memory

TEST_CASE("layer instances group forward and backward tasks and estimate the stash") {
  mlp m;
  auto ls = layer_instances(m.b.g);
  REQUIRE(ls.size() == 2);
  CHECK(m.b.g.str(ls[0].layer) == "fc1");
  CHECK(ls[0].forward_gpu == std::vector<task_id>{m.fc1_f.kernel});
  CHECK(ls[0].backward_cpu == std::vector<task_id>{m.fc1_b.call});
  CHECK(ls[0].stash_bytes == 1000);
  CHECK(m.b.g.str(ls[1].layer) == "relu");
  CHECK(ls[1].stash_bytes == 400);
  CHECK(ls[1].stashes());
  CHECK(layer_filter("fc.")("fc1"));
  CHECK_FALSE(layer_filter("fc")("fc1")); // the whole name must match
  CHECK(layer_filter()("anything"));
  CHECK_THROWS_AS(layer_filter("(("), daydream::error);
}

TEST_CASE("the activation memory estimate allocates in the forward and frees in the backward") {
  mlp m;
  auto& g = m.b.g;
  CHECK_FALSE(has_memory_accounting(g));
  CHECK(replay(g).peak_memory == 0);
  auto rep = estimate_activation_memory(g);
  CHECK(g.mem_delta(m.fc1_f.kernel) == 1000);
  CHECK(g.mem_delta(m.relu_f.kernel) == 400);
  CHECK(g.mem_delta(m.relu_b.kernel) == -400);
  CHECK(g.mem_delta(m.fc1_b.kernel) == -1000);
  // k1 at 10: 1000; k2 at 130: 1400; k3 at 170: 1000; k4 at 210: 0.
  CHECK(replay(g).peak_memory == 1400);
  CHECK(rep.items.front().second == "2");
  // A memory model already there is kept unless asked otherwise.
  g.set_mem_delta(m.opt1.kernel, 5);
  estimate_activation_memory(g);
  CHECK(g.mem_delta(m.opt1.kernel) == 5);
  estimate_activation_memory(g, {.overwrite = true});
  CHECK(g.mem_delta(m.opt1.kernel) == 0);
  CHECK(replay(g).peak_memory == 1400);
}

TEST_CASE("an inference layer frees its stash once its last forward kernel has ended") {
  builder b;
  auto a = b.op("volta_sgemm_128x64_tn", 100, "fc1", phase::forward, 0, 800, "aten::addmm");
  auto c = b.op("volta_sgemm_128x64_tn", 100, "fc2", phase::forward, 0, 300, "aten::addmm");
  estimate_activation_memory(b.g);
  CHECK(b.g.mem_delta(a.kernel) == 800);
  // fc1 is released when fc2 starts; fc2, the last kernel, allocates and releases at once.
  CHECK(b.g.mem_delta(c.kernel) == -800);
  CHECK(replay(b.g).peak_memory == 800);
}

TEST_CASE("comparable kernels give a time per byte, scaled to a new size") {
  mlp m;
  auto r = measure_rate(m.b.g);
  CHECK(r.samples == 1); // the relu kernel: 40 ns over 400 bytes (threshold_backward has no sizes)
  CHECK(r.ns_per_byte() == doctest::Approx(0.1));
  CHECK(r.estimate(1000, 1e9) == 100);
  CHECK(size_rate{}.estimate(1000, 1e12) == 1); // fallback: 1000 B at 1 TB/s
  CHECK(launch_tensor_bytes(m.b.g, m.fc1_f.kernel) == 1000);
}

// ---------------------------------------------------------------- amp

TEST_CASE("amp: a GPU-bound step gets compute kernels 3x and memory kernels 2x faster") {
  mlp m;
  CHECK(makespan(m.b.g) == 510);
  auto rep = amp{}(m.b.g);
  CHECK(m.b.g.duration(m.fc1_f.kernel) == 40);
  CHECK(m.b.g.duration(m.fc1_b.kernel) == 80);
  CHECK(m.b.g.duration(m.relu_f.kernel) == 20);
  CHECK(m.b.g.duration(m.opt1.kernel) == 15);
  CHECK(m.b.g.duration(m.fc1_f.call) == 10); // CPU unchanged
  // k1 [10,50) k2 [50,70) k3 [70,90) k4 [90,170) k5 [170,185) k6 [185,200)
  CHECK(makespan(m.b.g) == 200);
  REQUIRE(rep.items.size() >= 4);
  CHECK(rep.items[0].first == "compute_bound");
  CHECK(rep.items[0].second == "2 kernels, 360 ns -> 120 ns");
  CHECK(rep.items[1].second == "4 kernels, 140 ns -> 70 ns");
  CHECK(rep.notes.empty());
}

TEST_CASE("amp stores activations in half precision: the activation peak halves") {
  mlp m;
  estimate_activation_memory(m.b.g);
  CHECK(replay(m.b.g).peak_memory == 1400);
  auto rep = amp{}(m.b.g);
  CHECK(m.b.g.mem_delta(m.fc1_f.kernel) == 500);
  CHECK(m.b.g.mem_delta(m.fc1_b.kernel) == -500);
  CHECK(replay(m.b.g).peak_memory == 700);
  CHECK(rep.items[5].second == "1.4 kB -> 700 B");
  apply(m.b.g, amp{.activations = 1});
  CHECK(replay(m.b.g).peak_memory == 700);
}

TEST_CASE("amp: a CPU-bound step predicts no gain") {
  // Two iterations of three ops; each launch takes 100 ns, each GEMM 30 ns. The GPU waits
  // for the CPU: iteration 1 starts when the CPU is done with iteration 0, at 300 ns.
  builder b;
  for (std::int32_t it = 0; it < 2; ++it)
    for (auto layer : {"fc1", "fc2", "fc3"})
      b.op("volta_sgemm_128x64_tn", 30, layer, phase::forward, it, 0, "aten::addmm", 100);
  auto before = replay(b.g);
  CHECK(iteration_time(b.g, before, 0) == 300);
  apply(b.g, amp{});
  auto after = replay(b.g);
  CHECK(iteration_time(b.g, after, 0) == 300); // shorter kernels, same iteration
  CHECK(after.makespan == before.makespan - 20); // only the very last kernel ends earlier
}

TEST_CASE("amp reports the kernels it could not classify and leaves them alone") {
  builder b;
  auto k = b.op("my_custom_kernel", 90, "x", phase::forward);
  auto rep = amp{}(b.g);
  CHECK(b.g.duration(k.kernel) == 90);
  REQUIRE(rep.items.size() == 6);
  CHECK(rep.items[5].first == "unclassified kernels");
  CHECK(rep.items[5].second == "my_custom_kernel (x1)");
  CHECK(rep.notes.size() == 1);
}

TEST_CASE("amp with a replaced classifier and parameters") {
  mlp m;
  kernel_classifier everything_compute;
  everything_compute.add(kernel_class::compute_bound, ".");
  apply(m.b.g, amp{.compute = 2, .classifier = everything_compute});
  CHECK(m.b.g.duration(m.relu_f.kernel) == 20);
  CHECK(m.b.g.duration(m.fc1_f.kernel) == 60);
  auto p = amp::from_params(pass_params::parse("amp", "compute=4,memory=1.5,activations=1"));
  CHECK(p.compute == 4);
  CHECK(p.memory == 1.5);
  CHECK(p.activations == 1);
  CHECK_THROWS_AS(amp::from_params(pass_params::parse("amp", "compute=0")), daydream::error);
  CHECK_THROWS_AS(amp::from_params(pass_params::parse("amp", "compte=2")), daydream::error);
}

// ---------------------------------------------------------------- fused_adam

TEST_CASE("fused_adam replaces the optimizer step with one launch and one kernel") {
  mlp m;
  auto& g = m.b.g;
  const auto before = g.size();
  auto rep = fused_adam{}(g);
  CHECK(g.size() == before - 4 + 2);
  CHECK_FALSE(g.contains(m.opt1.kernel));
  CHECK_FALSE(g.contains(m.opt2.call));
  std::vector<task_id> fused;
  for (auto k : tasks<gpu_kernel>(g) | where(name_matches("^fused_adam$"))) fused.push_back(k);
  REQUIRE(fused.size() == 1);
  CHECK(g.duration(fused[0]) == 21); // 0.35 x (30 + 30), rounded
  CHECK(g.phase_of(fused[0]) == phase::weight_update);
  auto call = launch_of(g, fused[0]);
  REQUIRE(call != no_task);
  CHECK(g.duration(call) == 10);
  CHECK(prev_on_resource(g, call) == m.fc1_b.call);
  CHECK(prev_on_resource(g, fused[0]) == m.fc1_b.kernel);
  // launches 0..40, the new one [40,50); k4 ends at 450, the fused kernel [450,471)
  CHECK(makespan(g) == 471);
  CHECK(rep.items[1].second == "4");
  check_invariants(g);
}

TEST_CASE("fused_adam takes its duration from the estimator it is given") {
  mlp m;
  optimizer_step seen;
  apply(m.b.g, fused_adam{.estimate = [&](const optimizer_step& s) { seen = s; return time_ns(5); }});
  CHECK(seen.kernels == 2);
  CHECK(seen.kernel_time == 60);
  CHECK(seen.cpu_tasks == 2);
  CHECK(seen.cpu_time == 20);
  CHECK(makespan(m.b.g) == 455);
  CHECK(fused_adam::from_params(pass_params::parse("fused_adam", "traffic=0.5")).traffic == 0.5);
}

TEST_CASE("fused_adam keeps the memory the optimizer step allocated") {
  mlp m;
  m.b.g.set_mem_delta(m.opt1.kernel, 64);
  m.b.g.set_mem_delta(m.opt2.kernel, -32);
  apply(m.b.g, fused_adam{});
  CHECK(replay(m.b.g).peak_memory == 32);
}

// ---------------------------------------------------------------- reconstruct_bn

TEST_CASE("reconstruct_bn removes activations next to batch norm and halves batch norm") {
  // conv, bn, relu (with an extra CPU slice of its operator), add, relu again (after the
  // add: stays), then the backward: relu grad of the second relu (stays), relu grad next
  // to bn's (goes), bn grad, conv grad. Baseline: CPU [0,95); kernels conv [10,110)
  // bn [110,150) relu [150,170) add [170,190) relu2 [190,210) relu2' [210,230)
  // relu' [230,250) bn' [250,310) conv' [310,510).
  builder b;
  b.op("cudnn_volta_scudnn_128x64_relu_small_nn_v1", 100, "conv", phase::forward, 0, 0, "aten::cudnn_convolution");
  auto bn = b.op("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>", 40, "bn", phase::forward, 0, 0, "aten::cudnn_batch_norm");
  auto slice = b.cpu("aten::clamp_min_", 5, "relu", phase::forward);
  auto relu = b.op("vectorized_elementwise_kernel<clamp>", 20, "relu", phase::forward, 0, 0, "aten::clamp_min_");
  auto add = b.op("vectorized_elementwise_kernel<add>", 20, "", phase::forward, 0, 0, "aten::add_");
  auto relu2 = b.op("vectorized_elementwise_kernel<clamp>", 20, "relu", phase::forward, 0, 0, "aten::clamp_min_");
  auto relu2_b = b.op("vectorized_elementwise_kernel<threshold>", 20, "relu", phase::backward, 0, 0, "aten::threshold_backward");
  auto relu_b = b.op("vectorized_elementwise_kernel<threshold>", 20, "relu", phase::backward, 0, 0, "aten::threshold_backward");
  auto bn_b = b.op("void cudnn::bn_bw_1C11_kernel_new<float>", 60, "bn", phase::backward, 0, 0, "aten::cudnn_batch_norm_backward");
  b.op("void cudnn::detail::dgrad_engine<float>", 200, "conv", phase::backward, 0, 0, "aten::convolution_backward");
  auto& g = b.g;
  CHECK(makespan(g) == 510);
  CHECK(reconstruct_bn::applicable(g));
  auto rep = reconstruct_bn{}(g);
  CHECK(g.duration(bn.kernel) == 20);
  CHECK(g.duration(bn_b.kernel) == 30);
  for (auto t : {relu.kernel, relu.call, slice, relu_b.kernel, relu_b.call}) CHECK_FALSE(g.contains(t));
  for (auto t : {add.kernel, relu2.kernel, relu2.call, relu2_b.kernel, relu2_b.call}) CHECK(g.contains(t));
  // CPU: 7 launches [0,70); kernels conv [10,110) bn [110,130) add [130,150)
  // relu2 [150,170) relu2' [170,190) bn' [190,220) conv' [220,420)
  CHECK(makespan(g) == 420);
  CHECK(rep.items[1].second == "2, 40 ns");
  CHECK(rep.items[2].second == "3, 25 ns");
  check_invariants(g);
}

TEST_CASE("reconstruct_bn does not apply to a graph without batch norm") {
  mlp m;
  CHECK_FALSE(reconstruct_bn::applicable(m.b.g));
  auto rep = reconstruct_bn{}(m.b.g);
  CHECK(makespan(m.b.g) == 510);
  CHECK(rep.notes.size() == 1);
  CHECK(reconstruct_bn::from_params(pass_params::parse("reconstruct_bn", "bn_speedup=1.5")).bn_speedup == 1.5);
}

// ---------------------------------------------------------------- gist

TEST_CASE("gist encodes after the forward, decodes before the backward, and lowers the peak") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  CHECK(gist::applicable(g));
  auto rep = gist{}(g);
  auto named = [&](std::string_view n) {
    std::vector<task_id> v;
    for (auto k : tasks<gpu_kernel>(g) | where(name_matches(std::string("^") + std::string(n) + "$"))) v.push_back(k);
    return v;
  };
  auto enc = named("gist_encode"), dec = named("gist_decode");
  REQUIRE(enc.size() == 2);
  REQUIRE(dec.size() == 2);
  // fc1 stashes 1000 B, relu 400 B; elementwise kernels run at 0.1 ns/B.
  CHECK(g.duration(enc[0]) == 100);
  CHECK(g.duration(enc[1]) == 40);
  CHECK(prev_on_resource(g, enc[0]) == m.fc1_f.kernel);
  CHECK(next_on_resource(g, dec[0]) == m.fc1_b.kernel);
  CHECK(prev_on_resource(g, launch_of(g, enc[0])) == m.fc1_f.call);
  CHECK(next_on_resource(g, launch_of(g, dec[0])) == m.fc1_b.call);
  CHECK(g.mem_delta(enc[0]) == 500 - 1000);
  CHECK(g.mem_delta(dec[0]) == 1000 - 500);
  // CPU: L1 E1 L2 E2 D2 L3 D1 L4 L5 L6, 10 ns each. GPU: k1 [10,130) enc1 [130,230)
  // k2 [230,270) enc2 [270,310) dec2 [310,350) k3 [350,390) dec1 [390,490)
  // k4 [490,730) k5 [730,760) k6 [760,790).
  auto r = replay(g);
  CHECK(r.makespan == 790);
  CHECK(r.start[dec[0]] == 390);
  // memory: 1000, 500, 900, 700, 900, 500, 1000, 0: the peak drops from 1400 to 1000.
  CHECK(r.peak_memory == 1000);
  CHECK(rep.items[0].second == "2");
  CHECK(rep.items[2].second == "700 B");
}

TEST_CASE("gist without a memory model still predicts time, and says so") {
  mlp m;
  auto rep = gist{.ratio = 0.25, .layers = "fc1"}(m.b.g);
  CHECK(rep.items[0].second == "1");
  CHECK(rep.items[2].second == "750 B");
  CHECK(rep.notes.size() == 1);
  // enc [130,230), k2 [230,270), k3 [270,310), dec [310,410), k4 [410,650), ... 710
  CHECK(makespan(m.b.g) == 710);
  CHECK(replay(m.b.g).peak_memory == 0);
  auto p = gist::from_params(pass_params::parse("gist", "ratio=0.125,layers=conv.*,bandwidth=100GB/s"));
  CHECK(p.ratio == 0.125);
  CHECK(p.layers == "conv.*");
  CHECK(p.bandwidth == 100e9);
}

// ---------------------------------------------------------------- vdnn

TEST_CASE("vdnn offloads after the forward, prefetches one layer ahead, trading time for memory") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto v = vdnn{.bandwidth = 10e9}; // 10 B/ns: fc1's 1000 B take 100 ns, relu's 400 B 40 ns
  apply(g, v);
  std::vector<task_id> off, pre;
  for (auto c : tasks<memcpy_task>(g)) (c.payload().direction == copy_kind::d2h ? off : pre).push_back(c);
  REQUIRE(off.size() == 2);
  REQUIRE(pre.size() == 2);
  CHECK(g.duration(off[0]) == 100);
  CHECK(g.duration(pre[1]) == 40);
  CHECK(g.resource_at(g.resource_of(off[0])).kind == resource_kind::copy_engine);
  CHECK(g.resource_of(off[0]) != g.resource_of(pre[0]));
  CHECK(g.has_dependency(off[0], m.relu_f.kernel));  // the stream waits for fc1's offload
  CHECK(g.has_dependency(pre[0], m.fc1_b.kernel));   // fc1's backward waits for its prefetch
  CHECK(g.has_dependency(m.relu_f.kernel, pre[0]));  // prefetched once relu's backward may start
  // CPU: L1 M1 L2 M2 N1 N2 L3 L4 L5 L6. d2h: O1 [20,120), O2 [130,170). k1 [10,130)
  // k2 [130,170). Both prefetches are ready at 170; the policy serves relu's first:
  // P2 [170,210), P1 [210,310). k3 [210,250), k4 [310,550), k5, k6: 610.
  auto r = replay(g, policy_of(v));
  CHECK(r.start[pre[1]] == 170);
  CHECK(r.start[pre[0]] == 210);
  CHECK(r.makespan == 610);
  CHECK(r.peak_memory == 1000); // from 1400
  // In trace order fc1's prefetch would go first and relu's backward would wait: 650.
  CHECK(replay(g).makespan == 650);
}

TEST_CASE("vdnn on a slow link: offloads stall the forward") {
  mlp m;
  auto& g = m.b.g;
  apply(g, vdnn{.bandwidth = 1e9, .layers = "fc1"}); // 1000 ns for fc1's 1000 B
  // O1 [20,1020); k2 waits for it: [1020,1060); P1 starts after k2 (relu's backward may
  // start) [1060,2060); k3 [1060,1100); k4 [2060,2300); k5, k6: 2360.
  CHECK(replay(g, priority_policy{}).makespan == 2360);
  auto p = vdnn::from_params(pass_params::parse("vdnn", "bandwidth=16GB/s,lookahead=2,layers=conv.*"));
  CHECK(p.bandwidth == 16e9);
  CHECK(p.lookahead == 2);
}

// ---------------------------------------------------------------- substitute

TEST_CASE("substitute fuses two layers into one kernel per phase") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  substitute s{.layers = "fc1|relu",
               .kernels = {{"fused_fc_relu", phase::forward, 130}, {"fused_fc_relu_grad", phase::backward, -1, 0.5}}};
  auto rep = s(g);
  for (auto t : {m.fc1_f.kernel, m.relu_f.call, m.relu_b.kernel, m.fc1_b.call}) CHECK_FALSE(g.contains(t));
  std::vector<task_id> ks;
  for (auto k : tasks<gpu_kernel>(g) | where(name_matches("^fused"))) ks.push_back(k);
  REQUIRE(ks.size() == 2);
  CHECK(g.duration(ks[0]) == 130);
  CHECK(g.duration(ks[1]) == 140); // 0.5 x (40 + 240)
  CHECK(g.layer(ks[0]) == "fc1");
  // CPU: two launches [0,20) then the optimizer's [20,40). F [10,140) B [140,280)
  // k5 [280,310) k6 [310,340).
  auto r = replay(g);
  CHECK(r.makespan == 340);
  CHECK(r.peak_memory == 1400); // the fused kernels carry the layers' allocations
  CHECK(rep.items[2].second == "8");
  check_invariants(g);
}

TEST_CASE("substitute from parameters: one fused kernel per phase with the replaced time") {
  mlp m;
  auto s = substitute::from_params(pass_params::parse("substitute", "layers=fc1|relu,name=fc_relu,forward=100ns"));
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].name == "fc_relu_forward");
  CHECK(s.kernels[0].duration == 100);
  CHECK(s.kernels[1].duration == -1);
  apply(m.b.g, s);
  // F [10,110), B (40 + 240 = 280) [110,390), k5, k6: 450
  CHECK(makespan(m.b.g) == 450);
  CHECK_THROWS_AS(substitute::from_params(pass_params::parse("substitute", "")), daydream::error);
}

TEST_CASE("substitute fuses each run of consecutive selected layers separately") {
  // CPU bound: launches take 100 ns, kernels 10 ns. Layers a, b, c with two ops each in
  // the forward and one each in the backward (c, b, a): 9 launches, the last kernel
  // ends at 910. Selecting a and c gives runs [a], [c] forward and [c], [a] backward;
  // each becomes one launch and one kernel: 7 launches, the last kernel [700,710).
  builder b;
  for (auto l : {"a", "b", "c"})
    for (int i = 0; i < 2; ++i) b.op("volta_sgemm_128x64_tn", 10, l, phase::forward, 0, 0, "aten::mm", 100);
  for (auto l : {"c", "b", "a"}) b.op("volta_sgemm_128x64_nt", 10, l, phase::backward, 0, 0, "aten::mm", 100);
  CHECK(makespan(b.g) == 910);
  auto s = substitute::from_params(pass_params::parse("substitute", "layers=a|c"));
  pass_report rep;
  apply(b.g, [&](graph& g) { rep = s(g); });
  CHECK(makespan(b.g) == 710);
  CHECK(rep.items[1].second == "4");
  CHECK(rep.items[3].second == "4");
  int fused = 0;
  for (auto k : tasks<gpu_kernel>(b.g) | where(name_matches("^fused_forward$"))) fused += b.g.duration(k) == 20;
  CHECK(fused == 2);
}

// ---------------------------------------------------------------- recompute

TEST_CASE("recompute re-runs a layer's forward before its backward and drops its stash") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto rep = recompute{.layers = "fc1"}(g);
  auto copy = prev_on_resource(g, m.fc1_b.kernel);
  REQUIRE(copy != m.relu_b.kernel);
  CHECK(g.name(copy) == "volta_sgemm_128x64_tn");
  CHECK(g.phase_of(copy) == phase::backward);
  CHECK(g.duration(copy) == 120);
  auto call = launch_of(g, copy);
  REQUIRE(call != no_task);
  CHECK(next_on_resource(g, call) == m.fc1_b.call);
  // CPU: L1 L2 L3 L1' L4 L5 L6. GPU: k1 [10,130) k2 [130,170) k3 [170,210)
  // k1' [210,330) k4 [330,570) k5 [570,600) k6 [600,630).
  auto r = replay(g);
  CHECK(r.makespan == 630);
  // memory: 1000, 400 (fc1 dropped when k2 starts), 0, 1000, 0.
  CHECK(r.peak_memory == 1000);
  CHECK(rep.items[1].second == "2");
}

// ---------------------------------------------------------------- grad_accum

TEST_CASE("grad_accum on a GPU-bound step: same time, half the activation memory") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto rep = grad_accum{.k = 2}(g);
  CHECK(g.duration(m.fc1_f.kernel) == 60);
  CHECK(g.duration(m.opt1.kernel) == 30); // the update runs once, unchanged
  CHECK(g.size() == 12 + 8);
  // CPU: L1..L4, L1'..L4', L5, L6. GPU: k1 [10,70) k2 [70,90) k3 [90,110) k4 [110,230)
  // k1' [230,290) ... k4' [330,450) k5 [450,480) k6 [480,510).
  auto r = replay(g);
  CHECK(r.makespan == 510);
  CHECK(r.peak_memory == 700);
  CHECK(rep.items[2].second == "8");
  check_invariants(g);
}

TEST_CASE("grad_accum on a CPU-bound step: the CPU overhead is paid k times") {
  // Two iterations: two forward ops, one backward op, one weight update; launches take
  // 100 ns, kernels 30 ns. Baseline iteration: 400 ns. With k = 2: 3 x 2 + 1 launches.
  builder b;
  for (std::int32_t it = 0; it < 2; ++it) {
    b.op("volta_sgemm_128x64_tn", 30, "fc1", phase::forward, it, 0, "aten::addmm", 100);
    b.op("volta_sgemm_128x64_tn", 30, "fc2", phase::forward, it, 0, "aten::addmm", 100);
    b.op("volta_sgemm_128x64_nt", 30, "fc2", phase::backward, it, 0, "aten::mm", 100);
    b.op("multi_tensor_apply_kernel", 30, "", phase::weight_update, it, 0, "aten::_foreach_add_", 100);
  }
  CHECK(iteration_time(b.g, replay(b.g), 0) == 400);
  apply(b.g, grad_accum{.k = 2});
  CHECK(iteration_time(b.g, replay(b.g), 0) == 700);
  CHECK(grad_accum::from_params(pass_params::parse("grad_accum", "k=4")).k == 4);
  CHECK_THROWS_AS(grad_accum::from_params(pass_params::parse("grad_accum", "k=0")), daydream::error);
}

// ---------------------------------------------------------------- composition and laws

TEST_CASE("passes compose: amp then fused_adam, and a pipeline keeps vdnn's policy") {
  mlp m;
  apply(m.b.g, amp{} | fused_adam{});
  // k4 ends at 170; the fused kernel takes 0.35 x (15 + 15) = 10.5 -> 11 ns.
  CHECK(makespan(m.b.g) == 181);
  static_assert(std::is_same_v<pass_policy_t<decltype(amp{} | vdnn{})>, priority_policy>);
  static_assert(std::is_same_v<pass_policy_t<decltype(vdnn{} | amp{})>, priority_policy>);
}

TEST_CASE("every single-GPU pass obeys the pass laws") {
  auto fx = testing::standard_fixtures();
  {
    mlp m;
    fx.push_back({"two-layer MLP", m.b.g});
    estimate_activation_memory(m.b.g);
    fx.push_back({"two-layer MLP with a memory model", m.b.g});
  }
  const testing::law_options strict{.allow_refusal = false};
  testing::check_pass_laws(amp{}, fx, strict);
  testing::check_pass_laws(fused_adam{}, fx, strict);
  testing::check_pass_laws(reconstruct_bn{}, fx, strict);
  testing::check_pass_laws(gist{}, fx, strict);
  testing::check_pass_laws(vdnn{}, fx, strict);
  testing::check_pass_laws(substitute{.layers = "layer0|relu"}, fx, strict);
  testing::check_pass_laws(recompute{}, fx, strict);
  testing::check_pass_laws(grad_accum{.k = 3}, fx, strict);
  testing::check_pass_laws(amp{} | fused_adam{} | vdnn{}, fx, strict);
}
