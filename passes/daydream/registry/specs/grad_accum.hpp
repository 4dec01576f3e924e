// Defines pass_spec<grad_accum>: the line --help shows for the grad_accum pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_GRAD_ACCUM_HPP
#define DAYDREAM_REGISTRY_SPECS_GRAD_ACCUM_HPP

#include <daydream/config.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::grad_accum (see pass_spec).
template <> struct pass_spec<grad_accum> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "gradient accumulation: forward+backward repeated k times with kernels scaled 1/k, "
      "one weight update. params: k=2";

  /// Reads `k`.
  static grad_accum from_params(const pass_params& p) {
    grad_accum a;
    a.k = p.get_int("k", a.k);
    p.finish();
    if (a.k < 1) throw error("daydream: pass 'grad_accum': k must be at least 1");
    return a;
  }
};

} // namespace daydream::passes

#endif
