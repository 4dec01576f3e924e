// Defines the shared machinery of the distributed passes: buckets, communication tasks, links and stripping.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_DATA_PARALLEL_HPP
#define DAYDREAM_PASSES_DATA_PARALLEL_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/params.hpp>
#include <daydream/remove.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <daydream/unroll.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// Gradients communicated together: a DDP bucket, a Horovod fusion buffer.
struct bucket {
  std::int32_t iteration = 0; ///< the iteration of its gradients
  std::uint64_t bytes = 0;    ///< the sum of its gradients' bytes
  std::vector<std::size_t> members; ///< indexes into gradient_set::grads, in ready order
};

/// PyTorch DDP's bucket assignment (`compute_bucket_assignment_by_size`): walk the
/// gradients of each iteration in DDP's parameter order, reversed, which is the order
/// they become ready, and close the current bucket as soon as it holds at least `cap`
/// bytes (the tensor that crosses the cap stays in it). The first bucket of each
/// iteration uses `first_cap` (DDP's 1 MiB `first_bucket_bytes`), the others `cap`
/// (`bucket_cap_mb`, 25 MiB). A cap of 0 puts every gradient in its own bucket.
///
///     auto bs = daydream::passes::ddp_buckets(gs, 25 << 20, 1 << 20);
inline std::vector<bucket> ddp_buckets(const gradient_set& gs, std::uint64_t cap,
                                       std::uint64_t first_cap) {
  std::vector<bucket> out;
  for (auto i : gs.iterations()) {
    bucket cur{i, 0, {}};
    bool first = true;
    for (auto k : gs.of_iteration(i)) {
      cur.members.push_back(k);
      cur.bytes += gs.grads[k].bytes;
      if (cur.bytes >= (first ? first_cap : cap)) {
        out.push_back(std::move(cur));
        cur = bucket{i, 0, {}};
        first = false;
      }
    }
    if (!cur.members.empty()) out.push_back(std::move(cur));
  }
  return out;
}

/// The tasks a bucket waits for: its members' ready tasks, without duplicates.
inline std::vector<task_id> ready_tasks(const gradient_set& gs, const bucket& b) {
  std::vector<task_id> out;
  for (auto k : b.members)
    if (std::find(out.begin(), out.end(), gs.grads[k].ready) == out.end()) out.push_back(gs.grads[k].ready);
  return out;
}

/// The latest end in the trace of `ts` (their trace start plus duration): where a task
/// that depends on them sits in trace order.
inline time_ns trace_end_of(const graph& g, const std::vector<task_id>& ts) {
  time_ns e = 0;
  for (auto t : ts) e = std::max(e, g.trace_start(t) + g.duration(t));
  return e;
}

/// Adds a communication task on `link` that depends on `after` (dep_kind::comm) and,
/// when `prev` is a task, follows it in the channel's program order
/// (dep_kind::stream_order): collectives of one communicator run in issue order.
/// Phase backward unless given; trace start at the latest end of `after`.
inline handle<comm_task> add_comm(graph& g, comm_op op, std::string_view name,
                                  std::uint64_t bytes, std::uint32_t group, time_ns duration,
                                  resource_id link, const std::vector<task_id>& after,
                                  task_id prev, std::int32_t iteration,
                                  phase ph = phase::backward, std::string_view layer = {}) {
  auto h = g.add(comm_task{.op = op, .bytes = bytes, .group_size = group},
                 task_fields{.name = name, .duration = duration, .resource = link,
                             .trace_start = trace_end_of(g, after), .layer = layer, .phase = ph,
                             .iteration = iteration});
  for (auto t : after) g.add_dependency(t, h.id, dep_kind::comm);
  if (prev != no_task) g.add_dependency(prev, h.id, dep_kind::stream_order);
  return h;
}

/// Makes the optimizer step of iteration `i` wait for `comms` (dep_kind::comm to every
/// update_entries task; `entries` is update_entries_by_iteration of the graph before the
/// pass added its communication). Returns the number of entries; 0 means the iteration
/// has no weight-update phase and the communication only ends the iteration.
inline std::size_t wait_before_update(graph& g, const tasks_by_iteration& entries_by_iteration,
                                      std::int32_t i, const std::vector<task_id>& comms) {
  const auto& entries = of_iteration(entries_by_iteration, i);
  for (auto c : comms)
    for (auto e : entries) g.add_dependency(c, e, dep_kind::comm);
  return entries.size();
}

