// Defines io::build_dlc_graph and io::dlc_what_if: a DLC job as a task graph of transfers and node time, replayed under other clusters.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DLC_GRAPH_HPP
#define DAYDREAM_IO_DLC_GRAPH_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/dlc.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/update.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::io {

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline std::int64_t dlc_floor_us(time_ns t) { return t >= 0 ? t / 1000 : -((-t + 999) / 1000); }
} // namespace detail
//! @endcond

/// A DLC job as a task graph (docs/dlc.md, "Replay"):
/// - every send record is preceded by a cpu_task on its node's resource ("node R"), the
///   node's time since its previous send or the latest of its dependencies (what the
///   node computed, searched or updated before sending);
/// - a message whose send and receive are both in the job is a comm_task from the send
///   to the receive (dlc_graph::transfer names its two nodes);
/// - a receive whose send is not in the job (the peer's file is missing) is a comm_task
///   from its id_dep to the receive: the round trip through the peer.
/// Transfers hold no resource: their recorded durations already contain the sharing of
/// the traced network, and what-ifs model shared NICs in the per-byte time (dlc_what_if).
/// A record with several dependencies waits on a zero-length join task (one per
/// distinct set of records). Every record's time is the end of its event task; time 0
/// is the job's first record.
struct dlc_graph {
  graph g;
  std::int32_t workers = 0, servers = 0;
  std::int64_t origin_us = 0; ///< the job's first record time (time_sec * 10^6 + time_usec)
  /// event[f][i]: the task whose end is the time of record i of job.files[f].
  std::vector<std::vector<task_id>> event;
  /// A transfer (comm_task): its duration is `fixed_ns + bytes * per_byte` where
  /// per_byte is the cluster's (recorded_per_byte_ns in the recorded cluster).
  struct transfer {
    task_id task = no_task;
    std::int32_t from = 0, to = 0; ///< ranks
    std::uint64_t bytes = 0;
    time_ns recorded_ns = 0;       ///< its duration in the trace
    double fixed_ns = 0;           ///< latency, the peer's processing (round trips), waiting
    bool round_trip = false;
  };
  std::vector<transfer> transfers;
  /// Nanoseconds per byte of the traced network: the smallest duration per byte of any
  /// transfer (so no transfer is faster than the network), or as given.
  double recorded_per_byte_ns = 0;
  /// Transfers whose receive is earlier than their send (clocks of two nodes that
  /// disagree): they take 0 ns, and their receive replays at the send's time.
  std::size_t clock_skewed = 0;
  std::size_t joins = 0; ///< zero-length tasks joining the records a record depends on
  time_ns skew_ns = 0; ///< the largest such difference

  /// The replayed time of record i of job file f, in microseconds on the job's clock.
  std::int64_t replayed_us(const replay_result& r, std::size_t f, std::size_t i) const {
    return origin_us + detail::dlc_floor_us(r.end[event[f][i]]);
  }
};

/// Options of build_dlc_graph.
struct dlc_graph_options {
  /// The traced network's bandwidth (bytes per second, each NIC, workers' and servers'
  /// alike): a byte then costs max(1, W/S) / bandwidth. 0: the per-byte time is the
  /// smallest of any transfer (dlc_graph::recorded_per_byte_ns). Transfers faster than
  /// the given bandwidth allows keep a fixed part of 0.
  double recorded_bandwidth = 0;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

// Builds a dlc_graph in steps: the job's origin and sends; the node time before every
// send; the transfers; the dependencies (a node's sends in time order, each record's
// id_dep, joins); the traced network's per-byte time.
class dlc_graph_builder {
public:
  dlc_graph_builder(const dlc_job& job, dlc_graph& d) : job_(job), d_(d), g_(d.g) {}

