// Defines occupancy_of (resident blocks per SM of a kernel by NVIDIA's occupancy-calculator rules) and waves (how many rounds a grid takes).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_OCCUPANCY_HPP
#define DAYDREAM_SEMANTICS_OCCUPANCY_HPP

#include <daydream/semantics/device.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// What one kernel launch asks of the device, as Kineto records it per kernel (`grid`,
/// `block`, `registers per thread`, `shared memory`).
struct launch_shape {
  std::uint64_t blocks = 0;                  ///< blocks in the grid (grid x * y * z)
  std::uint32_t threads_per_block = 0;       ///< block x * y * z
  std::uint32_t registers_per_thread = 0;    ///< as compiled; 0 for a kernel that uses none
  std::uint32_t shared_memory_per_block = 0; ///< bytes, static plus dynamic
};

/// The resource that bounds how many blocks of a kernel are resident on one SM.
enum class occupancy_limit : std::uint8_t {
  warps,         ///< warp slots (threads per SM): large blocks
  registers,     ///< the register file
  shared_memory, ///< the shared-memory carveout
  blocks,        ///< the resident-block slots: small blocks
};

/// The name of a limit ("shared memory").
inline constexpr std::string_view to_string(occupancy_limit l) noexcept {
  switch (l) {
  case occupancy_limit::warps: return "warps";
  case occupancy_limit::registers: return "registers";
  case occupancy_limit::shared_memory: return "shared memory";
  case occupancy_limit::blocks: return "blocks";
  }
  return "?";
}

/// How many blocks of one launch shape fit on one SM at once, and why no more.
struct occupancy {
  std::uint32_t blocks_per_sm = 0; ///< min of the four limits; 0 when one block does not fit
  occupancy_limit limit = occupancy_limit::warps; ///< the binding limit (the first in enum order on a tie)
  std::uint32_t by_warps = 0;         ///< blocks the warp slots allow
  std::uint32_t by_registers = 0;     ///< blocks the register file allows
  std::uint32_t by_shared_memory = 0; ///< blocks the shared memory allows
  std::uint32_t by_blocks = 0;        ///< the device's resident-block limit
  std::uint32_t warps_per_block = 0;
  std::uint32_t registers_per_warp = 0;      ///< as allocated (rounded to the allocation unit)
  std::uint32_t shared_memory_per_block = 0; ///< bytes as allocated (reserve included, rounded)
  std::uint32_t max_warps_per_sm = 0;        ///< the denominator of fraction()

  /// Active warps over the SM's warp slots, in [0, 1].
  double fraction() const noexcept {
    return max_warps_per_sm ? double(blocks_per_sm) * warps_per_block / max_warps_per_sm : 0.0;
  }
  /// Whether limit `l` allows no more blocks than blocks_per_sm (several may bind at once).
  bool limited_by(occupancy_limit l) const noexcept {
    switch (l) {
    case occupancy_limit::warps: return by_warps == blocks_per_sm;
    case occupancy_limit::registers: return by_registers == blocks_per_sm;
    case occupancy_limit::shared_memory: return by_shared_memory == blocks_per_sm;
    case occupancy_limit::blocks: return by_blocks == blocks_per_sm;
    }
    return false;
  }
};

/// The per-SM limits occupancy_of needs that `d` leaves unknown, by their catalogue
/// field names; empty when occupancy can be computed.
inline std::vector<std::string_view> missing_occupancy_fields(const device& d) {
  std::vector<std::string_view> out;
  auto need = [&](const std::optional<std::uint32_t>& x, std::string_view name) {
    if (!x) out.push_back(name);
  };
  const auto& s = d.sm;
  need(s.registers_per_sm, "registers_per_sm");
  need(s.max_registers_per_thread, "max_registers_per_thread");
  need(s.register_allocation_unit, "register_allocation_unit");
  need(s.warp_allocation_granularity, "warp_allocation_granularity");
  need(s.shared_memory_per_sm, "shared_memory_per_sm_kib");
  need(s.shared_memory_per_block, "shared_memory_per_block_kib");
  need(s.shared_memory_allocation_unit, "shared_memory_allocation_unit_bytes");
  need(s.max_warps_per_sm, "max_warps_per_sm");
  need(s.max_blocks_per_sm, "max_blocks_per_sm");
  need(s.max_threads_per_block, "max_threads_per_block");
  need(s.warp_size, "warp_size");
  return out;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline constexpr std::uint64_t round_up(std::uint64_t x, std::uint64_t unit) noexcept {
  return unit ? (x + unit - 1) / unit * unit : x;
}
inline constexpr std::uint32_t clamp32(std::uint64_t x) noexcept {
  return x > 0xffffffffu ? 0xffffffffu : std::uint32_t(x);
}
} // namespace detail
//! @endcond

