// Defines daydream_ingest_digest: loads traces and prints, per trace, what ingest built (sizes, report
// counts, iterations, replay) and a hash of every task field and dependency.
// SPDX-License-Identifier: MIT
//
// Two builds of the ingest give the same graph on a set of traces when their digests match:
//
//     build/tests/io/daydream_ingest_digest $(find ../shared/traces examples/traces -name '*.json*') > a.txt
//     (change the ingest, rebuild)
//     build/tests/io/daydream_ingest_digest ... > b.txt && diff a.txt b.txt
//
// With --window=N first, the events are decoded N bytes at a time; with --threads=N, the
// events are decoded and the graph built on N threads (the digests must not change).
#include <daydream/io/kineto.hpp>
#include <daydream/replay.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

namespace {

struct fnv {
  std::uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, std::size_t n) {
    auto c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  }
  template <class T> void operator()(const T& v) { bytes(&v, sizeof v); }
  void operator()(std::string_view s) { bytes(s.data(), s.size()); (*this)(s.size()); }
};

} // namespace

int main(int argc, char** argv) {
  int rc = 0;
  daydream::io::ingest_options options;
  int first = 1;
  // --window=N: decode N bytes of events at a time (the graph must not depend on it)
  // --threads=N: decode and build on N threads (the graph must not depend on it either)
  for (; first < argc; ++first) {
    const std::string_view a = argv[first];
    if (a.rfind("--window=", 0) == 0) options.window_bytes = std::stoull(argv[first] + 9);
    else if (a.rfind("--threads=", 0) == 0) options.threads = static_cast<unsigned>(std::stoul(argv[first] + 10));
    else break;
  }
  for (int a = first; a < argc; ++a) {
    try {
      auto t = daydream::io::load_kineto(argv[a], options);
      const auto& g = t.g;
      fnv tasks, deps;
      g.for_each_task([&](daydream::task_id id) {
        tasks(id); tasks(g.kind_name(id)); tasks(g.name(id)); tasks(g.duration(id)); tasks(g.gap(id));
        tasks(g.trace_start(id)); tasks(g.resource_of(id)); tasks(g.layer(id)); tasks(g.phase_of(id));
        tasks(g.iteration(id)); tasks(g.priority(id)); tasks(g.mem_delta(id));
        for (auto d : g.successors(id)) { deps(d.from); deps(d.to); deps(d.kind); }
      });
      for (std::size_t r = 0; r < g.resource_count(); ++r) tasks(std::string_view(g.resource_at(daydream::resource_id(r)).name));
      auto r = daydream::replay(g);
      std::printf("%s\n  events %zu in_graph %zu unlinked %zu warnings %zu tasks %zu deps %zu resources %zu\n", argv[a],
                  t.report.events, t.report.in_graph, t.report.unlinked_gpu_ops, t.report.warnings.size(), g.size(),
                  g.dependency_count(), g.resource_count());
      for (auto& [k, v] : t.report.ignored) std::printf("  ignored %zu %s\n", v, k.c_str());
      for (auto& w : t.report.warnings) std::printf("  warning %s\n", w.c_str());
      for (auto& it : t.iterations)
        std::printf("  iteration %d [%lld, %lld) %s measured %lld\n", it.number, (long long)it.trace_begin,
                    (long long)it.trace_end, it.marker.c_str(), (long long)t.measured(it.number));
      std::printf("  makespan %lld peak %lld at_start %lld mem_peak %lld span [%lld, %lld]\n", (long long)r.makespan,
                  (long long)r.peak_memory, (long long)t.info.memory_at_start, (long long)t.info.memory_peak,
                  (long long)t.info.begin, (long long)t.info.end);
      std::printf("  hash tasks %016llx deps %016llx\n", (unsigned long long)tasks.h, (unsigned long long)deps.h);
    } catch (const std::exception& e) {
      std::printf("%s\n  error %s\n", argv[a], e.what());
      rc = 1;
    }
  }
  return rc;
}
