// Tests of kernel_classifier: kernel names to compute, memory, communication or unknown.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include "../builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("the default classifier sorts real kernel names into their classes") {
  auto c = kernel_classifier::defaults();
  for (auto n : {"volta_sgemm_64x64_nt", "cudnn_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
                 "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)",
                 "void wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int)",
                 "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "sm80_xmma_gemm_f16f16_f16f32",
                 "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
                 "triton_tem_fused_addmm_0"})
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
                 "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<x>(y)",
                 // Inductor's Triton kernels: what they fused is in the name, a GEMM's view included
                 "triton_poi_fused_mm_t_view_1", "triton_red_fused__log_softmax__to_copy_0",
                 "triton_per_fused__to_copy_add_native_dropout_native_layer_norm_2", "triton_poi_fused_0"})
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

TEST_CASE("nocase_regex finds what an icase search finds, folded or not") {
  // Expressions of the classifier's kinds, and ones it must not fold (upper-case letters,
  // escapes that name a character by code).
  const std::vector<std::string> patterns = {
      "gemm|cutlass", "(^|[^b])gemm", "conv(?!ert)", "nvjet_(sm[0-9]+_)?t[a-z]{2}_", "f16(?!\\d)", "\\bdispatch_kernel",
      "[^a-z]max", "cub::", "Volta_[A-Z]gemm", "\\x53gemm", "\\w+_kernel$", "[A-F0-9]{4}"};
  const std::vector<std::string> names = {
      "volta_sgemm_64x64_nt", "Volta_SGEMM_128x64", "void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm>",
      "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NNT", "NVJET_SM90_HSH_64x8", "ampere_fp16_s16816gemm",
      "aten::convert_element", "BGEMM_kernel", "my_dispatch_kernel", "void dispatch_kernel<float>", "Max_pool",
      "at::native::MaxPool", "cub::DeviceRadixSort", "CUB::scan", "Reduce_Kernel", "abcd1234", "ABCD", "",
      "Sgemm", "sgemm"};
  for (auto& p : patterns) {
    const nocase_regex fast(p);
    const std::regex slow(p, std::regex::ECMAScript | std::regex::icase);
    for (auto& n : names) {
      INFO(p << " on " << n);
      CHECK(fast.search(n) == std::regex_search(n, slow));
      CHECK(fast.search(n, ascii_lower(n)) == std::regex_search(n, slow));
    }
  }
  CHECK(nocase_regex("gemm").folded());
  CHECK_FALSE(nocase_regex("Gemm").folded());
  CHECK_FALSE(nocase_regex("\\x47emm").folded());
  CHECK(nocase_regex("\\\\x").folded()); // a backslash, then x
}
