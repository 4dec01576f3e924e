// Defines pass_spec<substitute>: the line --help shows for the substitute pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_SUBSTITUTE_HPP
#define DAYDREAM_REGISTRY_SPECS_SUBSTITUTE_HPP

#include <daydream/config.hpp>
#include <daydream/passes/substitute.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace daydream::passes {

/// The command line's side of passes::substitute (see pass_spec).
template <> struct pass_spec<substitute> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "replace each run of consecutive layers matching a regex (whole name) with one fused "
      "kernel per phase. params: layers=REGEX (required), name=fused, forward=DURATION or "
      "forward_scale=1, backward=DURATION or backward_scale=1";
  /// The default what-if scenario's parameters: the layers of substitute::default_fusion
  /// (batch norm with the ReLU after it) fused.
  static constexpr std::string_view scenario_params = "layers=.*(batch_?norm|bn|relu).*";

  /// Reads `layers` (required), `name`, and per phase (`forward`, `backward`) either a
  /// duration or a `_scale`.
  static substitute from_params(const pass_params& p) {
    substitute s;
    if (!p.has("layers"))
      throw error("daydream: pass 'substitute' needs layers=REGEX (the layers to replace)");
    s.layers = p.get_string("layers", "");
    const auto n = p.get_string("name", "fused");
    s.kernels.clear();
    for (auto [key, ph] : {std::pair{"forward", phase::forward}, std::pair{"backward", phase::backward}}) {
      substitute::kernel k{n + "_" + key, ph};
      k.scale = p.get_double(std::string(key) + "_scale", 1.0);
      if (p.has(key)) k.duration = static_cast<time_ns>(std::llround(p.get_time_ns(key, 0)));
      s.kernels.push_back(k);
    }
    p.finish();
    return s;
  }
};

} // namespace daydream::passes

#endif
