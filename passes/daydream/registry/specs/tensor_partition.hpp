// Defines pass_spec<tensor_partition>: the line --help shows for the tensor_partition pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_TENSOR_PARTITION_HPP
#define DAYDREAM_REGISTRY_SPECS_TENSOR_PARTITION_HPP

#include <daydream/config.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cstdint>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::tensor_partition (see pass_spec).
template <> struct pass_spec<tensor_partition> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "BytePS tensor partition: push/pull fixed-size partitions through parameter servers. "
      "params: cluster keys (workers=, bandwidth=, ps=, ...), partition=4096000, model_bytes= (when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";

  /// Reads the cluster keys, `model_bytes` and `partition` (bytes).
  static tensor_partition from_params(const pass_params& p) {
    tensor_partition x;
    read_cluster(x, p);
    x.partition = static_cast<std::uint64_t>(p.get_bytes("partition", double(x.partition)));
    p.finish();
    if (x.partition == 0) throw usage_error("daydream: pass 'tensor_partition': partition must be positive");
    return x;
  }
};

} // namespace daydream::passes

#endif
