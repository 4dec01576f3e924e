// Defines pass_spec<gist>: the line --help shows for the gist pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_GIST_HPP
#define DAYDREAM_REGISTRY_SPECS_GIST_HPP

#include <daydream/config.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::gist (see pass_spec).
template <> struct pass_spec<gist> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "encode stashed activations after the forward, decode before the backward. "
      "params: ratio=0.5 (encoded/original size), layers= (regex, whole name; empty: all), "
      "bandwidth=300GB/s (only when no elementwise kernel can be measured)";

  /// Reads `ratio`, `layers` and `bandwidth`.
  static gist from_params(const pass_params& p) {
    gist s;
    s.ratio = p.get_double("ratio", s.ratio);
    s.layers = p.get_string("layers", s.layers);
    s.bandwidth = p.get_bandwidth("bandwidth", s.bandwidth);
    p.finish();
    if (s.ratio > 1) throw error("daydream: pass 'gist': ratio is encoded/original size, at most 1");
    if (!(s.bandwidth > 0)) throw error("daydream: pass 'gist': bandwidth must be positive");
    return s;
  }
};

} // namespace daydream::passes

#endif
