// memory: time versus peak memory for the memory-saving passes vDNN, Gist and
// re-computation, alone and after AMP.
// SPDX-License-Identifier: MIT
//
//   forward(l1) ─► forward(l2) ─► ... ─► backward(l2) ─► backward(l1)
//        │ stash held from forward to backward: what these passes trade for time
//        ├─ vdnn:      offload (D2H) after forward, prefetch (H2D) before backward
//        ├─ gist:      encode after forward, decode before backward
//        └─ recompute: drop the stash, re-run the forward before the backward
//
// Usage: memory [TRACE]   (default: the bundled DLRM rank-0 trace, which recorded shapes)
#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/passes/vdnn.hpp>
#include <daydream/semantics/memory.hpp>

#include <fmt/format.h>

#include <string>
#include <string_view>

int main(int argc, char** argv) try {
  namespace dp = daydream::passes;
  std::string path = argc > 1 ? argv[1] : DAYDREAM_MEMORY_TRACE;
  auto trace = daydream::io::load_kineto(path);
  auto& g = trace.g;
  // Peak memory needs a memory model: the trace's [memory] events, else tensor sizes.
  if (!dp::has_memory_accounting(g)) dp::estimate_activation_memory(g);
  const auto it = trace.default_iteration();

  auto base = daydream::replay(g);
  const auto t0 = daydream::iteration_time(g, base, it);
  fmt::print("{}: iteration {}\n", path, it);
  fmt::print("{:<16} {:>12} {:>9} {:>14} {:>9}\n", "scenario", "time", "vs base", "peak memory", "vs base");
  fmt::print("{:<16} {:>9.3f} ms {:>8.2f}x {:>10.1f} MiB {:>8.2f}x\n", "baseline", t0 / 1e6, 1.0,
             base.peak_memory / 1048576.0, 1.0);

  // Each scenario on a copy of the graph; what_if replays with the pass's policy (vDNN
  // brings priority_policy, its prefetch order).
  auto row = [&](std::string_view scenario, bool applicable, const auto& pass) {
    if (!applicable) {
      fmt::print("{:<16} not applicable to this trace (no recorded tensor shapes?)\n", scenario);
      return;
    }
    auto copy = g;
    auto [reports, r] = daydream::what_if(copy, pass);
    const auto t = daydream::iteration_time(copy, r, it);
    fmt::print("{:<16} {:>9.3f} ms {:>8.2f}x {:>10.1f} MiB {:>8.2f}x\n", scenario, t / 1e6, double(t) / double(t0),
               r.peak_memory / 1048576.0,
               base.peak_memory ? double(r.peak_memory) / double(base.peak_memory) : 0.0);
  };
  row("vdnn", dp::vdnn::applicable(g), dp::vdnn{});
  row("gist", dp::gist::applicable(g), dp::gist{.ratio = 0.5});
  row("recompute", dp::recompute::applicable(g), dp::recompute{});
  // Composed: AMP halves the activations, then re-computation drops what is left.
  row("amp+recompute", dp::recompute::applicable(g), dp::amp{.casts = false} | dp::recompute{});
} catch (const std::exception& e) {
  fmt::print(stderr, "{}\n", e.what());
  return 1;
}
