// Defines add_fine_transfers: a collective's chunk transfers as tasks on the fair-share links of a link hierarchy.
// SPDX-License-Identifier: MIT
//
// The job graph's fine communication level (job.hpp) and the compiled strategies
// (passes/daydream/strategy/compile.hpp) both build their collectives with it, so a
// transfer costs the same wherever it is modelled.
#ifndef DAYDREAM_NET_FINE_COLLECTIVE_HPP
#define DAYDREAM_NET_FINE_COLLECTIVE_HPP

#include <daydream/net/collective_steps.hpp>
#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace daydream {

/// The link resources of the fine level in one graph, added on first use: each rank's
/// port to its machine (out and in) and each machine's NIC (out and in; with
/// link_hierarchy::nic_per_gpu each rank's). All are sharing::fair: concurrent transfers
/// split their bandwidth evenly. A port belongs to its rank (resource node = rank, so
/// replay_options::overlap_slowdown slows that rank's computation while it carries a
/// transfer); a machine's NIC to no rank (node -1).
struct fine_links {
  std::vector<resource_id> port_out, port_in;           ///< by rank
  std::map<std::uint32_t, resource_id> nic_out, nic_in; ///< by machine (or by rank with nic_per_gpu)

  /// Rank `rank`'s port ("rank R: link out" / "rank R: link in").
  resource_id port(graph& g, std::int32_t rank, bool out, double bandwidth) {
    auto& v = out ? port_out : port_in;
    if (v.size() <= std::size_t(rank)) v.resize(std::size_t(rank) + 1, no_resource);
    auto& r = v[std::size_t(rank)];
    if (r == no_resource)
      r = g.add_resource({"rank " + std::to_string(rank) + ": " + (out ? "link out" : "link in"), resource_kind::link,
                          sharing::fair, rank, -1, bandwidth});
    return r;
  }
  /// The NIC rank `rank` reaches other machines through ("machine M: NIC out", or with a
  /// NIC per GPU "rank R: NIC out").
  resource_id nic(graph& g, const link_hierarchy& h, std::int32_t rank, bool out, double bandwidth) {
    auto& v = out ? nic_out : nic_in;
    const std::uint32_t key = h.nic_per_gpu ? std::uint32_t(rank) : h.machine_of(rank);
    auto it = v.find(key);
    if (it != v.end()) return it->second;
    const char* what = out ? "NIC out" : "NIC in";
    auto name = h.nic_per_gpu ? "rank " + std::to_string(rank) + ": " + what
                              : "machine " + std::to_string(key) + ": " + what;
    auto r = g.add_resource({std::move(name), resource_kind::link, sharing::fair, h.nic_per_gpu ? rank : -1, -1,
                             bandwidth});
    v.emplace(key, r);
    return r;
  }
};

/// How add_fine_transfers times and labels the tasks of one collective.
struct fine_transfer_options {
  comm_op op = comm_op::all_reduce; ///< recorded on every task (comm_task::op)
  /// Task names: "<name> step latency", "<name> chunk send", "<name> chunk receive";
  /// empty: the op's name ("all_reduce chunk send").
  std::string name;
  double time_scale = 1.0;      ///< multiplies every latency and transfer time (a calibration)
  double bandwidth_scale = 1.0; ///< divides every transfer time (a faster network: > 1)
  time_ns step_latency = -1;    ///< >= 0: every transfer's latency instead of its link's
  /// Latencies each transfer pays (a transfer standing for several pipelined steps of one
  /// hop pays one per step): its latency is this times the rounded per-step latency.
  std::uint32_t latency_count = 1;
  time_ns trace_start = 0;      ///< the tasks' trace_start (the trace-order policy's key)
  std::int32_t iteration = -1;  ///< the tasks' iteration
  std::string layer;            ///< the tasks' layer
  phase ph = phase::other;      ///< the tasks' phase
};

/// What add_fine_transfers built.
struct fine_transfers_built {
  /// By participant: the tasks it took part in last (its collective is done on it when
  /// they are); empty for a participant in no transfer.
  std::vector<std::vector<task_id>> last;
  time_ns alone = 0;         ///< the collective's time when no link is shared (uncontended_time)
  std::size_t transfers = 0; ///< transfers added
  task_id first_task = no_task; ///< the first task added; tasks first_task.. are the collective's
};