  void run(const dlc_graph_options& opt) {
    d_.workers = job_.workers;
    d_.servers = job_.servers;
    set_origin();
    index_sends();
    const auto files = job_.files.size();
    for (std::size_t fi = 0; fi < files; ++fi) add_node_time(fi);
    for (std::size_t fi = 0; fi < files; ++fi)
      for (std::size_t i = 0; i < job_.files[fi].records.size(); ++i)
        if (!is_send(job_.files[fi].records[i].op)) add_transfer(fi, i);
    for (std::size_t fi = 0; fi < files; ++fi) {
      add_send_order(fi);
      add_record_dependencies(fi);
    }
    set_per_byte_time(opt);
  }

private:
  // A message: iteration, key, worker, server, kind.
  using msg_key = std::tuple<std::int32_t, std::int64_t, std::int32_t, std::int32_t, int>;

  static msg_key key_of(const dlc_record& r) {
    const bool w = is_worker_op(r.op);
    return msg_key{r.iteration, r.key, w ? r.performer() : r.peer, w ? r.peer : r.performer(), int(message_of(r.op))};
  }

  // The indices of `f`'s sends in time order (file order among equal times).
  static std::vector<std::size_t> sends_by_time(const dlc_file& f) {
    // Records of one time in the order of their id_deps (a record may name a later line of
    // the same time): the node's program order must not run against a dependency.
    const auto rank = dependency_order(f);
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < f.records.size(); ++i)
      if (is_send(f.records[i].op)) idx.push_back(i);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return std::pair{f.records[a].time_us, rank[a]} < std::pair{f.records[b].time_us, rank[b]};
    });
    return idx;
  }

  // Each record's place in a topological order of the id_deps (acyclic: the reader drops
  // cycles), the lowest line first among those ready: the file's order when every
  // dependency names an earlier line.
  static std::vector<std::size_t> dependency_order(const dlc_file& f) {
    const auto n = f.records.size();
    std::vector<std::size_t> indeg(n, 0), rank(n, n);
    std::vector<std::vector<std::size_t>> users(n);
    for (std::size_t i = 0; i < n; ++i)
      for (auto j : f.records[i].deps) { ++indeg[i]; users[j].push_back(i); }
    std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
    for (std::size_t i = 0; i < n; ++i)
      if (!indeg[i]) ready.push(i);
    for (std::size_t next = 0; !ready.empty(); ++next) {
      auto i = ready.top();
      ready.pop();
      rank[i] = next;
      for (auto u : users[i])
        if (!--indeg[u]) ready.push(u);
    }
    return rank;
  }

  time_ns ns(std::int64_t us) const { return (us - d_.origin_us) * 1000; }

  void set_origin() {
    bool any = false;
    std::int64_t origin = std::numeric_limits<std::int64_t>::max();
    for (auto& f : job_.files)
      for (auto& r : f.records) { origin = std::min(origin, r.time_us); any = true; }
    d_.origin_us = any ? origin : 0;
  }

  // The first send of every message, to join it to its receive.
  void index_sends() {
    d_.event.resize(job_.files.size());
    round_trip_.resize(job_.files.size());
    for (std::size_t fi = 0; fi < job_.files.size(); ++fi) {
      const auto& records = job_.files[fi].records;
      for (std::size_t i = 0; i < records.size(); ++i)
        if (is_send(records[i].op)) sends_.emplace(key_of(records[i]), std::pair{fi, i});
      d_.event[fi].assign(records.size(), no_task);
      round_trip_[fi].assign(records.size(), false);
    }
  }

  // The node time before every send of file `fi`, in time order on the node's resource.
  void add_node_time(std::size_t fi) {
    auto& f = job_.files[fi];
    if (f.records.empty()) return;
    const auto node = g_.add_resource(resource{"node " + std::to_string(f.rank), resource_kind::cpu_thread,
                                               sharing::exclusive, f.rank});
    std::int64_t prev_us = d_.origin_us;
    for (auto i : sends_by_time(f)) {
      auto& r = f.records[i];
      std::int64_t ready = prev_us;
      for (auto j : r.deps) ready = std::max(ready, f.records[j].time_us);
      const std::string name = std::string(to_string(r.op)) + " " + std::to_string(r.key) + "-" +
                               std::to_string(r.op_num);
      auto h = g_.add(cpu_task{}, task_fields{.name = "before " + name, .duration = (r.time_us - ready) * 1000,
                                              .resource = node, .trace_start = ns(ready),
                                              .phase = is_worker_op(r.op) && dlc_step(r.op) == 0 ? phase::backward
                                                                                                  : phase::other,
                                              .iteration = r.iteration});
      d_.event[fi][i] = h.id;
      prev_us = r.time_us;
    }
  }

  // A message whose send `s` (file, record) is in the job: it starts at the send.
  std::int64_t start_at_send(dlc_graph::transfer& x, const dlc_record& r, std::pair<std::size_t, std::size_t> s) {
    auto& sr = job_.files[s.first].records[s.second];
    x.bytes = sr.length;
    if (r.time_us < sr.time_us) {
      ++d_.clock_skewed;
      d_.skew_ns = std::max<time_ns>(d_.skew_ns, (sr.time_us - r.time_us) * 1000);
    }
    return sr.time_us;
  }

  // A receive whose send is not in the job: a round trip from its id_dep.
  std::int64_t start_round_trip(dlc_graph::transfer& x, const dlc_file& f, const dlc_record& r) const {
    x.round_trip = true;
    std::int64_t start_us = d_.origin_us;
    for (auto j : r.deps) start_us = std::max(start_us, f.records[j].time_us);
    x.bytes = r.length;
    if (r.form == dlc_dep_form::one && is_send(f.records[r.deps.front()].op)) x.bytes += f.records[r.deps.front()].length;
    return start_us;
  }

  // The transfer ending at receive `i` of file `fi`.
  void add_transfer(std::size_t fi, std::size_t i) {
    auto& f = job_.files[fi];
    auto& r = f.records[i];
    const bool pull = message_of(r.op) >= dlc_message::pull_request;
    dlc_graph::transfer x;
    x.from = r.src;
    x.to = r.dst;
    auto s = sends_.find(key_of(r));
    const std::string label = std::string(to_string(message_of(r.op))) + " " + std::to_string(r.key) + " it " +
                              std::to_string(r.iteration) + " " + std::to_string(r.src) + "->" + std::to_string(r.dst);
    const std::int64_t start_us = s != sends_.end() ? start_at_send(x, r, s->second) : start_round_trip(x, f, r);
    x.recorded_ns = std::max<std::int64_t>(0, r.time_us - start_us) * 1000;
    auto h = g_.add(comm_task{.op = pull ? comm_op::pull : comm_op::push, .bytes = x.bytes, .group_size = 2},
                    task_fields{.name = (x.round_trip ? "round trip " : "") + label, .duration = x.recorded_ns,
                                .resource = no_resource, .trace_start = ns(start_us), .phase = phase::other,
                                .iteration = r.iteration});
    x.task = h.id;
    d_.event[fi][i] = h.id;
    round_trip_[fi][i] = x.round_trip;
    d_.transfers.push_back(x);
    if (s != sends_.end()) g_.add_dependency(d_.event[s->second.first][s->second.second], h.id, dep_kind::comm);
  }

  // Program order of the node's sends.
  void add_send_order(std::size_t fi) {
    task_id prev = no_task;
    for (auto i : sends_by_time(job_.files[fi])) {
      const auto me = d_.event[fi][i];
      if (prev != no_task) g_.add_dependency(prev, me, dep_kind::cpu_order);
      prev = me;
    }
  }

  // The id_dep of sends and of round trips. A record with several dependencies waits on
  // a join: one zero-length task per distinct set, so that a one-to-many id_dep shared
  // by many records (every push of an iteration on every answer of the previous one)
  // costs one edge per member.
  void add_record_dependencies(std::size_t fi) {
    auto& f = job_.files[fi];
    std::map<std::vector<std::size_t>, task_id> joins;
    for (std::size_t i = 0; i < f.records.size(); ++i) {
      auto& r = f.records[i];
      if (!is_send(r.op) && !round_trip_[fi][i]) continue;
      if (r.deps.size() == 1) {
        g_.add_dependency(d_.event[fi][r.deps.front()], d_.event[fi][i], dep_kind::comm);
        continue;
      }
      if (r.deps.empty()) continue;
      auto [it, fresh] = joins.try_emplace(r.deps, no_task);
      if (fresh) it->second = add_join(fi, r);
      g_.add_dependency(it->second, d_.event[fi][i], dep_kind::comm);
    }
  }

  // The join of record `r`'s dependencies (in file `fi`).
  task_id add_join(std::size_t fi, const dlc_record& r) {
    auto& f = job_.files[fi];
    std::int64_t latest = d_.origin_us;
    for (auto j : r.deps) latest = std::max(latest, f.records[j].time_us);
    auto h = g_.add(cpu_task{}, task_fields{.name = "all of " + std::to_string(r.deps.size()) + " records",
                                            .duration = 0, .resource = no_resource, .trace_start = ns(latest),
                                            .phase = phase::other, .iteration = r.iteration});
    for (auto j : r.deps) g_.add_dependency(d_.event[fi][j], h.id, dep_kind::comm);
    ++d_.joins;
    return h.id;
  }

  // The traced network's per-byte time, and each transfer's fixed part.
  void set_per_byte_time(const dlc_graph_options& opt) {
    if (opt.recorded_bandwidth > 0)
      d_.recorded_per_byte_ns = std::max(1.0, double(std::max(1, d_.workers)) / double(std::max(1, d_.servers))) *
                                1e9 / opt.recorded_bandwidth;
    else {
      double best = std::numeric_limits<double>::infinity();
      for (auto& x : d_.transfers)
        if (x.bytes) best = std::min(best, double(x.recorded_ns) / double(x.bytes));
      d_.recorded_per_byte_ns = std::isfinite(best) ? best : 0;
    }
    for (auto& x : d_.transfers)
      x.fixed_ns = std::max(0.0, double(x.recorded_ns) - double(x.bytes) * d_.recorded_per_byte_ns);
  }

  const dlc_job& job_;
  dlc_graph& d_;
  graph& g_;
  std::map<msg_key, std::pair<std::size_t, std::size_t>> sends_; // first send of each message: (file, record)
  std::vector<std::vector<bool>> round_trip_;                    // per file and record
};

} // namespace detail
//! @endcond

