// Defines the precision pass: GEMMs of a run already in bf16/fp16 run in FP8 instead.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_PRECISION_HPP
#define DAYDREAM_PASSES_PRECISION_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/kernel_family.hpp>

#include <map>
#include <string>
#include <string_view>

namespace daydream::passes {

/// FP8 GEMMs (`precision:to=fp8`): what if the GEMMs of a run that trains in BF16 or FP16
/// ran on FP8 tensor cores (Hopper, Ada and Blackwell GPUs; Transformer Engine's
/// `fp8_autocast`, torchao's float8 training).
///
/// Cost model: every GEMM kernel (kernel_family::gemm, by name) whose name shows BF16 or
/// FP16 takes 1/`gemm` of its time (2: FP8 tensor cores do twice the dense BF16 rate).
/// Attention, every other kernel, the CPU and memory are unchanged; GEMMs already in FP8
/// stay as they are. A run whose GEMMs are FP32 or TF32 is not a BF16 run: the pass
/// changes nothing there and says to model mixed precision (`amp`) instead.
///
/// Not modelled: the casts to FP8 and the scaling-factor (amax) reductions the FP8
/// recipes add (Transformer Engine fuses most into the neighbouring normalization and
/// activation kernels), and FP8's smaller weight and activation memory.
///
///     daydream::apply(g, daydream::passes::precision{});            // bf16 GEMMs 2x faster
///     daydream::apply(g, daydream::passes::precision{.gemm = 1.6}); // what a real recipe measured
struct precision {
  static constexpr std::string_view name = "precision"; ///< the --pass name
  std::string to = "fp8"; ///< the target precision (only fp8 is modelled)
  double gemm = 2;        ///< speedup of a bf16/fp16 GEMM kernel in FP8

  /// Why the pass changes nothing on `g`, "" when it changes something.
  static std::string not_applicable(const graph& g) {
    auto c = census(g);
    if (c.gemm_time == 0) return "the trace has no GEMM kernel (by name)";
    if (c.reduced_time == 0)
      return c.fp8_time > 0 ? "every GEMM already runs in FP8"
                            : "the GEMMs run in FP32/TF32 (by their names), not bf16/fp16: model mixed precision "
                              "with amp first";
    return "";
  }
  /// Whether `g` has bf16/fp16 GEMM kernels.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Scales the bf16/fp16 GEMM kernels; returns their count and time before and after.
  /// Invalidates nothing.
  pass_report operator()(graph& g) const {
    check();
    pass_report rep;
    rep.pass = std::string(name);
    if (auto why = not_applicable(g); !why.empty()) {
      rep.not_applied(why);
      return rep;
    }
    kernel_families fam(g);
    std::size_t n = 0, kept = 0;
    time_ns before = 0, after = 0;
    for (auto k : tasks<gpu_kernel>(g)) {
      if (fam.family(k) != kernel_family::gemm) continue;
      const auto p = fam.precision(k);
      if (p == numeric_precision::fp8) { ++kept; continue; }
      if (p != numeric_precision::bf16 && p != numeric_precision::fp16) continue;
      ++n;
      before += g.duration(k);
      scale_duration(g, k, 1.0 / gemm);
      after += g.duration(k);
    }
    rep.add("bf16/fp16 GEMM kernels in FP8", std::to_string(n) + " kernels, " + format_time(before) + " -> " + format_time(after),
            report_value::of_change(report_kind::time, double(before), double(after)).with_count(std::int64_t(n)));
    if (kept > 0) rep.add_count("GEMM kernels already in FP8 (unchanged)", std::int64_t(kept));
    rep.note("assumes a GPU with FP8 tensor cores (Hopper, Ada, Blackwell); the FP8 casts and amax reductions "
             "of the recipe are not modelled");
    return rep;
  }

  /// Throws daydream::usage_error when a parameter is out of range (`to` other than fp8,
  /// `gemm` not positive); the call operator checks them too.
  void check() const {
    if (to != "fp8")
      throw usage_error("daydream: pass 'precision': to must be fp8 (got '" + to +
                        "'); for FP32 -> fp16/bf16 use the amp pass");
    if (!(gemm > 0)) throw usage_error("daydream: pass 'precision': gemm must be a positive speedup");
  }

private:
  struct counts {
    time_ns gemm_time = 0, reduced_time = 0, fp8_time = 0;
  };
  static counts census(const graph& g) {
    kernel_families fam(g);
    counts c;
    for (auto k : tasks<gpu_kernel>(g)) {
      if (fam.family(k) != kernel_family::gemm) continue;
      c.gemm_time += g.duration(k);
      const auto p = fam.precision(k);
      if (p == numeric_precision::bf16 || p == numeric_precision::fp16) c.reduced_time += g.duration(k);
      if (p == numeric_precision::fp8) c.fp8_time += g.duration(k);
    }
    return c;
  }
};

} // namespace daydream::passes

#endif