/// Adds transfers `steps` among `ranks` (participant i is rank ranks[i], placed by `h`)
/// to `g`. Each transfer is a latency task (no resource; skipped when its latency is 0)
/// followed, at once, by a task on the sender's link out and one on the receiver's link in
/// (`links`: the sender's and receiver's ports inside a machine, their NICs between
/// machines; both fair-share, so transfers crossing one link at once split it). A
/// transfer starts when both its ends finished every transfer they took part in at
/// earlier steps; a participant's first transfer waits for `start[i]` (no_task: nothing).
/// Durations: latency x time_scale (rounded, times latency_count), bytes / bandwidth x
/// time_scale / bandwidth_scale, each rounded to whole nanoseconds.
inline fine_transfers_built add_fine_transfers(graph& g, fine_links& links, const link_hierarchy& h,
                                               const std::vector<std::int32_t>& ranks,
                                               const std::vector<collective_transfer>& steps,
                                               const std::vector<task_id>& start, const fine_transfer_options& o = {}) {
  const auto p = std::uint32_t(ranks.size());
  if (start.size() != ranks.size())
    throw error("daydream: add_fine_transfers: " + std::to_string(start.size()) + " start task(s) for " +
                std::to_string(p) + " participant(s)");
  fine_transfers_built out;
  out.first_task = task_id(g.id_bound());
  const std::string op = o.name.empty() ? std::string(to_string(o.op)) : o.name;
  const std::string lat_name = op + " step latency", out_name = op + " chunk send", in_name = op + " chunk receive";
  const double bw_scale = o.bandwidth_scale > 0 ? o.bandwidth_scale : 1.0;
  auto& front = out.last;
  front.assign(p, {});
  for (std::uint32_t i = 0; i < p; ++i)
    if (start[i] != no_task) front[i].push_back(start[i]);
  std::vector<std::vector<task_id>> next(p);
  std::vector<time_ns> ready(p, 0), ready_next(p, 0);
  std::vector<std::uint8_t> touched(p, 0);
  std::vector<task_id> deps;
  for (std::size_t a = 0; a < steps.size();) {
    std::size_t b = a;
    while (b < steps.size() && steps[b].step == steps[a].step) ++b;
    std::fill(touched.begin(), touched.end(), std::uint8_t(0));
    ready_next = ready;
    for (std::size_t s = a; s < b; ++s) {
      const auto& tr = steps[s];
      const auto src = ranks[tr.from], dst = ranks[tr.to];
      const bool same = h.same_machine(src, dst);
      const link_spec l = same ? h.intra : h.nic;
      const time_ns lat = time_ns(o.latency_count) *
                          (o.step_latency >= 0 ? o.step_latency : detail::round_ns(l.latency * o.time_scale));
      const time_ns dur = detail::round_ns(l.transfer_ns(tr.bytes) * o.time_scale / bw_scale);
      deps.assign(front[tr.from].begin(), front[tr.from].end());
      deps.insert(deps.end(), front[tr.to].begin(), front[tr.to].end());
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      if (lat > 0) {
        auto lt = g.add(comm_task{.op = o.op, .bytes = 0, .group_size = p},
                        {.name = lat_name, .duration = lat, .resource = no_resource, .trace_start = o.trace_start,
                         .layer = o.layer, .phase = o.ph, .iteration = o.iteration});
        for (auto d : deps) g.add_dependency(d, lt.id, dep_kind::comm);
        deps.assign(1, lt.id);
      }
      const auto ro = same ? links.port(g, src, true, l.bandwidth) : links.nic(g, h, src, true, l.bandwidth);
      const auto ri = same ? links.port(g, dst, false, l.bandwidth) : links.nic(g, h, dst, false, l.bandwidth);
      const comm_task chunk{.op = o.op, .bytes = std::uint64_t(std::llround(tr.bytes)), .group_size = p};
      auto so = g.add(chunk, {.name = out_name, .duration = dur, .resource = ro, .trace_start = o.trace_start,
                              .layer = o.layer, .phase = o.ph, .iteration = o.iteration});
      auto si = g.add(chunk, {.name = in_name, .duration = dur, .resource = ri, .trace_start = o.trace_start,
                              .layer = o.layer, .phase = o.ph, .iteration = o.iteration});
      for (auto d : deps) {
        g.add_dependency(d, so.id, dep_kind::comm);
        g.add_dependency(d, si.id, dep_kind::comm);
      }
      for (auto e : {tr.from, tr.to}) {
        if (!touched[e]) { next[e].clear(); touched[e] = 1; }
        next[e].push_back(so.id);
        next[e].push_back(si.id);
      }
      const time_ns end = std::max(ready[tr.from], ready[tr.to]) + lat + dur;
      ready_next[tr.from] = std::max(ready_next[tr.from], end);
      ready_next[tr.to] = std::max(ready_next[tr.to], end);
      out.alone = std::max(out.alone, end);
    }
    for (std::uint32_t e = 0; e < p; ++e)
      if (touched[e]) front[e].swap(next[e]);
    ready.swap(ready_next);
    out.transfers += b - a;
    a = b;
  }
  // A participant in no transfer keeps its start as its last task.
  return out;
}

} // namespace daydream

#endif
