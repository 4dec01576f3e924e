// Defines pass_spec<tictac>: the line --help shows for the tictac pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_TICTAC_HPP
#define DAYDREAM_REGISTRY_SPECS_TICTAC_HPP

#include <daydream/config.hpp>
#include <daydream/passes/tictac.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::tictac (see pass_spec).
template <> struct pass_spec<tictac> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "TicTac: parameter-server pulls ordered by the next forward's consumption order. "
      "params: cluster keys (workers=, bandwidth=, ps=, ...), iterations=3, model_bytes= (when the trace has no sizes)";
  /// The default what-if scenario's parameters: a cluster (the pass's own defaults describe
  /// one worker, which has nothing to synchronize).
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";

  /// Reads the cluster keys, `model_bytes` and `iterations`.
  static tictac from_params(const pass_params& p) {
    tictac x;
    read_cluster(x, p);
    read_iterations(x, p);
    p.finish();
    return x;
  }
};

} // namespace daydream::passes

#endif
