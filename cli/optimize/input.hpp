// Defines what `daydream optimize` (and Python's dd.optimize) optimizes: the graph of one
// trace, or of a job's slowest rank (its plan applies to every rank), with its steady-state
// iterations and memory model.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_OPTIMIZE_INPUT_HPP
#define DAYDREAM_CLI_OPTIMIZE_INPUT_HPP

#include <daydream/daydream.hpp>
#include <daydream/io/job.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/memory.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace optimize_cmd {

using daydream::graph;
using daydream::time_ns;

/// The iteration of `steps` whose steady-state step is the median (the one whose step
/// `daydream whatif` gives as the baseline).
inline std::int32_t median_iteration(const std::vector<daydream::steady_step>& steps) {
  std::vector<std::pair<time_ns, std::int32_t>> v;
  for (auto& st : steps) v.push_back({st.step(), st.iteration});
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2].second;
}

/// The loaded input: one graph to optimize (one rank's), what it is, and the job's size.
struct input {
  graph g;
  std::string what;              ///< the trace (and rank) it came from
  std::vector<std::int32_t> iterations; ///< its steady-state iterations
  std::int32_t world = 1;        ///< ranks of the job (1: a single trace)
  std::int32_t rank = 0;         ///< the rank whose graph is optimized
  std::int64_t memory_initial = 0;
  bool memory_modelled = false;
  std::vector<std::string> notes;
};

inline input load(const std::vector<std::string>& traces) {
  input in;
  if (traces.size() == 1 && !std::filesystem::is_directory(traces.front())) {
    auto t = daydream::io::load_kineto(traces.front());
    in.what = traces.front();
    in.iterations = t.iterations.empty() ? std::vector<std::int32_t>{} : t.steady_state_iterations();
    if (auto initial = t.initial_allocated_bytes()) { in.memory_initial = *initial; in.memory_modelled = true; }
    in.g = std::move(t.g);
  } else {
    std::vector<std::filesystem::path> paths(traces.begin(), traces.end());
    auto j = daydream::io::load_job(paths);
    in.world = j.world_size;
    for (auto& n : j.notes) in.notes.push_back(n);
    // The slowest rank decides a synchronous iteration: optimize it, apply the decisions
    // to every rank (the ranks of data-parallel training are identical: symmetry).
    std::size_t pick = 0;
    time_ns worst = -1;
    for (std::size_t k = 0; k < j.ranks.size(); ++k) {
      std::vector<time_ns> m;
      for (auto i : j.ranks[k].steady)
        if (auto it = j.ranks[k].measured.find(i); it != j.ranks[k].measured.end()) m.push_back(it->second);
      std::sort(m.begin(), m.end());
      const time_ns med = m.empty() ? 0 : m[(m.size() - 1) / 2];
      if (med > worst) { worst = med; pick = k; }
    }
    auto& rt = j.ranks[pick];
    in.rank = rt.rank;
    in.what = rt.file + " (rank " + std::to_string(rt.rank) + " of " + std::to_string(j.world_size) +
              ", the slowest; its plan applies to every rank)";
    in.iterations = rt.steady;
    in.g = std::move(rt.g);
  }
  if (!in.memory_modelled) {
    daydream::passes::estimate_activation_memory(in.g);
    in.memory_modelled = daydream::passes::has_memory_accounting(in.g);
  }
  if (in.iterations.empty()) {
    in.iterations = {0};
    in.g.for_each_task([&](daydream::task_id t) { in.g.set_iteration(t, 0); });
  }
  return in;
}

} // namespace optimize_cmd

#endif
