// Defines the job graph: every rank of a job in one graph, its matched collectives modelled (coarse barriers or fine chunk transfers).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_JOB_GRAPH_HPP
#define DAYDREAM_JOB_GRAPH_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/job/alignment.hpp>
#include <daydream/job/matching.hpp>
#include <daydream/job/model.hpp>
#include <daydream/kinds.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/net/collective_steps.hpp>
#include <daydream/net/fine_collective.hpp>
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

//! @cond DAYDREAM_INTERNAL
namespace detail {

// Builds a job graph (build_job_graph) in steps: each rank's release; each rank's
// resources, tasks and dependencies copied, and the task holding back its start; each
// matched collective's barrier and parts, and at the fine level its transfers.
class job_graph_builder {
public:
  job_graph_builder(const job& j, const collective_matching& m, const alignment_result& alignment,
                    const job_model_options& o, job_graph& jg)
      : j_(j), m_(m), alignment_(alignment), o_(o), jg_(jg) {}

  // `release`: the job whose rank graphs are freed once copied (build_job_graph_releasing).
  void run(job* release = nullptr) {
    jg_.alignment = alignment_;
    std::size_t total = 0, edges = 0, parts = 0;
    for (auto& r : j_.ranks) total += r.g.size(), edges += r.g.core().edges.size();
    for (auto& mc : m_.collectives) parts += mc.parts.size();
    jg_.g.reserve(total + j_.ranks.size() + m_.collectives.size());
    // Room for every dependency: the ranks', each rank's start, and a barrier's (about
    // three per part): a dependency column grown by doubling holds up to twice the job's.
    jg_.g.core().edges.reserve(edges + 4 * parts + j_.ranks.size() * 8);
    set_releases();
    for (std::size_t k = 0; k < j_.ranks.size(); ++k) {
      add_rank(k);
      if (release) release->ranks[k].g = graph{};
    }
    jg_.first_task.push_back(jg_.g.id_bound());
    if (o_.communication == communication_level::fine) prepare_fine();
    for (std::size_t ci = 0; ci < m_.collectives.size(); ++ci) add_collective(ci);
  }

private:
  time_ns off(std::int32_t r) const {
    auto it = alignment_.offset.find(r);
    return it == alignment_.offset.end() ? time_ns(0) : it->second;
  }

  // Each rank's first trace event on aligned clocks, and its release: how long after
  // the job's first event it starts (another rank's, by o.start_like).
  void set_releases() {
    first_.assign(j_.ranks.size(), 0);
    time_ns job_first = std::numeric_limits<time_ns>::max();
    for (std::size_t k = 0; k < j_.ranks.size(); ++k) {
      time_ns lo = std::numeric_limits<time_ns>::max();
      j_.ranks[k].g.for_each_task([&](task_id t) { lo = std::min(lo, j_.ranks[k].g.trace_start(t)); });
      first_[k] = lo == std::numeric_limits<time_ns>::max() ? 0 : lo + off(j_.ranks[k].rank);
      job_first = std::min(job_first, first_[k]);
    }
    for (std::size_t k = 0; k < j_.ranks.size(); ++k) {
      auto src = k;
      if (auto it = o_.start_like.find(k); it != o_.start_like.end()) src = it->second;
      jg_.release.push_back(first_[src] - job_first);
    }
  }

  // A rank's resources, named "rank R: <name>" with node R; their ids in the job graph.
  std::vector<resource_id> copy_resources(const rank_trace& rt) {
    const auto& src = rt.g;
    std::vector<resource_id> res(src.resource_count());
    for (std::size_t r = 0; r < src.resource_count(); ++r) {
      auto x = src.resource_at(resource_id(r));
      x.name = "rank " + std::to_string(rt.rank) + ": " + x.name;
      x.node = rt.rank;
      res[r] = jg_.g.add_resource(std::move(x));
    }
    return res;
  }

  // Rank `k`'s tasks (trace starts shifted by its clock offset) and dependencies.
  void add_rank(std::size_t k) {
    const auto& rt = j_.ranks[k];
    const auto& src = rt.g;
    const auto& c = src.core();
    const time_ns shift = off(rt.rank);
    jg_.ranks.push_back(rt.rank);
    const auto res = copy_resources(rt);
    jg_.first_task.push_back(jg_.g.id_bound());
    auto& map = jg_.map.emplace_back(src.id_bound(), no_task);
    // The rank's names in the job graph's interner, each looked up once (on first use: the
    // job graph's ids are those that interning each task's name, then layer, would give).
    constexpr name_id unset = std::numeric_limits<name_id>::max();
    std::vector<name_id> names(c.names.size(), unset);
    auto name_of = [&](name_id n) {
      if (names[n] == unset) names[n] = jg_.g.core().names.intern(c.names[n]);
      return names[n];
    };
    src.for_each_task([&](task_id t) {
      task_fields f{.name = {}, .duration = c.duration[t],
                    .resource = c.res[t] == no_resource ? no_resource : res[c.res[t]], .gap = c.gap[t],
                    .trace_start = c.trace_start[t] + shift, .layer = {}, .phase = c.ph[t],
                    .iteration = c.iteration[t]};
      auto id = src.visit(t, [&](auto, const auto& p) { return jg_.g.add(p, f).id; });
      jg_.g.core().name[id] = name_of(c.name[t]);
      jg_.g.core().layer[id] = name_of(c.layer[t]);
      if (c.priority[t]) jg_.g.core().priority[id] = c.priority[t];
      if (c.mem_delta[t]) jg_.g.core().mem_delta[id] = c.mem_delta[t];
      map[t] = id;
    });
    src.for_each_task([&](task_id t) {
      for (auto d : src.successors(t)) jg_.g.add_dependency(map[t], map[d.to], d.kind);
    });
    jg_.release_task.push_back(no_task);
    if (jg_.release[k] > 0) jg_.release_task.back() = add_release(k);
  }

