// A typical user translation unit: the umbrella header, one bundled pass, a pass of its
// own, a selection, apply, replay and the critical path, all instantiated.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/passes/amp.hpp>

#include <cstdint>

namespace {

// Halves the backward kernels of layers whose name starts with "conv".
struct faster_backward_convs {
  static constexpr std::string_view name = "faster-backward-convs";
  void operator()(daydream::graph& g) const {
    for (auto k : daydream::tasks<daydream::gpu_kernel>(g) |
                      daydream::where(daydream::in_phase(daydream::phase::backward) &&
                                      daydream::name_matches("^conv")))
      daydream::scale_duration(g, k, 0.5);
  }
};

} // namespace

/// Applies AMP and the pass above to `g` and returns the predicted makespan.
std::int64_t predict(daydream::graph& g) {
  daydream::apply(g, daydream::passes::amp{} | faster_backward_convs{});
  auto r = daydream::replay(g, daydream::pass_policy_t<faster_backward_convs>{});
  return r.makespan + static_cast<std::int64_t>(r.critical_path().size());
}
