// Tests of the amp pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/amp.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/semantics/memory.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/device_catalogue.hpp>
#include <daydream/recorded_device.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

/// The kernel model of the hand-built graphs (no GPU named: FP32 GEMMs 3x, TF32 2x),
/// with memory-bound kernels 2x and no fixed part, so that nanosecond kernels shrink;
/// no casts, no GradScaler.
constexpr double half_bytes = 2;
const amp kernels_only{.memory = half_bytes, .overhead = 0, .casts = false, .scaler = false};

TEST_CASE("amp: a GPU-bound step gets compute kernels 3x and memory kernels 2x faster; the optimizer stays FP32") {
  mlp m;
  CHECK(makespan(m.b.g) == 510);
  auto rep = kernels_only(m.b.g);
  CHECK(m.b.g.duration(m.fc1_f.kernel) == 40);
  CHECK(m.b.g.duration(m.fc1_b.kernel) == 80);
  CHECK(m.b.g.duration(m.relu_f.kernel) == 20);
  CHECK(m.b.g.duration(m.opt1.kernel) == 30); // FP32 master weights: the update moves the same bytes
  CHECK(m.b.g.duration(m.fc1_f.call) == 10); // CPU unchanged
  // k1 [10,50) k2 [50,70) k3 [70,90) k4 [90,170) k5 [170,200) k6 [200,230)
  CHECK(makespan(m.b.g) == 230);
  CHECK(rep.value("compute_bound") == "2 kernels, 360 ns -> 120 ns");
  CHECK(rep.at("compute_bound").value ==
        report_value::of_change(report_kind::time, 360, 120).with_count(2));
  CHECK(rep.value("memory_bound") == "4 kernels, 140 ns -> 100 ns");
  CHECK(rep.at("memory_bound").value.before == 140);
  CHECK(rep.at("memory_bound").value.value == 100);
  CHECK(rep.at("memory_bound").value.count == 4);
  CHECK(rep.value("weight-update kernels (FP32 master weights, unchanged)") == "2 kernels, 60 ns");
  CHECK(rep.notes.empty());
}

TEST_CASE("amp: a convolution already on TF32 tensor cores gets 1/tf32, an FP32 one 1/compute") {
  // PyTorch runs FP32 convolutions on TF32 tensor cores by default on Ampere and later:
  // FP16 doubles their throughput, not triples it.
  builder b;
  auto tf = b.op("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw", 120, "conv1", phase::forward, 0, 0,
                 "aten::cudnn_convolution");
  auto fp = b.op("volta_sgemm_128x64_tn", 120, "fc", phase::forward, 0, 0, "aten::addmm");
  auto rep = kernels_only(b.g);
  CHECK(b.g.duration(tf.kernel) == 60);
  CHECK(b.g.duration(fp.kernel) == 40);
  CHECK(rep.value("compute-bound kernels already on TF32 tensor cores (/tf32)") == "1");
  apply(b.g, amp{.tf32 = 1.5, .memory = half_bytes, .overhead = 0, .casts = false, .scaler = false});
  CHECK(b.g.duration(tf.kernel) == 40);
}

TEST_CASE("amp stores activations in half precision: the activation peak halves") {
  mlp m;
  estimate_activation_memory(m.b.g);
  CHECK(replay(m.b.g).peak_memory == 1400);
  auto rep = kernels_only(m.b.g);
  CHECK(m.b.g.mem_delta(m.fc1_f.kernel) == 500);
  CHECK(m.b.g.mem_delta(m.fc1_b.kernel) == -500);
  CHECK(replay(m.b.g).peak_memory == 700);
  CHECK(rep.value("forward/backward allocations") == "1.4 kB -> 700 B");
  apply(m.b.g, amp{.memory = half_bytes, .overhead = 0, .activations = 1, .casts = false, .scaler = false});
  CHECK(replay(m.b.g).peak_memory == 700);
}

TEST_CASE("amp halves activations only: weight gradients stay FP32") {
  // The MLP with its activation model, plus the fc1 weight gradient: an AccumulateGrad
  // on the CPU after the six launches allocates 1000 B and keeps it.
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto grad = m.b.cpu("torch::autograd::AccumulateGrad", 5, "fc1", phase::backward);
  g.set_mem_delta(grad, 1000);
  // The gradient's CPU task runs at 60 (after the six 10 ns launches), before k2 starts
  // at 130: 1000 (k1) + 1000 (gradient) + 400 (k2) = 2400.
  CHECK(replay(g).peak_memory == 2400);
  auto rep = kernels_only(g);
  CHECK(g.mem_delta(grad) == 1000);
  CHECK(g.mem_delta(m.fc1_f.kernel) == 500);
  CHECK(replay(g).peak_memory == 1700); // 500 + 1000 + 200
  CHECK(rep.value("weight-gradient allocations (FP32, unchanged)") == "1 kB");
}

