// Tests of the compile pass on hand-built graphs with hand-computed fused kernels and replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/compile.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/compile.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

namespace {

constexpr const char* ew = "vectorized_elementwise_kernel<float>";

/// fc (GEMM, 100 ns) -> act: mul (40 ns, 4000 B), tanh (40 ns, 4000 B), add (80 ns,
/// 8000 B) -> fc2 (GEMM, 100 ns), all forward; launch calls take 10 ns.
/// Baseline (by hand): calls [0,10) ... [40,50); kernels fc [10,110), mul [110,150),
/// tanh [150,190), add [190,270), fc2 [270,370).
builder gelu_like() {
  builder b;
  b.op("volta_sgemm_128x64_tn", 100, "fc", phase::forward, 0, 0, "aten::addmm");
  b.op(ew, 40, "act", phase::forward, 0, 4000, "aten::mul");
  b.op(ew, 40, "act", phase::forward, 0, 4000, "aten::tanh");
  b.op(ew, 80, "act", phase::forward, 0, 8000, "aten::add");
  b.op("volta_sgemm_128x64_tn", 100, "fc2", phase::forward, 0, 0, "aten::addmm");
  return b;
}

/// The duration of the only kernel of `g` named like a fused kernel (-1 when none).
time_ns fused_duration(const graph& g) {
  time_ns d = -1;
  g.for_each_task([&](task_id t) {
    if (g.is<gpu_kernel>(t) && g.name(t).substr(0, 12) == "triton_poi_f") d = g.duration(t);
  });
  return d;
}

std::size_t kernels(const graph& g) {
  std::size_t n = 0;
  g.for_each_task([&](task_id t) { n += g.is<gpu_kernel>(t); });
  return n;
}

} // namespace

TEST_CASE("compile: a run whose bytes are known becomes one kernel of its distinct bytes over the bandwidth") {
  auto b = gelu_like();
  CHECK(replay(b.g).makespan == 370);
  // I = 4000, 4000, 8000; handed on: T2 = min(4000, 4000), T3 = min(4000, 8000), the last
  // writes T4 = T3 = 4000. Fused: D = 16000 - 8000 + 4000 = 12000 B; at 100 B/ns, 120 ns.
  auto rep = compile{.bandwidth = 100e9}(b.g);
  REQUIRE(rep.applied);
  CHECK(fused_duration(b.g) == 120);
  CHECK(kernels(b.g) == 3);
  CHECK(rep.value("fused kernels (runs)") == "1");
  CHECK(rep.value("kernels fused") == "3");
  CHECK(rep.value("runs timed") == "1 by their bytes over the bandwidth, 0 as their longest kernel (sizes unknown)");
  // One launch call (10 ns, as the first one) for three: calls [0,10) [10,20) [20,30);
  // fc [10,110), the fused kernel [110,230), fc2 [230,330).
  CHECK(replay(b.g).makespan == 330);
  CHECK(rep.value("CPU tasks removed").substr(0, 2) == "3,");
}

TEST_CASE("compile: the bandwidth is the one the trace's own memory-bound kernels achieve") {
  auto b = gelu_like();
  // Eager bytes E = 16000 + T2 + T3 + T4 = 28000 B in 160 ns: 175 B/ns. D = 12000 B:
  // 68.57 ns, rounded to 69 (between the shortest member, 40, and the run's 160).
  auto rep = compile{}(b.g);
  REQUIRE(rep.applied);
  CHECK(fused_duration(b.g) == 69);
  CHECK(rep.value("bandwidth of the fused kernels").find("measured over 3 memory-bound kernels") !=
        std::string_view::npos);
}

