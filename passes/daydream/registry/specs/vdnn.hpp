// Defines pass_spec<vdnn>: the line --help shows for the vdnn pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_VDNN_HPP
#define DAYDREAM_REGISTRY_SPECS_VDNN_HPP

#include <daydream/config.hpp>
#include <daydream/passes/vdnn.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::vdnn (see pass_spec).
template <> struct pass_spec<vdnn> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "offload stashed activations to the host after the forward, prefetch before the "
      "backward. params: bandwidth=12GB/s (PCIe), layers= (regex, whole name; empty: all), "
      "lookahead=1 (layers)";

  /// Reads `bandwidth`, `layers` and `lookahead`.
  static vdnn from_params(const pass_params& p) {
    vdnn v;
    v.bandwidth = p.get_bandwidth("bandwidth", v.bandwidth);
    v.layers = p.get_string("layers", v.layers);
    v.lookahead = p.get_int("lookahead", v.lookahead);
    p.finish();
    if (!(v.bandwidth > 0)) throw error("daydream: pass 'vdnn': bandwidth must be positive");
    return v;
  }
};

} // namespace daydream::passes

#endif
