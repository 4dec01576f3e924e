// Prints the accuracy table of docs/accuracy.md: every iteration of every real Kineto trace, measured vs replayed.
// SPDX-License-Identifier: MIT
//
//     daydream_accuracy_table [TRACES_DIR...]
// Without arguments: the bundled corpus (tests/data, examples/traces), then the extra
// traces (DAYDREAM_EXTRA_TRACES, else ../shared/traces beside the source tree, when there).
#include "catalog.hpp"

#include <daydream/io/kineto.hpp>
#include <daydream/replay.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<daydream::testing::corpus_trace> files;
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) {
      const fs::path root = argv[i];
      auto found = daydream::tests::kineto_traces(root);
      if (found.empty()) {
        std::fprintf(stderr, "no Kineto traces under %s\n", root.string().c_str());
        return 1;
      }
      for (auto& f : found) files.push_back({f, fs::relative(f, root).string(), true});
    }
  } else {
    files = daydream::testing::corpus();
  }
  std::printf("| trace | iteration | checked | measured (us) | replayed (us) | error |\n");
  std::printf("|---|---:|:---:|---:|---:|---:|\n");
  double worst = 0;
  int failures = 0;
  std::string ingest;
  for (auto& [f, rel, bundled] : files) {
    try {
      auto t0 = std::chrono::steady_clock::now();
      auto t = daydream::io::load_kineto(f);
      auto t1 = std::chrono::steady_clock::now();
      auto r = daydream::replay(t.g);
      auto rows = daydream::tests::accuracy(t, r);
      for (auto& row : rows) {
        std::printf("| %s | %d | %s | %.3f | %.3f | %+.3f%% |\n", rel.c_str(), row.iteration, row.steady ? "yes" : "no",
                    double(row.measured) / 1e3, double(row.replayed) / 1e3, 100 * row.error());
        if (row.steady) {
          worst = std::max(worst, std::fabs(row.error()));
          if (std::fabs(row.error()) > 0.02) ++failures;
        }
      }
      if (rows.empty()) {
        const double measured = double(t.info.end - t.info.begin);
        const double err = measured > 0 ? (double(r.makespan) - measured) / measured : 0;
        std::printf("| %s | whole trace | no | %.3f | %.3f | %+.3f%% |\n", rel.c_str(), measured / 1e3,
                    double(r.makespan) / 1e3, 100 * err);
      }
      char line[512];
      std::snprintf(line, sizeof line, "| %s | %zu | %zu | %zu | %zu | %zu | %.0f |\n", rel.c_str(), t.report.events,
                    t.report.in_graph, t.report.ignored_total(), t.g.size(), t.report.unlinked_gpu_ops,
                    std::chrono::duration<double, std::milli>(t1 - t0).count());
      ingest += line;
    } catch (const std::exception& e) {
      std::printf("| %s | error | | | | %s |\n", rel.c_str(), e.what());
      ++failures;
    }
  }
  std::size_t bundled = 0;
  for (auto& t : files) bundled += t.bundled;
  if (argc > 1)
    std::printf("\n%zu traces from the folders given", files.size());
  else
    std::printf("\n%zu traces (%zu bundled, %zu extra)", files.size(), bundled, files.size() - bundled);
  std::printf("; worst checked error: %.3f%%; iterations over 2%%: %d\n", 100 * worst, failures);
  std::printf("\n| trace | events | in graph | ignored | tasks | unlinked GPU ops | load (ms) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n%s", ingest.c_str());
  return failures ? 2 : 0;
}
