// Defines the shared machinery of the distributed passes: recorded collectives, buckets, links, bounded rates and the run every pass shares.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_DATA_PARALLEL_HPP
#define DAYDREAM_SEMANTICS_DATA_PARALLEL_HPP

#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/depend.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/report.hpp>
#include <daydream/remove.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/select.hpp>
#include <daydream/task.hpp>
#include <daydream/unroll.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/gradients.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// Why the default what-if run leaves a data-parallel pass out on `g`, or "" when it runs
/// it (each pass's static `not_applicable` returns this): the pass needs backward work
/// with recorded gradient sizes, and a trace that already synchronizes its gradients (it
/// holds recorded all-reduces: a rank of a multi-GPU job) gets no default scenario,
/// because a default cluster would silently replace the one the job ran on. An explicit
/// `--pass` still runs on such a trace: it replaces the recorded collectives and says so.
inline std::string data_parallel_not_applicable(const graph& g);

// ---------------------------------------------------------------------------------------
// Rates derived from a trace, checked against physical bounds

/// A rate a pass derived from the trace, or the documented default it fell back to.
struct bounded_value {
  double value = 0;    ///< what the pass uses
  bool derived = false; ///< whether it is the trace's (within bounds)
  std::string note;    ///< why the default is used instead, or empty
};

/// Checks a value derived from a trace against physical bounds [lo, hi]: within them it
/// is used; outside them (or when nothing could be measured, `measured <= 0`) the
/// documented `fallback` is used, and the note says what was measured, the bounds, and
/// the fallback. `what` names the quantity, `show` formats a value of it.
///
///     auto bw = bounded(measured, 20e9, 10e12, 500e9, "device memory throughput", show_rate);
template <class Show>
bounded_value bounded(double measured, double lo, double hi, double fallback, std::string_view what,
                      Show show) {
  if (measured >= lo && measured <= hi) return {measured, true, {}};
  std::string why = measured > 0 ? std::string(what) + " measured on the trace (" + show(measured) +
                                       ") is outside the physical range " + show(lo) + " .. " + show(hi)
                                 : "the trace has nothing to measure the " + std::string(what) + " on";
  return {fallback, false, why + ": using the default " + show(fallback)};
}

/// A rate in bytes per second as reports show it ("1.37 MB/s").
inline std::string format_rate(double bytes_per_s) { return format_bytes(bytes_per_s) + "/s"; }

// ---------------------------------------------------------------------------------------
// Collectives a trace recorded

/// Whether a task is communication recorded in a trace: a comm_task that a CPU call
/// launched or that runs on a GPU stream (an NCCL or RCCL kernel as the reader builds
/// it), or a GPU kernel whose name starts with "nccl" or "rccl". Communication a pass
/// inserted (add_comm) runs on a link and has no launch call: it is not recorded, so
/// composed passes never strip each other's.
inline bool is_recorded_communication(const graph& g, task_id t) {
  if (g.is<comm_task>(t)) {
    const auto r = g.resource_of(t);
    if (r != no_resource && g.resource_at(r).kind == resource_kind::gpu_stream) return true;
    for (auto d : g.predecessors(t))
      if (d.kind == dep_kind::launch) return true;
    return false;
  }
  if (!g.is<gpu_kernel>(t)) return false;
  auto n = g.name(t);
  return n.starts_with("nccl") || n.starts_with("rccl");
}

