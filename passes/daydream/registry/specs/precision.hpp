// Defines pass_spec<precision>: the line --help shows for the precision pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_PRECISION_HPP
#define DAYDREAM_REGISTRY_SPECS_PRECISION_HPP

#include <daydream/config.hpp>
#include <daydream/passes/precision.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::precision (see pass_spec).
template <> struct pass_spec<precision> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "GEMMs in another precision: to=fp8 runs the bf16/fp16 GEMM kernels of a reduced-precision run on FP8 "
      "tensor cores (Hopper and later), the rest unchanged. params: to=fp8, gemm=2 (speedup)";
  /// The default what-if scenario's parameters: the GEMMs in FP8.
  static constexpr std::string_view scenario_params = "to=fp8";

  /// Reads `to` and `gemm`.
  static precision from_params(const pass_params& p) {
    precision x;
    x.to = p.get_string("to", x.to);
    x.gemm = p.get_double("gemm", x.gemm);
    p.finish();
    x.check();
    return x;
  }
};

} // namespace daydream::passes

#endif
