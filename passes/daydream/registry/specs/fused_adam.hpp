// Defines pass_spec<fused_adam>: the line --help shows for the fused_adam pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_FUSED_ADAM_HPP
#define DAYDREAM_REGISTRY_SPECS_FUSED_ADAM_HPP

#include <daydream/config.hpp>
#include <daydream/passes/fused_adam.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::fused_adam (see pass_spec).
template <> struct pass_spec<fused_adam> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "fused optimizer: each weight-update phase becomes one kernel of traffic x the removed kernel time, "
      "launched by ops operator calls; the optimizer's Python around its operators stays. "
      "params: traffic=0.35, ops=2";

  /// Reads `traffic` and `ops`.
  static fused_adam from_params(const pass_params& p) {
    fused_adam f;
    f.traffic = p.get_double("traffic", f.traffic);
    f.ops = p.get_int("ops", f.ops);
    p.finish();
    if (f.ops < 1) throw usage_error("daydream: pass 'fused_adam': ops must be at least 1 (the calls that launch the fused kernel)");
    return f;
  }
};

} // namespace daydream::passes

#endif
