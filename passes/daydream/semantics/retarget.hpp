// Defines retarget_kernel: how much longer or shorter one kernel runs on another GPU (rules by class, precision and waves).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_RETARGET_HPP
#define DAYDREAM_SEMANTICS_RETARGET_HPP

#include <daydream/kinds.hpp>
#include <daydream/semantics/device.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/occupancy.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace daydream::passes {

/// The rule a kernel's new duration came from (gpu pass, retarget_kernel).
enum class retarget_rule : std::uint8_t {
  waves,        ///< launch shape on both devices: limiting resource x wave quantization
  one_wave,     ///< one wave on both devices, fewer blocks than SMs: clock ratio
  class_ratio,  ///< no launch shape (or no occupancy rules): the limiting resource's ratio
  roofline,     ///< no launch shape, FLOPs and bytes known: the ratio of the two roofline times
  unscaled,     ///< a ratio the catalogue cannot give (a null figure): unchanged
};
/// Number of retarget_rule values.
inline constexpr int retarget_rule_count = 5;

/// The name of a rule ("one_wave").
inline constexpr std::string_view to_string(retarget_rule r) noexcept {
  switch (r) {
  case retarget_rule::waves: return "waves";
  case retarget_rule::one_wave: return "one_wave";
  case retarget_rule::class_ratio: return "class_ratio";
  case retarget_rule::roofline: return "roofline";
  case retarget_rule::unscaled: return "unscaled";
  }
  return "?";
}

/// One kernel's retargeting: the factor its duration is multiplied by and why.
struct kernel_retarget {
  double factor = 1;                             ///< new duration / old duration
  retarget_rule rule = retarget_rule::unscaled;
  numeric_precision on_target = numeric_precision::unknown; ///< the precision it runs in there
  std::uint64_t waves_source = 0, waves_target = 0;          ///< 0 when not computed
  std::uint32_t blocks_per_sm_source = 0, blocks_per_sm_target = 0;
  bool clock_fallback = false; ///< one_wave with a null clock: the clock the FP32 peak implies (clock_of)
};

/// The peak FLOP/s of `d` for compute-bound work in precision `p`, falling back to the
/// nearest precision the device has (bf16 -> fp16 -> fp32, fp8 -> fp16, tf32 -> fp32); AMD's
/// FP32 GEMMs run on its matrix units (fp32_matrix_flops). `p` is updated to what was used.
inline std::optional<double> compute_rate(const device& d, numeric_precision& p) {
  if (p == numeric_precision::fp32 && d.fp32_matrix_flops) return d.fp32_matrix_flops;
  for (int step = 0; step < 4; ++step) {
    if (auto r = d.peak_flops(p)) return r;
    switch (p) {
    case numeric_precision::bf16: p = numeric_precision::fp16; break;
    case numeric_precision::fp8: p = numeric_precision::fp16; break;
    case numeric_precision::fp16: case numeric_precision::tf32: p = numeric_precision::fp32; break;
    default: return std::nullopt;
    }
  }
  return std::nullopt;
}

/// The clock of `d` for a one-wave kernel: its boost clock or, when the catalogue has
/// none (the datasheets of the T4, A10, L4, L40S, H200, B200 and GB200 give none), the
/// clock its FP32 peak implies on NVIDIA: FP32 FLOP/s / (2 x FP32 lanes per SM x SMs),
/// with 64 lanes per SM on compute capability 7.0, 7.5 and 8.0 (V100, Turing, A100) and
/// 128 from 8.6 on (so the H200's 67 TFLOPS over 132 SMs is 1.98 GHz, the H100's boost).
/// `derived` says which. Empty when neither is known.
inline std::optional<double> clock_of(const device& d, bool& derived) {
  derived = false;
  if (d.clock_hz) return d.clock_hz;
  if (d.vendor != gpu_vendor::nvidia || !d.fp32_flops || !d.sm_count || *d.sm_count == 0) return std::nullopt;
  if (d.target.size() < 5 || d.target.substr(0, 3) != "sm_") return std::nullopt;
  int cc = 0;
  for (char c : d.target.substr(3)) {
    if (c < '0' || c > '9') break;
    cc = cc * 10 + (c - '0');
  }
  if (cc < 70) return std::nullopt;
  const double lanes = cc == 70 || cc == 75 || cc == 80 ? 64 : 128;
  derived = true;
  return *d.fp32_flops / (2 * lanes * double(*d.sm_count));
}