TEST_CASE("amp: a CPU-bound step gains nothing from shorter kernels, and autocast's casts make it slower") {
  // Two iterations of three ops; each launch takes 100 ns, each GEMM 30 ns. The GPU waits
  // for the CPU: iteration 1 starts when the CPU is done with iteration 0, at 300 ns.
  builder b;
  for (std::int32_t it = 0; it < 2; ++it)
    for (auto layer : {"fc1", "fc2", "fc3"})
      b.op("volta_sgemm_128x64_tn", 30, layer, phase::forward, it, 0, "aten::addmm", 100);
  auto g = b.g;
  auto before = replay(b.g);
  CHECK(iteration_time(b.g, before, 0) == 300);
  apply(b.g, kernels_only);
  auto after = replay(b.g);
  CHECK(iteration_time(b.g, after, 0) == 300); // shorter kernels, same iteration
  CHECK(after.makespan == before.makespan - 20); // only the very last kernel ends earlier

  // With autocast's casts: fc1 casts its weight, its bias (aten::addmm) and the step's
  // FP32 input; fc2 and fc3 their weight and bias (their input is fc1's FP16 output).
  // The trace has no one-kernel elementwise operator to measure a cast by, so each
  // costs 2 x 10 us of CPU: 7 casts x 20 us + 3 launches x 100 ns a step.
  auto rep = apply(g, amp{.memory = half_bytes, .overhead = 0});
  auto casted = replay(g);
  CHECK(iteration_time(g, casted, 0) == 7 * 20'000 + 300);
  CHECK(iteration_time(g, casted, 0) > iteration_time(b.g, after, 0)); // AMP loses on a CPU-bound loop
  std::size_t casts = 0;
  for (auto k : tasks<gpu_kernel>(g)) casts += g.name(k).find("autocast: cast to float16") == 0;
  CHECK(casts == 14);
  bool reported = false;
  for (auto& [k, v] : rep.items) reported = reported || (k == "casts added (autocast)" && v.find("14 forward + 0 backward") == 0);
  CHECK(reported);
}

TEST_CASE("amp: a run already in bf16 is left alone, and says so") {
  builder b;
  auto gemm = b.op("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 300, "fc1", phase::forward, 0, 0,
                   "aten::mm");
  auto add = b.op("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 40,
                  "fc1", phase::forward, 0, 0, "aten::add");
  const auto size = b.g.size();
  auto rep = apply(b.g, amp{.memory = half_bytes, .overhead = 0});
  CHECK_FALSE(rep.applied);
  CHECK(rep.reason.find("already reduced precision") == 0);
  CHECK(rep.reason.find("bf16") != std::string::npos);
  CHECK(b.g.duration(gemm.kernel) == 300);
  CHECK(b.g.duration(add.kernel) == 40);
  CHECK(b.g.size() == size);
  // FP8 and FP16 GEMMs count as reduced precision too.
  for (auto name : {"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n", "volta_h884gemm_128x128_ldg8_nn",
                    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn"}) {
    builder c;
    c.op(name, 300, "fc1", phase::forward, 0, 0, "aten::mm");
    CHECK_FALSE(apply(c.g, amp{}).applied);
  }
}

TEST_CASE("amp with GradScaler (fp16): the optimizer step waits for the unscale of the gradients") {
  // The MLP (kernels 3x/2x faster: k1 [10,50) k2 [50,70) k3 [70,90) k4 [90,170)), then
  // before the optimizer's first launch: the unscale's launch (2 x 10 us: no one-kernel
  // elementwise operator to measure by) [40, 20040), its kernel (a fifth of the
  // optimizer's 30 ns, at least the median forward elementwise kernel, 40 ns) after k4
  // [20040, 20080), the sync on it [20080, 25080); then the optimizer: opt1's launch
  // [25080, 25090) and kernel [25090, 25120), opt2's [25090, 25100) and [25120, 25150)
  // (the optimizer's kernels keep their FP32 time).
  mlp m;
  auto rep = apply(m.b.g, amp{.memory = half_bytes, .overhead = 0, .casts = false});
  CHECK(makespan(m.b.g) == 25'150);
  CHECK(replay(m.b.g).start[m.opt1.call] == 25'080);
  // bf16 needs no loss scaling: the kernel model alone.
  mlp n;
  apply(n.b.g, amp{.memory = half_bytes, .overhead = 0, .dtype = "bf16", .casts = false});
  CHECK(makespan(n.b.g) == 230);
}

TEST_CASE("amp reports the kernels it could not classify and leaves them alone") {
  builder b;
  auto k = b.op("my_custom_kernel", 90, "x", phase::forward);
  auto rep = amp{.memory = half_bytes, .overhead = 0}(b.g);
  CHECK(b.g.duration(k.kernel) == 90);
  CHECK(rep.value("unclassified kernels") == "my_custom_kernel (x1)");
  CHECK(rep.at("unclassified kernels").value.kind == report_kind::text);
  CHECK(rep.at("unclassified kernels").value.count == 1);
  CHECK(rep.notes.size() == 1);
  CHECK_FALSE(rep.applied); // nothing it knows how to run in half precision
  CHECK(rep.reason.find("compute- or memory-bound") != std::string::npos);
}

TEST_CASE("amp with a replaced classifier and parameters") {
  mlp m;
  kernel_classifier everything_compute;
  everything_compute.add(kernel_class::compute_bound, ".");
  apply(m.b.g, amp{.compute = 2, .memory = half_bytes, .overhead = 0, .casts = false, .scaler = false, .classifier = everything_compute});
  CHECK(m.b.g.duration(m.relu_f.kernel) == 20);
  CHECK(m.b.g.duration(m.fc1_f.kernel) == 60);
  auto p = from_params<amp>(pass_params::parse("amp", "compute=4,memory=1.5,activations=1,tf32=2.5"));
  CHECK(p.tf32 == 2.5);
  CHECK(p.compute == 4);
  CHECK(p.memory == 1.5);
  CHECK(p.activations == 1);
  auto q = from_params<amp>(pass_params::parse("amp", "dtype=bf16,casts=false,scaler=false"));
  CHECK(q.dtype == "bf16");
  CHECK_FALSE(q.casts);
  CHECK_FALSE(q.scaler);
  CHECK_THROWS_WITH_AS(from_params<amp>(pass_params::parse("amp", "dtype=fp32")), doctest::Contains("not modelled"),
                       daydream::usage_error);
  CHECK(from_params<amp>(pass_params::parse("amp", "compute=0")).compute == 0); // 0: from the GPU's peaks
  CHECK_THROWS_AS(from_params<amp>(pass_params::parse("amp", "compute=-1")), daydream::error);
  CHECK_THROWS_AS(from_params<amp>(pass_params::parse("amp", "overhead=-1us")), daydream::error);
  CHECK(from_params<amp>(pass_params::parse("amp", "overhead=3us")).overhead == 3'000);
  CHECK(from_params<amp>(pass_params::parse("amp", "")).catalogue.size() > 0); // the bundled catalogue
  CHECK_THROWS_AS(from_params<amp>(pass_params::parse("amp", "compte=2")), daydream::error);
}

namespace {
/// A catalogue of one GPU with round peaks: FP32 10 TFLOP/s, TF32 50, FP16 80, BF16 100.
device_catalogue round_gpu() {
  device d;
  d.name = "Round GPU";
  d.fp32_flops = 10e12;
  d.tf32_flops = 50e12;
  d.fp16_flops = 80e12;
  d.bf16_flops = 100e12;
  device_catalogue cat;
  cat.add(d);
  return cat;
}
task_id named(const graph& g, std::string_view name) {
  for (auto t : tasks(g))
    if (g.name(t) == name) return t;
  return no_task;
}
} // namespace

TEST_CASE("amp: on a catalogued GPU, kernels get its peaks' ratios, beyond a fixed part that does not shrink") {
  builder b;
  b.g.set_devices({recorded_device{.id = 0, .name = "Round GPU"}});
  auto fp = b.op("volta_sgemm_128x64_tn", 22'000, "fc", phase::forward, 0, 0, "aten::mm");
  auto tf = b.op("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw", 22'000, "conv", phase::forward, 0, 0,
                 "aten::cudnn_convolution");
  auto ew = b.op("vectorized_elementwise_kernel<relu>", 4'500, "relu", phase::forward, 0, 0, "aten::relu");
  auto tiny = b.op("volta_sgemm_32x32_tn", 1'500, "fc2", phase::forward, 0, 0, "aten::mm");
  auto g = b.g;
  SUBCASE("bf16: 100/10 = 10x for FP32, 100/50 = 2x for TF32, 1.25x memory-bound, beyond 2 us") {
    auto rep = apply(b.g, amp{.catalogue = round_gpu(), .dtype = "bf16", .casts = false});
    CHECK(b.g.duration(fp.kernel) == 2'000 + 20'000 / 10);
    CHECK(b.g.duration(tf.kernel) == 2'000 + 20'000 / 2);
    CHECK(b.g.duration(ew.kernel) == 2'000 + 2'000); // 2.5 us / 1.25
    CHECK(b.g.duration(tiny.kernel) == 1'500);       // all of it is the fixed part
    CHECK(rep.value("speedups (the Round GPU's datasheet peaks)") ==
          "10x FP32, 2x TF32 compute-bound; 1.25x memory-bound; 2 us of each kernel unchanged");
  }
  SUBCASE("fp16: 80/10 = 8x and 80/50 = 1.6x; compute= given wins over the GPU") {
    apply(b.g, amp{.catalogue = round_gpu(), .casts = false, .scaler = false});
    CHECK(b.g.duration(fp.kernel) == 2'000 + 20'000 / 8);
    CHECK(b.g.duration(tf.kernel) == 2'000 + 12'500);
    apply(g, amp{.compute = 4, .overhead = 0, .catalogue = round_gpu(), .casts = false, .scaler = false});
    CHECK(g.duration(fp.kernel) == 22'000 / 4);
    CHECK(g.duration(tf.kernel) == 22'000 * 10 / 16); // 1.6x from the GPU
  }
  SUBCASE("a GPU the catalogue does not know: 3x and 2x, and the report says why") {
    g.set_devices({recorded_device{.id = 0, .name = "Unknown Accelerator"}});
    auto rep = apply(g, amp{.overhead = 0, .catalogue = round_gpu(), .casts = false, .scaler = false});
    CHECK(g.duration(fp.kernel) == 7'333); // 22 us / 3, to the nearest ns
    CHECK(g.duration(tf.kernel) == 11'000);
    CHECK(rep.value("speedups ('Unknown Accelerator' is not in the device catalogue: defaults 3x and 2x)")
              .starts_with("3x FP32, 2x TF32"));
  }
}

TEST_CASE("amp: a trace that runs GradScaler is mixed precision already, whatever its GEMMs' names say") {
  builder b;
  b.op("my_gemm_kernel_without_a_type", 120, "fc1", phase::forward, 0, 0, "aten::mm");
  b.cpu("aten::_amp_foreach_non_finite_check_and_unscale_", 5, "", phase::other);
  const auto why = amp::not_applicable(b.g);
  CHECK(why == "already mixed precision: the trace runs GradScaler (aten::_amp_foreach_non_finite_check_and_unscale_), "
               "which only an autocast run with loss scaling has: nothing to gain from AMP");
  auto rep = apply(b.g, amp{});
  CHECK_FALSE(rep.applied);
  CHECK(rep.reason == why);
}

TEST_CASE("amp: GradScaler's unscale runs after the ops a sync between the backward and the optimizer waits for") {
  // The loss's .item() between backward and optimizer: a copy kernel and a host sync on
  // it. The unscale kernel, launched just before the optimizer, runs after the copy (a
  // stream runs its ops in launch order); before it ran right after the backward, ahead
  // of the copy the sync waited for, which closed a cycle.
  builder b;
  b.op("volta_sgemm_128x64_tn", 120, "fc1", phase::forward, 0, 0, "aten::mm");
  b.op("volta_sgemm_128x64_nt", 240, "fc1", phase::backward, 0, 0, "aten::mm");
  auto copy = b.op("vectorized_elementwise_kernel<copy>", 20, "", phase::other, 0, 0, "aten::copy_");
  auto sync = b.cpu("cudaStreamSynchronize", 5, "", phase::other);
  b.g.add_dependency(copy.kernel, sync, dep_kind::sync);
  b.op("multi_tensor_apply_kernel<adam>", 30, "", phase::weight_update, 0, 0, "aten::_foreach_add_");
  auto rep = apply(b.g, amp{.memory = half_bytes, .overhead = 0, .casts = false});
  REQUIRE(rep.applied);
  CHECK(rep.value("GradScaler (fp16)").starts_with("1 optimizer steps"));
  const auto unscale = named(b.g, "GradScaler: unscale and inf check (_amp_foreach_non_finite_check_and_unscale_)");
  REQUIRE(unscale != no_task);
  auto r = replay(b.g);
  CHECK(r.start[unscale] >= r.end[copy.kernel]);
  CHECK(r.end[sync] <= r.start[unscale]); // the loss's sync does not wait for the unscale
}

TEST_CASE("amp obeys the pass laws") {
  testing::check_pass_laws(amp{}, pass_fixtures(), {.allow_refusal = false});
}
