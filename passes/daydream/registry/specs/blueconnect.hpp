// Defines pass_spec<blueconnect>: the line --help shows for the blueconnect pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_BLUECONNECT_HPP
#define DAYDREAM_REGISTRY_SPECS_BLUECONNECT_HPP

#include <daydream/config.hpp>
#include <daydream/passes/blueconnect.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cstdint>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::blueconnect (see pass_spec).
///
/// The default machine shape is the one BlueConnect is for: `workers=16` alone means 2
/// machines of 8 GPUs (default_workers_per_machine), not 16 machines of one GPU, where
/// every stage but the inter-machine ones would vanish and the pass would equal ddp.
template <> struct pass_spec<blueconnect> {
  /// GPUs per machine when only `workers=` is given: the hierarchy is the point.
  static constexpr std::uint32_t default_workers_per_machine = 8;
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "BlueConnect: all-reduce as reduce-scatter/all-gather stages within and across machines, "
      "on parallel channels. params: cluster keys (workers= alone means machines of 8 GPUs; machines=, "
      "workers_per_machine=, nvlink=, bandwidth=, ...), bucket_cap=25MiB, first_bucket=1MiB, model_bytes= "
      "(when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "machines=2,workers_per_machine=8,bandwidth=25Gbps";

  /// Reads the cluster keys (`workers=N` alone: machines of default_workers_per_machine
  /// GPUs), `model_bytes`, `bucket_cap` and `first_bucket`.
  static blueconnect from_params(const pass_params& p) {
    blueconnect x;
    read_cluster(x, p, default_workers_per_machine);
    read_buckets(x, p);
    p.finish();
    return x;
  }
};

} // namespace daydream::passes

#endif
