// Tests the FLOPs and bytes the ingest derives from operator shapes (io/detail/op_flops.hpp) and shares out to kernels, by hand.
// SPDX-License-Identifier: MIT
#include <daydream/io/detail/op_flops.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/select.hpp>

#include "trace_text.hpp"

#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using namespace daydream;
namespace dio = daydream::io;
using namespace daydream::testing::trace_text;

namespace {

std::uint64_t flops(std::string_view op, std::string_view dims, std::string_view types, std::string_view concrete = "") {
  auto w = dio::detail::op_flops(op, dims, types, concrete);
  return w ? w->flops : ~std::uint64_t(0);
}

task_id kernel_named(const graph& g, std::string_view name) {
  for (auto k : tasks<gpu_kernel>(g))
    if (g.name(k) == name) return k;
  FAIL("no kernel " << name);
  return no_task;
}

} // namespace

TEST_CASE("op_flops: GEMMs are 2 x M x N x K (x batch), from Input Dims") {
  const std::string f2 = R"(["float", "float"])", f3 = R"(["float", "float", "float", "Scalar", "Scalar"])";
  CHECK(flops("aten::mm", "[[64, 32], [32, 16]]", f2) == 2 * 64 * 16 * 32);
  // addmm(bias [N], A [M, K], B [K, N]); bytes: the three inputs and the M x N output.
  auto w = dio::detail::op_flops("aten::addmm", "[[1000], [64, 2048], [2048, 1000], [], []]", f3, "");
  REQUIRE(w);
  CHECK(w->flops == 2ull * 64 * 1000 * 2048);
  CHECK(w->bytes == 4ull * (1000 + 64 * 2048 + 2048 * 1000 + 64 * 1000));
  CHECK(flops("aten::bmm", "[[8, 64, 32], [8, 32, 16]]", f2) == 2 * 8 * 64 * 16 * 32);
  CHECK(flops("aten::baddbmm", "[[8, 64, 16], [8, 64, 32], [8, 32, 16], [], []]", f3) == 2 * 8 * 64 * 16 * 32);
  // matmul broadcasts batch dims; a 1-D operand is a vector.
  CHECK(flops("aten::matmul", "[[4, 1, 64, 32], [3, 32, 16]]", f2) == 2 * 12 * 64 * 16 * 32);
  CHECK(flops("aten::matmul", "[[8, 512, 768], [768, 50257]]", R"(["c10::BFloat16", "c10::BFloat16"])") ==
        2ull * 8 * 512 * 768 * 50257);
  CHECK(flops("aten::matmul", "[[32], [32, 16]]", f2) == 2 * 16 * 32);
  // linear(x [..., K], W [N, K], bias)
  CHECK(flops("aten::linear", "[[8, 512, 768], [2304, 768], [2304]]", f3) == 2ull * 8 * 512 * 2304 * 768);
  CHECK(flops("aten::addmv", "[[64], [64, 32], [32], [], []]", f3) == 2 * 64 * 32);
  // Not a GEMM: no answer; a GEMM without shapes: 0.
  CHECK(flops("aten::add", "[[64, 32], [64, 32]]", f2) == ~std::uint64_t(0));
  CHECK(flops("aten::mm", "", "") == 0);
}

TEST_CASE("op_flops: convolutions from input and weight dims, the output from the recorded strides") {
  // ResNet-50's first convolution as recorded: stride 2, padding 3: 224 -> 112.
  const std::string types = R"(["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"])";
  const std::uint64_t first = 2ull * 64 * 64 * 112 * 112 * 3 * 7 * 7;
  auto w = dio::detail::op_flops("aten::cudnn_convolution", "[[64, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]",
                                 types, R"(["", "", "[3, 3]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])");
  REQUIRE(w);
  CHECK(w->flops == first);
  CHECK_FALSE(w->estimated);
  CHECK(w->bytes == 4ull * (64 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 64 * 64 * 112 * 112));
  CHECK(flops("aten::convolution", "[[64, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]", types,
              R"(["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"])") == first);
  // Without Concrete Inputs: the output is taken as the input's size (stride 1, "same").
  auto est = dio::detail::op_flops("aten::convolution", "[[64, 3, 224, 224], [64, 3, 7, 7]]", types, "");
  REQUIRE(est);
  CHECK(est->estimated);
  CHECK(est->flops == 2ull * 64 * 64 * 224 * 224 * 3 * 7 * 7);
  // Grouped: the weight's second dim is the channels per group (depthwise 32 x 1 x 3 x 3).
  CHECK(flops("aten::convolution", "[[8, 32, 56, 56], [32, 1, 3, 3]]", types,
              R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "32"])") == 2ull * 8 * 32 * 56 * 56 * 9);
  // Transposed: not counted.
  CHECK(flops("aten::convolution", "[[8, 32, 56, 56], [32, 16, 3, 3]]", types,
              R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"])") == 0);
  // Backward: the forward's FLOPs (its output from grad_output) per gradient asked for.
  const std::string bwd = "[[64, 2048, 7, 7], [64, 512, 7, 7], [2048, 512, 1, 1], [], [], [], [], [], [], [], []]";
  const std::uint64_t one = 2ull * 64 * 2048 * 7 * 7 * 512;
  CHECK(flops("aten::convolution_backward", bwd, R"(["float", "float", "float"])",
              R"(["", "", "", "[0]", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"])") == 2 * one);
  CHECK(flops("aten::convolution_backward", bwd, R"(["float", "float", "float"])",
              R"(["", "", "", "[0]", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, False]"])") == one);
}

