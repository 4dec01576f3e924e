// Defines optimize::problem and optimize::plan: one iteration to optimize, a synchronization/fusion plan, and the graph a plan makes.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_OPTIMIZE_PLAN_HPP
#define DAYDREAM_OPTIMIZE_PLAN_HPP

#include <daydream/analysis.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/estimate.hpp>
#include <daydream/semantics/gradients.hpp>
#include <daydream/registry/registry.hpp>
#include <daydream/passes/ddp.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/registry/specs/grad_accum.hpp>
#include <daydream/registry/specs/recompute.hpp>
#include <daydream/passes/tensor_fusion.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/insert.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

/// The strategy search (dPRO's optimizer) and what it works on.
namespace daydream::optimize {

using passes::gradient;
using passes::gradient_set;

/// How the plan synchronizes gradients.
enum class transport : std::uint8_t {
  all_reduce,       ///< one flat all-reduce per bucket piece, in order on one communicator (DDP, Horovod)
  parameter_server, ///< each piece pushed on the uplink and pulled on the downlink, fair-shared (BytePS's pass)
  /// Each piece pushed and pulled through parameter servers on links that send one
  /// message at a time, in order: a piece's pull overlaps the next piece's push, so
  /// pieces pipeline (the trade-off of dPRO's Theorem 3: more pieces, more latencies).
  parameter_server_pipelined,
};

/// The name of a transport ("all_reduce").
inline constexpr std::string_view to_string(transport t) noexcept {
  switch (t) {
  case transport::all_reduce: return "all_reduce";
  case transport::parameter_server: return "parameter_server";
  case transport::parameter_server_pipelined: return "parameter_server_pipelined";
  }
  return "?";
}

/// Computation ops fused into one kernel: consecutive GPU kernels of one stream, in
/// stream order. The last one stays (with the fused duration); the others and the CPU
/// calls that launched only them are removed.
struct fusion_group {
  std::vector<task_id> ops; ///< kernels in stream order, at least two
  friend bool operator==(const fusion_group&, const fusion_group&) = default;
};

/// A graph edit a user strategy adds to a plan (see strategy in search.hpp): a name for
/// the plan's description and the edit, run on the plan's graph before the
/// synchronization is inserted. It must keep the gradients' ready tasks.
struct user_edit {
  std::string name; ///< shown in the plan and the search log
  std::function<void(graph&)> apply;
};

/// What the search decides: the gradient buckets (tensor fusion), the piece size of each
/// bucket (tensor partition), the transport, the fused computation ops (op fusion), the
/// memory strategy, and any user edits.
///
/// Buckets are runs of consecutive gradients in ready order: bucket k holds gradients
/// `starts[k] .. starts[k+1]-1` of problem::gs (the last runs to the end). Every bucket is
/// cut into pieces of at most `piece[k]` bytes (0: whole), each synchronized on its own.
struct plan {
  transport how = transport::all_reduce;
  std::vector<std::size_t> starts{0};  ///< first gradient of each bucket, ascending, starts[0] == 0
  std::vector<std::uint64_t> piece{0}; ///< per bucket: bytes per piece, 0 for the whole bucket
  std::vector<fusion_group> fused;     ///< op fusion groups, disjoint
  std::string memory;                  ///< memory strategy as a pass spec ("recompute", "grad_accum:k=4"), or empty
  std::vector<user_edit> edits;        ///< user strategies' edits, applied in order

  /// Buckets in the plan.
  std::size_t buckets() const noexcept { return starts.size(); }
  /// One past the last gradient of bucket `k`, for `n` gradients in all.
  std::size_t end_of(std::size_t k, std::size_t n) const noexcept {
    return k + 1 < starts.size() ? starts[k + 1] : n;
  }
  /// A string that identifies the plan (equal plans, equal keys): what the search
  /// de-duplicates candidates by and breaks ties with.
  std::string key() const {
    std::string s(to_string(how));
    s += '|';
    for (std::size_t k = 0; k < starts.size(); ++k)
      s += std::to_string(starts[k]) + (piece[k] ? "/" + std::to_string(piece[k]) : std::string()) + ",";
    s += '|';
    for (auto& f : fused) {
      for (auto t : f.ops) s += std::to_string(t) + ".";
      s += ',';
    }
    s += '|' + memory + '|';
    for (auto& e : edits) s += e.name + ",";
    return s;
  }
};

/// The default duration of fused ops (op fusion's cost model): the member kernels' time
/// less the intermediate memory traffic that fusion eliminates. Each member but the last
/// writes its output and the next reads it back; that traffic is estimated as twice the
/// member's operator tensor bytes (launch_tensor_bytes) at `memory_bandwidth`, and never
/// more than half the member's own duration (a kernel is not all memory traffic). The
/// eliminated launch gaps are not part of the duration: op fusion removes the CPU calls
/// that launched the other members, so the replay no longer waits for them. The result
/// is at least the longest member's duration.
struct fusion_estimator {
  double memory_bandwidth = 500e9; ///< bytes/s of device memory (V100-class HBM2, conservative)

