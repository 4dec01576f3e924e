// Defines jobs: every rank of a distributed training job in one graph, its collectives matched across ranks, and the coarse synchronizing-collective model.
// SPDX-License-Identifier: MIT
//
// A job is the traces of the ranks of one distributed run (io::load_job reads them).
// match_collectives pairs the k-th collective of a process group on every rank;
// build_job_graph joins every rank's graph into one graph, where each matched collective
// waits for all of its ranks (a barrier task) and then takes its transfer time on every
// rank; job_replay.hpp replays it and explains it. docs/jobs.md describes the model.
#ifndef DAYDREAM_JOB_HPP
#define DAYDREAM_JOB_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/collective_steps.hpp>
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/fine_collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
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

/// One rank's part of a matched collective: the communication kernel in that rank's graph.
struct collective_part {
  std::int32_t rank = -1;   ///< the rank
  task_id task = no_task;   ///< the kernel, an id of the rank's own graph (rank_trace::g)
  time_ns start = 0;        ///< its recorded start, on the rank's own clock
  time_ns end = 0;          ///< its recorded end, on the rank's own clock
};

/// One collective operation of the job: the k-th collective of a process group, one part
/// per traced rank of the group.
struct matched_collective {
  comm_op op = comm_op::other;     ///< what it does (send/recv kernels: comm_op::other)
  std::uint64_t bytes = 0;         ///< the largest recorded message size of its parts (0: unknown)
  std::uint32_t group_size = 0;    ///< participants (recorded group size, else the job's world size)
  std::uint32_t group = 0;         ///< which process group (index into collective_matching::groups)
  std::uint32_t index = 0;         ///< its position in the group's issue order
  std::int32_t iteration = 0;      ///< the iteration of its first part
  std::string name;                ///< the kernel name of its first part
  std::vector<collective_part> parts; ///< one per traced rank of the group, by rank
  /// The group's global ranks when the traces record them (process-group metadata);
  /// empty: every rank of the job.
  std::vector<std::int32_t> group_ranks;
};

/// The collectives of a job, matched across ranks.
struct collective_matching {
  /// Each process group as found: "stream 84" (by CUDA stream id, the same on every rank)
  /// or "communication stream #2" (by order of first use, when ids differ).
  std::vector<std::string> groups;
  std::vector<matched_collective> collectives; ///< in group order, then issue order
  std::string method; ///< how groups were told apart, for the report
  /// Why the collectives could not be matched (match_collectives_or_none), empty when
  /// they were: the ranks are then replayed side by side, each collective as recorded.
  std::string unmatched;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline std::string rank_label(const rank_trace& r) {
  return "rank " + std::to_string(r.rank) + " (" + r.file + ")";
}
// The recorded communication kernels of one rank: comm tasks on GPU streams, per stream id, in
// trace order.
inline std::map<std::int32_t, std::vector<task_id>> comm_kernels_by_stream(const graph& g) {
  std::map<std::int32_t, std::vector<task_id>> out;
  g.for_each<comm_task>([&](handle<comm_task> h) {
    auto r = g.resource_of(h.id);
    if (r == no_resource || g.resource_at(r).kind != resource_kind::gpu_stream) return;
    out[g.payload(h).stream].push_back(h.id);
  });
  for (auto& [s, v] : out)
    std::stable_sort(v.begin(), v.end(), [&](task_id a, task_id b) { return g.trace_start(a) < g.trace_start(b); });
  return out;
}
// Whether the parts of a collective must carry the same byte count on every rank: an
// all-reduce and a broadcast do; all-gather and reduce-scatter have uneven variants,
// all-to-all and send/recv (and collectives NCCL runs as SendRecv kernels) move what each
// rank has.
inline bool sizes_must_agree(comm_op op, std::string_view kernel) {
  return (op == comm_op::all_reduce || op == comm_op::broadcast) && kernel.find("SendRecv") == std::string_view::npos;
}
} // namespace detail
//! @endcond

