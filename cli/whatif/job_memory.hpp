// Defines the job mode's memory plan: how much a job's graphs take, what the machine has, and so what the job mode keeps.
// SPDX-License-Identifier: MIT
//
// A job of many large ranks is loaded a few ranks at a time (io::load_job_traces); what it
// then keeps depends on the memory it has (--max-memory, else the memory the system says is
// available):
//   full:     every rank's graph and the job graph (the scenarios rebuild the job from the ranks);
//   joined:   the job graph only, each rank's graph freed as it is joined (build_job_graph_releasing):
//             the per-rank table and the straggler, not the scenarios nor the representative worker;
//   one rank: the job graph does not fit either: the representative worker (one rank alone,
//             collectives from the cluster model) answers, and says so.
// The sizes are estimates from task and dependency counts (docs/performance.md#memory).
#ifndef DAYDREAM_CLI_WHATIF_JOB_MEMORY_HPP
#define DAYDREAM_CLI_WHATIF_JOB_MEMORY_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/trace_file.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace whatif_cmd {

/// Bytes a graph takes per task and per dependency record, and a replay's working memory
/// and result per task and per dependency (docs/performance.md#memory: 129 bytes per task
/// with 1.46 dependencies, 48 + 22 bytes per task and 8 per dependency to replay), rounded up.
struct graph_cost {
  static constexpr double task = 110, edge = 22, replay_task = 72, replay_edge = 8;
};

/// The memory of a graph of `tasks` tasks and `edges` dependency records, and of its replay.
struct graph_size {
  double tasks = 0, edges = 0;
  double graph_bytes() const { return tasks * graph_cost::task + edges * graph_cost::edge; }
  double replay_bytes() const { return tasks * graph_cost::replay_task + edges * graph_cost::replay_edge; }
  graph_size& operator+=(const daydream::graph& g) {
    tasks += double(g.id_bound());
    edges += double(g.core().edges.size());
    return *this;
  }
};

/// Bytes of memory the system says are available now (Linux: MemAvailable of
/// /proc/meminfo), or 0 when it does not say.
inline std::uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

/// The JSON bytes of trace `file`: its size, or for gzip the size its trailer records
/// (modulo 4 GiB, as gzip keeps it; at least the compressed size).
inline std::uint64_t json_bytes(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::uint64_t(std::filesystem::file_size(file, ec));
  if (ec) return 0;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!f) return size;
  char head[2] = {0, 0};
  const std::size_t got = std::fread(head, 1, 2, f.get());
  if (!daydream::io::detail::is_gzip({head, got})) return size;
  return std::max(daydream::io::detail::gzip_isize(f.get(), size), size);
}

/// `bytes` as "12.3 GiB" (or "45.6 MiB" below 1 GiB).
inline std::string gib(double bytes) {
  if (bytes < double(1ull << 30)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  return fmt::format("{:.1f} GiB", bytes / double(1ull << 30));
}

/// Gives the memory freed by large graphs back to the system (glibc keeps freed blocks of
/// up to 32 MiB in its heap otherwise, and the next graph would not reuse all of them).
inline void return_freed_memory() noexcept {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
}

} // namespace whatif_cmd

#endif