/// Builds the graph of a DLC job (dlc_graph). Replaying it with daydream::replay gives
/// every record its recorded time exactly, except the receives of clock-skewed
/// transfers (dlc_graph::clock_skewed). Accepts every job the reader makes.
/// Complexity: O(R log R) for R records.
inline dlc_graph build_dlc_graph(const dlc_job& job, const dlc_graph_options& opt = {}) {
  dlc_graph d;
  detail::dlc_graph_builder(job, d).run(opt);
  return d;
}

/// A what-if on a DLC graph: another network, more workers, another server count. The
/// transfer model is ps_transfer_time's (net/collective.hpp): a byte costs
/// max(1 / worker bandwidth, workers / (servers x server bandwidth)), the larger of the
/// worker's NIC and its share of the servers' NICs. The recorded cluster is the job's
/// workers and servers with NICs of bandwidth B0 = max(1, W0/S0) / recorded_per_byte.
/// Each transfer keeps its fixed part (latency, the peer's processing, waiting) and
/// gets its bytes at the new per-byte time. More workers than recorded are assumed to
/// behave as the recorded ones (same computation, same synchronization): they load the
/// servers' NICs but are not simulated one by one; keys stay on their servers (the
/// model assumes them balanced). See docs/dlc.md, "What-ifs".
struct dlc_what_if {
  double bandwidth_scale = 1;      ///< both NICs' bandwidth times this
  double worker_bandwidth = 0;     ///< bytes/s of a worker's NIC; 0: recorded x bandwidth_scale
  double server_bandwidth = 0;     ///< bytes/s of a server's NIC; 0: recorded x bandwidth_scale
  std::uint32_t workers = 0;       ///< 0: the job's
  std::uint32_t servers = 0;       ///< 0: the job's

