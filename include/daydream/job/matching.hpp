// Defines collective matching: the k-th collective of a process group on every rank of a job is one operation.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_JOB_MATCHING_HPP
#define DAYDREAM_JOB_MATCHING_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/job/model.hpp>
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

} // namespace daydream

#endif
