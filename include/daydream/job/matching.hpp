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

// The kernels of one process group: the ranks (indices into job::ranks) that take part,
// and each one's kernels in issue order.
struct group_seqs {
  std::vector<std::size_t> who;
  std::vector<std::vector<task_id>> seqs;
  std::vector<std::int32_t> ranks; // the recorded group's global ranks (empty: every rank)
};
// Per rank index, its communication kernels by stream (comm_kernels_by_stream).
using stream_kernels = std::vector<std::map<std::int32_t, std::vector<task_id>>>;

// Whether there is a communication kernel and every one of every rank says its process
// group (record_param_comms' `Process Group Name` and `Ranks`).
inline bool groups_named(const job& j, const stream_kernels& per) {
  std::size_t kernels = 0;
  for (std::size_t k = 0; k < per.size(); ++k)
    for (auto& [s, v] : per[k])
      for (auto t : v) {
        if (j.ranks[k].g.payload(j.ranks[k].g.as<comm_task>(t)).group.empty()) return false;
        ++kernels;
      }
  return kernels > 0;
}

// Rank `k`'s kernels added to their named groups (`index`: group name -> index).
inline void add_named_kernels(const job& j, std::size_t k, const std::map<std::int32_t, std::vector<task_id>>& streams,
                              std::vector<group_seqs>& groups, std::map<std::string, std::size_t>& index,
                              collective_matching& m) {
  const auto& g = j.ranks[k].g;
  std::map<std::string, std::vector<task_id>> mine;
  for (auto& [s, v] : streams)
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
      throw error("daydream: load_job: " + rank_label(j.ranks[k]) + " runs collectives of " + m.groups[it->second] +
                  ", whose recorded ranks do not include it: the traces are not of one job");
    gs.who.push_back(k);
    gs.seqs.push_back(std::move(v));
  }
}

// A traced rank a group names must have its collectives too: a group's operation
// completes on no rank without every member. A group that does not list its ranks is
// every rank's.
inline void check_group_members(const job& j, const std::vector<group_seqs>& groups, const collective_matching& m) {
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& who = groups[gi].who;
    if (groups[gi].ranks.empty() && who.size() != j.ranks.size())
      throw error("daydream: load_job: " + m.groups[gi] + " runs on " + std::to_string(who.size()) + " of the " +
                  std::to_string(j.ranks.size()) + " traced ranks and its ranks are not recorded: the "
                  "collectives cannot be matched");
    for (auto r : groups[gi].ranks) {
      const auto k = j.index_of(r);
      if (k >= 0 && std::find(who.begin(), who.end(), std::size_t(k)) == who.end())
        throw error("daydream: load_job: " + rank_label(j.ranks[std::size_t(k)]) + " is a member of " + m.groups[gi] +
                    " but its trace has no collective of it: the traces are of different steps "
                    "or jobs; they are not matched by guess");
    }
  }
}

// Process groups as the traces name them.
inline std::vector<group_seqs> groups_by_name(const job& j, const stream_kernels& per, collective_matching& m) {
  m.method = "by process group (the traces' collective metadata), in issue order within each";
  std::vector<group_seqs> groups;
  std::map<std::string, std::size_t> index;
  for (std::size_t k = 0; k < per.size(); ++k) add_named_kernels(j, k, per[k], groups, index, m);
  check_group_members(j, groups, m);
  return groups;
}

// Whether every rank has the same set of communication stream ids.
inline bool same_stream_ids(const stream_kernels& per) {
  bool same = true;
  for (auto& p : per) {
    if (p.size() != per.front().size()) same = false;
    else
      for (auto a = p.begin(), b = per.front().begin(); a != p.end(); ++a, ++b) same = same && a->first == b->first;
  }
  return same;
}

// Process groups by stream id, every rank taking part in each.
inline std::vector<group_seqs> groups_by_stream_id(const stream_kernels& per, collective_matching& m) {
  m.method = "by communication stream id (the same on every rank)";
  std::vector<std::size_t> everyone(per.size());
  for (std::size_t k = 0; k < everyone.size(); ++k) everyone[k] = k;
  std::vector<group_seqs> groups;
  for (auto& [s, v] : per.front()) {
    m.groups.push_back("stream " + std::to_string(s));
    group_seqs one;
    one.who = everyone;
    for (auto& p : per) one.seqs.push_back(p.at(s));
    groups.push_back(std::move(one));
  }
  return groups;
}

