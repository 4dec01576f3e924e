// Defines pass_spec<cuda_graphs>: the line --help shows for the cuda_graphs pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_CUDA_GRAPHS_HPP
#define DAYDREAM_REGISTRY_SPECS_CUDA_GRAPHS_HPP

#include <daydream/config.hpp>
#include <daydream/passes/cuda_graphs.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::cuda_graphs (see pass_spec).
template <> struct pass_spec<cuda_graphs> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "CUDA graphs: each step's launches captured once and replayed; a captured region's CPU work becomes one "
      "graph launch (launch_us + node_us per kernel, fit to the trace's graph launches when it has them), its "
      "kernels idle gap_us between them; syncs, host copies and data-dependent shapes stay eager. params: "
      "scope=step|model, launch_us=20, node_us=2, gap_us=0.5";

  /// Reads `scope`, `launch_us`, `node_us` and `gap_us`.
  static cuda_graphs from_params(const pass_params& p) {
    cuda_graphs c;
    c.scope = p.get_string("scope", c.scope);
    c.launch_us = p.get_double("launch_us", c.launch_us);
    c.node_us = p.get_double("node_us", c.node_us);
    c.gap_us = p.get_double("gap_us", c.gap_us);
    p.finish();
    c.check();
    return c;
  }
};

} // namespace daydream::passes

#endif
