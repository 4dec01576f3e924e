// scaling: predicted data-parallel iteration time and throughput for 1-64 workers at
// 10/25/40/100 Gbit/s, from one single-GPU trace, with PyTorch DDP's bucketed all-reduce.
// SPDX-License-Identifier: MIT
//
//   forward ──► backward ──┬──────────────────────────────► optimizer      trace graph
//                          └─► all-reduce bucket 0..k ──────┘ (NIC, fair)  after ddp{.cluster = W machines at B}
//
// Usage: scaling [TRACE] [MODEL_BYTES]   (default: the bundled ResNet-50 trace, which
// recorded no shapes, with ResNet-50's 25,557,032 fp32 parameters = 102,228,128 bytes)
#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/registry/params.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  using namespace daydream::literals;
  const bool bundled = argc < 2;
  std::string path = bundled ? DAYDREAM_DEFAULT_TRACE : argv[1];
  // A size as the command line writes it: 102228128, 100MB, 97.5MiB.
  const double model_bytes = daydream::pass_params::parse("scaling", std::string("model_bytes=") +
                                                                         (argc > 2 ? argv[2] : bundled ? "102228128" : "0"))
                                 .get_bytes("model_bytes", 0);

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
      // w machines of one GPU each, each NIC at b Gbit/s with 5 us of latency.
      const daydream::cluster c{.machines = std::uint32_t(w), .network = {b * 1e9 / 8, 5'000}};
      auto h = g;
      auto [reports, r] = daydream::what_if(h, daydream::passes::ddp{.cluster = c, .model_bytes = model_bytes,
                                                                     .bucket_cap = 25_MiB});
      auto t = daydream::iteration_time(h, r, it);
//! [ddp scaling]
      // Throughput in samples per second relative to one GPU: w iterations' worth of
      // samples per iteration time.
      fmt::print("{:>13.2f}  ({:>5.1f}x)", t / 1e6, double(w) * double(single) / double(t));
      if (w > 1 && notes.empty()) notes = reports.front().notes;
    }
    fmt::print("\n");
  }
  fmt::print("\nthroughput = workers x (one-GPU iteration time / predicted iteration time)\n");
  for (auto& n : notes) fmt::print("note: {}\n", n);
} catch (const std::exception& e) {
  fmt::print(stderr, "{}\n", e.what());
  return 1;
}
