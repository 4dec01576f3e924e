// memory: time versus peak memory for the memory-saving passes vDNN, Gist and re-computation.
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
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/semantics/memory.hpp>

#include <fmt/format.h>

#include <string>

int main(int argc, char** argv) try {
  std::string path = argc > 1 ? argv[1] : DAYDREAM_MEMORY_TRACE;
  auto trace = daydream::io::load_kineto(path);
  auto& g = trace.g;
  // Peak memory needs a memory model: the trace's [memory] events, else tensor sizes.
  if (!daydream::passes::has_memory_accounting(g)) daydream::passes::estimate_activation_memory(g);
  const auto it = trace.default_iteration();

  auto base = daydream::replay(g);
  const auto t0 = daydream::iteration_time(g, base, it);
  fmt::print("{}: iteration {}\n", path, it);
  fmt::print("{:<12} {:>12} {:>9} {:>14} {:>9}\n", "scenario", "time", "vs base", "peak memory", "vs base");
  fmt::print("{:<12} {:>9.3f} ms {:>8.2f}x {:>10.1f} MiB {:>8.2f}x\n", "baseline", t0 / 1e6, 1.0,
             base.peak_memory / 1048576.0, 1.0);

  auto reg = daydream::passes::bundled();
  for (const char* spec : {"vdnn", "gist", "recompute"}) {
    auto copy = g;
    if (!reg.find(spec)->applicable(copy)) {
      fmt::print("{:<12} not applicable to this trace (no recorded tensor shapes?)\n", spec);
      continue;
    }
    auto [r, reports] = daydream::passes::run_chain(copy, reg.make_chain(spec));
    const auto t = daydream::iteration_time(copy, r, it);
    fmt::print("{:<12} {:>9.3f} ms {:>8.2f}x {:>10.1f} MiB {:>8.2f}x\n", spec, t / 1e6, double(t) / double(t0),
               r.peak_memory / 1048576.0,
               base.peak_memory ? double(r.peak_memory) / double(base.peak_memory) : 0.0);
  }
} catch (const std::exception& e) {
  fmt::print(stderr, "{}\n", e.what());
  return 1;
}