  // The task that holds rank `k` back by its release, on its own "rank R: start"
  // resource (outside every iteration), before each of its tasks without predecessors.
  task_id add_release(std::size_t k) {
    const auto rank = j_.ranks[k].rank;
    std::vector<task_id> roots;
    for (task_id t = jg_.first_task[k]; t < jg_.g.id_bound(); ++t)
      if (jg_.g.in_degree(t) == 0) roots.push_back(t);
    auto rr = jg_.g.add_resource({"rank " + std::to_string(rank) + ": start", resource_kind::other,
                                  sharing::exclusive, rank, -1, 0});
    auto h = jg_.g.add(cpu_task{}, {.name = "start of rank " + std::to_string(rank), .duration = jg_.release[k],
                                    .resource = rr, .trace_start = first_[k] - jg_.release[k], .iteration = -1});
    for (auto t : roots) jg_.g.add_dependency(h.id, t, dep_kind::control);
    return h.id;
  }

  // The fine level's links, the options that scale the transfer as recorded, and room
  // for every transfer: a latency task and a task on each of its two links.
  void prepare_fine() {
    hierarchy_ = job_link_hierarchy(j_, o_);
    as_traced_ = o_;
    as_traced_.network_scale = 1.0;
    as_traced_.changed_to = o_.calibrated_as;
    const auto algo = o_.transfer == job_model_options::transfer_source::trace ? o_.changed_to : o_.algorithm;
    std::size_t transfers = 0;
    for (auto& mc : m_.collectives)
      transfers +=
          collective_transfer_count(mc.op, std::max<std::uint32_t>(mc.group_size, std::uint32_t(mc.parts.size())), algo);
    jg_.g.reserve(jg_.g.id_bound() + m_.collectives.size() + 3 * transfers);
  }

  // Matched collective `ci`: its barrier waits for what each part waited for, each part
  // waits for the barrier and takes the modelled transfer time.
  void add_collective(std::size_t ci) {
    const auto& mc = m_.collectives[ci];
    modelled_collective x;
    x.matched = ci;
    auto [t, from] = modelled_transfer(mc, o_, alignment_.offset);
    x.transfer = t;
    x.calibrated_from = from;
    time_ns at = std::numeric_limits<time_ns>::max();
    for (auto& p : mc.parts) {
      auto k = std::size_t(j_.index_of(p.rank));
      x.parts.push_back(jg_.map[k][p.task]);
      x.part_rank.push_back(k);
      at = std::min(at, p.start + off(p.rank));
    }
    auto b = jg_.g.add(cpu_task{}, {.name = "collective " + std::string(to_string(mc.op)) + " #" +
                                            std::to_string(mc.index + 1) + " (group " + std::to_string(mc.group + 1) + ")",
                                    .duration = 0, .resource = no_resource, .trace_start = at, .iteration = -1});
    x.barrier = b.id;
    for (auto part : x.parts) {
      std::vector<task_id> preds;
      for (auto d : jg_.g.predecessors(part)) preds.push_back(d.from);
      for (auto p : preds) jg_.g.add_dependency(p, b.id, dep_kind::comm);
    }
    for (auto part : x.parts) {
      jg_.g.add_dependency(b.id, part, dep_kind::comm);
      jg_.g.core().duration[part] = x.transfer;
    }
    if (o_.communication == communication_level::fine)
      add_fine_collective(jg_, j_, mc, x, o_, hierarchy_, links_, modelled_transfer(mc, as_traced_, alignment_.offset).first);
    jg_.collectives.push_back(std::move(x));
  }

  const job& j_;
  const collective_matching& m_;
  const alignment_result& alignment_;
  const job_model_options& o_;
  job_graph& jg_;
  std::vector<time_ns> first_; // by rank index: its first trace event on aligned clocks
  link_hierarchy hierarchy_;   // the fine level's
  fine_links links_;
  job_model_options as_traced_; // the fine level scales the transfer as recorded
};

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
  detail::job_graph_builder(j, m, alignment, o, jg).run();
  return jg;
}

/// build_job_graph for a job whose ranks are not needed afterwards: each rank's graph is
/// freed (`j.ranks[k].g` left empty; the rest of each rank_trace kept) as soon as it is
/// copied into the job graph, so the job is never held twice. The job graph is the one
/// build_job_graph returns. Afterwards `j` serves analyse_job (which reads the ranks'
/// measured iterations, not their graphs) but no longer build_job_graph, a scenario that
/// rebuilds the job, or representative_graph.
inline job_graph build_job_graph_releasing(job& j, const collective_matching& m, const alignment_result& alignment,
                                           const job_model_options& o = {}) {
  job_graph jg;
  detail::job_graph_builder(j, m, alignment, o, jg).run(&j);
  return jg;
}

} // namespace daydream

#endif
