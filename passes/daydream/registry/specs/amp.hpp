// Defines pass_spec<amp>: the line --help shows for the amp pass and how command-line parameters build it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_AMP_HPP
#define DAYDREAM_REGISTRY_SPECS_AMP_HPP

#include <daydream/config.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cmath>
#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::amp (see pass_spec).
template <> struct pass_spec<amp> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "mixed precision (autocast): compute-bound kernels /compute, memory-bound /memory, the casts autocast adds "
      "and GradScaler's sync (fp16); leaves a run already in bf16/fp16/fp8 alone. params: dtype=fp16|bf16, "
      "compute=GPU (its 16-bit over FP32 peak; 3 when not catalogued), tf32=GPU (2), memory=1.25, overhead=2us, "
      "activations=0.5, casts=true, scaler=true (fp16 only)";

  /// Reads `dtype`, `compute`, `tf32`, `memory`, `overhead`, `activations`, `casts` and
  /// `scaler`; the catalogue is the bundled one.
  static amp from_params(const pass_params& p) {
    amp a;
    a.dtype = p.get_string("dtype", a.dtype);
    a.compute = p.get_double("compute", a.compute);
    a.tf32 = p.get_double("tf32", a.tf32);
    a.memory = p.get_double("memory", a.memory);
    const double overhead = p.get_time_ns("overhead", double(a.overhead));
    a.activations = p.get_double("activations", a.activations);
    a.casts = p.get_bool("casts", a.casts);
    a.scaler = p.get_bool("scaler", a.scaler);
    p.finish();
    if (!(a.compute >= 0) || !(a.tf32 >= 0) || !(a.memory > 0))
      throw error("daydream: pass 'amp': compute, tf32 and memory must be positive speedups (compute=0 and tf32=0: "
                  "from the GPU's peaks)");
    if (!(overhead >= 0)) throw error("daydream: pass 'amp': overhead must not be negative");
    a.overhead = time_ns(std::llround(overhead));
    a.catalogue = io::bundled_device_catalogue();
    a.check_dtype();
    return a;
  }
};

} // namespace daydream::passes

#endif