TEST_CASE("op_flops: attention is 2 x 2 x B x H x Lq x Lk x D, backward 2.5 times that") {
  const std::string bf = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])";
  const std::uint64_t fwd = 4ull * 8 * 12 * 512 * 512 * 64;
  CHECK(flops("aten::scaled_dot_product_attention", "[[8, 12, 512, 64], [8, 12, 512, 64], [8, 12, 512, 64]]", bf) == fwd);
  CHECK(flops("aten::_cudnn_attention_forward", "[[8, 12, 512, 64], [8, 12, 512, 64], [8, 12, 512, 64]]", bf) == fwd);
  // The flash kernels' operators lay tensors out [B, L, H, D]; keys of another length.
  CHECK(flops("aten::_flash_attention_forward", "[[8, 512, 12, 64], [8, 256, 12, 64], [8, 256, 12, 64]]", bf) ==
        4ull * 8 * 12 * 512 * 256 * 64);
  CHECK(flops("aten::_scaled_dot_product_cudnn_attention_backward",
              "[[8, 12, 512, 64], [8, 12, 512, 64], [8, 12, 512, 64], [8, 12, 512, 64]]", bf) == fwd * 5 / 2);
}

TEST_CASE("the ingest gives a GEMM's kernel 2 x M x N x K FLOPs, none to its helpers") {
  constexpr std::uint64_t M = 64, K = 2048, N = 1000;
  auto args = [](std::string dims, std::string types) {
    return R"({"Input Dims": )" + dims + R"(, "Input type": )" + types + "}";
  };
  const auto text = trace({
      X("user_annotation", "ProfilerStep#1", 1, 1, "100", "400"),
      // addmm launching one GEMM and cuBLAS's split-K reduction
      X("cpu_op", "aten::addmm", 1, 1, "110", "40",
        args("[[1000], [64, 2048], [2048, 1000], [], []]", R"(["float", "float", "float", "Scalar", "Scalar"])")),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "115", "5", corr(1)),
      X("kernel", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32", 0, 7, "130", "30", gpu(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "125", "5", corr(2)),
      X("kernel", "void cublasLt::splitKreduce_kernel<32, 16, int, float>", 0, 7, "160", "5", gpu(2)),
      // matmul: a copy of its own, then mm's two GEMM kernels sharing its FLOPs by time
      X("cpu_op", "aten::matmul", 1, 1, "200", "80", args("[[4, 1, 8], [8, 16]]", R"(["float", "float"])")),
      X("cpu_op", "aten::copy_", 1, 1, "205", "10", args("[[4, 8], [4, 8]]", R"(["float", "float"])")),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "206", "5", corr(3)),
      X("kernel", "void at::native::copy_kernel", 0, 7, "220", "5", gpu(3)),
      X("cpu_op", "aten::mm", 1, 1, "220", "50", args("[[4, 8], [8, 16]]", R"(["float", "float"])")),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "225", "5", corr(4)),
      X("kernel", "gemm_a", 0, 7, "240", "30", gpu(4)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "235", "5", corr(5)),
      X("kernel", "gemm_b", 0, 7, "270", "10", gpu(5)),
  }, R"J("deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], )J");
  auto t = dio::parse_kineto(text, "gemm_flops");
  const auto& g = t.g;
  const auto& gemm = g.payload(g.as<gpu_kernel>(kernel_named(g, "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32")));
  CHECK(gemm.flops == 2 * M * N * K);
  CHECK(gemm.bytes == 4 * (N + M * K + K * N + M * N));
  CHECK(g.payload(g.as<gpu_kernel>(kernel_named(g, "void cublasLt::splitKreduce_kernel<32, 16, int, float>"))).flops == 0);
  CHECK(g.payload(g.as<gpu_kernel>(kernel_named(g, "void at::native::copy_kernel"))).flops == 0);
  // mm [4, 8] x [8, 16]: 1024 FLOPs, 3 : 1 by the kernels' times (30 and 10 us).
  const auto& a = g.payload(g.as<gpu_kernel>(kernel_named(g, "gemm_a")));
  const auto& b = g.payload(g.as<gpu_kernel>(kernel_named(g, "gemm_b")));
  CHECK(a.flops == 768);
  CHECK(b.flops == 256);
  CHECK(a.bytes + b.bytes == 4 * (32 + 128 + 64));
}

TEST_CASE("the recorded GPT-2 and ResNet-50 steps carry FLOPs on their GEMM and convolution kernels") {
  // gpt2_bf16 on the H100: the bf16 GEMMs (nvjet, cutlass) and the cuDNN attention have FLOPs.
  for (auto name : {"ground_truth/h100-80gb-hbm3/gpt2_bf16.json.gz", "ground_truth/h100-80gb-hbm3/resnet50_fp32.json.gz"}) {
    auto t = dio::load_kineto(testing::bundled(name));
    std::uint64_t with = 0, total = 0;
    for (auto k : tasks<gpu_kernel>(t.g)) {
      const auto& p = k.payload();
      total += p.flops > 0;
      with += p.flops > 0 && p.bytes > 0;
    }
    CAPTURE(name);
    CHECK(total > 100);
    CHECK(with == total);
  }
}