/// Matches the recorded collectives of every rank of `j`: the k-th collective of a
/// process group on each rank is one operation. When every communication kernel says its
/// process group (`Process Group Name` and `Process Group Ranks`, which PyTorch records with
/// each collective since 2.1), groups are those, each matched among the traced ranks that
/// are its members (a traced member without its collectives, or a rank running a group
/// that does not list it, is an error). Otherwise a process group is a communication
/// stream (NCCL runs each communicator on its own stream): by CUDA stream id when every
/// rank has the same set of ids, else by order of first use on each rank. Within a group,
/// collectives match in issue order (trace order on the stream). Every rank must have
/// the same number of collectives in each group, and the k-th ones must agree on the
/// operation (and on the size, for all-reduce and broadcast, when both sizes are known;
/// all-gather and reduce-scatter have uneven variants, all-to-all moves what each rank has): otherwise daydream::error names the files, the group and
/// the first collective that differs. Nothing is guessed. Send/recv kernels (NCCL's
/// SendRecv, which all-to-all and point-to-point pairs run as) are matched the same way
/// within their stream.
inline collective_matching match_collectives(const job& j) {
  collective_matching m;
  if (j.ranks.empty()) return m;
  // Each group: the ranks (indices into j.ranks) that take part, and each one's kernels
  // in issue order.
  struct group_seqs {
    std::vector<std::size_t> who;
    std::vector<std::vector<task_id>> seqs;
    std::vector<std::int32_t> ranks; // the recorded group's global ranks (empty: every rank)
  };
  std::vector<group_seqs> groups;
  std::vector<std::map<std::int32_t, std::vector<task_id>>> per;
  for (auto& r : j.ranks) per.push_back(detail::comm_kernels_by_stream(r.g));
  // Process groups as the traces name them, when every communication kernel of every
  // rank says its group (record_param_comms' `Process Group Name` and `Ranks`).
  bool named = true;
  std::size_t kernels = 0;
  for (std::size_t k = 0; k < per.size() && named; ++k)
    for (auto& [s, v] : per[k])
      for (auto t : v) {
        named = named && !j.ranks[k].g.payload(j.ranks[k].g.as<comm_task>(t)).group.empty();
        ++kernels;
      }
  if (named && kernels > 0) {
    m.method = "by process group (the traces' collective metadata), in issue order within each";
    std::map<std::string, std::size_t> index;
    for (std::size_t k = 0; k < per.size(); ++k) {
      const auto& g = j.ranks[k].g;
      std::map<std::string, std::vector<task_id>> mine;
      for (auto& [s, v] : per[k])
        for (auto t : v) mine[g.payload(g.as<comm_task>(t)).group].push_back(t);
      for (auto& [name, v] : mine) {
        std::stable_sort(v.begin(), v.end(), [&](task_id a, task_id b) { return g.trace_start(a) < g.trace_start(b); });
        auto [it, fresh] = index.emplace(name, groups.size());
        if (fresh) {
          groups.emplace_back();
          groups.back().ranks = g.payload(g.as<comm_task>(v.front())).group_ranks;
          std::sort(groups.back().ranks.begin(), groups.back().ranks.end());
          m.groups.push_back("process group " + name);
        }
        auto& gs = groups[it->second];
        if (!gs.ranks.empty() && !std::binary_search(gs.ranks.begin(), gs.ranks.end(), j.ranks[k].rank))
          throw error("daydream: load_job: " + detail::rank_label(j.ranks[k]) + " runs collectives of " +
                      m.groups[it->second] + ", whose recorded ranks do not include it: the traces are not of one job");
        gs.who.push_back(k);
        gs.seqs.push_back(std::move(v));
      }
    }
    // A traced rank the group names must have its collectives too: a group's operation
    // completes on no rank without every member.
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      // A group that does not list its ranks is every rank's.
      if (groups[gi].ranks.empty() && groups[gi].who.size() != j.ranks.size())
        throw error("daydream: load_job: " + m.groups[gi] + " runs on " + std::to_string(groups[gi].who.size()) +
                    " of the " + std::to_string(j.ranks.size()) + " traced ranks and its ranks are not recorded: the "
                    "collectives cannot be matched");
      for (auto r : groups[gi].ranks) {
        const auto k = j.index_of(r);
        if (k >= 0 && std::find(groups[gi].who.begin(), groups[gi].who.end(), std::size_t(k)) == groups[gi].who.end())
          throw error("daydream: load_job: " + detail::rank_label(j.ranks[std::size_t(k)]) + " is a member of " +
                      m.groups[gi] + " but its trace has no collective of it: the traces are of different steps "
                      "or jobs; they are not matched by guess");
      }
    }
  } else {
    bool same_ids = true;
    for (auto& p : per) {
      if (p.size() != per.front().size()) same_ids = false;
      else
        for (auto a = p.begin(), b = per.front().begin(); a != p.end(); ++a, ++b)
          same_ids = same_ids && a->first == b->first;
    }
    std::vector<std::size_t> everyone(j.ranks.size());
    for (std::size_t k = 0; k < everyone.size(); ++k) everyone[k] = k;
    if (same_ids) {
      m.method = "by communication stream id (the same on every rank)";
      for (auto& [s, v] : per.front()) {
        m.groups.push_back("stream " + std::to_string(s));
        group_seqs one;
        one.who = everyone;
        for (auto& p : per) one.seqs.push_back(p.at(s));
        groups.push_back(std::move(one));
      }
    } else {
      m.method = "by order of first use of each rank's communication streams (their ids differ between ranks)";
      std::size_t n = per.front().size();
      for (std::size_t k = 0; k < per.size(); ++k)
        if (per[k].size() != n)
          throw error("daydream: load_job: " + detail::rank_label(j.ranks[k]) + " uses " +
                      std::to_string(per[k].size()) + " communication stream(s), " +
                      detail::rank_label(j.ranks.front()) + " uses " + std::to_string(n) +
                      ": the collectives cannot be matched (different process groups per rank need "
                      "process-group metadata the traces do not have)");
      groups.resize(n);
      for (auto& gs : groups) gs.who = everyone;
      for (std::size_t k = 0; k < per.size(); ++k) {
        std::vector<std::vector<task_id>> ordered;
        for (auto& [s, v] : per[k]) ordered.push_back(v);
        const auto& g = j.ranks[k].g;
        std::stable_sort(ordered.begin(), ordered.end(), [&](const std::vector<task_id>& a, const std::vector<task_id>& b) {
          return g.trace_start(a.front()) < g.trace_start(b.front());
        });
        for (std::size_t s = 0; s < n; ++s) groups[s].seqs.push_back(std::move(ordered[s]));
      }
      for (std::size_t s = 0; s < n; ++s) m.groups.push_back("communication stream #" + std::to_string(s + 1));
    }
  }
  for (std::uint32_t gi = 0; gi < groups.size(); ++gi) {
    auto& gs = groups[gi];
    auto& seqs = gs.seqs;
    const auto& first = j.ranks[gs.who.front()];
    const std::size_t n = seqs.front().size();
    for (std::size_t x = 0; x < seqs.size(); ++x)
      if (seqs[x].size() != n)
        throw error("daydream: load_job: " + detail::rank_label(j.ranks[gs.who[x]]) + " has " +
                    std::to_string(seqs[x].size()) + " collective(s) on " + m.groups[gi] + ", " +
                    detail::rank_label(first) + " has " + std::to_string(n) +
                    ": mismatched collective counts (traces of different steps or of different jobs?); "
                    "they are not matched by guess");
    for (std::uint32_t c = 0; c < n; ++c) {
      matched_collective mc;
      mc.group = gi;
      mc.index = c;
      mc.group_ranks = gs.ranks;
      for (std::size_t x = 0; x < seqs.size(); ++x) {
        const auto& rk = j.ranks[gs.who[x]];
        const auto& g = rk.g;
        const task_id t = seqs[x][c];
        const auto& p = g.payload(g.as<comm_task>(t));
        if (x == 0) {
          mc.op = p.op;
          mc.group_size = !gs.ranks.empty() ? std::uint32_t(gs.ranks.size())
                          : p.group_size > 1 ? p.group_size
                                             : std::uint32_t(std::max(j.world_size, 1));
          mc.iteration = g.iteration(t);
          mc.name = std::string(g.name(t));
        } else {
          const auto& g0 = first.g;
          const auto& p0 = g0.payload(g0.as<comm_task>(mc.parts.front().task));
          auto what = [&](const std::string& a, const std::string& b) {
            return "daydream: load_job: collective #" + std::to_string(c + 1) + " on " + m.groups[gi] + " is " + a +
                   " on " + detail::rank_label(first) + " but " + b + " on " + detail::rank_label(rk) +
                   ": the ranks' collectives do not match";
          };
          if (p.op != p0.op)
            throw error(what(std::string(to_string(p0.op)) + " (" + std::string(g0.name(mc.parts.front().task)) + ")",
                             std::string(to_string(p.op)) + " (" + std::string(g.name(t)) + ")"));
          if (detail::sizes_must_agree(p.op, g.name(t)) && p.bytes && p0.bytes && p.bytes != p0.bytes)
            throw error(what(std::to_string(p0.bytes) + " bytes", std::to_string(p.bytes) + " bytes"));
        }
        mc.bytes = std::max<std::uint64_t>(mc.bytes, p.bytes);
        mc.parts.push_back({rk.rank, t, g.trace_start(t), g.trace_start(t) + g.duration(t)});
      }
      m.collectives.push_back(std::move(mc));
    }
  }
  return m;
}