/// The collective operation of recorded communication `t`: the comm_task's op, else
/// read from the kernel name (`ncclKernel_AllReduce_...`, `ncclDevKernel_ReduceScatter_...`).
inline comm_op recorded_op(const graph& g, task_id t) {
  if (auto c = g.as<comm_task>(t); c && g.payload(c).op != comm_op::other) return g.payload(c).op;
  std::string n(g.name(t));
  for (auto& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (n.find("allreduce") != n.npos || n.find("all_reduce") != n.npos) return comm_op::all_reduce;
  if (n.find("reducescatter") != n.npos || n.find("reduce_scatter") != n.npos) return comm_op::reduce_scatter;
  return comm_op::other;
}

/// Whether `t` is recorded gradient synchronization: an all-reduce (DDP, Horovod) or a
/// reduce-scatter (ZeRO, FSDP) the trace recorded outside the forward pass. These are
/// what a data-parallel pass models, so it replaces them. Other recorded collectives
/// (the all-to-all of a model-parallel embedding, sends and receives, all-gathers of
/// parameters) are not gradient synchronization and stay as traced.
inline bool is_recorded_gradient_sync(const graph& g, task_id t) {
  if (!is_recorded_communication(g, t) || g.phase_of(t) == phase::forward) return false;
  const auto op = recorded_op(g, t);
  return op == comm_op::all_reduce || op == comm_op::reduce_scatter;
}

/// A task that waited for a recorded collective: a CPU call that blocked on it (a stream,
/// event or device synchronize) or a GPU task whose stream waited for it (DDP's wait
/// before the optimizer).
struct recorded_waiter {
  task_id task = no_task;      ///< the task that waited
  std::int32_t iteration = 0;  ///< the iteration of the collective it waited for
  dep_kind kind = dep_kind::sync; ///< how it waited
};

/// The recorded communication of a graph, as a data-parallel pass sees it.
struct recorded_collectives {
  std::vector<task_id> gradient_sync; ///< recorded all-reduces and reduce-scatters (is_recorded_gradient_sync)
  std::size_t other = 0;              ///< other recorded collectives (kept as traced)
  time_ns time = 0;                   ///< kernel time of gradient_sync, all iterations
  std::set<std::int32_t> iterations;  ///< the iterations gradient_sync belongs to
  std::uint32_t group = 0;            ///< the largest recorded group size (the job's world size), 0 if unknown

  /// Whether the trace already synchronizes gradients.
  bool distributed() const noexcept { return !gradient_sync.empty(); }
  /// One line for a report: "3 all-reduce/reduce-scatter kernels (1.80 ms) in 1 iteration(s) of a 8-worker job".
  std::string describe() const {
    std::string s = std::to_string(gradient_sync.size()) + " recorded all-reduce/reduce-scatter kernel(s) (" +
                    format_time(time) + ") in " + std::to_string(iterations.size()) + " iteration(s)";
    if (group > 1) s += " of a " + std::to_string(group) + "-worker job";
    return s;
  }
};

/// The recorded communication of `g`, without changing it.
inline recorded_collectives find_recorded_collectives(const graph& g) {
  recorded_collectives out;
  auto recorded = pred([](const auto& r) { return is_recorded_communication(*r.g, r.id); });
  for (auto t : tasks(g) | where(recorded)) {
    if (auto c = g.as<comm_task>(t)) out.group = std::max(out.group, g.payload(c).group_size);
    if (!is_recorded_gradient_sync(g, t)) { ++out.other; continue; }
    out.gradient_sync.push_back(t);
    out.time += g.duration(t);
    out.iterations.insert(g.iteration(t));
  }
  return out;
}

/// The recorded communication of `g` with particular other ranks rather than all of
/// them: point-to-point sends and receives (pipeline stages) and all-to-alls (experts,
/// sharded embeddings). A single-GPU pass changes this rank alone; these ranks'
/// neighbours are not in the trace.
struct neighbour_traffic {
  std::size_t point_to_point = 0; ///< kernels of sends and receives the trace names as such
  std::size_t all_to_all = 0;     ///< all-to-all kernels (NCCL, DeepEP dispatch and combine)
  /// NCCL SendRecv kernels whose collective the trace does not name: pipeline sends, or an
  /// all-to-all, which NCCL runs as grouped sends and receives.
  std::size_t send_recv = 0;
  bool any() const noexcept { return point_to_point + all_to_all + send_recv > 0; }
};

/// Counts the recorded neighbour communication of `g` (is_recorded_communication). O(V).
inline neighbour_traffic find_neighbour_traffic(const graph& g) {
  neighbour_traffic out;
  for (auto t : tasks(g) | where(pred([](const auto& r) { return is_recorded_communication(*r.g, r.id); }))) {
    comm_op op = comm_op::other;
    if (auto c = g.as<comm_task>(t)) op = g.payload(c).op;
    if (op == comm_op::all_to_all) ++out.all_to_all;
    else if (op == comm_op::send || op == comm_op::recv) ++out.point_to_point;
    else if (g.name(t).find("SendRecv") != std::string_view::npos) ++out.send_recv;
  }
  return out;
}

/// What a single-GPU what-if on one rank of a job with neighbour traffic leaves out, in one
/// sentence; empty when `g` has none.
inline std::string neighbours_note(const graph& g) {
  const auto n = find_neighbour_traffic(g);
  if (!n.any()) return {};
  std::vector<std::string> parts;
  if (n.point_to_point) parts.push_back(std::to_string(n.point_to_point) + " point-to-point (pipeline stages)");
  if (n.all_to_all) parts.push_back(std::to_string(n.all_to_all) + " all-to-all (experts, sharded embeddings)");
  if (n.send_recv)
    parts.push_back(std::to_string(n.send_recv) +
                    " SendRecv (pipeline sends or an all-to-all: the trace does not name the collective)");
  std::string what;
  for (std::size_t i = 0; i < parts.size(); ++i)
    what += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return "this trace is one rank of a job that exchanges data with particular other ranks (" + what +
         " communication kernels): a single-GPU scenario changes this rank alone; the ranks it sends to and "
         "receives from are not modelled, and its recorded waits for them stay as traced (give every rank's "
         "trace to model the job: daydream whatif DIR)";
}

inline std::string data_parallel_not_applicable(const graph& g) {
  bool backward = false;
  for ([[maybe_unused]] auto t : tasks(g) | where(in_phase(phase::backward))) { backward = true; break; }
  if (!backward) return "the trace has no backward pass: there are no gradients to synchronize";
  if (!has_gradient_sizes(g))
    return "the trace carries no gradient sizes (profile with record_shapes=True, or run it with model_bytes=)";
  auto rec = find_recorded_collectives(g);
  if (rec.distributed())
    return "the trace is already data-parallel (" + rec.describe() +
           "): a default cluster would replace the job's own; run it with --pass NAME:workers=N,... to model "
           "another cluster (the recorded collectives are then replaced)";
  return {};
}

/// Removes the recorded gradient synchronization of `g` (rec.gradient_sync, from
/// find_recorded_collectives(g)), bridging dependencies (daydream::remove), and returns
/// the tasks that waited for it, so that the collectives a pass inserts in their place can
/// be waited for the same way (wait_like_recorded). The CPU calls that launched them stay:
/// their time is part of the iteration. Invalidates the handles of the removed tasks.
inline std::vector<recorded_waiter> strip_gradient_sync(graph& g, const recorded_collectives& rec) {
  std::vector<recorded_waiter> waiters;
  std::set<task_id> doomed(rec.gradient_sync.begin(), rec.gradient_sync.end());
  for (auto c : rec.gradient_sync)
    for (auto d : g.successors(c)) {
      // Program order on the NCCL stream and launches are not waits.
      if (doomed.count(d.to) || d.kind == dep_kind::stream_order || d.kind == dep_kind::cpu_order ||
          d.kind == dep_kind::launch)
        continue;
      if (std::none_of(waiters.begin(), waiters.end(), [&](const recorded_waiter& w) {
            return w.task == d.to && w.iteration == g.iteration(c);
          }))
        waiters.push_back({d.to, g.iteration(c), d.kind});
    }
  daydream::remove(g, rec.gradient_sync);
  return waiters;
}

/// Removes the communication a multi-GPU trace recorded (is_recorded_communication),
/// bridging dependencies (daydream::remove), so that a distributed pass can put its own
/// back: the first half of "strip and predict". `keep(name)` may spare some (keep the
/// all-to-all of a model-parallel embedding and strip only the all-reduces). The CPU
/// calls that launched them stay. Returns the number of tasks removed. Invalidates the
/// handles of the removed tasks.
///
///     daydream::passes::strip_communication(g);
template <class Keep = bool (*)(std::string_view)>
std::size_t strip_communication(graph& g, Keep keep = [](std::string_view) { return false; }) {
  auto doomed = pred([&](const auto& r) { return is_recorded_communication(g, r.id) && !keep(r.name()); });
  std::size_t n = 0;
  for ([[maybe_unused]] auto t : tasks(g) | where(doomed)) ++n;
  daydream::remove(g, tasks(g) | where(doomed));
  return n;
}

// ---------------------------------------------------------------------------------------
// Buckets, communication tasks and links

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

/// The buckets of iteration `i`, in order.
inline std::vector<const bucket*> buckets_of(const std::vector<bucket>& bs, std::int32_t i) {
  std::vector<const bucket*> out;
  for (auto& b : bs)
    if (b.iteration == i) out.push_back(&b);
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
/// (dep_kind::stream_order): collectives of one communicator run in issue order. When
/// `consumer` is a task, it waits for the new one (dep_kind::comm). Phase backward unless
/// given; trace start at the latest end of `after`.
inline handle<comm_task> add_comm(graph& g, comm_op op, std::string_view name,
                                  std::uint64_t bytes, std::uint32_t group, time_ns duration,
                                  resource_id link, const std::vector<task_id>& after,
                                  task_id prev, std::int32_t iteration,
                                  phase ph = phase::backward, std::string_view layer = {},
                                  task_id consumer = no_task) {
  auto deps = edges_from(after, dep_kind::comm);
  if (prev != no_task) deps.push_back(edge_from(prev, dep_kind::stream_order));
  if (consumer != no_task) deps.push_back(edge_to(consumer, dep_kind::comm));
  return insert(g, comm_task{.op = op, .bytes = bytes, .group_size = group},
                task_fields{.name = name, .duration = duration, .resource = link,
                            .trace_start = trace_end_of(g, after), .layer = layer, .phase = ph,
                            .iteration = iteration},
                deps);
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

/// Whether all tasks of `g` with an iteration number >= 0 share one iteration.
inline bool single_iteration(const graph& g) {
  std::set<std::int32_t> its;
  for (auto t : tasks(g) | where(pred([](const auto& r) { return r.iteration() >= 0; })))
    its.insert(t.iteration());
  return its.size() <= 1;
}

/// Removes the weight-update phase (the optimizer step) of `g`, bridging dependencies:
/// with a parameter server that updates the weights itself, the workers never run it.
/// Returns the number of tasks removed.
inline std::size_t remove_weight_update(graph& g) {
  std::vector<task_id> doomed;
  for (auto t : tasks(g) | where(in_phase(phase::weight_update))) doomed.push_back(t);
  daydream::remove(g, doomed);
  return doomed.size();
}

// ---------------------------------------------------------------------------------------
// Parameter servers

/// What insert_push_pull added.
struct ps_plan {
  std::size_t pushes = 0;    ///< push (and pull) tasks
  std::size_t consumers = 0; ///< gradients whose pulls precede a forward task of the next iteration
  tasks_by_iteration pulls;  ///< the pulls of each iteration
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
    auto& pulls = plan.pulls[i];
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
                             no_task, i, phase::backward, gr.layer, consumer);
        daydream::reschedule(g, push.id, push_priority(gr));
        daydream::reschedule(g, pull.id, pull_priority(gr));
        pulls.push_back(pull.id);
        ++plan.pushes;
      }
      if (consumer != no_task) ++plan.consumers;
    }
  }
  return plan;
}

