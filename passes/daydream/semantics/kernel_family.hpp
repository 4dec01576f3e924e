// Defines kernel_family (what a kernel does: GEMM/conv, attention, elementwise, ...) and numeric_precision (the element type a kernel's name shows).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_KERNEL_FAMILY_HPP
#define DAYDREAM_SEMANTICS_KERNEL_FAMILY_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>
#include <daydream/semantics/name_memo.hpp>
#include <daydream/semantics/nocase_regex.hpp>

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>

namespace daydream::passes {

/// What a GPU task does, finer than kernel_class: the breakdown rows of
/// `daydream compare` and the classes a user selects by. Copies and memsets (memcpy_task)
/// are `copy` whatever their name.
enum class kernel_family : std::uint8_t {
  gemm,          ///< matrix multiplication and convolution (cuBLAS, cuDNN, CUTLASS, rocBLAS, Triton templates)
  attention,     ///< fused attention (flash, memory-efficient, fmha, SDPA)
  elementwise,   ///< pointwise kernels, activations, casts, fills, indexing, layout changes
  normalization, ///< batch, layer, group and RMS normalization
  reduction,     ///< reductions, softmax, losses, top-k, scans
  communication, ///< collectives and point-to-point transfers (NCCL, RCCL, custom all-to-all)
  copy,          ///< memory copies and memsets
  optimizer,     ///< optimizer kernels (multi-tensor apply, fused Adam/SGD/LAMB)
  other,         ///< no rule matched
};
/// Number of kernel_family values.
inline constexpr int kernel_family_count = 9;

/// The name of a kernel family, as rows and JSON keys spell it ("gemm/conv").
inline constexpr std::string_view to_string(kernel_family f) noexcept {
  switch (f) {
  case kernel_family::gemm: return "gemm/conv";
  case kernel_family::attention: return "attention";
  case kernel_family::elementwise: return "elementwise";
  case kernel_family::normalization: return "normalization";
  case kernel_family::reduction: return "reduction";
  case kernel_family::communication: return "communication";
  case kernel_family::copy: return "copies";
  case kernel_family::optimizer: return "optimizer";
  case kernel_family::other: return "other";
  }
  return "?";
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// family_of_kernel without the memo: the rules, tried in order.
inline kernel_family classify_family(std::string_view name) {
  static const auto rules = [] {
    using rx = nocase_regex;
    return std::array<std::pair<kernel_family, rx>, 10>{{
        {kernel_family::communication,
         rx("nccl|rccl|msccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|deep_?ep|"
            "notify_dispatch|cross_device_reduce|\\bdispatch_kernel|\\bcombine_kernel")},
        {kernel_family::optimizer, rx("multi_tensor_apply|fused_?adam|fused_?sgd|fused_?lamb|adam_kernel|adamw|_foreach_")},
        {kernel_family::attention, rx("flash|fmha|attention|attn|sdpa|_efficient_attention")},
        {kernel_family::reduction, rx("^void at::native::(\\(anonymous namespace\\)::)?reduce_kernel")},
        {kernel_family::elementwise,
         rx("elementwise_kernel|gemv|gemmk1|splitkreduce|computeoffsets|nchwtonhwc|nhwctonchw|scalepacked|"
            "triton_poi|embedding_codegen|bounds_check_indices|permute_[0-9]d_")},
        {kernel_family::gemm,
         rx("(^|[^b])gemm|cutlass|xmma|scudnn|hcudnn|cudnn.*conv(?!ert)|winograd|dgrad|wgrad|fprop|implicit_convolve|"
            "conv(?!ert)|matmul|bmm|trsm|magma|^cijk_|nvjet|triton_tem")},
        {kernel_family::normalization,
         rx("norm|bn_|batchnorm|welford|gammabeta|moments")},
        {kernel_family::reduction,
         rx("reduce|softmax|triton_red|triton_per|sum|mean|argmax|argmin|topk|sort|scan|cumsum|loss|nll|"
            "cross_entropy|histogram")},
        {kernel_family::elementwise,
         rx("elementwise|relu|gelu|silu|swish|sigmoid|tanh|dropout|copy|memcpy|memset|fill|cat|index|gather|"
            "scatter|embedding|transpose|permute|upsample|interpolate|where|arange|clamp|threshold|add|mul|div|"
            "exp|log|sqrt|pow|cast|convert|im2col|col2im|pad|unique|nonzero|masked|bernoulli|random|"
            "distribution|cub::|radix|max|min|dense_representation|compute_cuda_kernel|rope|rotary")},
        {kernel_family::optimizer, rx("sgd|adagrad|rmsprop")},
    }};
  }();
  const auto lower = ascii_lower(name);
  for (auto& [f, rx] : rules)
    if (rx.search(name, lower)) return f;
  return kernel_family::other;
}
} // namespace detail
//! @endcond

/// The family of a kernel named `name`. The rules, first match wins, each an ECMAScript
/// expression searched case-insensitively:
/// 1. communication: NCCL/RCCL/MSCCL, collective names, DeepEP-style dispatch/combine,
///    custom all-reduce (`cross_device_reduce`);
/// 2. optimizer: `multi_tensor_apply`, fused Adam/SGD/LAMB kernels, `_foreach_`;
/// 3. attention: flash, fmha, memory-efficient attention, `attention`, `sdpa`;
/// 4. PyTorch's generic kernels by their own name (`reduce_kernel` is a reduction,
///    `elementwise_kernel` elementwise: their template arguments can mention anything);
/// 5. gemm: GEMM/convolution libraries and Triton template GEMMs (`triton_tem_`);
///    GEMV and split-K helpers are elementwise work (bandwidth bound) and match earlier;
/// 6. normalization, 7. reduction (softmax, losses, Triton `triton_red_`/`triton_per_`),
/// 8. elementwise (Triton `triton_poi_`, activations, copies, casts, fills, indexing).
/// Each distinct name is classified once per process (name_memo).
inline kernel_family family_of_kernel(std::string_view name) {
  static name_memo<kernel_family> memo;
  return memo(name, detail::classify_family);
}

/// The element type a kernel computes in, as far as its name shows it.
enum class numeric_precision : std::uint8_t {
  unknown, ///< the name shows none
  fp32,    ///< single precision (`sgemm`, `<float>`, `f32`)
  tf32,    ///< FP32 inputs on tensor cores (`tf32`, `s1688gemm`/`s16816gemm` without a 16-bit type)
  fp16,    ///< half precision (`h884`, `fp16`, `c10::Half`, `__half`)
  bf16,    ///< bfloat16 (`bf16`, `BFloat16`, `__nv_bfloat16`)
  fp8,     ///< 8-bit floating point (`e4m3`, `e5m2`, `fp8`)
  fp64,    ///< double precision (`dgemm`, `<double>`)
};

/// The name of a precision ("bf16").
inline constexpr std::string_view to_string(numeric_precision p) noexcept {
  switch (p) {
  case numeric_precision::unknown: return "unknown";
  case numeric_precision::fp32: return "fp32";
  case numeric_precision::tf32: return "tf32";
  case numeric_precision::fp16: return "fp16";
  case numeric_precision::bf16: return "bf16";
  case numeric_precision::fp8: return "fp8";
  case numeric_precision::fp64: return "fp64";
  }
  return "?";
}

/// Whether `p` is a 16- or 8-bit floating-point type: what mixed precision trains in.
inline constexpr bool reduced_precision(numeric_precision p) noexcept {
  return p == numeric_precision::fp16 || p == numeric_precision::bf16 || p == numeric_precision::fp8;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// precision_of_kernel without the memo: the rules, tried in order.
inline numeric_precision classify_precision(std::string_view name) {
  static const auto rules = [] {
    using rx = nocase_regex;
    return std::array<std::pair<numeric_precision, rx>, 9>{{
        // cuBLASLt's nvjet kernels name their types by letter, inputs first:
        // nvjet_sm90_tst_... (bf16 in, FP32 compute, bf16 out), _hsh_ (fp16), _sss_ (FP32).
        {numeric_precision::bf16, rx("nvjet_(sm[0-9]+_)?t[a-z]{2}_")},
        {numeric_precision::fp16, rx("nvjet_(sm[0-9]+_)?h[a-z]{2}_")},
        {numeric_precision::fp32, rx("nvjet_(sm[0-9]+_)?s[a-z]{2}_")},
        {numeric_precision::fp8, rx("e4m3|e5m2|fp8|float8|_f8")},
        {numeric_precision::bf16, rx("bf16|bfloat16|_bb[sb]_")},
        {numeric_precision::fp16,
         rx("fp16|f16(?!\\d)|half|h884|h1688|h16816|hmma|hgemm|hcudnn|h[0-9]+cudnn|_hh[sh]_")},
        {numeric_precision::tf32, rx("tf32|s1688gemm|s16816gemm|s884gemm")},
        {numeric_precision::fp64, rx("dgemm|<double|double>|f64")},
        {numeric_precision::fp32,
         rx("sgemm|scudnn|<float|float>|f32|_ss[s]?_|implicit_convolve_sgemm|fp32|float32")},
    }};
  }();
  const auto lower = ascii_lower(name);
  for (auto& [p, rx] : rules)
    if (rx.search(name, lower)) return p;
  return numeric_precision::unknown;
}
} // namespace detail
//! @endcond

/// The precision a kernel's name shows. The narrowest type named wins: a GEMM that
/// reads FP8 and accumulates in FP32 (`..._e4m3_..._f32`) is fp8; one named with both
/// `bf16` and `f32` is bf16. Library conventions read: cuBLAS/cuDNN prefixes (`sgemm`,
/// `h884gemm`, `hcudnn`, `s1688gemm`), CUTLASS and xmma type lists (`f16f16_f32`,
/// `bf16bf16`, `tf32`, `e4m3`), PyTorch template arguments (`<float>`, `<c10::Half>`,
/// `<c10::BFloat16>`, `__nv_bfloat16`), rocBLAS/Tensile (`_HHS_`, `_BBS_`, `_SS_`), cuBLASLt's
/// nvjet kernels (`nvjet_sm90_tst_`: bf16, `_hsh_`: fp16, `_sss_`: FP32).
/// Each distinct name is read once per process (name_memo).
inline numeric_precision precision_of_kernel(std::string_view name) {
  static name_memo<numeric_precision> memo;
  return memo(name, detail::classify_precision);
}

/// family_of_kernel and precision_of_kernel applied to the GPU tasks of one graph,
/// computing each distinct name once. Memory copies are `copy`; CPU tasks `other`.
///
///     daydream::passes::kernel_families fam(g);
///     if (fam.family(k) == daydream::passes::kernel_family::gemm) ...
class kernel_families {
public:
  /// Classifies the tasks of `g`, which must outlive this object.
  explicit kernel_families(const graph& g) : g_(&g) {}
  /// The family of task `t`.
  kernel_family family(task_id t) {
    if (g_->is<memcpy_task>(t)) return kernel_family::copy;
    if (g_->is<comm_task>(t)) return kernel_family::communication;
    if (g_->is<cpu_task>(t)) return kernel_family::other;
    return entry(t).family;
  }
  /// The precision task `t`'s name shows (unknown for copies and CPU tasks).
  numeric_precision precision(task_id t) {
    if (!g_->is<gpu_kernel>(t)) return numeric_precision::unknown;
    return entry(t).precision;
  }

private:
  struct info {
    kernel_family family;
    numeric_precision precision;
  };
  const info& entry(task_id t) {
    auto n = g_->name_id_of(t);
    auto it = memo_.find(n);
    if (it == memo_.end()) {
      auto s = g_->name(t);
      it = memo_.emplace(n, info{family_of_kernel(s), precision_of_kernel(s)}).first;
    }
    return it->second;
  }
  const graph* g_;
  std::unordered_map<name_id, info> memo_;
};

} // namespace daydream::passes

#endif