  /// The what-if of a cluster: its NIC and server bandwidths, workers and servers.
  static dlc_what_if from_cluster(const cluster& c) {
    dlc_what_if w;
    w.worker_bandwidth = c.network.bandwidth;
    w.server_bandwidth = c.server_link().bandwidth;
    w.workers = c.workers();
    w.servers = c.servers();
    return w;
  }
};

/// The per-byte time (ns) of the recorded cluster and of what-if `w` on graph `d`.
inline double dlc_per_byte_ns(const dlc_graph& d, const dlc_what_if& w) {
  if (!(w.bandwidth_scale > 0) || !std::isfinite(w.bandwidth_scale))
    throw usage_error("daydream: dlc what-if: the bandwidth scale must be positive");
  if (w.worker_bandwidth < 0 || w.server_bandwidth < 0 || !std::isfinite(w.worker_bandwidth) ||
      !std::isfinite(w.server_bandwidth))
    throw usage_error("daydream: dlc what-if: bandwidths must be positive");
  const double W0 = std::max(1, d.workers), S0 = std::max(1, d.servers);
  if (d.recorded_per_byte_ns <= 0) return 0;
  const double b0 = std::max(1.0, W0 / S0) * 1e9 / d.recorded_per_byte_ns; // bytes/s of the recorded NICs
  const double bw = w.worker_bandwidth > 0 ? w.worker_bandwidth : b0 * w.bandwidth_scale;
  const double bs = w.server_bandwidth > 0 ? w.server_bandwidth : b0 * w.bandwidth_scale;
  const double W = w.workers ? double(w.workers) : W0, S = w.servers ? double(w.servers) : S0;
  return std::max(1e9 / bw, 1e9 * W / (S * bs));
}