/// The throughput ratio source / target for a kernel of class `c` in precision `p` (a
/// factor on its duration), or empty when a figure is null. `target_p` receives the
/// precision used on the target.
inline std::optional<double> class_ratio(const device& source, const device& target, kernel_class c,
                                         numeric_precision p, bool convolution, numeric_precision& target_p) {
  if (c == kernel_class::memory_bound) {
    if (!source.memory_bandwidth || !target.memory_bandwidth) return std::nullopt;
    return *source.memory_bandwidth / *target.memory_bandwidth;
  }
  if (c == kernel_class::compute_bound) {
    auto ps = p == numeric_precision::unknown || p == numeric_precision::fp64 ? numeric_precision::fp32 : p;
    // PyTorch runs FP32 convolutions on TF32 tensor cores where there are some
    // (torch.backends.cudnn.allow_tf32 defaults to true), FP32 matmuls in FP32.
    auto pt = ps == numeric_precision::fp32 && convolution && target.tf32_flops ? numeric_precision::tf32 : ps;
    auto rs = compute_rate(source, ps);
    auto rt = compute_rate(target, pt);
    target_p = pt;
    if (!rs || !rt) return std::nullopt;
    return *rs / *rt;
  }
  // Unknown kernels: the SMs' general (FP32, non-tensor) throughput.
  if (!source.fp32_flops || !target.fp32_flops) return std::nullopt;
  return *source.fp32_flops / *target.fp32_flops;
}

/// A kernel classified by its FLOPs and bytes (roofline_ratio): its class on each
/// device and the ratio of its roofline times.
struct roofline_retarget {
  double factor = 1;         ///< roofline time on the target / on the source
  kernel_class on_source = kernel_class::unknown, on_target = kernel_class::unknown;
  numeric_precision precision_on_target = numeric_precision::unknown;
};

/// A kernel of `flops` FLOPs over `bytes` bytes in precision `p` (a convolution takes
/// TF32 for FP32 where the target has it, as class_ratio), classified on each device
/// by its arithmetic intensity flops / bytes against the device's ridge point (peak
/// FLOP/s at that precision over memory bandwidth): compute-bound at or above it,
/// memory-bound below. The factor is the ratio of its roofline times,
/// max(F / P_t, B / BW_t) / max(F / P_s, B / BW_s): the bandwidth ratio for a kernel
/// memory-bound on both, the peak ratio for one compute-bound on both. Empty when a
/// figure is null or `flops` or `bytes` is 0.
inline std::optional<roofline_retarget> roofline_ratio(const device& source, const device& target,
                                                       numeric_precision p, bool convolution, double flops,
                                                       double bytes) {
  if (!(flops > 0) || !(bytes > 0) || !source.memory_bandwidth || !target.memory_bandwidth) return std::nullopt;
  if (!(*source.memory_bandwidth > 0) || !(*target.memory_bandwidth > 0)) return std::nullopt;
  auto ps = p == numeric_precision::unknown || p == numeric_precision::fp64 ? numeric_precision::fp32 : p;
  auto pt = ps == numeric_precision::fp32 && convolution && target.tf32_flops ? numeric_precision::tf32 : ps;
  auto rs = compute_rate(source, ps);
  auto rt = compute_rate(target, pt);
  if (!rs || !rt || !(*rs > 0) || !(*rt > 0)) return std::nullopt;
  roofline_retarget r;
  r.precision_on_target = pt;
  const double intensity = flops / bytes;
  r.on_source = intensity >= *rs / *source.memory_bandwidth ? kernel_class::compute_bound : kernel_class::memory_bound;
  r.on_target = intensity >= *rt / *target.memory_bandwidth ? kernel_class::compute_bound : kernel_class::memory_bound;
  const double ts = r.on_source == kernel_class::compute_bound ? flops / *rs : bytes / *source.memory_bandwidth;
  const double tt = r.on_target == kernel_class::compute_bound ? flops / *rt : bytes / *target.memory_bandwidth;
  r.factor = tt / ts;
  return r;
}