/// How many blocks of `shape` are resident on one SM of `d`, by the rules of NVIDIA's
/// CUDA occupancy calculator (cuda_occupancy.h, compute capability 7.0 and later), with
/// the carveout at the device's largest shared memory per SM (what the driver picks when
/// the kernel states no preference and needs the room). Empty when `d` lacks one of the
/// limits (missing_occupancy_fields names them). With W = ceil(threads / warp size):
///
/// - warps: floor(max warps per SM / W); 0 when the block exceeds the largest block.
/// - registers: a warp gets ceil(registers per thread * warp size / allocation unit)
///   units; the register file splits into `warp_allocation_granularity` sub-partitions,
///   each holding floor(registers per SM / sub-partitions / registers per warp) warps;
///   blocks = floor(sub-partitions * that / W). 0 when a thread needs more than the
///   per-thread maximum, or the block's registers (warps rounded up to a multiple of the
///   sub-partitions) exceed the register file; no limit for a kernel without registers.
/// - shared memory: a block takes its shared memory plus the system's reserve, rounded up
///   to the allocation unit; blocks = floor(shared memory per SM / that). 0 when that
///   exceeds the per-block maximum plus the reserve; no limit when it is 0.
/// - blocks: the device's resident-block limit.
///
/// blocks_per_sm is the least of the four, and 0 for an empty block.
///
///     // A100: 256 threads, 70 registers: a warp takes 2304 registers, 7 warps fit in
///     // each of 4 sub-partitions, 28 warps = 3 blocks; registers bind.
///     auto o = daydream::passes::occupancy_of(a100, {.blocks = 1000, .threads_per_block = 256,
///                                                    .registers_per_thread = 70});
inline std::optional<occupancy> occupancy_of(const device& d, const launch_shape& shape) {
  if (!missing_occupancy_fields(d).empty()) return std::nullopt;
  const auto& s = d.sm;
  const std::uint64_t warp = *s.warp_size, subparts = *s.warp_allocation_granularity;
  occupancy o;
  o.max_warps_per_sm = *s.max_warps_per_sm;
  o.by_blocks = *s.max_blocks_per_sm;
  if (shape.threads_per_block == 0 || warp == 0) return o; // nothing to place
  const std::uint64_t w = (shape.threads_per_block + warp - 1) / warp;
  o.warps_per_block = detail::clamp32(w);
  const bool block_fits = shape.threads_per_block <= *s.max_threads_per_block;

  // Warp slots.
  o.by_warps = block_fits ? detail::clamp32(*s.max_warps_per_sm / w) : 0;

  // Registers, allocated per warp and placed per sub-partition.
  const std::uint64_t per_warp = detail::round_up(std::uint64_t(shape.registers_per_thread) * warp,
                                                  *s.register_allocation_unit);
  o.registers_per_warp = detail::clamp32(per_warp);
  if (shape.registers_per_thread > *s.max_registers_per_thread ||
      per_warp * detail::round_up(w, subparts) > *s.registers_per_sm)
    o.by_registers = 0;
  else if (per_warp == 0)
    o.by_registers = 0xffffffffu;
  else
    o.by_registers = detail::clamp32((*s.registers_per_sm / subparts / per_warp) * subparts / w);

  // Shared memory, with the system's reserve, in allocation units.
  const std::uint64_t reserve = s.reserved_shared_memory_per_block.value_or(0);
  const std::uint64_t smem = detail::round_up(std::uint64_t(shape.shared_memory_per_block) + reserve,
                                              *s.shared_memory_allocation_unit);
  o.shared_memory_per_block = detail::clamp32(smem);
  if (smem > std::uint64_t(*s.shared_memory_per_block) + reserve)
    o.by_shared_memory = 0;
  else if (smem == 0)
    o.by_shared_memory = 0xffffffffu;
  else
    o.by_shared_memory = detail::clamp32(*s.shared_memory_per_sm / smem);

  o.blocks_per_sm = std::min({o.by_warps, o.by_registers, o.by_shared_memory, o.by_blocks});
  for (auto l : {occupancy_limit::warps, occupancy_limit::registers, occupancy_limit::shared_memory,
                 occupancy_limit::blocks})
    if (o.limited_by(l)) {
      o.limit = l;
      break;
    }
  return o;
}

/// Waves of a grid: ceil(blocks / (sm_count * blocks_per_sm)), the rounds in which the
/// SMs work through it when each holds `blocks_per_sm` blocks at once. 0 for an empty
/// grid; empty when sm_count or blocks_per_sm is 0 (the grid cannot run).
///
///     waves(1000, 132, 3)   // 1000 / 396 -> 3 waves
inline constexpr std::optional<std::uint64_t> waves(std::uint64_t blocks, std::uint32_t sm_count,
                                                    std::uint32_t blocks_per_sm) noexcept {
  if (sm_count == 0 || blocks_per_sm == 0) return std::nullopt;
  const std::uint64_t per_wave = std::uint64_t(sm_count) * blocks_per_sm;
  return (blocks + per_wave - 1) / per_wave;
}

/// Waves of `shape` on `d`: its occupancy, then waves(). Empty when the device's SM count
/// or one of its per-SM limits is unknown, or a block does not fit.
inline std::optional<std::uint64_t> waves(const device& d, const launch_shape& shape) {
  if (!d.sm_count) return std::nullopt;
  auto o = occupancy_of(d, shape);
  if (!o) return std::nullopt;
  return waves(shape.blocks, *d.sm_count, o->blocks_per_sm);
}

} // namespace daydream::passes

#endif