/// A priority that runs earlier iterations first and, within one, parameters in
/// position order (the first layer's first): P3's and TicTac's order.
inline std::int64_t position_priority(const gradient& gr) {
  return (std::int64_t(gr.iteration) << 32) + std::int64_t(gr.position);
}

// ---------------------------------------------------------------------------------------
// The run every data-parallel pass shares

/// How a data-parallel pass treats the optimizer step.
enum class weight_update : std::uint8_t {
  waits,       ///< the workers' optimizer kernels wait for the synchronization (all-reduce)
  on_servers,  ///< parameter servers update the weights: the workers' optimizer step is removed
};

/// By task id: whether the task is reachable from a task along dependencies (the task
/// itself included): daydream::reachable_from, which the passes' namespace names too.
using daydream::reachable_from;

/// Makes the optimizer step wait for `ends` the way NCCL makes it wait: a GPU stream
/// wait, so each GPU task of `entries` (update_entries of one iteration) depends on every
/// task of `ends` (dep_kind::comm), and CPU tasks never do (the CPU goes on launching).
/// Returns whether the step has GPU work that now waits; if not, the synchronization
/// only ends the iteration.
inline bool gpu_waits_for(graph& g, const std::vector<task_id>& entries, const std::vector<task_id>& ends) {
  bool waited = false;
  for (auto e : entries) {
    if (g.is<cpu_task>(e)) continue;
    daydream::wait_for(g, e, ends, dep_kind::comm);
    waited = true;
  }
  return waited;
}

