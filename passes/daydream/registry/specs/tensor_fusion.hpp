// Defines pass_spec<tensor_fusion>: the line --help shows for the tensor_fusion pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_TENSOR_FUSION_HPP
#define DAYDREAM_REGISTRY_SPECS_TENSOR_FUSION_HPP

#include <daydream/config.hpp>
#include <daydream/passes/tensor_fusion.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::tensor_fusion (see pass_spec).
template <> struct pass_spec<tensor_fusion> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "Horovod tensor fusion: gradients ready within a cycle fused into all-reduce buffers up to "
      "a cap. params: cluster keys (workers=, bandwidth=, ...), cycle_time=1ms, threshold=128MiB, "
      "algorithm=ring, model_bytes= (when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";

  /// Reads the cluster keys, `model_bytes`, `cycle_time`, `threshold` and `algorithm`.
  static tensor_fusion from_params(const pass_params& p) {
    tensor_fusion x;
    read_cluster(x, p);
    x.cycle_time = static_cast<time_ns>(p.get_time_ns("cycle_time", double(x.cycle_time)));
    x.threshold = static_cast<std::uint64_t>(p.get_bytes("threshold", double(x.threshold)));
    x.algorithm = parse_all_reduce_algorithm(p.get_string("algorithm", "ring"));
    p.finish();
    if (x.cycle_time <= 0) throw usage_error("daydream: pass 'tensor_fusion': cycle_time must be positive");
    return x;
  }
};

} // namespace daydream::passes

#endif