/// Whether a task is communication recorded in a trace: a comm_task, or a GPU kernel
/// whose name starts with "nccl" (NCCL, RCCL kernels).
inline bool is_recorded_communication(const graph& g, task_id t) {
  if (g.is<comm_task>(t)) return true;
  if (!g.is<gpu_kernel>(t)) return false;
  auto n = g.name(t);
  return n.starts_with("nccl") || n.starts_with("rccl");
}

/// Removes the communication a multi-GPU trace recorded (is_recorded_communication),
/// bridging dependencies (daydream::remove), so a distributed pass can put its own
/// back: the first half of "strip and predict". `keep(name)` may spare some (keep the
/// all-to-all of a model-parallel embedding and strip only the all-reduces). The CPU
/// calls that launched them stay: their time is part of the iteration. Returns the
/// number of tasks removed. Invalidates the handles of the removed tasks.
///
///     daydream::passes::strip_communication(g);
template <class Keep = bool (*)(std::string_view)>
std::size_t strip_communication(graph& g, Keep keep = [](std::string_view) { return false; }) {
  std::vector<task_id> doomed;
  g.for_each_task([&](task_id t) {
    if (is_recorded_communication(g, t) && !keep(g.name(t))) doomed.push_back(t);
  });
  daydream::remove(g, doomed);
  return doomed.size();
}

/// The node (worker) whose GPUs the graph holds: the node of its first GPU stream (a
/// trace of rank r puts its resources on node r), or 0.
inline std::int32_t worker_node(const graph& g) {
  for (resource_id r = 0; r < g.resource_count(); ++r)
    if (g.resource_at(r).kind == resource_kind::gpu_stream) return g.resource_at(r).node;
  return 0;
}

/// The link `base` of the graph's worker node ("NIC node 3"), created on first use with
/// `bandwidth` and `share`, and shared by every pass on the graph (found by name).
inline resource_id node_link(graph& g, const std::string& base, double bandwidth,
                             sharing share = sharing::fair) {
  const auto node = worker_node(g);
  return link_resource(g, base + " node " + std::to_string(node), bandwidth, share, node);
}

/// The links of the worker node a distributed pass uses.
struct node_links {
  resource_id nic = no_resource;   ///< the NIC: fair-shared by concurrent collectives
  resource_id intra = no_resource; ///< NVLink / PCIe between the GPUs of the machine, fair-shared
};

/// The fair-shared NIC and intra-machine links of the worker node ("NIC node N",
/// "intra node N").
inline node_links links_of(graph& g, const cluster& c) {
  return {node_link(g, "NIC", c.network.bandwidth), node_link(g, "intra", c.intra().bandwidth)};
}

/// The link a flat all-reduce over cluster `c` runs on: the NIC with several machines,
/// else the GPUs' link.
inline resource_id collective_link(graph& g, const cluster& c) {
  return c.machines > 1 ? node_link(g, "NIC", c.network.bandwidth) : node_link(g, "intra", c.intra().bandwidth);
}

/// Whether `g` has backward work, the minimum for a data-parallel pass to act on.
inline bool has_backward(const graph& g) {
  bool any = false;
  g.for_each_task([&](task_id t) { any = any || g.phase_of(t) == phase::backward; });
  return any;
}

/// Whether all tasks of `g` with an iteration number >= 0 share one iteration.
inline bool single_iteration(const graph& g) {
  std::set<std::int32_t> its;
  g.for_each_task([&](task_id t) {
    if (g.iteration(t) >= 0) its.insert(g.iteration(t));
  });
  return its.size() <= 1;
}

/// Adds the usual report lines of a distributed pass: the cluster and the gradients.
inline void report_gradients(pass_report& rep, const cluster& c, const gradient_set& gs) {
  rep.add("cluster", c.describe());
  rep.add("gradient sizes from", std::string(to_string(gs.source)));
  auto its = gs.iterations();
  rep.add("gradients", std::to_string(gs.grads.size()) + " in " + std::to_string(its.size()) +
                           " iteration(s)");
  if (!its.empty()) rep.add("gradient bytes per iteration", format_bytes(double(gs.bytes(its.front()))));
  if (!gs.note.empty()) rep.note(gs.note);
}