// Process groups by the order of first use of each rank's streams, every rank taking
// part in each; every rank must use as many streams.
inline std::vector<group_seqs> groups_by_first_use(const job& j, const stream_kernels& per, collective_matching& m) {
  m.method = "by order of first use of each rank's communication streams (their ids differ between ranks)";
  const std::size_t n = per.front().size();
  for (std::size_t k = 0; k < per.size(); ++k)
    if (per[k].size() != n)
      throw error("daydream: load_job: " + rank_label(j.ranks[k]) + " uses " + std::to_string(per[k].size()) +
                  " communication stream(s), " + rank_label(j.ranks.front()) + " uses " + std::to_string(n) +
                  ": the collectives cannot be matched (different process groups per rank need "
                  "process-group metadata the traces do not have)");
  std::vector<group_seqs> groups(n);
  for (auto& gs : groups) {
    gs.who.resize(per.size());
    for (std::size_t k = 0; k < per.size(); ++k) gs.who[k] = k;
  }
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
  return groups;
}

// Throws unless kernel `t` of rank `rk` (payload `p`) agrees with the first rank's part of
// collective `mc` (the `c`-th of group `gi`) on the operation, and on the size where it must.
inline void check_part_agrees(const job& j, const group_seqs& gs, std::uint32_t gi, std::uint32_t c,
                              const matched_collective& mc, const rank_trace& rk, task_id t,
                              const collective_matching& m) {
  const auto& first = j.ranks[gs.who.front()];
  const auto& g = rk.g;
  const auto& p = g.payload(g.as<comm_task>(t));
  const auto& g0 = first.g;
  const auto& p0 = g0.payload(g0.as<comm_task>(mc.parts.front().task));
  auto what = [&](const std::string& a, const std::string& b) {
    return "daydream: load_job: collective #" + std::to_string(c + 1) + " on " + m.groups[gi] + " is " + a + " on " +
           rank_label(first) + " but " + b + " on " + rank_label(rk) + ": the ranks' collectives do not match";
  };
  if (p.op != p0.op)
    throw error(what(std::string(to_string(p0.op)) + " (" + std::string(g0.name(mc.parts.front().task)) + ")",
                     std::string(to_string(p.op)) + " (" + std::string(g.name(t)) + ")"));
  if (sizes_must_agree(p.op, g.name(t)) && p.bytes && p0.bytes && p.bytes != p0.bytes)
    throw error(what(std::to_string(p0.bytes) + " bytes", std::to_string(p.bytes) + " bytes"));
}

// The `c`-th collective of group `gi`: one part per rank of the group.
inline matched_collective match_one(const job& j, const group_seqs& gs, std::uint32_t gi, std::uint32_t c,
                                    const collective_matching& m) {
  matched_collective mc;
  mc.group = gi;
  mc.index = c;
  mc.group_ranks = gs.ranks;
  for (std::size_t x = 0; x < gs.seqs.size(); ++x) {
    const auto& rk = j.ranks[gs.who[x]];
    const auto& g = rk.g;
    const task_id t = gs.seqs[x][c];
    const auto& p = g.payload(g.as<comm_task>(t));
    if (x == 0) {
      mc.op = p.op;
      mc.group_size = !gs.ranks.empty() ? std::uint32_t(gs.ranks.size())
                      : p.group_size > 1 ? p.group_size
                                         : std::uint32_t(std::max(j.world_size, 1));
      mc.iteration = g.iteration(t);
      mc.name = std::string(g.name(t));
    } else {
      check_part_agrees(j, gs, gi, c, mc, rk, t, m);
    }
    mc.bytes = std::max<std::uint64_t>(mc.bytes, p.bytes);
    mc.parts.push_back({rk.rank, t, g.trace_start(t), g.trace_start(t) + g.duration(t)});
  }
  return mc;
}

// Group `gi`'s collectives matched in issue order; every rank must have as many.
inline void match_group(const job& j, const group_seqs& gs, std::uint32_t gi, collective_matching& m) {
  const std::size_t n = gs.seqs.front().size();
  for (std::size_t x = 0; x < gs.seqs.size(); ++x)
    if (gs.seqs[x].size() != n)
      throw error("daydream: load_job: " + rank_label(j.ranks[gs.who[x]]) + " has " +
                  std::to_string(gs.seqs[x].size()) + " collective(s) on " + m.groups[gi] + ", " +
                  rank_label(j.ranks[gs.who.front()]) + " has " + std::to_string(n) +
                  ": mismatched collective counts (traces of different steps or of different jobs?); "
                  "they are not matched by guess");
  for (std::uint32_t c = 0; c < n; ++c) m.collectives.push_back(match_one(j, gs, gi, c, m));
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
  detail::stream_kernels per;
  for (auto& r : j.ranks) per.push_back(detail::comm_kernels_by_stream(r.g));
  const auto groups = detail::groups_named(j, per)     ? detail::groups_by_name(j, per, m)
                      : detail::same_stream_ids(per) ? detail::groups_by_stream_id(per, m)
                                                     : detail::groups_by_first_use(j, per, m);
  for (std::uint32_t gi = 0; gi < groups.size(); ++gi) detail::match_group(j, groups[gi], gi, m);
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