  /// The fused kernel's duration.
  time_ns operator()(const graph& g, const std::vector<task_id>& ops) const {
    time_ns sum = 0, longest = 0;
    double saved = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto d = g.duration(ops[i]);
      sum += d;
      longest = std::max(longest, d);
      if (i + 1 < ops.size()) {
        const double traffic = 2.0 * double(passes::launch_tensor_bytes(g, ops[i])) / memory_bandwidth * 1e9;
        saved += std::min(traffic, 0.5 * double(d));
      }
    }
    return std::max(longest, sum - static_cast<time_ns>(saved));
  }
};

/// One iteration of a training step to optimize, its gradients and the cluster.
struct problem {
  graph g;                      ///< the iteration alone (other iterations removed)
  std::int32_t iteration = 0;   ///< its number
  gradient_set gs;              ///< its gradients, in ready order
  cluster c;                    ///< the data-parallel cluster
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< the all-reduce's algorithm
  replay_options replay;        ///< how candidates are replayed
  /// The duration of fused ops (default: fusion_estimator); replace it to change op
  /// fusion's cost model.
  std::function<time_ns(const graph&, const std::vector<task_id>&)> fused_duration = fusion_estimator{};
  std::int64_t memory_initial = 0; ///< bytes allocated before the first modelled memory event
  bool memory_modelled = false;    ///< whether peak memory means anything on this graph
  passes::layer_bytes sizes;       ///< the layer -> bytes map the gradients came from (baselines use it too)
  double model_bytes = 0;          ///< the model size spread when the trace has no sizes (baselines use it too)
};


/// The one-iteration graph of `g`: every task of another iteration (or of none) removed,
/// bridging dependencies, then compacted (task ids renumbered). Iterations of a steady state are alike, so the search
/// optimizes one and the plan applies to every one (symmetry across iterations). The
/// next iteration's first tasks (those that wait for none of its own) stay: the
/// iteration then ends where the next one starts, as iteration_spans measures it in the
/// whole graph, and its time as traced is the baseline every command gives for it.
///
/// The tasks are removed in an order that keeps bridging trivial: those before the
/// iteration's first task in a topological order from the front (each a source when
/// removed), the others from the back (each a sink unless the iteration waits for it).
inline graph single_iteration_graph(graph g, std::int32_t iteration) {
  std::vector<std::uint32_t> waiting(g.id_bound(), 0);
  std::vector<task_id> order, todo;
  g.for_each_task([&](task_id t) {
    for ([[maybe_unused]] auto d : g.predecessors(t)) ++waiting[t];
    if (waiting[t] == 0) todo.push_back(t);
  });
  while (!todo.empty()) {
    const auto t = todo.back();
    todo.pop_back();
    order.push_back(t);
    for (auto d : g.successors(t))
      if (--waiting[d.to] == 0) todo.push_back(d.to);
  }
  std::size_t first = order.size();
  for (std::size_t k = 0; k < order.size() && first == order.size(); ++k)
    if (g.iteration(order[k]) == iteration) first = k;
  // The next iteration's entry tasks: none of their predecessors is of that iteration.
  auto entry = [&](task_id t) {
    if (g.iteration(t) != iteration + 1) return false;
    for (auto d : g.predecessors(t))
      if (g.iteration(d.from) == iteration + 1) return false;
    return true;
  };
  std::vector<task_id> doomed;
  for (std::size_t k = 0; k < first; ++k) doomed.push_back(order[k]);
  for (std::size_t k = order.size(); k-- > first;)
    if (g.iteration(order[k]) != iteration && !entry(order[k])) doomed.push_back(order[k]);
  daydream::remove(g, doomed);
  g.compact(); // candidates copy the graph: no dead tasks to carry along
  return g;
}

