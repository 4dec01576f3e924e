// scaling: predicted data-parallel iteration time and throughput for 1-64 workers at
// 10/25/40/100 Gbit/s, from one single-GPU trace, with PyTorch DDP's bucketed all-reduce.
// SPDX-License-Identifier: MIT
//
//   forward ──► backward ──┬──────────────────────────────► optimizer      trace graph
//                          └─► all-reduce bucket 0..k ──────┘ (NIC, fair)  after ddp:workers=W,bandwidth=B
//
// Usage: scaling [TRACE] [MODEL_BYTES]   (default: the bundled ResNet-50 trace, which
// recorded no shapes, with ResNet-50's 25,557,032 fp32 parameters = 102,228,128 bytes)
#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/ddp.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

int main(int argc, char** argv) try {
  const bool bundled = argc < 2;
  std::string path = bundled ? DAYDREAM_DEFAULT_TRACE : argv[1];
  std::string model_bytes = argc > 2 ? argv[2] : bundled ? "102228128" : "0";

  auto trace = daydream::io::load_kineto(path);
  auto g = trace.g;
  auto stripped = daydream::passes::strip_communication(g); // a multi-GPU trace: keep its computation
  auto it = trace.default_iteration();
  const auto single = daydream::iteration_time(g, daydream::replay(g), it);
  fmt::print("{}: iteration {}, {:.2f} ms on one GPU{}\n", path, it, single / 1e6,
             stripped ? fmt::format(" ({} recorded collectives stripped)", stripped) : "");

  const std::vector<int> workers{1, 2, 4, 8, 16, 32, 64};
  const std::vector<int> gbps{10, 25, 40, 100};
  fmt::print("\n{:>8} |{:>22}{:>22}{:>22}{:>22}\n", "workers", "10 Gbit/s", "25 Gbit/s", "40 Gbit/s",
             "100 Gbit/s");
  fmt::print("{:>8} |{:>22}{:>22}{:>22}{:>22}\n", "", "ms  (speedup)", "ms  (speedup)", "ms  (speedup)",
             "ms  (speedup)");
  std::vector<std::string> notes;
  for (int w : workers) {
    fmt::print("{:>8} |", w);
    for (int b : gbps) {
//! [ddp scaling]
      auto pass = daydream::passes::ddp::from_params(daydream::pass_params::parse(
          "ddp", fmt::format("workers={},bandwidth={}Gbps,model_bytes={}", w, b, model_bytes)));
      auto h = g;
      auto report = daydream::apply(h, pass);
      auto t = daydream::iteration_time(h, daydream::replay(h), it);
//! [ddp scaling]
      // Throughput in samples per second relative to one GPU: w iterations' worth of
      // samples per iteration time.
      fmt::print("{:>13.2f}  ({:>5.1f}x)", t / 1e6, double(w) * double(single) / double(t));
      if (w > 1 && notes.empty()) notes = report.notes;
    }
    fmt::print("\n");
  }
  fmt::print("\nthroughput = workers x (one-GPU iteration time / predicted iteration time)\n");
  for (auto& n : notes) fmt::print("note: {}\n", n);
} catch (const std::exception& e) {
  fmt::print(stderr, "{}\n", e.what());
  return 1;
}
