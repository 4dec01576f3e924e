// Defines pass_spec<reconstruct_bn>: the line --help shows for the reconstruct_bn pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_RECONSTRUCT_BN_HPP
#define DAYDREAM_REGISTRY_SPECS_RECONSTRUCT_BN_HPP

#include <daydream/config.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::reconstruct_bn (see pass_spec).
template <> struct pass_spec<reconstruct_bn> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "reconstructing batch norm: activations next to BN removed (fused), BN kernels "
      "/bn_speedup. params: bn_speedup=2";

  /// Reads `bn_speedup`.
  static reconstruct_bn from_params(const pass_params& p) {
    reconstruct_bn r;
    r.bn_speedup = p.get_double("bn_speedup", r.bn_speedup);
    p.finish();
    if (!(r.bn_speedup > 0)) throw error("daydream: pass 'reconstruct_bn': bn_speedup must be positive");
    return r;
  }
};

} // namespace daydream::passes

#endif