/// Builds the problem for iteration `iteration` of `g` on cluster `c`, with the gradients
/// find_gradients gives (`sizes`, `model_bytes` as the distributed passes take them).
/// Throws daydream::error naming `what` (the trace) when the iteration has no gradients
/// with sizes: there is nothing to bucket or partition.
inline problem make_problem(const graph& g, std::int32_t iteration, const cluster& c, const std::string& what,
                            const passes::layer_bytes& sizes = {}, double model_bytes = 0) {
  problem p;
  p.g = single_iteration_graph(g, iteration);
  p.iteration = iteration;
  p.c = c;
  p.sizes = sizes;
  p.model_bytes = model_bytes;
  // The gradients as every plan sees them: after the recorded gradient synchronization (a
  // rank of a data-parallel job) is removed, as run_data_parallel removes it (a gradient
  // is ready when the last kernel before its hook ends, which is then no NCCL kernel).
  // Removal keeps ids, so they are the ids of p.g too.
  {
    graph stripped = p.g;
    const auto rec = passes::find_recorded_collectives(stripped);
    if (rec.distributed()) passes::strip_gradient_sync(stripped, rec);
    p.gs = passes::find_gradients(stripped, sizes, model_bytes);
  }
  if (p.gs.grads.empty())
    throw error(what + ": iteration " + std::to_string(iteration) + " has no gradients to synchronize" +
                (p.gs.note.empty() ? std::string() : " (" + p.gs.note + ")"));
  return p;
}

/// Gradients `a .. b-1` of `p`, as bytes.
inline std::uint64_t bytes_of(const problem& p, std::size_t a, std::size_t b) {
  std::uint64_t s = 0;
  for (auto k = a; k < b; ++k) s += p.gs.grads[k].bytes;
  return s;
}

/// The bytes of each piece of a bucket of `bytes` cut into pieces of at most `piece`
/// bytes (0: one piece).
inline std::vector<std::uint64_t> pieces_of(std::uint64_t bytes, std::uint64_t piece) {
  const std::uint64_t total = std::max<std::uint64_t>(bytes, 1);
  const std::uint64_t step = piece ? piece : total;
  std::vector<std::uint64_t> out;
  for (std::uint64_t off = 0; off < total; off += step) out.push_back(std::min(step, total - off));
  return out;
}

/// The time one piece of `bytes` takes to synchronize alone: all_reduce_time, or a push
/// (the pull takes as long) for the parameter server.
inline time_ns sync_time(const problem& p, transport how, std::uint64_t bytes) {
  if (how == transport::all_reduce) return all_reduce_time(double(bytes), p.c, p.algorithm);
  return ps_transfer_time(double(bytes), p.c.workers(), p.c.servers(), p.c.network, p.c.server_link());
}

/// Fuses the ops of `f` in `h` (see fusion_group): the last op gets the fused duration,
/// the others and the CPU calls that launched nothing else are removed. Returns the
/// surviving op. Throws daydream::error if the group is not consecutive kernels of one
/// stream.
inline task_id fuse_ops(graph& h, const fusion_group& f,
                        const std::function<time_ns(const graph&, const std::vector<task_id>&)>& duration) {
  if (f.ops.size() < 2) throw error("daydream: optimize: a fusion group needs two ops or more");
  for (std::size_t i = 0; i < f.ops.size(); ++i) {
    const auto t = f.ops[i];
    if (!h.contains(t) || !h.is<gpu_kernel>(t))
      throw error("daydream: optimize: fusion group member " + std::to_string(t) + " is not a GPU kernel of the graph");
    if (i > 0 && next_on_resource(h, f.ops[i - 1]) != t)
      throw error("daydream: optimize: fusion group members " + std::to_string(f.ops[i - 1]) + " and " +
                  std::to_string(t) + " are not consecutive on one stream");
  }
  const auto d = duration(h, f.ops);
  std::vector<task_id> doomed;
  for (std::size_t i = 0; i + 1 < f.ops.size(); ++i) {
    doomed.push_back(f.ops[i]);
    auto call = launch_of(h, f.ops[i]);
    if (call != no_task && launched_by(h, call).size() == 1) doomed.push_back(call);
  }
  set_duration(h, f.ops.back(), d);
  // What waited for a member from elsewhere (another stream, a CPU synchronize) waits for
  // the fused kernel: its outputs exist only when it ends.
  for (std::size_t i = 0; i + 1 < f.ops.size(); ++i) {
    std::vector<std::pair<task_id, dep_kind>> outs;
    for (auto dep : h.successors(f.ops[i]))
      if (dep.kind != dep_kind::stream_order && dep.to != f.ops.back()) outs.push_back({dep.to, dep.kind});
    for (auto [to, kind] : outs)
      if (!h.has_dependency(f.ops.back(), to) && !passes::reachable_from(h, to)[f.ops.back()])
        h.add_dependency(f.ops.back(), to, kind);
  }
  daydream::remove(h, doomed);
  return f.ops.back();
}

