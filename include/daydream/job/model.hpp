// Defines the job model: every traced rank of one distributed training job, its graph and what its trace says.
// SPDX-License-Identifier: MIT
//
// A job is the traces of the ranks of one distributed run (io::load_job reads them).
// match_collectives (job/matching.hpp) pairs the k-th collective of a process group on
// every rank; build_job_graph (job/graph.hpp) joins every rank's graph into one graph,
// where each matched collective waits for all of its ranks (a barrier task) and then
// takes its transfer time on every rank; job/replay.hpp replays it and explains it.
// docs/jobs.md describes the model.
#ifndef DAYDREAM_JOB_MODEL_HPP
#define DAYDREAM_JOB_MODEL_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// One rank of a job: its graph (every resource's `node` is the rank) and what its trace
/// says about the run.
struct rank_trace {
  std::int32_t rank = -1;       ///< the rank in the job
  std::int32_t world_size = -1; ///< the job's world size as this trace records it
  std::string file;             ///< where it came from (names it in messages)
  std::string backend;          ///< distributedInfo.backend ("nccl"), empty if unknown
  /// Ranks with the same non-empty host share a clock (alignment gives them one offset).
  std::string host;
  graph g;                      ///< the rank's tasks
  /// The trace's own duration of each of its iterations (ProfilerStep number -> ns).
  std::map<std::int32_t, time_ns> measured;
  /// The steady-state iterations of the trace (kineto_trace::steady_state_iterations).
  std::vector<std::int32_t> steady;
};

/// Every rank of one job that was traced. A job whose world size is larger than the
/// ranks present is partial: the missing ranks are modelled as copies of present ones
/// (copy_of), which arrive at every collective when their original does.
struct job {
  std::int32_t world_size = 0;     ///< ranks in the job
  std::vector<rank_trace> ranks;   ///< the traced ranks, by rank
  std::vector<std::string> notes;  ///< what loading decided for the user (partial job, ...)

  /// Whether some ranks of the job were not traced.
  bool partial() const noexcept { return std::int32_t(ranks.size()) < world_size; }
  /// The ranks of the job without a trace, in order.
  std::vector<std::int32_t> missing() const {
    std::vector<std::int32_t> out;
    std::size_t k = 0;
    for (std::int32_t r = 0; r < world_size; ++r) {
      while (k < ranks.size() && ranks[k].rank < r) ++k;
      if (k == ranks.size() || ranks[k].rank != r) out.push_back(r);
    }
    return out;
  }
  /// The traced rank a missing rank is modelled by: present ranks taken in turn
  /// (missing rank m -> ranks[m mod present]); a present rank is its own.
  std::int32_t copy_of(std::int32_t rank) const {
    for (auto& r : ranks)
      if (r.rank == rank) return rank;
    if (ranks.empty()) return -1;
    return ranks[std::size_t(rank) % ranks.size()].rank;
  }
  /// The index in `ranks` of rank `rank`, or -1.
  std::int32_t index_of(std::int32_t rank) const {
    for (std::size_t k = 0; k < ranks.size(); ++k)
      if (ranks[k].rank == rank) return std::int32_t(k);
    return -1;
  }
  /// The iterations every rank traced, in order.
  std::vector<std::int32_t> common_iterations() const {
    std::vector<std::int32_t> out;
    if (ranks.empty()) return out;
    for (auto& [i, t] : ranks.front().measured) {
      bool all = true;
      for (auto& r : ranks) all = all && r.measured.count(i);
      if (all) out.push_back(i);
    }
    return out;
  }
  /// The iterations analysed: the first rank's steady-state ones that every rank traced.
  std::vector<std::int32_t> analysed_iterations() const {
    std::vector<std::int32_t> out;
    auto common = common_iterations();
    if (ranks.empty()) return out;
    for (auto i : ranks.front().steady)
      if (std::find(common.begin(), common.end(), i) != common.end()) out.push_back(i);
    return out;
  }
};

} // namespace daydream

#endif