/// How kernel `k` of class `c` (compute- or memory-bound, or unknown; communication is
/// the caller's), precision `p`, recorded on `source`, runs on `target`:
///
/// - its limiting resource's ratio R (memory bandwidth; peak FLOP/s at its precision;
///   for unknown kernels the FP32 rate);
/// - with a recorded launch (grid, block, registers, shared memory) and the occupancy
///   rules of both devices: blocks per SM recomputed on each, waves = ceil(blocks / (SMs x
///   blocks per SM)); one wave on both with fewer blocks than the recorded GPU has SMs (a
///   small kernel: its time is a block's latency): the clock ratio alone; one wave on
///   both that reaches every SM: R; else R x (block slots on the target / block slots on
///   the source), slots = waves x blocks per SM x SMs, which is R when the grid fills
///   whole waves on both;
/// - without: R alone.
///
/// `roofline` (roofline_ratio, for a kernel whose FLOPs and bytes are known) replaces R,
/// and a kernel without a launch shape then takes it by retarget_rule::roofline.
inline kernel_retarget retarget_kernel(const device& source, const device& target, kernel_class c,
                                       numeric_precision p, bool convolution, const kernel_launch& launch,
                                       const std::optional<roofline_retarget>& roofline = std::nullopt) {
  kernel_retarget r;
  auto ratio = class_ratio(source, target, c, p, convolution, r.on_target);
  if (roofline) {
    ratio = roofline->factor;
    r.on_target = roofline->precision_on_target;
  }
  if (launch.has_resources() && source.sm_count && target.sm_count) {
    const launch_shape shape{.blocks = launch.blocks, .threads_per_block = launch.threads,
                             .registers_per_thread = launch.registers, .shared_memory_per_block = launch.shared_memory};
    auto os = occupancy_of(source, shape);
    auto ot = occupancy_of(target, shape);
    if (os && ot && os->blocks_per_sm > 0 && ot->blocks_per_sm > 0) {
      r.blocks_per_sm_source = os->blocks_per_sm;
      r.blocks_per_sm_target = ot->blocks_per_sm;
      r.waves_source = *waves(launch.blocks, *source.sm_count, os->blocks_per_sm);
      r.waves_target = *waves(launch.blocks, *target.sm_count, ot->blocks_per_sm);
      // One wave that leaves SMs idle on the recorded GPU: its time is one block's
      // latency, which the clock sets. A one-wave grid that reaches every SM is
      // throughput-bound: the class ratio, with no partial wave to correct for.
      if (r.waves_source == 1 && r.waves_target == 1 && launch.blocks >= *source.sm_count && ratio) {
        r.factor = *ratio;
        r.rule = retarget_rule::waves;
        return r;
      }
      if (r.waves_source == 1 && r.waves_target == 1) {
        bool ds = false, dt = false;
        auto cs = clock_of(source, ds), ct = clock_of(target, dt);
        if (cs && ct && *ct > 0) {
          r.factor = *cs / *ct;
          r.rule = retarget_rule::one_wave;
          r.clock_fallback = ds || dt;
          return r;
        }
      } else if (ratio) {
        const double slots_s = double(r.waves_source) * os->blocks_per_sm * *source.sm_count;
        const double slots_t = double(r.waves_target) * ot->blocks_per_sm * *target.sm_count;
        r.factor = *ratio * slots_t / slots_s;
        r.rule = retarget_rule::waves;
        return r;
      }
    }
  }
  if (ratio) {
    r.factor = *ratio;
    r.rule = roofline ? retarget_rule::roofline : retarget_rule::class_ratio;
  }
  return r;
}

} // namespace daydream::passes

#endif
