// Defines simulate_options: the cost models' constants of compile and simulate_strategy.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_OPTIONS_HPP
#define DAYDREAM_STRATEGY_OPTIONS_HPP

#include <cstdint>

namespace daydream::strategy {

/// Options of compile and simulate_strategy: the cost models' constants.
struct simulate_options {
  /// Bytes of one parameter as the gradient sizes count them (fp32: 4): parameters =
  /// parameter bytes / this.
  double bytes_per_param = 4;
  /// Optimizer state per parameter: Adam with fp32 master weights, momentum and variance
  /// (the K = 12 of the ZeRO paper, Rajbhandari et al. 2020).
  double optimizer_bytes_per_param = 12;
  /// Data-parallel gradient bucket (PyTorch DDP's default bucket_cap_mb = 25).
  std::uint64_t bucket_bytes = 25ull << 20;
  /// Proteus' overlap factor (replay_options::overlap_slowdown): computation on a device
  /// runs this much slower while its communication runs.
  double overlap_slowdown = 1.0;
  /// Samples per iteration over all replicas; 0: the profiled batch x the devices the
  /// strategy uses, so that every strategy on N devices trains the same global batch and
  /// dp=N is weak-scaling data parallelism. A micro-batch is global / (dp x micro).
  double global_batch = 0;
};

} // namespace daydream::strategy

#endif
