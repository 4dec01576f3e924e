// Defines daydream_ingest_stats: loads one trace and prints what ingest cost (time, peak memory) and gave.
// SPDX-License-Identifier: MIT
//
//     python3 scripts/gen_big_trace.py /tmp/big.json            # 1 GiB
//     cmake --build build --target daydream_ingest_stats
//     build/tests/hostile/daydream_ingest_stats /tmp/big.json
//
// Peak memory is the process's maximum resident set (getrusage), so it includes the
// trace's bytes, the decoded event tables and the graph, whichever peaked together.
#include <daydream/io/kineto.hpp>
#include <daydream/replay.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>

#include <sys/resource.h> // getrusage

namespace {

double peak_mib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0; // ru_maxrss is in KiB on Linux
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TRACE(.json|.json.gz)\n", argv[0]);
    return 2;
  }
  try {
    const auto bytes = std::filesystem::file_size(argv[1]);
    auto t0 = std::chrono::steady_clock::now();
    auto t = daydream::io::load_kineto(argv[1]);
    const double load_s = since(t0);
    const double load_peak = peak_mib();
    std::printf("file:        %s, %.1f MiB\n", argv[1], double(bytes) / (1 << 20));
    std::printf("load:        %.2f s (%.0f MiB/s), peak RSS %.0f MiB (%.2f x the file)\n", load_s,
                double(bytes) / (1 << 20) / load_s, load_peak, load_peak * (1 << 20) / double(bytes));
    std::printf("events:      %zu (%zu in the graph, %zu ignored)\n", t.report.events, t.report.in_graph,
                t.report.ignored_total());
    std::printf("graph:       %zu tasks, %zu dependencies, %zu iterations\n", t.g.size(), t.g.dependency_count(),
                t.iterations.size());
    t0 = std::chrono::steady_clock::now();
    auto r = daydream::replay(t.g);
    std::printf("replay:      %.2f s, makespan %.3f s; peak RSS after replay %.0f MiB\n", since(t0),
                double(r.makespan) / 1e9, peak_mib());
    return t.report.in_graph + t.report.ignored_total() == t.report.events ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
