// Tests of the precision pass (FP8 GEMMs) on hand-built graphs.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/precision.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/precision.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("precision:to=fp8 halves the bf16 GEMMs and nothing else") {
  builder b;
  auto gemm = b.op("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 300, "fc1", phase::forward, 0, 0,
                   "aten::mm");
  auto attn = b.op("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>",
                   200, "attn", phase::forward, 0, 0, "aten::_flash_attention_forward");
  auto fp8 = b.op("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n", 100, "fc2", phase::forward, 0, 0, "aten::_scaled_mm");
  auto add = b.op("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 40,
                  "fc2", phase::forward, 0, 0, "aten::add");
  CHECK(precision::applicable(b.g));
  auto rep = apply(b.g, precision{});
  CHECK(rep.applied);
  CHECK(b.g.duration(gemm.kernel) == 150);
  CHECK(b.g.duration(attn.kernel) == 200);
  CHECK(b.g.duration(fp8.kernel) == 100);
  CHECK(b.g.duration(add.kernel) == 40);
  CHECK(rep.value("bf16/fp16 GEMM kernels in FP8") == "1 kernels, 300 ns -> 150 ns");
  CHECK(rep.at("bf16/fp16 GEMM kernels in FP8").value ==
        report_value::of_change(report_kind::time, 300, 150).with_count(1));
}

TEST_CASE("precision:to=fp8 on an FP32 run changes nothing and says to model amp") {
  builder b;
  auto gemm = b.op("volta_sgemm_128x64_nn", 300, "fc1", phase::forward, 0, 0, "aten::mm");
  CHECK_FALSE(precision::applicable(b.g));
  CHECK(precision::not_applicable(b.g).find("amp") != std::string::npos);
  auto rep = apply(b.g, precision{});
  CHECK_FALSE(rep.applied);
  CHECK(b.g.duration(gemm.kernel) == 300);
  auto p = from_params<precision>(pass_params::parse("precision", "to=fp8,gemm=1.6"));
  CHECK(p.gemm == 1.6);
  CHECK_THROWS_AS(from_params<precision>(pass_params::parse("precision", "to=fp4")), usage_error);
  CHECK_THROWS_AS(from_params<precision>(pass_params::parse("precision", "gemm=0")), usage_error);
}

TEST_CASE("precision obeys the pass laws") {
  testing::check_pass_laws(precision{}, pass_fixtures(), {.allow_refusal = false});
}