/// What a data-parallel pass's own insertion sees: the graph (recorded gradient
/// synchronization already removed), its gradients, the cluster, the report to add
/// lines to, and where each iteration's optimizer step starts (update_entries, taken
/// before anything was inserted).
struct data_parallel_step {
  graph& g;
  const gradient_set& gs;
  const cluster& c;
  pass_report& rep;
  const tasks_by_iteration& entries;
  /// Iterations whose optimizer waits were added by the pass itself (wait_now), with
  /// whether the step had GPU work to wait.
  std::map<std::int32_t, bool> waited{};

  /// Makes iteration `i`'s optimizer wait for `ends` now (gpu_waits_for), for a pass
  /// whose later iterations depend on the timing of the earlier ones (tensor_fusion
  /// replays the graph); the run then leaves that iteration alone.
  void wait_now(std::int32_t i, const std::vector<task_id>& ends) {
    waited[i] = gpu_waits_for(g, of_iteration(entries, i), ends);
  }
};

/// The run every data-parallel pass shares, around its own insertion `insert`
/// (`tasks_by_iteration insert(data_parallel_step&)`, returning the tasks that end each
/// iteration's synchronization):
/// 1. the report: the pass's name, `workers` = the cluster's workers, the cluster;
/// 2. a graph without gradients (find(g) is empty), or a one-worker cluster on a trace
///    that synchronizes nothing, is left unchanged: `not_applied` with the reason;
/// 3. with weight_update::on_servers, a one-iteration graph is unrolled into `copies`
///    (daydream::unroll; the optimizer step is removed in step 5);
/// 4. recorded gradient synchronization (a rank of a multi-GPU job: find_recorded_collectives)
///    is removed and the report says so: modelled collectives never stack on recorded
///    ones;
/// 5. the gradients are found again (find) on the graph as it now is, reported, and
///    `insert` adds the pass's communication;
/// 6. with weight_update::waits, the optimizer's GPU kernels of each iteration wait for
///    what `insert` returned: a GPU stream wait, as NCCL's is (the optimizer's CPU
///    launches do not wait); an iteration whose optimizer has no GPU work is noted and
///    its synchronization only ends the iteration;
/// 7. every task that waited for a removed recorded collective (a CPU synchronize, a
///    stream wait) waits instead for the inserted synchronization of that iteration,
///    except what itself comes after the waiter (the synchronization of gradients
///    computed later): the CPU blocks on communication only where the trace shows it
///    blocking.
///
///     return run_data_parallel(g, name, cluster, [&](const graph& h) { return find_gradients(h, sizes, model_bytes); },
///                              weight_update::waits, 1, [&](data_parallel_step& s) { ...; return ends; });
template <class Find, class Insert>
pass_report run_data_parallel(graph& g, std::string_view name, const cluster& c, Find find,
                              weight_update update, std::uint32_t copies, Insert insert) {
  pass_report rep;
  rep.pass = std::string(name);
  rep.workers = static_cast<std::int32_t>(c.workers());
  rep.add("cluster", c.describe());
  const auto rec = find_recorded_collectives(g);
  if (c.workers() <= 1 && !rec.distributed()) {
    rep.not_applied("one worker: nothing to synchronize");
    return rep;
  }
  {
    auto before = find(std::as_const(g));
    if (before.grads.empty()) {
      if (!before.note.empty()) rep.note(before.note);
      rep.not_applied(rec.distributed() ? "no gradient sizes: the trace's own " + rec.describe() + " are kept"
                                        : "no gradients found: nothing to synchronize");
      return rep;
    }
  }
  // Unrolled first, so that every copy's recorded synchronization is replaced and the
  // ids of the first copy stay those of the input.
  if (update == weight_update::on_servers && copies > 1 && single_iteration(g)) {
    g = daydream::unroll(g, copies).graph;
    rep.add("unrolled", std::to_string(copies) + " iterations (read the steady state from the last)",
            report_value::of_count(copies));
  }
  std::vector<recorded_waiter> waiters;
  // A rank recorded without shapes is sized by its recorded collectives: read them before
  // they are removed.
  const auto reduced = rec.distributed() ? recorded_gradient_bytes(g) : std::map<std::int32_t, double>{};
  if (rec.distributed()) {
    const auto all = find_recorded_collectives(g); // every copy's
    waiters = strip_gradient_sync(g, all);
    rep.add("recorded gradient synchronization replaced", rec.describe(),
            report_value::of_time(double(rec.time)).with_count(std::int64_t(rec.gradient_sync.size())));
    rep.note("the trace already synchronizes gradients: its " + rec.describe() +
             " were removed and the modelled ones below replace them" +
             (rec.other ? " (" + std::to_string(rec.other) + " other recorded collective(s) kept as traced)" : ""));
  }
  auto gs = find(std::as_const(g));
  if (gs.grads.empty() && !reduced.empty()) {
    gs = gradients_from_trace(g, 0, &reduced);
    order_gradients(g, gs);
  }
  if (gs.grads.empty()) // found before the recorded synchronization was removed, not after
    throw error("daydream: pass '" + std::string(name) +
                "': the gradients found in the trace are gone once its recorded synchronization is removed");
  rep.add("gradient sizes from", std::string(to_string(gs.source)));
  const auto its = gs.iterations();
  rep.add("gradients", std::to_string(gs.grads.size()) + " in " + std::to_string(its.size()) + " iteration(s)",
          report_value::of_count(std::int64_t(gs.grads.size())));
  if (!its.empty())
    rep.add("gradient bytes per iteration", format_bytes(double(gs.bytes(its.front()))),
            report_value::of_bytes(double(gs.bytes(its.front()))));
  if (!gs.note.empty()) rep.note(gs.note);
  if (c.workers() <= 1) {
    rep.note("one worker: the recorded gradient synchronization is removed and nothing replaces it");
    return rep;
  }
  if (update == weight_update::on_servers)
    rep.add_count("optimizer tasks removed (the servers update)", std::int64_t(remove_weight_update(g)));
  const auto entries = update == weight_update::waits ? update_entries_by_iteration(g) : tasks_by_iteration{};
  data_parallel_step step{g, gs, c, rep, entries};
  const tasks_by_iteration ends = insert(step);
  if (update == weight_update::waits) {
    std::size_t without = 0;
    for (auto i : its) {
      auto done = step.waited.find(i);
      without += !(done != step.waited.end() ? done->second
                                              : gpu_waits_for(g, of_iteration(entries, i), of_iteration(ends, i)));
    }
    if (without)
      rep.note(std::to_string(without) + " iteration(s) have no optimizer work on the GPU: their "
               "synchronization only ends the iteration");
  }
  std::size_t rewired = 0;
  for (auto& w : waiters) {
    if (!g.contains(w.task)) continue;
    // A waiter in the middle of the backward pass waited for the synchronization of the
    // gradients ready before it (NCCL runs in order), not for that of gradients it comes
    // before: those ends are reachable from it and are left out.
    rewired += daydream::wait_for(g, w.task, of_iteration(ends, w.iteration), w.kind, on_cycle::skip);
  }
  if (rewired) rep.add_count("waits on the recorded collectives moved to the modelled ones", std::int64_t(rewired));
  return rep;
}

