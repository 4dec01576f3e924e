// Defines pass_spec<p3>: the line --help shows for the p3 pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_P3_HPP
#define DAYDREAM_REGISTRY_SPECS_P3_HPP

#include <daydream/config.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cstdint>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::p3 (see pass_spec).
template <> struct pass_spec<p3> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "P3: sliced parameter-server push/pull, earlier layers first, next forward overlaps. "
      "params: cluster keys (workers=, bandwidth=, ps=, ...), slice=160KB, iterations=3, model_bytes= (when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";

  /// Reads the cluster keys, `model_bytes`, `slice` (bytes) and `iterations`.
  static p3 from_params(const pass_params& p) {
    p3 x;
    read_cluster(x, p);
    x.slice = static_cast<std::uint64_t>(p.get_bytes("slice", double(x.slice)));
    read_iterations(x, p);
    p.finish();
    if (x.slice == 0) throw usage_error("daydream: pass 'p3': slice must be positive");
    return x;
  }
};

} // namespace daydream::passes

#endif
