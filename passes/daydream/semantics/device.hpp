// Defines device (a GPU as the cross-GPU model sees it: counts, clocks, bandwidths, peaks per precision, per-SM limits) and its ridge points.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_DEVICE_HPP
#define DAYDREAM_SEMANTICS_DEVICE_HPP

#include <daydream/semantics/kernel_family.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// Who makes a GPU: the occupancy rules and the names of things (SM or CU, warp or
/// wavefront) follow the vendor.
enum class gpu_vendor : std::uint8_t {
  nvidia, ///< CUDA GPUs: streaming multiprocessors, 32-thread warps
  amd,    ///< ROCm GPUs: compute units, 64-thread wavefronts
};

/// The name of a vendor as catalogue files spell it ("nvidia", "amd").
inline constexpr std::string_view to_string(gpu_vendor v) noexcept {
  return v == gpu_vendor::amd ? "amd" : "nvidia";
}

/// The limits of one SM (one CU on AMD) that decide how many blocks of a kernel are
/// resident at once: the inputs of occupancy_of (semantics/occupancy.hpp). Each is
/// empty when the vendor does not publish it; occupancy needs all but the reserve.
struct sm_limits {
  std::optional<std::uint32_t> registers_per_sm;         ///< 32-bit registers in one SM's register file
  std::optional<std::uint32_t> max_registers_per_thread; ///< the most registers one thread may use
  std::optional<std::uint32_t> register_allocation_unit; ///< registers are given to a warp in multiples of this
  /// The register file's sub-partitions: warps are placed in them, so the warps that
  /// registers allow per SM are a multiple of this.
  std::optional<std::uint32_t> warp_allocation_granularity;
  std::optional<std::uint32_t> shared_memory_per_sm;      ///< bytes, the largest carveout
  std::optional<std::uint32_t> shared_memory_per_block;   ///< bytes one block may use (with the opt-in)
  std::optional<std::uint32_t> reserved_shared_memory_per_block; ///< bytes the system takes from every block
  std::optional<std::uint32_t> shared_memory_allocation_unit;    ///< a block's shared memory is a multiple of this
  std::optional<std::uint32_t> max_threads_per_sm;    ///< resident threads
  std::optional<std::uint32_t> max_warps_per_sm;      ///< resident warps (wavefronts)
  std::optional<std::uint32_t> max_blocks_per_sm;     ///< resident blocks (workgroups)
  std::optional<std::uint32_t> max_threads_per_block; ///< the largest block a launch may ask for
  std::optional<std::uint32_t> warp_size;             ///< threads per warp: 32 on NVIDIA, 64 on AMD
};

/// Where one figure of a device comes from: the references (keys of the catalogue's
/// `references`) and the note the file gives with it. `known` is false for a figure the
/// file leaves null (not published; the note says why).
struct field_provenance {
  std::string field;                   ///< the field as the file names it ("sm_count")
  bool known = false;                  ///< the file gives a value
  std::vector<std::string> references; ///< keys of the catalogue's references, empty when unsourced
  std::string note;                    ///< what the file says about the figure, or why it is missing
};

/// One GPU as the cross-GPU model sees it, in SI units (Hz, bytes, bytes/s, FLOP/s). A
/// figure the vendor does not publish is empty, never guessed. Devices come from a
/// catalogue (device_catalogue.hpp; read by io/device_catalogue.hpp), one entry per GPU
/// as PyTorch sees it: one die of an MI250X module, one GPU of a GB200 superchip.
///
///     const auto& h100 = daydream::io::bundled_device_catalogue().at("H100");
///     double flop_per_byte = *h100.ridge_point(daydream::passes::numeric_precision::bf16);
struct device {
  std::string name;                 ///< the catalogue's name, unique in it ("H100-SXM")
  std::vector<std::string> aliases; ///< other names, Kineto's deviceProperties name among them
  gpu_vendor vendor = gpu_vendor::nvidia;
  std::string architecture; ///< "Hopper", "CDNA 3"
  std::string target;       ///< compiler target: "sm_90", "gfx942"
  std::string about;        ///< which product this is, in words

  std::optional<std::uint32_t> sm_count;    ///< SMs (CUs on AMD)
  std::optional<double> clock_hz;           ///< boost clock
  std::optional<double> memory_bandwidth;   ///< bytes/s of device memory
  std::optional<std::uint64_t> memory_bytes;
  std::optional<std::uint64_t> l2_bytes;

  /// Dense peak FLOP/s per precision (no 2:4 sparsity). FP32 is the non-tensor rate
  /// (CUDA cores, AMD's vector units); TF32, FP16, BF16 and FP8 the tensor/matrix rates.
  std::optional<double> fp32_flops, tf32_flops, fp16_flops, bf16_flops, fp8_flops;
  /// AMD's FP32 matrix rate (MFMA), at which rocBLAS runs FP32 GEMMs; NVIDIA has none.
  std::optional<double> fp32_matrix_flops;

  sm_limits sm; ///< the per-SM limits occupancy reads

  std::string interconnect;                    ///< "NVLink 4", "Infinity Fabric"; empty for none
  std::optional<double> interconnect_bandwidth; ///< bytes/s per GPU, both directions, as vendors quote it
  std::optional<std::uint32_t> pcie_generation;
  std::optional<double> pcie_bandwidth; ///< bytes/s of the x16 host link, both directions

  std::vector<field_provenance> provenance; ///< one per figure the catalogue gives, in file order

  /// The dense peak FLOP/s at precision `p`: fp32, tf32, fp16, bf16 or fp8; empty for the
  /// others (fp64 and unknown are not catalogued) and for a rate the device lacks.
  std::optional<double> peak_flops(numeric_precision p) const noexcept {
    switch (p) {
    case numeric_precision::fp32: return fp32_flops;
    case numeric_precision::tf32: return tf32_flops;
    case numeric_precision::fp16: return fp16_flops;
    case numeric_precision::bf16: return bf16_flops;
    case numeric_precision::fp8: return fp8_flops;
    case numeric_precision::fp64:
    case numeric_precision::unknown: return std::nullopt;
    }
    return std::nullopt;
  }

  /// The ridge point of the roofline at precision `p`: peak FLOP/s over memory bytes/s,
  /// in FLOP per byte. A kernel doing more FLOP per byte of memory traffic than this is
  /// compute-bound on this device, fewer memory-bound. Empty when either is unknown.
  ///
  ///     h100.ridge_point(numeric_precision::bf16)   // 989.4e12 / 3352e9 = 295.2 FLOP/byte
  std::optional<double> ridge_point(numeric_precision p) const noexcept {
    auto peak = peak_flops(p);
    if (!peak || !memory_bandwidth || *memory_bandwidth <= 0) return std::nullopt;
    return *peak / *memory_bandwidth;
  }

  /// Where figure `field` ("sm_count", "fp16_tflops") comes from; nullptr when the
  /// catalogue does not describe it (a device built in code).
  const field_provenance* provenance_of(std::string_view field) const noexcept {
    for (auto& p : provenance)
      if (p.field == field) return &p;
    return nullptr;
  }
};

/// device::ridge_point as a free function.
inline std::optional<double> ridge_point(const device& d, numeric_precision p) noexcept { return d.ridge_point(p); }

} // namespace daydream::passes

#endif