/// match_collectives, or, when the ranks' collectives do not match (the error it would
/// throw is kept in `unmatched`), no matched collective: every rank keeps its recorded
/// collectives and waits for no other. Programs use it to still show each rank, saying why
/// the ranks are not joined (down-sampled traces that kept different collectives per rank).
inline collective_matching match_collectives_or_none(const job& j) {
  try {
    return match_collectives(j);
  } catch (const error& e) {
    collective_matching m;
    m.method = "none";
    m.unmatched = e.what();
    return m;
  }
}

/// What clock alignment reads: per matched collective, per participating rank, the
/// recorded start and end of that rank's part on the rank's own clock, and which ranks
/// share a host (and so a clock).
struct alignment_input {
  std::vector<std::int32_t> ranks;                        ///< the traced ranks
  std::vector<std::vector<collective_part>> collectives;  ///< parts of each matched collective
  std::vector<std::vector<std::int32_t>> same_host;       ///< groups of ranks that share a clock
};

/// What clock alignment gives: one offset per rank (added to its trace clock), the
/// residual and the causality violations that remain.
struct alignment_result {
  std::map<std::int32_t, time_ns> offset; ///< rank -> ns added to its clock
  double residual_ns = 0;                 ///< what the alignment could not explain (its objective)
  std::size_t violations = 0;             ///< collectives where a part still ends before another starts
  bool aligned = false;                   ///< whether a solver produced the offsets (false: all 0)
  std::string method;                     ///< "none" or the solver's description
};