/// Applies what-if `w` to graph `d`: every transfer's duration becomes
/// fixed_ns + bytes * dlc_per_byte_ns(d, w). The identity what-if keeps every duration.
inline void apply_dlc_what_if(dlc_graph& d, const dlc_what_if& w) {
  const double p = dlc_per_byte_ns(d, w);
  const bool same = p == d.recorded_per_byte_ns;
  // Every replayed time stays below its recorded one plus all the transfers' growth:
  // refuse a what-if whose growth could overflow the replay's clock.
  time_ns last = 0;
  for (auto& x : d.transfers) last = std::max(last, d.g.trace_start(x.task) + x.recorded_ns);
  for (task_id t = 0; t < d.g.id_bound(); ++t)
    if (d.g.contains(t)) last = std::max(last, d.g.trace_start(t) + d.g.duration(t));
  double growth = 0;
  std::vector<time_ns> next(d.transfers.size());
  for (std::size_t i = 0; i < d.transfers.size(); ++i) {
    auto& x = d.transfers[i];
    const double t = same ? double(x.recorded_ns) : std::round(x.fixed_ns + double(x.bytes) * p);
    growth += std::max(0.0, t - double(x.recorded_ns));
    if (!(growth < 4e18 - double(last)))
      throw usage_error("daydream: dlc what-if: the transfers would last too long to replay (the bandwidth is too low)");
    next[i] = time_ns(t);
  }
  for (std::size_t i = 0; i < d.transfers.size(); ++i) set_duration(d.g, d.transfers[i].task, next[i]);
}

/// A copy of `job` with every record at its replayed time (dlc_graph::replayed_us) and
/// every d_time recomputed from the new times: the DLC trace of a what-if, to analyse
/// (analyze_dlc) or to write (write_dlc_job).
inline dlc_job retime_dlc_job(const dlc_job& job, const dlc_graph& d, const replay_result& r) {
  dlc_job out = job;
  for (std::size_t fi = 0; fi < out.files.size(); ++fi) {
    auto& f = out.files[fi];
    for (std::size_t i = 0; i < f.records.size(); ++i) f.records[i].time_us = d.replayed_us(r, fi, i);
    for (auto& rec : f.records) {
      std::int64_t latest = std::numeric_limits<std::int64_t>::min();
      for (auto j : rec.deps) latest = std::max(latest, f.records[j].time_us);
      rec.d_time_us = rec.deps.empty() ? 0 : rec.time_us - latest;
    }
  }
  return out;
}

} // namespace daydream::io

#endif