TEST_CASE("compile: no run crosses a GEMM, a layer or a phase, and the optimizer step stays eager") {
  builder b;
  b.op(ew, 30, "blk", phase::forward, 0, 1000, "aten::mul");
  b.op(ew, 30, "blk", phase::forward, 0, 1000, "aten::add");
  auto gemm = b.op("volta_sgemm_128x64_tn", 100, "blk", phase::forward, 0, 0, "aten::mm");
  b.op(ew, 30, "blk", phase::forward, 0, 1000, "aten::mul");
  b.op(ew, 30, "other", phase::forward, 0, 1000, "aten::add");  // another layer: alone
  b.op(ew, 30, "other", phase::backward, 0, 1000, "aten::mul"); // another phase: alone
  b.op("multi_tensor_apply_kernel<adam>", 30, "", phase::weight_update, 0, 1000, "aten::_foreach_add_");
  b.op("multi_tensor_apply_kernel<adam>", 30, "", phase::weight_update, 0, 1000, "aten::_foreach_mul_");
  const auto before = kernels(b.g);
  auto rep = compile{.bandwidth = 100e9}(b.g);
  REQUIRE(rep.applied);
  CHECK(rep.value("fused kernels (runs)") == "1"); // the two before the GEMM
  CHECK(rep.value("kernels fused") == "2");
  CHECK(kernels(b.g) == before - 1);
  CHECK(b.g.duration(gemm.kernel) == 100);
  // I = 1000, 1000: D = 2000 - 1000 + 1000 = 2000 B, 20 ns at 100 B/ns, but a kernel
  // takes at least as long as the shortest of its run: 30 ns
  CHECK(fused_duration(b.g) == 30);
}

TEST_CASE("compile: a layer pattern limits the fusion to the layers it matches") {
  builder b;
  for (const char* layer : {"h.0.mlp.act", "h.0.attn.drop"}) {
    b.op(ew, 30, layer, phase::forward, 0, 1000, "aten::mul");
    b.op(ew, 30, layer, phase::forward, 0, 1000, "aten::add");
    b.op("volta_sgemm_128x64_tn", 100, layer, phase::forward, 0, 0, "aten::mm");
  }
  auto mlp_only = b.g;
  auto rep = compile{.layers = ".*mlp.*", .bandwidth = 100e9}(mlp_only);
  CHECK(rep.value("fused kernels (runs)") == "1");
  CHECK(rep.value("layer pattern") == ".*mlp.*");
  CHECK(kernels(mlp_only) == kernels(b.g) - 1);
  auto all = b.g;
  CHECK(compile{.bandwidth = 100e9}(all).value("fused kernels (runs)") == "2");
  auto none = b.g;
  auto miss = compile{.layers = "encoder.*"}(none);
  CHECK_FALSE(miss.applied);
  CHECK(miss.reason == "no two memory-bound kernels of one layer and phase in layers matching 'encoder.*' follow "
                       "each other on a stream: nothing to fuse");
  CHECK(kernels(none) == kernels(b.g));
}

TEST_CASE("compile: scope=phase lets a run cross layers, as Inductor fuses a dropout, a residual add and a norm") {
  builder b;
  b.op("volta_sgemm_128x64_tn", 100, "h.0.attn.c_proj", phase::forward, 0, 0, "aten::addmm");
  b.op(ew, 30, "h.0.attn.resid_dropout", phase::forward, 0, 1000, "aten::native_dropout");
  b.op(ew, 30, "h.0", phase::forward, 0, 2000, "aten::add");
  b.op("vectorized_layer_norm_kernel", 30, "h.0.ln_2", phase::forward, 0, 1000, "aten::native_layer_norm");
  b.op(ew, 30, "h.0.ln_2", phase::backward, 0, 1000, "aten::native_layer_norm_backward"); // another phase
  auto per_layer = b.g;
  CHECK(compile::not_applicable(per_layer).find("no two memory-bound kernels of one layer and phase") == 0);
  auto rep = compile{.scope = "phase", .bandwidth = 10e9}(b.g);
  REQUIRE(rep.applied);
  CHECK(rep.value("kernels fused") == "3");
  // I = 1000, 2000, 1000: T2 = 1000, T3 = 1000, T4 = 1000; D = 4000 - 2000 + 1000 = 3000 B,
  // 300 ns at 10 B/ns, no more than the run's 90 ns
  CHECK(kernels(b.g) == 3);
  time_ns fused = -1;
  b.g.for_each_task([&](task_id t) {
    if (b.g.is<gpu_kernel>(t) && b.g.name(t).substr(0, 16) == "triton_red_fused") fused = b.g.duration(t);
  });
  CHECK(fused == 90);
}