/// The alignment input of a matched job.
inline alignment_input make_alignment_input(const job& j, const collective_matching& m) {
  alignment_input in;
  for (auto& r : j.ranks) in.ranks.push_back(r.rank);
  for (auto& c : m.collectives) in.collectives.push_back(c.parts);
  std::map<std::string, std::vector<std::int32_t>> hosts;
  for (auto& r : j.ranks)
    if (!r.host.empty()) hosts[r.host].push_back(r.rank);
  for (auto& [h, v] : hosts)
    if (v.size() > 1) in.same_host.push_back(v);
  return in;
}

/// How well clock offsets explain the matched collectives: the mean spread of the parts'
/// end times (a collective completes nearly at once on every rank; ns), and the number of
/// collectives where some part ends more than `tolerance` before another part starts
/// (impossible: a collective finishes on no rank before every rank has started it).
inline std::pair<double, std::size_t> alignment_quality(const alignment_input& in,
                                                        const std::map<std::int32_t, time_ns>& offset,
                                                        time_ns tolerance = 1'000) {
  auto off = [&](std::int32_t r) {
    auto it = offset.find(r);
    return it == offset.end() ? time_ns(0) : it->second;
  };
  double spread = 0;
  std::size_t n = 0, bad = 0;
  for (auto& parts : in.collectives) {
    if (parts.size() < 2) continue;
    time_ns lo_end = std::numeric_limits<time_ns>::max(), hi_end = std::numeric_limits<time_ns>::min();
    time_ns hi_start = std::numeric_limits<time_ns>::min();
    for (auto& p : parts) {
      lo_end = std::min(lo_end, p.end + off(p.rank));
      hi_end = std::max(hi_end, p.end + off(p.rank));
      hi_start = std::max(hi_start, p.start + off(p.rank));
    }
    spread += double(hi_end - lo_end);
    ++n;
    if (lo_end + tolerance < hi_start) ++bad;
  }
  return {n ? spread / double(n) : 0.0, bad};
}

/// A clock-alignment solver: alignment input -> offsets. The job programs call one when it
/// is given; without one, every offset is 0 (the traces' clocks are taken as they are).
using clock_aligner = std::function<alignment_result(const alignment_input&)>;

/// The offsets of no alignment (every clock as recorded), with their quality.
inline alignment_result no_alignment(const alignment_input& in) {
  alignment_result a;
  for (auto r : in.ranks) a.offset[r] = 0;
  auto q = alignment_quality(in, a.offset);
  a.residual_ns = q.first;
  a.violations = q.second;
  a.method = "none (clocks as recorded)";
  return a;
}

/// The algorithm a job's all-reduces are costed with: all_reduce_algorithm (collective.hpp).
/// The name this header gave it first.
using collective_algorithm [[deprecated("use daydream::all_reduce_algorithm (collective.hpp)")]] = all_reduce_algorithm;

/// The alpha-beta cost of a collective of `bytes` over `p` ranks on link `l` with
/// algorithm `a` (collective.hpp); all-to-all and send/recv are pairwise exchanges,
/// broadcast a binomial tree, reduce-scatter and all-gather rings (the algorithm changes
/// all-reduce only, as NCCL's does).
inline time_ns collective_cost(comm_op op, double bytes, std::uint32_t p, const link_spec& l,
                               all_reduce_algorithm a = all_reduce_algorithm::ring) {
  switch (op) {
  case comm_op::all_reduce: return all_reduce_time(bytes, p, l, a);
  case comm_op::reduce_scatter: return reduce_scatter_time(bytes, p, l);
  case comm_op::all_gather: return all_gather_time(bytes, p, l);
  case comm_op::broadcast:
  case comm_op::reduce: return broadcast_time(bytes, p, l);
  default: return all_to_all_time(bytes, p, l);
  }
}

