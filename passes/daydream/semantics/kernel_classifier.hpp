// Defines kernel_classifier: kernel names to compute-bound, memory-bound, communication or unknown.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_KERNEL_CLASSIFIER_HPP
#define DAYDREAM_SEMANTICS_KERNEL_CLASSIFIER_HPP

#include <daydream/graph.hpp>
#include <daydream/task.hpp>
#include <daydream/semantics/name_memo.hpp>
#include <daydream/semantics/nocase_regex.hpp>

#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::passes {

/// What limits a kernel's speed, as far as a cost model needs to know.
enum class kernel_class : std::uint8_t {
  compute_bound, ///< GEMM, convolution, attention: arithmetic throughput
  memory_bound,  ///< elementwise, normalization, activation, reduction, softmax, copies
  communication, ///< collectives and point-to-point transfers (NCCL, RCCL)
  unknown,       ///< no rule matched
};
/// Number of kernel_class values.
inline constexpr int kernel_class_count = 4;

/// The name of a kernel class ("compute_bound").
inline constexpr std::string_view to_string(kernel_class c) noexcept {
  switch (c) {
  case kernel_class::compute_bound: return "compute_bound";
  case kernel_class::memory_bound: return "memory_bound";
  case kernel_class::communication: return "communication";
  case kernel_class::unknown: return "unknown";
  }
  return "?";
}

/// Classifies kernels by name: an ordered list of rules (a class and an ECMAScript
/// regular expression searched case-insensitively in the kernel name); the first rule
/// that matches wins, and a name no rule matches is `unknown`.
///
/// The rules of defaults(), in order:
/// 1. communication: NCCL/RCCL/MSCCL kernels and collective names;
/// 2. memory_bound: the data-movement helpers of GEMM and convolution libraries, and
///    GEMV (matrix-vector is bandwidth bound): `gemv`, `gemmk1`, `splitKreduce`,
///    `reduce_wgrad`, `computeOffsets`, `nchwToNhwc`, ..., every PyTorch
///    `elementwise_kernel` / `reduce_kernel` (whose template arguments can mention anything),
///    FBGEMM's embedding lookups and permutes (`embedding_codegen`, `permute_2D_`), and
///    Triton's pointwise and reduction kernels (`triton_poi_`, `triton_red_`, `triton_per_`:
///    their fused names can mention anything, `triton_poi_fused_mm_...` included);
/// 3. compute_bound: `gemm` (not the `fbgemm` namespace), `cutlass`, `xmma`, cuDNN convolution kernels (`scudnn`,
///    `winograd`, `dgrad`, `wgrad`, `fprop`, `conv`), `matmul`, `bmm`, attention, and
///    rocBLAS/Tensile GEMMs (`Cijk_...`), Triton template GEMMs (`triton_tem_`);
/// 4. memory_bound: elementwise, normalization (`bn_fw`, `norm`), activations, pooling,
///    softmax, reductions, losses, copies, fills, indexing, optimizers, layout changes.
///
/// A user who knows better puts a rule first:
///
///     auto c = daydream::passes::kernel_classifier::defaults();
///     c.prepend(daydream::passes::kernel_class::compute_bound, "my_fused_mlp");
///     auto pass = daydream::passes::amp{.classifier = c};
///
/// The classifier is a value: copies are independent (the compiled expressions are
/// shared, they are immutable).
class kernel_classifier {
public:
  /// One rule: the class and the pattern it was built from.
  struct rule {
    kernel_class cls = kernel_class::unknown; ///< the class a match gives
    std::string pattern;                      ///< the expression, as given
    std::shared_ptr<const std::regex> rx;     ///< compiled, case-insensitive
    std::shared_ptr<const nocase_regex> search; ///< the same search, as classify runs it
  };

  /// A classifier without rules: every kernel is `unknown`.
  kernel_classifier() = default;

