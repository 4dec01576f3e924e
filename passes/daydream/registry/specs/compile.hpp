// Defines pass_spec<compile>: the line --help shows for the compile pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_COMPILE_HPP
#define DAYDREAM_REGISTRY_SPECS_COMPILE_HPP

#include <daydream/config.hpp>
#include <daydream/passes/compile.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::compile (see pass_spec).
template <> struct pass_spec<compile> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "torch.compile fusion: each run of consecutive memory-bound kernels of one layer and phase (no GEMM, "
      "attention or layer boundary between them) becomes one kernel taking its distinct bytes (recorded shapes) "
      "over the bandwidth the trace's memory-bound kernels achieve, launched by one call; GEMMs unchanged. "
      "params: layers= (regex, whole name; empty: all), scope=layer|phase (phase: runs cross layers), "
      "attention=keep|fuse, bandwidth= (default: measured)";

  /// Reads `layers`, `scope`, `attention` and `bandwidth`.
  static compile from_params(const pass_params& p) {
    compile c;
    c.layers = p.get_string("layers", c.layers);
    c.scope = p.get_string("scope", c.scope);
    c.attention = p.get_string("attention", c.attention);
    c.bandwidth = p.get_bandwidth("bandwidth", c.bandwidth);
    p.finish();
    c.check();
    return c;
  }
};

} // namespace daydream::passes

#endif