/// The level at which build_job_graph models a collective's communication.
enum class communication_level : std::uint8_t {
  coarse, ///< one synchronizing operation per collective, taking its transfer time on every rank
  fine,   ///< its algorithm's chunk transfers as tasks on shared links (collective_steps.hpp)
};

/// The name of a communication_level value ("fine").
inline constexpr std::string_view to_string(communication_level c) noexcept {
  return c == communication_level::fine ? "fine" : "coarse";
}

/// How build_job_graph models the collectives: the coarse level (one synchronizing
/// operation per matched collective) by default, or the fine level (`communication`).
struct job_model_options {
  /// Where a collective's transfer time comes from. `trace`: the kernel of the rank that
  /// arrived last (on aligned clocks), which waited least, so its recorded duration is
  /// closest to the pure transfer. `cluster`: the alpha-beta cost on `cluster`'s ring link
  /// with `algorithm`.
  enum class transfer_source : std::uint8_t { trace, cluster } transfer = transfer_source::trace;
  daydream::cluster cluster;                           ///< for transfer_source::cluster and the scenarios
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< for transfer_source::cluster
  /// Network bandwidth scale (2: twice as fast): a calibrated transfer keeps its
  /// latency part (the cluster model's alpha terms) and divides the rest by the scale.
  double network_scale = 1.0;
  /// With transfer_source::trace: algorithm changed from the traced one (ring) to this;
  /// the calibrated time is scaled by the cluster model's ratio tree / ring.
  all_reduce_algorithm calibrated_as = all_reduce_algorithm::ring;
  all_reduce_algorithm changed_to = all_reduce_algorithm::ring;
  /// Ranks (index into job::ranks) whose start takes another rank's start (no_straggler):
  /// rank index -> the index whose release it takes.
  std::map<std::size_t, std::size_t> start_like;
  /// coarse: each collective one synchronizing operation; fine: its algorithm's chunk
  /// transfers on the links of `cluster` (link_hierarchy), sharing them with every other
  /// collective's transfers.
  communication_level communication = communication_level::coarse;
  /// For the fine level: rank -> machine (at least world-size entries). Empty: by host
  /// when every rank of a complete job says its host, else rank / workers_per_machine.
  std::vector<std::uint32_t> machine_of_rank;
};

/// One matched collective in the job graph.
struct modelled_collective {
  std::size_t matched = 0;         ///< index into collective_matching::collectives
  task_id barrier = no_task;       ///< the synchronizing task: ends when the last rank has arrived
  std::vector<task_id> parts;      ///< the parts in the job graph, as the matched parts
  std::vector<std::size_t> part_rank; ///< their rank index (into job::ranks)
  time_ns transfer = 0;            ///< the modelled transfer time of every part
  std::int32_t calibrated_from = -1; ///< the rank whose kernel gave the transfer (-1: cluster model)
  /// Fine level: the chunk transfers modelled (0: coarse). `transfer` is then their time
  /// when no link is shared (uncontended_time); the replay says what sharing adds.
  std::size_t transfers = 0;
};

/// A job as one graph: every rank's tasks, resources named "rank R: ..." with node R,
/// the collectives joined.
struct job_graph {
  graph g;                                    ///< the whole job
  std::vector<std::int32_t> ranks;            ///< by rank index: the rank
  std::vector<task_id> first_task;            ///< by rank index: its tasks are first_task[k] .. first_task[k+1]-1
  std::vector<time_ns> release;               ///< by rank index: when the rank starts in the replay
  std::vector<task_id> release_task;          ///< by rank index: the task holding it back, or no_task
  std::vector<std::vector<task_id>> map;      ///< by rank index: rank graph id -> job graph id
  std::vector<modelled_collective> collectives;
  alignment_result alignment;                 ///< the clock offsets used