/// The run of the parameter-server passes that overlap the next forward (P3, TicTac):
/// run_data_parallel with the servers updating the weights, on exclusive up and down links
/// of the node ("uplink (one at a time) node N"), every gradient cut into `piece`-byte
/// transfers (0: whole) with `push_priority` and position_priority for the pulls, each
/// pull before the parameter's first use in the next forward. Reads the pass's name,
/// `cluster`, `sizes`, `model_bytes` and `iterations` (the copies of a one-iteration
/// graph).
template <class Pass, class PushPriority>
pass_report run_overlapped(graph& g, const Pass& x, std::uint64_t piece, PushPriority push_priority) {
  auto find = [&](const graph& h) { return find_gradients(h, x.sizes, x.model_bytes); };
  return run_data_parallel(g, Pass::name, x.cluster, find, weight_update::on_servers, x.iterations,
                           [&](data_parallel_step& s) {
    auto up = node_link(s.g, "uplink (one at a time)", s.c.network.bandwidth, sharing::exclusive);
    auto down = node_link(s.g, "downlink (one at a time)", s.c.network.bandwidth, sharing::exclusive);
    auto plan = insert_push_pull(s.g, s.gs, s.c, piece, up, down, push_priority, position_priority, true);
    if (piece) s.rep.add("slice", format_bytes(double(piece)), report_value::of_bytes(double(piece)));
    s.rep.add_count("transfers (push + pull each)", std::int64_t(plan.pushes));
    s.rep.add("pulls tied to the next forward", std::to_string(plan.consumers) + " gradients",
              report_value::of_count(std::int64_t(plan.consumers)));
    s.rep.add_count("servers", std::int64_t(s.c.servers()));
    return plan.pulls;
  });
}

} // namespace daydream::passes

#endif
