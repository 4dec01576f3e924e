// Defines pass_spec<speedup>: the line --help shows for the speedup pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_SPEEDUP_HPP
#define DAYDREAM_REGISTRY_SPECS_SPEEDUP_HPP

#include <daydream/config.hpp>
#include <daydream/passes/speedup.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cmath>
#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::speedup (see pass_spec).
template <> struct pass_spec<speedup> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "the selected GPU work X times faster: kernels=REGEX (searched in names, any case), layers=REGEX (whole "
      "layer name), class=gemm|attention|elementwise|normalization|reduction|communication|copies|optimizer|"
      "compute_bound|memory_bound, phase=forward|backward|weight_update (all given must match; none: every GPU "
      "task). params: factor=2 or duration=TIME (each selected task's new time)";
  /// Not in a default what-if run: the selection and the factor are the user's question.
  static constexpr bool default_scenario = false;

  /// Reads `kernels`, `layers`, `class`, `phase`, `factor` and `duration`.
  static speedup from_params(const pass_params& p) {
    speedup s;
    s.kernels = p.get_string("kernels", s.kernels);
    s.layers = p.get_string("layers", s.layers);
    s.klass = p.get_string("class", s.klass);
    s.phases = p.get_string("phase", s.phases);
    s.factor = p.get_double("factor", s.factor);
    const double d = p.get_time_ns("duration", -1);
    p.finish();
    if (d >= 0) s.duration = time_ns(std::llround(d));
    else if (d != -1) throw usage_error("daydream: pass 'speedup': duration must not be negative");
    s.check();
    return s;
  }
};

} // namespace daydream::passes

#endif
