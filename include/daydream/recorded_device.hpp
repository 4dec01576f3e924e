// Defines recorded_device: a GPU as the profiler described it (Kineto's deviceProperties).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_RECORDED_DEVICE_HPP
#define DAYDREAM_RECORDED_DEVICE_HPP

#include <cstdint>
#include <string>

namespace daydream {

/// One GPU of the run as the profiler recorded it (Kineto's `deviceProperties`, one entry
/// per device). A figure the trace does not give is 0. The graph keeps these
/// (basic_graph::devices) so that a pass can tell which GPU the tasks ran on; they are
/// not tasks and the replay does not read them.
///
///     for (auto& d : g.devices()) std::cout << d.id << ' ' << d.name << ' ' << d.sm_count << '\n';
struct recorded_device {
  std::int32_t id = 0;        ///< the device index the kernels' `device` refers to
  std::string name;           ///< "NVIDIA H100 80GB HBM3"
  std::uint32_t sm_count = 0; ///< `numSms` (CUs on AMD)
  std::uint64_t memory_bytes = 0; ///< `totalGlobalMem`
  std::uint32_t compute_major = 0, compute_minor = 0; ///< `computeMajor`, `computeMinor`
  std::uint32_t max_threads_per_block = 0; ///< `maxThreadsPerBlock`
  std::uint32_t max_threads_per_sm = 0;    ///< `maxThreadsPerMultiprocessor`
  std::uint32_t registers_per_block = 0;   ///< `regsPerBlock`
  std::uint32_t registers_per_sm = 0;      ///< `regsPerMultiprocessor`
  std::uint32_t warp_size = 0;             ///< `warpSize`
  std::uint32_t shared_memory_per_block = 0;       ///< `sharedMemPerBlock`, bytes
  std::uint32_t shared_memory_per_block_optin = 0; ///< `sharedMemPerBlockOptin`, bytes
  std::uint32_t shared_memory_per_sm = 0;          ///< `sharedMemPerMultiprocessor`, bytes
  friend bool operator==(const recorded_device&, const recorded_device&) = default;
};

} // namespace daydream

#endif