  /// The rank index (into job::ranks) of task `t`, from its resource's node; -1 for the
  /// job's own tasks (barriers) and tasks without a resource.
  std::int32_t rank_index_of(task_id t) const {
    auto r = g.resource_of(t);
    if (r == no_resource) return -1;
    auto node = g.resource_at(r).node;
    auto it = std::lower_bound(ranks.begin(), ranks.end(), node);
    return it != ranks.end() && *it == node ? std::int32_t(it - ranks.begin()) : -1;
  }
  /// The rank of task `t` (its resource's node), -1 for the job's own tasks.
  std::int32_t rank_of(task_id t) const {
    auto k = rank_index_of(t);
    return k < 0 ? -1 : ranks[std::size_t(k)];
  }
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
// The transfer time of matched collective `c` under `o` (rank clocks shifted by `off`).
inline std::pair<time_ns, std::int32_t> modelled_transfer(const matched_collective& c, const job_model_options& o,
                                                          const std::map<std::int32_t, time_ns>& off) {
  const auto link = o.cluster.ring_link();
  const std::uint32_t p = std::max<std::uint32_t>(c.group_size, 1);
  auto scaled_link = link_spec{link.bandwidth * o.network_scale, link.latency};
  if (o.transfer == job_model_options::transfer_source::cluster)
    return {collective_cost(c.op, double(c.bytes), p, scaled_link, o.algorithm), -1};
  // Calibrated: the last rank to arrive (latest aligned start; ties: the shortest kernel).
  const collective_part* last = nullptr;
  auto at = [&](const collective_part& x) {
    auto it = off.find(x.rank);
    return x.start + (it == off.end() ? 0 : it->second);
  };
  for (auto& x : c.parts)
    if (!last || at(x) > at(*last) || (at(x) == at(*last) && x.end - x.start < last->end - last->start)) last = &x;
  double t = double(last->end - last->start);
  if (o.calibrated_as != o.changed_to) {
    const double from = double(collective_cost(c.op, double(c.bytes), p, link, o.calibrated_as));
    const double to = double(collective_cost(c.op, double(c.bytes), p, link, o.changed_to));
    if (from > 0) t *= to / from;
  }
  if (o.network_scale != 1.0) {
    const double alpha = double(collective_cost(c.op, 0.0, p, link, o.changed_to));
    const double lat = std::min(t, alpha);
    t = lat + (t - lat) / o.network_scale;
  }
  return {time_ns(std::llround(t)), last->rank};
}
} // namespace detail
//! @endcond

/// The link hierarchy the fine level of job `j` runs on: `o.cluster`'s links, ranks placed
/// by `o.machine_of_rank` when given, else by host when every rank of a complete job says
/// its host (hosts numbered in rank order), else rank / workers_per_machine. Throws
/// daydream::error when `o.machine_of_rank` places fewer ranks than the world.
inline link_hierarchy job_link_hierarchy(const job& j, const job_model_options& o) {
  const auto world = std::uint32_t(std::max(j.world_size, 1));
  auto h = link_hierarchy::of(o.cluster, world);
  if (!o.machine_of_rank.empty()) {
    if (o.machine_of_rank.size() < world)
      throw error("daydream: build_job_graph: machine_of_rank places " + std::to_string(o.machine_of_rank.size()) +
                  " rank(s), the job has " + std::to_string(world));
    h.machine = o.machine_of_rank;
    return h;
  }
  const bool hosts = !j.partial() && !j.ranks.empty() &&
                     std::all_of(j.ranks.begin(), j.ranks.end(), [](const rank_trace& r) { return !r.host.empty(); });
  if (hosts) {
    std::map<std::string, std::uint32_t> id;
    for (auto& r : j.ranks) {
      auto it = id.try_emplace(r.host, std::uint32_t(id.size())).first;
      h.machine[std::size_t(r.rank)] = it->second;
    }
  }
  return h;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
// The fine level of matched collective `mc` (modelled as `x`, whose barrier exists):
// its algorithm's transfers among the group's ranks as tasks on link resources. Each
// transfer is a latency task (no resource) and then, at once, a task on the sender's
// link out and one on the receiver's link in (fair-share resources: concurrent transfers
// split them); it starts when both ends finished their earlier steps (the first ones
// when every rank has arrived: the barrier). Each traced rank's kernel then waits for its
// last transfers and takes no time of its own.
inline void add_fine_collective(job_graph& jg, const job& j, const matched_collective& mc, modelled_collective& x,
                                const job_model_options& o, const link_hierarchy& h, fine_links& links,
                                time_ns calibrated) {
  auto& g = jg.g;
  // The group: its traced ranks, and missing ranks (modelled as copies) up to its size.
  std::vector<std::int32_t> ranks;
  for (auto& p : mc.parts) ranks.push_back(p.rank);
  if (mc.group_size > ranks.size())
    for (auto r : j.missing()) {
      if (ranks.size() >= mc.group_size) break;
      // A recorded group takes only its own missing members.
      if (!mc.group_ranks.empty() && !std::binary_search(mc.group_ranks.begin(), mc.group_ranks.end(), r)) continue;
      ranks.push_back(r);
    }
  std::sort(ranks.begin(), ranks.end());
  const auto p = std::uint32_t(ranks.size());
  const bool from_trace = o.transfer == job_model_options::transfer_source::trace;
  const auto steps = collective_transfers(mc.op, double(mc.bytes), p, from_trace ? o.changed_to : o.algorithm);
  // Calibrated: every duration scaled so that the collective alone takes the trace's
  // transfer time as the traced algorithm; the network scale divides the bandwidth terms.
  double factor = 1.0;
  time_ns step_latency = -1; // >= 0: every step's latency instead of its links'
  if (from_trace) {
    const auto alone = uncontended_time(mc.op, double(mc.bytes), ranks, h, o.calibrated_as);
    if (alone > 0) factor = double(calibrated) / double(alone);
    else if (!steps.empty()) {
      // Nothing to scale (no recorded size, links without latency): the calibrated time is
      // spread over the steps as latency.
      std::size_t n = 1;
      for (std::size_t s = 1; s < steps.size(); ++s) n += steps[s].step != steps[s - 1].step;
      step_latency = round_ns(double(calibrated) / double(n));
    }
  }
  fine_transfer_options fo;
  fo.op = mc.op;
  fo.time_scale = factor;
  fo.bandwidth_scale = o.network_scale;
  fo.step_latency = step_latency;
  fo.trace_start = g.trace_start(x.barrier);
  auto built = add_fine_transfers(g, links, h, ranks, steps, std::vector<task_id>(p, x.barrier), fo);
  x.transfers += built.transfers;
  const auto alone = built.alone;
  auto& front = built.last;
  if (built.transfers == 0) front.assign(p, {}); // nothing to wait for beyond the barrier
  x.transfer = alone;
  for (std::size_t k = 0; k < x.parts.size(); ++k) {
    const auto part = x.parts[k];
    const auto e = std::size_t(std::lower_bound(ranks.begin(), ranks.end(), mc.parts[k].rank) - ranks.begin());
    for (auto d : front[e]) g.add_dependency(d, part, dep_kind::comm);
    g.core().duration[part] = 0;
  }
}
} // namespace detail
//! @endcond

