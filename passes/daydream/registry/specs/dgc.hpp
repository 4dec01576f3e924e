// Defines pass_spec<dgc>: the line --help shows for the dgc pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_DGC_HPP
#define DAYDREAM_REGISTRY_SPECS_DGC_HPP

#include <daydream/config.hpp>
#include <daydream/passes/dgc.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::dgc (see pass_spec).
template <> struct pass_spec<dgc> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "Deep Gradient Compression: all-gather of top-ratio sparse gradients plus compression and "
      "decompression kernels. params: cluster keys (workers=, bandwidth=, ...), ratio=0.001, "
      "compress_passes=8, mem_bandwidth=500GB/s, bucket_cap=25MiB, first_bucket=1MiB, model_bytes= (when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";

  /// Reads the cluster keys, `model_bytes`, `ratio`, `compress_passes`, `mem_bandwidth`,
  /// `bucket_cap` and `first_bucket`.
  static dgc from_params(const pass_params& p) {
    dgc x;
    read_cluster(x, p);
    read_buckets(x, p);
    x.ratio = p.get_double("ratio", x.ratio);
    x.compress_passes = p.get_double("compress_passes", x.compress_passes);
    x.mem_bandwidth = p.get_bandwidth("mem_bandwidth", x.mem_bandwidth);
    p.finish();
    if (!(x.ratio > 0 && x.ratio <= 1)) throw usage_error("daydream: pass 'dgc': ratio must be in (0, 1]");
    if (!(x.mem_bandwidth > 0)) throw usage_error("daydream: pass 'dgc': mem_bandwidth must be positive");
    return x;
  }
};

} // namespace daydream::passes

#endif
