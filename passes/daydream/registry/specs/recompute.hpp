// Defines pass_spec<recompute>: the line --help shows for the recompute pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_RECOMPUTE_HPP
#define DAYDREAM_REGISTRY_SPECS_RECOMPUTE_HPP

#include <daydream/config.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::recompute (see pass_spec).
template <> struct pass_spec<recompute> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "re-run the forward of selected layers before their backward instead of stashing. "
      "params: layers= (regex, whole name; empty: all)";

  /// Reads `layers`.
  static recompute from_params(const pass_params& p) {
    recompute r;
    r.layers = p.get_string("layers", r.layers);
    p.finish();
    return r;
  }
};

} // namespace daydream::passes

#endif