TEST_CASE("compile: a trace with nothing to fuse, or already compiled, says so") {
  builder alternating;
  for (int i = 0; i < 3; ++i) {
    alternating.op("volta_sgemm_128x64_tn", 100, "blk", phase::forward, 0, 0, "aten::mm");
    alternating.op(ew, 30, "blk", phase::forward, 0, 1000, "aten::relu");
  }
  auto rep = compile{}(alternating.g);
  CHECK_FALSE(rep.applied);
  CHECK(rep.reason == "no two memory-bound kernels of one layer and phase follow each other on a stream (GEMMs, "
                      "attention or layer boundaries between every pair): nothing to fuse");
  CHECK(compile::not_applicable(alternating.g) == rep.reason);

  builder gemms;
  gemms.op("volta_sgemm_128x64_tn", 100, "fc", phase::forward);
  CHECK(compile::not_applicable(gemms.g).find("no memory-bound kernel") == 0);

  builder compiled;
  compiled.op("triton_poi_fused_add_mul_0", 30, "blk", phase::forward, 0, 1000, "aten::add");
  compiled.op("triton_per_fused_native_layer_norm_1", 30, "blk", phase::forward, 0, 1000, "aten::add");
  compiled.op(ew, 20, "blk", phase::forward, 0, 1000, "aten::add");
  CHECK(compile::not_applicable(compiled.g) ==
        "the trace already runs 75% of its memory-bound kernel time in Triton kernels: the model is compiled");
}

TEST_CASE("compile: without recorded sizes a run takes as long as its longest kernel") {
  builder b;
  b.op(ew, 30, "act", phase::backward, 0, 0, "aten::mul");
  b.op(ew, 50, "act", phase::backward, 0, 0, "aten::tanh_backward");
  b.op(ew, 20, "act", phase::backward, 0, 0, "aten::mul");
  auto rep = compile{}(b.g);
  REQUIRE(rep.applied);
  CHECK(fused_duration(b.g) == 50);
  CHECK(rep.value("runs timed") == "0 by their bytes over the bandwidth, 1 as their longest kernel (sizes unknown)");
  CHECK(rep.value("bandwidth of the fused kernels").find("none measured") == 0);
}

TEST_CASE("compile: attention=fuse lets an attention kernel join the run around it, keeping its own time") {
  builder b;
  b.op(ew, 10, "attn", phase::forward, 0, 1000, "aten::mul");
  b.op("flash_fwd_kernel", 200, "attn", phase::forward, 0, 3000, "aten::_flash_attention_forward");
  b.op(ew, 10, "attn", phase::forward, 0, 1000, "aten::add");
  auto kept = b.g;
  CHECK_FALSE(compile{}(kept).applied); // attention ends both runs of one
  auto rep = compile{.attention = "fuse", .bandwidth = 100e9}(b.g);
  REQUIRE(rep.applied);
  // members I = 1000, 1000: D = 2000 B, 20 ns; plus the attention kernel's 200 ns
  CHECK(fused_duration(b.g) == 220);
  CHECK(kernels(b.g) == 1);
}

TEST_CASE("compile: parameters from the command line, and bad ones refused") {
  auto c = from_params<compile>(pass_params::parse("compile", "layers=.*mlp.*,attention=fuse,bandwidth=2TB/s"));
  CHECK(c.layers == ".*mlp.*");
  CHECK(c.attention == "fuse");
  CHECK(c.bandwidth == doctest::Approx(2e12));
  CHECK_THROWS_AS(from_params<compile>(pass_params::parse("compile", "attention=maybe")), usage_error);
  CHECK_THROWS_AS(from_params<compile>(pass_params::parse("compile", "scope=model")), usage_error);
  CHECK(from_params<compile>(pass_params::parse("compile", "scope=phase")).scope == "phase");
  CHECK_THROWS_AS(from_params<compile>(pass_params::parse("compile", "layers=(")), usage_error);
  CHECK_THROWS_AS(from_params<compile>(pass_params::parse("compile", "fuse=all")), usage_error);
}

TEST_CASE("compile obeys the pass laws") {
  testing::check_pass_laws(compile{}, pass_fixtures(), {.allow_refusal = true});
  testing::check_pass_laws(compile{.scope = "phase", .attention = "fuse", .bandwidth = 1e12}, pass_fixtures(),
                           {.allow_refusal = true});
}
