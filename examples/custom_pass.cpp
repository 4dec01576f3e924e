// custom_pass: a user-written pass — "what if every convolution kernel were 1.5x faster?" —
// on its own and composed with a bundled one.
// SPDX-License-Identifier: MIT
//
//   launch ──► conv kernel (1.0 ms) ──► relu kernel          trace graph
//   launch ──► conv kernel (0.67 ms) ─► relu kernel          after faster_conv{.speedup = 1.5}
//
// Usage: custom_pass [TRACE] [SPEEDUP]   (default: the bundled ResNet-50 trace, 1.5)
#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/fused_adam.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <string>

//! [custom pass]
struct faster_conv {
  static constexpr std::string_view name = "faster-conv";
  double speedup = 1.5;

  daydream::pass_report operator()(daydream::graph& g) const {
    using namespace daydream;
    pass_report report;
    int changed = 0;
    for (auto k : tasks<gpu_kernel>(g) | where(name_matches("conv|wgrad|dgrad|implicit_gemm"))) {
      scale_duration(g, k, 1.0 / speedup);
      ++changed;
    }
    report.add_count("convolution kernels", changed);
    return report;
  }
};
static_assert(daydream::pass_for<faster_conv, daydream::graph>);
//! [custom pass]

int main(int argc, char** argv) try {
  std::string path = argc > 1 ? argv[1] : DAYDREAM_DEFAULT_TRACE;
  double speedup = argc > 2 ? std::atof(argv[2]) : 1.5;

  auto trace = daydream::io::load_kineto(path);
  auto it = trace.default_iteration();
  auto before = daydream::iteration_time(trace.g, daydream::replay(trace.g), it);

//! [what if]
  auto g = trace.g;
  auto [reports, r] = daydream::what_if(g, faster_conv{.speedup = speedup});
  auto after = daydream::iteration_time(g, r, it);
  auto kernels = reports.front().at("convolution kernels").value.count;
//! [what if]
  fmt::print("iteration {}: {:.3f} ms -> {:.3f} ms with {}x faster convolutions ({} kernels): {:.2f}x\n",
             it, before / 1e6, after / 1e6, speedup, kernels, double(before) / double(after));

  // Composed with a bundled pass: `|` runs both, in one transaction, and what_if replays
  // with the policy of the last pass that brings one.
  auto h = trace.g;
  auto both = daydream::what_if(h, faster_conv{.speedup = speedup} | daydream::passes::fused_adam{});
  fmt::print("with FusedAdam as well: {:.3f} ms ({} passes reported)\n",
             daydream::iteration_time(h, both.replay, it) / 1e6, both.reports.size());
} catch (const std::exception& e) {
  fmt::print(stderr, "{}\n", e.what());
  return 1;
}