  /// The bundled rules (see the class comment).
  static kernel_classifier defaults() {
    kernel_classifier c;
    c.add(kernel_class::communication,
          "nccl|rccl|msccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv");
    c.add(kernel_class::memory_bound,
          "gemv|gemmk1|splitkreduce|reduce_wgrad|computeoffsets|computewgrad|computeboffsets|"
          "generatewinogradtiles|nchwtonhwc|nhwctonchw|scalepacked|elementwise_kernel|"
          "reduce_kernel|embedding_codegen|bounds_check_indices|permute_[0-9]d_|triton_poi|triton_red|triton_per");
    c.add(kernel_class::compute_bound,
          "(^|[^b])gemm|cutlass|xmma|scudnn|hcudnn|winograd|dgrad|wgrad|fprop|conv(?!ert)|matmul|bmm|"
          "trsm|magma|flash|fmha|attention|^cijk_|triton_tem");
    c.add(kernel_class::memory_bound,
          "elementwise|reduce|norm|bn_|softmax|pool|relu|gelu|silu|swish|sigmoid|tanh|dropout|"
          "copy|memcpy|memset|fill|cat|index|gather|scatter|embedding|multi_tensor|adam|sgd|"
          "lamb|transpose|permute|loss|upsample|interpolate|where|arange|clamp|threshold|add|"
          "mul|div|sum|mean|max|min|exp|log|sqrt|pow|cast|convert|im2col|col2im|pad|sort|topk|"
          "cumsum|unique|nonzero|masked|bernoulli|random|distribution|cub::|scan|radix|histogram|"
          "gammabeta|moments|dense_representation|compute_cuda_kernel");
    return c;
  }

  /// Appends a rule (it applies after every existing one). Throws std::regex_error
  /// for a bad pattern.
  kernel_classifier& add(kernel_class c, std::string pattern) {
    rules_.push_back(make(c, std::move(pattern)));
    memo_ = std::make_shared<name_memo<kernel_class>>();
    return *this;
  }
  /// Inserts a rule before every existing one.
  kernel_classifier& prepend(kernel_class c, std::string pattern) {
    rules_.insert(rules_.begin(), make(c, std::move(pattern)));
    memo_ = std::make_shared<name_memo<kernel_class>>();
    return *this;
  }
  /// The rules, in the order they are tried.
  const std::vector<rule>& rules() const noexcept { return rules_; }

  /// The class of a kernel named `name`. Each distinct name is classified once by
  /// this classifier and its copies (a name_memo shared until a rule is added).
  kernel_class classify(std::string_view name) const {
    auto run = [this](std::string_view n) {
      const auto lower = ascii_lower(n);
      for (auto& r : rules_)
        if (r.search->search(n, lower)) return r.cls;
      return kernel_class::unknown;
    };
    return memo_ ? (*memo_)(name, run) : run(name); // a moved-from classifier has no memo
  }

private:
  static rule make(kernel_class c, std::string pattern) {
    auto rx = std::make_shared<const std::regex>(
        pattern, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    auto search = std::make_shared<const nocase_regex>(pattern);
    return {c, std::move(pattern), std::move(rx), std::move(search)};
  }
  std::vector<rule> rules_;
  std::shared_ptr<name_memo<kernel_class>> memo_ = std::make_shared<name_memo<kernel_class>>();
};

/// A kernel_classifier applied to the tasks of one graph, computing each distinct task
/// name once (real traces repeat a few hundred names thousands of times).
///
///     daydream::passes::classified classes(g, daydream::passes::kernel_classifier::defaults());
///     if (classes(t) == daydream::passes::kernel_class::compute_bound) ...
class classified {
public:
  /// Classifies the tasks of `g` with `c`; both must outlive this object.
  classified(const graph& g, const kernel_classifier& c) : g_(&g), c_(&c) {}
  /// The class of task `t`, from its name.
  kernel_class operator()(task_id t) {
    auto n = g_->name_id_of(t);
    auto it = memo_.find(n);
    if (it == memo_.end()) it = memo_.emplace(n, c_->classify(g_->name(t))).first;
    return it->second;
  }

private:
  const graph* g_;
  const kernel_classifier* c_;
  std::unordered_map<name_id, kernel_class> memo_;
};

} // namespace daydream::passes

#endif