/// The graph plan `x` makes of `p`: op fusion groups, user edits, then the gradients'
/// synchronization as the plan says (run_data_parallel: recorded gradient
/// synchronization is replaced, the optimizer waits for every piece), then the memory
/// strategy (a registry pass). Returns the graph and the synchronization's report.
inline std::pair<graph, pass_report> apply_plan(const problem& p, const plan& x) {
  graph h = p.g;
  gradient_set gs = p.gs;
  for (auto& f : x.fused) {
    const auto kept = fuse_ops(h, f, p.fused_duration);
    for (auto& gr : gs.grads)
      if (std::find(f.ops.begin(), f.ops.end(), gr.ready) != f.ops.end()) gr.ready = kept;
  }
  for (auto& e : x.edits) e.apply(h);
  const std::size_t n = gs.grads.size();
  if (x.starts.empty() || x.starts.front() != 0 || x.piece.size() != x.starts.size() ||
      !std::is_sorted(x.starts.begin(), x.starts.end()) || x.starts.back() >= n ||
      std::adjacent_find(x.starts.begin(), x.starts.end()) != x.starts.end())
    throw error("daydream: optimize: the plan's buckets do not partition the " + std::to_string(n) + " gradients");
  auto find = [&](const graph&) { return gs; };
  auto rep = passes::run_data_parallel(h, "optimize", p.c, find, passes::weight_update::waits, 1,
                                       [&](passes::data_parallel_step& s) {
    passes::tasks_by_iteration ends;
    auto& out = ends[p.iteration];
    if (x.how == transport::all_reduce) {
      auto link = passes::collective_link(s.g, s.c);
      task_id prev = no_task;
      for (std::size_t k = 0; k < x.buckets(); ++k) {
        passes::bucket b{p.iteration, 0, {}};
        for (auto i = x.starts[k]; i < x.end_of(k, n); ++i) { b.members.push_back(i); b.bytes += s.gs.grads[i].bytes; }
        auto ready = passes::ready_tasks(s.gs, b);
        std::size_t j = 0;
        for (auto bytes : pieces_of(b.bytes, x.piece[k])) {
          prev = passes::add_comm(s.g, comm_op::all_reduce,
                                  "all_reduce bucket " + std::to_string(k) + (x.piece[k] ? "." + std::to_string(j++) : ""),
                                  bytes, s.c.workers(), sync_time(p, x.how, bytes), link, ready, prev, p.iteration).id;
          out.push_back(prev);
        }
      }
    } else {
      const bool fifo = x.how == transport::parameter_server_pipelined;
      const auto share = fifo ? sharing::exclusive : sharing::fair;
      auto up = passes::node_link(s.g, fifo ? "uplink (one at a time)" : "uplink", s.c.network.bandwidth, share);
      auto down = passes::node_link(s.g, fifo ? "downlink (one at a time)" : "downlink", s.c.network.bandwidth, share);
      for (std::size_t k = 0; k < x.buckets(); ++k) {
        passes::bucket b{p.iteration, 0, {}};
        for (auto i = x.starts[k]; i < x.end_of(k, n); ++i) { b.members.push_back(i); b.bytes += s.gs.grads[i].bytes; }
        auto ready = passes::ready_tasks(s.gs, b);
        const std::string label = "bucket " + std::to_string(k);
        for (auto bytes : pieces_of(b.bytes, x.piece[k])) {
          auto t = sync_time(p, x.how, bytes);
          auto push = passes::add_comm(s.g, comm_op::push, "push " + label, bytes, s.c.workers(), t, up, ready,
                                       no_task, p.iteration);
          auto pull = passes::add_comm(s.g, comm_op::pull, "pull " + label, bytes, s.c.workers(), t, down, {push.id},
                                       no_task, p.iteration);
          out.push_back(pull.id);
        }
      }
    }
    return ends;
  });
  if (!x.memory.empty()) {
    auto reg = passes::registry<graph>::of<passes::recompute, passes::grad_accum>();
    auto pass = reg.make(x.memory);
    auto mrep = pass.run(h);
    if (!mrep.applied) rep.note(x.memory + ": " + mrep.reason);
  }
  return {std::move(h), std::move(rep)};
}

