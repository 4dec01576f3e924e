// Defines pass_spec<ddp>: the line --help shows for the ddp pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_DDP_HPP
#define DAYDREAM_REGISTRY_SPECS_DDP_HPP

#include <daydream/config.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::ddp (see pass_spec).
template <> struct pass_spec<ddp> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "data-parallel all-reduce with DDP buckets. params: workers=, machines=, "
      "workers_per_machine=, bandwidth=25Gbps, latency=5us, nvlink=, pcie=12GB/s, "
      "bucket_cap=25MiB, first_bucket=1MiB, algorithm=ring|tree|halving_doubling, model_bytes= (when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";

  /// Reads the cluster keys (cluster_from_params), `model_bytes`, `bucket_cap`,
  /// `first_bucket` and `algorithm`.
  static ddp from_params(const pass_params& p) {
    ddp d;
    read_cluster(d, p);
    read_buckets(d, p);
    d.algorithm = parse_all_reduce_algorithm(p.get_string("algorithm", "ring"));
    p.finish();
    return d;
  }
};

} // namespace daydream::passes

#endif