/// Removes the weight-update phase (the optimizer step) of `g`, bridging dependencies:
/// with a parameter server that updates the weights itself, the workers never run it.
/// Returns the number of tasks removed.
inline std::size_t remove_weight_update(graph& g) {
  std::vector<task_id> doomed;
  g.for_each_task([&](task_id t) {
    if (g.phase_of(t) == phase::weight_update) doomed.push_back(t);
  });
  daydream::remove(g, doomed);
  return doomed.size();
}

/// What insert_push_pull added.
struct ps_plan {
  std::size_t pushes = 0;    ///< push (and pull) tasks
  std::size_t consumers = 0; ///< gradients whose pulls precede a forward task of the next iteration
  std::vector<std::pair<std::int32_t, std::vector<task_id>>> pulls; ///< by iteration
};

/// Parameter-server transfers: every gradient cut into pieces of at most `piece` bytes
/// (0: whole), one push on `up` when the gradient is ready, one pull on `down` after
/// the push (a synchronous server answers once every worker has pushed; the workers are
/// symmetric, so this worker's push stands for all of them), each costing
/// ps_transfer_time on cluster `c`. `push_priority(gr)` and `pull_priority(gr)` set the
/// replay priorities (reschedule; read by priority_policy). With `tie_to_forward`, the
/// pulls of a parameter precede its first use in the next iteration's forward
/// (forward_consumer). Invalidates nothing.
template <class PushPriority, class PullPriority>
ps_plan insert_push_pull(graph& g, const gradient_set& gs, const cluster& c, std::uint64_t piece,
                         resource_id up, resource_id down, PushPriority push_priority,
                         PullPriority pull_priority, bool tie_to_forward) {
  ps_plan plan;
  auto its = gs.iterations();
  const auto w = c.workers(), s = c.servers();
  // The forward tasks of every iteration, before any transfer is added (transfers are
  // communication, never forward GPU work).
  const auto forward = tie_to_forward ? forward_gpu_tasks_by_iteration(g) : tasks_by_iteration{};
  for (std::size_t n = 0; n < its.size(); ++n) {
    const auto i = its[n];
    auto idx = gs.of_iteration(i);
    std::vector<task_id> fwd;
    if (n + 1 < its.size()) fwd = of_iteration(forward, its[n + 1]);
    std::vector<task_id> pulls;
    for (auto k : idx) {
      const auto& gr = gs.grads[k];
      const std::uint64_t total = std::max<std::uint64_t>(gr.bytes, 1);
      const std::uint64_t step = piece ? piece : total;
      auto consumer = forward_consumer(g, gr, idx.size(), fwd);
      const std::string label = gr.layer.empty() ? "gradient " + std::to_string(gr.position) : gr.layer;
      for (std::uint64_t off = 0; off < total; off += step) {
        const auto bytes = std::min(step, total - off);
        auto t = ps_transfer_time(double(bytes), w, s, c.network, c.server_link());
        auto push = add_comm(g, comm_op::push, "push " + label, bytes, w, t, up, {gr.ready},
                             no_task, i, phase::backward, gr.layer);
        auto pull = add_comm(g, comm_op::pull, "pull " + label, bytes, w, t, down, {push.id},
                             no_task, i, phase::backward, gr.layer);
        daydream::reschedule(g, push.id, push_priority(gr));
        daydream::reschedule(g, pull.id, pull_priority(gr));
        if (consumer != no_task) g.add_dependency(pull.id, consumer, dep_kind::comm);
        pulls.push_back(pull.id);
        ++plan.pushes;
      }
      if (consumer != no_task) ++plan.consumers;
    }
    plan.pulls.emplace_back(i, std::move(pulls));
  }
  return plan;
}

/// A priority that runs earlier iterations first and, within one, parameters in
/// position order (the first layer's first): P3's and TicTac's order.
inline std::int64_t position_priority(const gradient& gr) {
  return (std::int64_t(gr.iteration) << 32) + std::int64_t(gr.position);
}

/// Unrolls a one-iteration graph into `n` iterations (daydream::unroll) so that a
/// pass can overlap one iteration's communication with the next one's forward; leaves
/// graphs that already hold several iterations alone. Returns whether it unrolled.
inline bool unroll_for_overlap(graph& g, std::uint32_t n) {
  if (n <= 1 || !single_iteration(g)) return false;
  g = daydream::unroll(g, n).graph;
  return true;
}

} // namespace daydream::passes

#endif