/// The steady-state step of iteration `it` in replay `r` of `h` (steady_steps): its span
/// to the next iteration's first task, or the work of a resource that falls behind when
/// that is longer (a slow link whose all-reduces pile up while the CPU runs ahead). The
/// baseline `daydream whatif` gives for the same iteration.
inline time_ns step_time(const graph& h, const replay_result& r, std::int32_t it) {
  return steady_steps(h, r, {it}).front().step();
}

/// What one replay of a plan predicts.
struct plan_evaluation {
  time_ns time = -1;         ///< the iteration's steady-state step (step_time), ns
  std::int64_t peak = 0;     ///< peak memory (problem::memory_initial included), bytes
};

/// Replays graph `h` (a plan's, or a baseline's) as the search does.
inline plan_evaluation measure(const problem& p, const graph& h) {
  auto r = daydream::replay(h, trace_order_policy{}, p.replay);
  return {step_time(h, r, p.iteration), p.memory_initial + r.peak_memory};
}

/// Applies plan `x` to `p` and replays it.
inline plan_evaluation evaluate(const problem& p, const plan& x) { return measure(p, apply_plan(p, x).first); }

// ---------------------------------------------------------------------------------------
// Plans of known systems

/// PyTorch DDP's bucketing (ddp_buckets: a bucket closes once it holds `cap` bytes, the
/// first at `first_cap`) as a plan.
inline plan ddp_plan(const problem& p, std::uint64_t cap = 25ull << 20, std::uint64_t first_cap = 1ull << 20) {
  plan x;
  x.starts.clear();
  x.piece.clear();
  std::uint64_t cur = 0;
  bool first = true;
  for (std::size_t i = 0; i < p.gs.grads.size(); ++i) {
    if (cur == 0) { x.starts.push_back(i); x.piece.push_back(0); }
    cur += p.gs.grads[i].bytes;
    if (cur >= (first ? first_cap : cap)) { cur = 0; first = false; }
  }
  return x;
}

/// Every gradient in one bucket (XLA-style fuse-everything).
inline plan fuse_all_plan() { return plan{}; }

/// Each gradient alone, pushed and pulled in pieces of `partition` bytes (BytePS).
inline plan byteps_plan(const problem& p, std::uint64_t partition = 4'096'000) {
  plan x;
  x.how = transport::parameter_server;
  x.starts.clear();
  x.piece.clear();
  for (std::size_t i = 0; i < p.gs.grads.size(); ++i) { x.starts.push_back(i); x.piece.push_back(partition); }
  return x;
}

/// Gradients packed greedily in ready order into buffers of at most `cap` bytes (a larger
/// gradient alone): Horovod's fusion buffers without its cycle waits.
inline plan greedy_cap_plan(const problem& p, std::uint64_t cap) {
  plan x;
  x.starts.clear();
  x.piece.clear();
  std::uint64_t cur = 0;
  for (std::size_t i = 0; i < p.gs.grads.size(); ++i) {
    const auto b = p.gs.grads[i].bytes;
    if (i == 0 || cur + b > cap) { x.starts.push_back(i); x.piece.push_back(0); cur = 0; }
    cur += b;
  }
  return x;
}

/// Horovod's fusion buffers as a plan: gradients ready within one `cycle` (ready times
/// from replaying plan `x`'s graph; cycles at multiples of `cycle` from the iteration's
/// start) packed in ready order into buffers of at most `cap` bytes, without the wait
/// for the cycle's end (the all-reduce starts when the buffer's last gradient is ready).
inline plan horovod_plan(const problem& p, const plan& x, time_ns cycle = 5'000'000,
                         std::uint64_t cap = 64ull << 20) {
  auto [h, rep] = apply_plan(p, x);
  auto r = daydream::replay(h, trace_order_policy{}, p.replay);
  auto span = span_of(h, r, p.iteration);
  const time_ns begin = span ? span->begin : 0;
  auto boundary = [&](task_id t) { return (r.end[t] - begin + cycle - 1) / cycle; };
  plan y;
  y.starts.clear();
  y.piece.clear();
  std::uint64_t cur = 0;
  time_ns cur_cycle = -1;
  for (std::size_t i = 0; i < p.gs.grads.size(); ++i) {
    const auto& gr = p.gs.grads[i];
    const auto c = boundary(gr.ready);
    const bool same_op = i > 0 && p.gs.grads[i - 1].ready == gr.ready; // never cut between an op's gradients
    if (i == 0 || (!same_op && (c != cur_cycle || cur + gr.bytes > cap))) {
      y.starts.push_back(i);
      y.piece.push_back(0);
      cur = 0;
    }
    cur_cycle = c;
    cur += gr.bytes;
  }
  return y;
}

