// Tests of kernel_family and precision_of_kernel: real kernel names of each family and precision.
// SPDX-License-Identifier: MIT
#include <daydream/compare/profile.hpp>
#include <daydream/semantics/kernel_family.hpp>

#include <doctest/doctest.h>

using namespace daydream::passes;

TEST_CASE("kernel families of real kernel names") {
  CHECK(family_of_kernel("volta_sgemm_128x64_nn") == kernel_family::gemm);
  CHECK(family_of_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == kernel_family::gemm);
  CHECK(family_of_kernel("void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, true>") ==
        kernel_family::gemm);
  CHECK(family_of_kernel("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32") == kernel_family::gemm);
  CHECK(family_of_kernel("triton_tem_fused_mm_0") == kernel_family::gemm);
  CHECK(family_of_kernel("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>") == kernel_family::attention);
  CHECK(family_of_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                         "at::detail::Array<char*, 3>>(int, at::native::CUDAFunctor_add<float>, "
                         "at::detail::Array<char*, 3>)") == kernel_family::elementwise);
  CHECK(family_of_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                         "namespace)::launch_clamp_scalar(...)::{lambda(float)#1}>") == kernel_family::elementwise);
  CHECK(family_of_kernel("triton_poi_fused_add_relu_0") == kernel_family::elementwise);
  // cuDNN's conversion kernels are casts, not convolutions ("convert" is not "conv")
  CHECK(family_of_kernel("void cudnn::fusion::convert_dq_to_16bits<__nv_bfloat16>(int, float const*)") ==
        kernel_family::elementwise);
  CHECK(family_of_kernel("void cudnn::detail::convolve_common_engine_float_NHWC<float, float>(int)") ==
        kernel_family::gemm);
  CHECK(family_of_kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
                         "at::native::MeanOps<float, float>>>") == kernel_family::reduction);
  CHECK(family_of_kernel("triton_red_fused_sum_1") == kernel_family::reduction);
  CHECK(family_of_kernel("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>") ==
        kernel_family::normalization);
  CHECK(family_of_kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>") ==
        kernel_family::normalization);
  CHECK(family_of_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") ==
        kernel_family::communication);
  CHECK(family_of_kernel("void deep_ep::intranode::dispatch<8, 768>(...)") == kernel_family::communication);
  CHECK(family_of_kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...FusedAdamMathFunctor>") ==
        kernel_family::optimizer);
  CHECK(family_of_kernel("my_custom_kernel") == kernel_family::other);
}

TEST_CASE("the precision a kernel's name shows") {
  CHECK(precision_of_kernel("volta_sgemm_128x64_nn") == numeric_precision::fp32);
  CHECK(precision_of_kernel("volta_h884gemm_128x128_ldg8_nn") == numeric_precision::fp16);
  CHECK(precision_of_kernel("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn") == numeric_precision::fp16);
  CHECK(precision_of_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n") == numeric_precision::bf16);
  CHECK(precision_of_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::"
                            "BFloat16>>") == numeric_precision::bf16);
  CHECK(precision_of_kernel("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128>") ==
        numeric_precision::bf16);
  CHECK(precision_of_kernel("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n") == numeric_precision::fp8);
  CHECK(precision_of_kernel("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n") == numeric_precision::tf32);
  CHECK(precision_of_kernel("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4") == numeric_precision::tf32);
  CHECK(precision_of_kernel("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32") == numeric_precision::fp16);
  // cuBLASLt's nvjet kernels, as an H200 recorded them under bf16 and fp16 autocast
  CHECK(precision_of_kernel("nvjet_sm90_tst_192x192_64x3_2x1_v_bz_coopB_NNN") == numeric_precision::bf16);
  CHECK(precision_of_kernel("nvjet_tst_64x16_64x16_4x1_v_bz_splitK_TNT") == numeric_precision::bf16);
  CHECK(precision_of_kernel("nvjet_sm90_hsh_64x8_64x16_2x4_h_bz_bias_TNT") == numeric_precision::fp16);
  CHECK(precision_of_kernel("nvjet_sm90_sss_128x64_64x4_1x2_h_bz_NNT") == numeric_precision::fp32);
  CHECK(precision_of_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>") ==
        numeric_precision::fp32);
  CHECK(precision_of_kernel("my_custom_kernel") == numeric_precision::unknown);
  CHECK(reduced_precision(numeric_precision::bf16));
  CHECK_FALSE(reduced_precision(numeric_precision::tf32));
}

TEST_CASE("operator names without Python's object addresses: two runs name one method alike") {
  using daydream::without_addresses;
  CHECK(without_addresses("<built-in method item of Tensor object at 0x7f5dca0adf90>") ==
        "<built-in method item of Tensor object>");
  CHECK(without_addresses("<bound method A.f of <m.A object at 0x7f00aa> at 0xdeadbeef>") == "<bound method A.f of <m.A object>>");
  CHECK(without_addresses("aten::mm") == "aten::mm");
  CHECK(without_addresses("look at 0x") == "look at 0x"); // no digits: not an address
}