/// Joins every rank of `j` into one graph and models the matched collectives `m`
/// (coarse level):
///
/// - each rank's resources are copied with the name "rank R: <name>" and node R, its
///   tasks and dependencies as they are (task fields unchanged, trace starts shifted by
///   the rank's clock offset);
/// - a rank starts when it started in the trace on aligned clocks: a rank whose first
///   event is later than the job's first by `d` is held back by a task of duration `d`
///   on its own "rank R: start" resource (outside every iteration);
/// - each matched collective gets a barrier task (no resource, duration 0) that waits for
///   everything each rank's part waited for, and every part waits for the barrier: a
///   collective finishes on no rank before every rank has started it. Each part then takes
///   the collective's transfer time (job_model_options), so waiting shows as the time
///   between a rank's arrival and the barrier, not as a longer kernel. The parts stay on
///   their communication streams (NCCL's stream semantics: what waits for a collective is
///   what the trace shows waiting for it, a stream wait or a CPU synchronization).
///
/// With `o.communication == communication_level::fine` each collective is, after its
/// barrier, its algorithm's chunk transfers (collective_transfers) on the links of
/// `o.cluster` (job_link_hierarchy: GPU ports inside a machine, NICs between machines;
/// fair-share link resources added to the graph, so concurrent collectives split them);
/// each rank's kernel ends when its last transfer has arrived and takes no time of its own
/// (detail::add_fine_collective). With `transfer_source::trace` the transfers' durations
/// are scaled so that the collective alone takes its calibrated time.
///
/// `alignment` gives each rank's clock offset (no_alignment: none).
inline job_graph build_job_graph(const job& j, const collective_matching& m, const alignment_result& alignment,
                                 const job_model_options& o = {}) {
  job_graph jg;
  jg.alignment = alignment;
  auto off = [&](std::int32_t r) {
    auto it = alignment.offset.find(r);
    return it == alignment.offset.end() ? time_ns(0) : it->second;
  };
  std::size_t total = 0;
  for (auto& r : j.ranks) total += r.g.size();
  jg.g.reserve(total + j.ranks.size() + m.collectives.size());
  // Releases: each rank's first trace event on aligned clocks.
  std::vector<time_ns> first(j.ranks.size(), 0);
  time_ns job_first = std::numeric_limits<time_ns>::max();
  for (std::size_t k = 0; k < j.ranks.size(); ++k) {
    time_ns lo = std::numeric_limits<time_ns>::max();
    j.ranks[k].g.for_each_task([&](task_id t) { lo = std::min(lo, j.ranks[k].g.trace_start(t)); });
    first[k] = lo == std::numeric_limits<time_ns>::max() ? 0 : lo + off(j.ranks[k].rank);
    job_first = std::min(job_first, first[k]);
  }
  for (std::size_t k = 0; k < j.ranks.size(); ++k) {
    auto src = k;
    if (auto it = o.start_like.find(k); it != o.start_like.end()) src = it->second;
    jg.release.push_back(first[src] - job_first);
  }
  for (std::size_t k = 0; k < j.ranks.size(); ++k) {
    const auto& rt = j.ranks[k];
    const auto& src = rt.g;
    const auto& c = src.core();
    const time_ns shift = off(rt.rank);
    jg.ranks.push_back(rt.rank);
    std::vector<resource_id> res(src.resource_count());
    for (std::size_t r = 0; r < src.resource_count(); ++r) {
      auto x = src.resource_at(resource_id(r));
      x.name = "rank " + std::to_string(rt.rank) + ": " + x.name;
      x.node = rt.rank;
      res[r] = jg.g.add_resource(std::move(x));
    }
    jg.first_task.push_back(jg.g.id_bound());
    auto& map = jg.map.emplace_back(src.id_bound(), no_task);
    src.for_each_task([&](task_id t) {
      task_fields f{.name = src.name(t), .duration = c.duration[t],
                    .resource = c.res[t] == no_resource ? no_resource : res[c.res[t]], .gap = c.gap[t],
                    .trace_start = c.trace_start[t] + shift, .layer = src.layer(t), .phase = c.ph[t],
                    .iteration = c.iteration[t]};
      auto id = src.visit(t, [&](auto, const auto& p) { return jg.g.add(p, f).id; });
      if (c.priority[t]) jg.g.core().priority[id] = c.priority[t];
      if (c.mem_delta[t]) jg.g.core().mem_delta[id] = c.mem_delta[t];
      map[t] = id;
    });
    src.for_each_task([&](task_id t) {
      for (auto d : src.successors(t)) jg.g.add_dependency(map[t], map[d.to], d.kind);
    });
    jg.release_task.push_back(no_task);
    if (jg.release[k] > 0) {
      std::vector<task_id> roots;
      for (task_id t = jg.first_task[k]; t < jg.g.id_bound(); ++t)
        if (jg.g.in_degree(t) == 0) roots.push_back(t);
      auto rr = jg.g.add_resource({"rank " + std::to_string(rt.rank) + ": start", resource_kind::other,
                                   sharing::exclusive, rt.rank, -1, 0});
      auto h = jg.g.add(cpu_task{}, {.name = "start of rank " + std::to_string(rt.rank), .duration = jg.release[k],
                                     .resource = rr, .trace_start = first[k] - jg.release[k], .iteration = -1});
      for (auto t : roots) jg.g.add_dependency(h.id, t, dep_kind::control);
      jg.release_task.back() = h.id;
    }
  }
  jg.first_task.push_back(jg.g.id_bound());
  // The collectives.
  const bool fine = o.communication == communication_level::fine;
  link_hierarchy hierarchy;
  fine_links links;
  job_model_options as_traced; // the fine level scales the transfer as recorded
  if (fine) {
    hierarchy = job_link_hierarchy(j, o);
    as_traced = o;
    as_traced.network_scale = 1.0;
    as_traced.changed_to = o.calibrated_as;
    // Room for every transfer: a latency task and a task on each of its two links.
    const auto algo = o.transfer == job_model_options::transfer_source::trace ? o.changed_to : o.algorithm;
    std::size_t transfers = 0;
    for (auto& mc : m.collectives)
      transfers += collective_transfer_count(mc.op, std::max<std::uint32_t>(mc.group_size, std::uint32_t(mc.parts.size())), algo);
    jg.g.reserve(jg.g.id_bound() + m.collectives.size() + 3 * transfers);
  }
  for (std::size_t ci = 0; ci < m.collectives.size(); ++ci) {
    const auto& mc = m.collectives[ci];
    modelled_collective x;
    x.matched = ci;
    auto [t, from] = detail::modelled_transfer(mc, o, alignment.offset);
    x.transfer = t;
    x.calibrated_from = from;
    time_ns at = std::numeric_limits<time_ns>::max();
    for (auto& p : mc.parts) {
      auto k = std::size_t(j.index_of(p.rank));
      x.parts.push_back(jg.map[k][p.task]);
      x.part_rank.push_back(k);
      at = std::min(at, p.start + off(p.rank));
    }
    auto b = jg.g.add(cpu_task{}, {.name = "collective " + std::string(to_string(mc.op)) + " #" +
                                           std::to_string(mc.index + 1) + " (group " + std::to_string(mc.group + 1) + ")",
                                   .duration = 0, .resource = no_resource, .trace_start = at, .iteration = -1});
    x.barrier = b.id;
    for (auto part : x.parts) {
      std::vector<task_id> preds;
      for (auto d : jg.g.predecessors(part)) preds.push_back(d.from);
      for (auto p : preds) jg.g.add_dependency(p, b.id, dep_kind::comm);
    }
    for (auto part : x.parts) {
      jg.g.add_dependency(b.id, part, dep_kind::comm);
      jg.g.core().duration[part] = x.transfer;
    }
    if (fine)
      detail::add_fine_collective(jg, j, mc, x, o, hierarchy, links,
                                  detail::modelled_transfer(mc, as_traced, alignment.offset).first);
    jg.collectives.push_back(std::move(x));
  }
  return jg;
}

} // namespace daydream

#endif