/// A baseline: a known system's synchronization, run as its bundled pass on the
/// problem's graph and replayed like every candidate.
struct baseline {
  std::string name;     ///< "pytorch_ddp"
  std::string spec;     ///< the pass spec it ran ("ddp:bucket_cap=25MiB,first_bucket=1MiB,...")
  time_ns time = -1;    ///< predicted iteration time
  std::int64_t peak = 0;///< predicted peak memory
  std::string error;    ///< why it could not be predicted, or empty
};

/// The cluster as pass parameters (for a user who wants to run a baseline with daydream whatif) ("workers=16,machines=2,...,bandwidth=25Gbps").
inline std::string cluster_params(const cluster& c) {
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return std::string(buf);
  };
  std::string s = "machines=" + std::to_string(c.machines) + ",workers_per_machine=" +
                  std::to_string(c.workers_per_machine) + ",bandwidth=" + num(c.network.bandwidth) + "B/s" +
                  ",latency=" + num(c.network.latency) + "ns,pcie=" + num(c.pcie.bandwidth) + "B/s,pcie_latency=" +
                  num(c.pcie.latency) + "ns";
  if (c.nvlink.present())
    s += ",nvlink=" + num(c.nvlink.bandwidth) + "B/s,nvlink_latency=" + num(c.nvlink.latency) + "ns";
  if (c.parameter_servers) s += ",ps=" + std::to_string(c.parameter_servers);
  if (c.server_bandwidth > 0) s += ",ps_bandwidth=" + num(c.server_bandwidth) + "B/s";
  return s;
}

/// The baselines, each replayed on the problem's graph: PyTorch DDP (25 MiB buckets, a
/// 1 MiB first bucket), Horovod (64 MiB fusion buffers, 5 ms cycles), BytePS (4 MB
/// partitions through parameter servers), and fuse-everything (one bucket): the bundled
/// passes ddp, tensor_fusion, tensor_partition with the problem's cluster and gradient
/// sizes.
inline std::vector<baseline> run_baselines(const problem& p) {
  auto common = [&](auto& pass) {
    pass.cluster = p.c;
    pass.sizes = p.sizes;
    pass.model_bytes = p.model_bytes;
  };
  passes::ddp ddp;
  common(ddp);
  ddp.algorithm = p.algorithm;
  passes::tensor_fusion horovod;
  common(horovod);
  horovod.algorithm = p.algorithm;
  horovod.threshold = 64ull << 20;
  horovod.cycle_time = 5'000'000;
  passes::tensor_partition byteps;
  common(byteps);
  byteps.partition = 4'096'000;
  passes::ddp fuse_all = ddp;
  fuse_all.bucket_cap = fuse_all.first_bucket = std::numeric_limits<std::uint64_t>::max();
  std::vector<baseline> out;
  auto run = [&](std::string name, std::string spec, auto pass) {
    baseline b;
    b.name = std::move(name);
    b.spec = std::move(spec);
    try {
      graph h = p.g;
      pass_report rep;
      daydream::apply(h, [&](graph& gg) { rep = pass(gg); }, b.name);
      if (!rep.applied) b.error = rep.reason;
      auto e = measure(p, h);
      b.time = e.time;
      b.peak = e.peak;
    } catch (const usage_error&) {
      throw;
    } catch (const std::exception& e) {
      b.error = e.what();
    }
    out.push_back(std::move(b));
  };
  run("pytorch_ddp", "ddp:bucket_cap=25MiB,first_bucket=1MiB", ddp);
  run("horovod", "tensor_fusion:threshold=64MiB,cycle_time=5ms", horovod);
  run("byteps", "tensor_partition:partition=4096000", byteps);
  run("fuse_all", "ddp:bucket_cap=inf,first_bucket=inf", fuse_all);
  return out;
}

} // namespace daydream::optimize

#endif
