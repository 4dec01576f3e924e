// Defines compile and simulate: a strategy on a cluster, compiled from a model profile into a graph of one replica and replayed.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_SIMULATE_HPP
#define DAYDREAM_STRATEGY_SIMULATE_HPP

#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/net/collective_steps.hpp>
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/net/fine_collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace daydream::strategy {

/// Options of compile and simulate: the cost models' constants.
struct simulate_options {
  /// Bytes of one parameter as the gradient sizes count them (fp32: 4): parameters =
  /// parameter bytes / this.
  double bytes_per_param = 4;
  /// Optimizer state per parameter: Adam with fp32 master weights, momentum and variance
  /// (the K = 12 of the ZeRO paper, Rajbhandari et al. 2020).
  double optimizer_bytes_per_param = 12;
  /// Data-parallel gradient bucket (PyTorch DDP's default bucket_cap_mb = 25).
  std::uint64_t bucket_bytes = 25ull << 20;
  /// Proteus' overlap factor (replay_options::overlap_slowdown): computation on a device
  /// runs this much slower while its communication runs.
  double overlap_slowdown = 1.0;
  /// Samples per iteration over all replicas; 0: the profiled batch x the devices the
  /// strategy uses, so that every strategy on N devices trains the same global batch and
  /// dp=N is weak-scaling data parallelism. A micro-batch is global / (dp x micro).
  double global_batch = 0;
};

/// Bytes each device sends in one iteration, by kind, averaged over the devices.
struct comm_bytes {
  double dp = 0;   ///< gradient reduction (ring all-reduce; ZeRO: reduce-scatter)
  double tp = 0;   ///< tensor-parallel all-reduces of activations and their gradients
  double pp = 0;   ///< pipeline sends of activations and their gradients
  double zero = 0; ///< ZeRO's parameter all-gathers
  double total() const noexcept { return dp + tp + pp + zero; }
};

/// The memory of one device of a pipeline stage, at its peak.
struct stage_memory {
  double params = 0, gradients = 0, optimizer = 0, activations = 0;
  std::uint32_t in_flight = 0; ///< micro-batches whose activations it holds at most
  /// The trace's recorded peak less what this model names on one GPU (parameters,
  /// gradients, optimizer state, activations of the traced batch): memory the model does
  /// not name (temporaries, workspaces, buffers), or with a negative sign what it names
  /// in excess (an optimizer that keeps less state than assumed). The same on every
  /// device; 0 when the trace recorded no [memory] events.
  double recorded_rest = 0;
  /// The device's peak: the parts, never less than its parameters, gradients and
  /// optimizer state.
  double total() const noexcept {
    const double fixed = params + gradients + optimizer;
    return std::max(fixed, fixed + activations + recorded_rest);
  }
};

/// What a communication carries.
enum class comm_kind : std::uint8_t {
  tp,   ///< tensor-parallel all-reduces of activations and their gradients
  pp,   ///< pipeline sends of activations and their gradients
  dp,   ///< data-parallel gradient reduction (all-reduce; ZeRO: reduce-scatter)
  zero, ///< ZeRO's parameter all-gathers
};

/// The queue of a device a communication runs on (Proteus' HTAE): activations and their
/// gradients (tensor-parallel all-reduces, pipeline sends) on the feature queue,
/// parameter gradients and parameters (data-parallel reduction, ZeRO's gathers) on the
/// gradient queue.
enum class device_queue : std::uint8_t { features, gradients };

/// The link a kind of communication loaded most in the replay.
struct link_use {
  std::string name = "none"; ///< the physical link's kind: "NVLink", "PCIe", "NIC", "none"
  link_spec link;            ///< its figures (the whole link: nothing is divided statically)
  std::string resource;      ///< the busiest one ("rank 3: link out", "machine 0: NIC out")
  /// Its load by this kind: the time the kind's transfers on it need at its full
  /// bandwidth, over the iteration time.
  double load = 0;
  /// The share of its bandwidth the kind's transfers got on it, on average over their
  /// running time (1: never shared; 0.5: split with one other transfer throughout).
  double share = 1;
  std::string describe() const {
    if (name == "none") return "none";
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %.4g GB/s", name.c_str(), link.bandwidth / 1e9);
    std::string s = buf;
    std::snprintf(buf, sizeof buf, " (busiest: %s, loaded %.3g%% of the iteration, at %.3g%% of its bandwidth)",
                  resource.c_str(), 100 * load, 100 * share);
    return s + buf;
  }
};

/// One communication on one device: issued on its queue when the queue is free and its
/// input is ready, done on the device when its last transfer there ends.
struct queue_use {
  task_id issue = no_task;   ///< zero-time task on the device's queue (name, layer, phase, op, bytes)
  task_id done = no_task;    ///< zero-time task (no resource): the communication is done on the device
  std::uint32_t device = 0;  ///< its rank
  device_queue queue = device_queue::features;
  comm_kind kind = comm_kind::tp;
};

/// The transfer tasks of one communication (all its participants): ids [first, last).
struct transfer_range {
  task_id first = no_task, last = no_task;
  comm_kind kind = comm_kind::tp;
};

/// A strategy compiled into a graph of every device it uses (dp x tp x pp; rank =
/// (stage x dp + replica) x tp + tensor-parallel rank, machine = rank / devices per
/// machine): per device a computation stream and a feature- and a gradient-communication
/// queue; every communication as its algorithm's chunk transfers on the cluster's links
/// (add_fine_transfers: each device's port to its machine, each machine's NIC; fair-share,
/// so communications crossing one link at once split it).
struct compiled_strategy {
  strategy_spec strategy;
  std::string name;          ///< strategy_plan::name (the spec for a uniform one)
  graph g;
  std::vector<std::pair<std::size_t, std::size_t>> stages; ///< [first, last) layers of each stage
  std::vector<stage_memory> memory;                        ///< by stage
  comm_bytes comm;
  double global_batch = 0;   ///< samples per iteration, all replicas
  double micro_share = 1;    ///< a micro-batch's size over the profiled batch
  link_hierarchy hierarchy;  ///< the links the transfers cross, ranks placed on machines
  std::string intra_name;    ///< "NVLink" or "PCIe": what a device's port to its machine is
  fine_links links;          ///< the link resources (ports by rank, NICs by machine)
  std::vector<resource_id> compute, features, gradients; ///< by device (rank)
  std::vector<std::uint32_t> stage_of;                   ///< by device: its pipeline stage
  std::vector<queue_use> queue_uses;      ///< every communication on every device, in issue order per queue
  std::vector<transfer_range> transfers;  ///< every communication's transfer tasks
};

/// Whether the global batch of `o` splits into dp x micro whole micro-batches: always when
/// it is not given, or when the profiled batch counts batches, not samples (1).
inline bool splits_global_batch(const simulate_options& o, const model_profile& m, std::uint32_t dp,
                                std::uint32_t micro) {
  if (!(o.global_batch > 0 && m.batch > 1)) return true;
  const double per = o.global_batch / (double(dp) * micro);
  return per >= 1 && per == std::floor(per);
}

/// Throws daydream::usage_error when `s` cannot run `m` on `c`: more devices than the
/// cluster has, a pipeline deeper than the layer count, a tensor-parallel degree that
/// does not divide a layer's width, a global batch (in samples: the profiled batch is
/// more than 1) that does not split into dp x micro whole micro-batches.
///
/// A plan (strategy_plan) is checked the same way, the tensor-parallel degree against the
/// layers its plan splits only; the error then names the layer's tree node too.
inline void validate(const strategy_plan& p, const cluster_spec& c, const model_profile& m,
                     const simulate_options& o = {}) {
  const strategy_spec& s = p.spec;
  const std::string what = "daydream: strategy '" + p.name + "': ";
  if (s.devices() > c.devices())
    throw usage_error(what + "needs " + std::to_string(s.devices()) + " devices (dp x tp x pp), the cluster '" +
                      c.name + "' has " + std::to_string(c.devices()));
  if (s.pp > m.layers.size())
    throw usage_error(what + "a pipeline of " + std::to_string(s.pp) + " stages is deeper than the model's " +
                      std::to_string(m.layers.size()) + " layers");
  DAYDREAM_ASSERT(p.layers.size() == m.layers.size(), "strategy validate: the plan is not of this model");
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    auto& l = m.layers[i];
    if (l.width && p.layers[i].split && l.width % s.tp)
      throw usage_error(what + "tp=" + std::to_string(s.tp) + " does not divide layer '" + l.name + "' (width " +
                        std::to_string(l.width) + ")" +
                        (p.name == s.to_string() ? std::string() : ", tree node '" + p.layers[i].node + "'"));
  }
  if (!splits_global_batch(o, m, s.dp, s.micro))
    throw usage_error(what + "a global batch of " + std::to_string(std::int64_t(o.global_batch)) +
                      " does not split into dp x micro = " + std::to_string(s.dp * s.micro) + " micro-batches");
}

/// validate() of the uniform spec `s` (uniform_plan).
inline void validate(const strategy_spec& s, const cluster_spec& c, const model_profile& m,
                     const simulate_options& o = {}) {
  validate(uniform_plan(s, m), c, m, o);
}

/// Cuts the layers into `pp` contiguous stages that minimize the largest stage time
/// (forward + backward, tensor-parallel parts divided by `tp`): exact, by dynamic
/// programming, O(pp n^2). Returns [first, last) of each stage.
///
/// With a plan: only the layers it splits are divided by its tp, and a layer pinned to a
/// stage (resolved_layer::stage) lies in that stage; the cut is the best among those that
/// honour every pin. Throws daydream::usage_error when no cut does (pins that leave a
/// stage without layers).
inline std::vector<std::pair<std::size_t, std::size_t>> balance_stages(const model_profile& m, std::uint32_t pp,
                                                                        const strategy_plan* plan) {
  const std::size_t n = m.layers.size();
  if (pp == 0 || pp > n) throw usage_error("daydream: balance_stages: need 1 to " + std::to_string(n) + " stages");
  const std::uint32_t tp = plan ? plan->spec.tp : 1;
  std::vector<double> pre(n + 1, 0);
  std::vector<std::int32_t> pin(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = m.layers[i];
    const bool split = !plan || plan->layers[i].split;
    if (plan) pin[i] = plan->layers[i].stage;
    pre[i + 1] = pre[i] + (split ? double(l.forward_split + l.backward_split) / tp
                                 : double(l.forward_split + l.backward_split)) +
                 double(l.forward_other + l.backward_other);
  }
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the largest stage time of the first i layers in k stages; cut[k][i]: where the last starts.
  std::vector<std::vector<double>> best(pp + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> cut(pp + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::uint32_t k = 1; k <= pp; ++k)
    for (std::size_t i = k; i <= n; ++i)
      // Stage k - 1 = layers [j, i): every pin in it must be k - 1. Larger j first, so
      // that a pin stops the scan; ties go to the smallest j.
      for (std::size_t j = i; j-- > k - 1;) {
        if (pin[j] >= 0 && pin[j] != std::int32_t(k - 1)) break;
        const double v = std::max(best[k - 1][j], pre[i] - pre[j]);
        if (v <= best[k][i] && v < inf) { best[k][i] = v; cut[k][i] = j; }
      }
  if (!(best[pp][n] < inf))
    throw usage_error("daydream: strategy: no cut of the " + std::to_string(n) + " layers into " + std::to_string(pp) +
                      " pipeline stages honours the stage pins (a stage would have no layers)");
  std::vector<std::pair<std::size_t, std::size_t>> out(pp);
  for (std::size_t k = pp, i = n; k > 0; --k) {
    out[k - 1] = {cut[k][i], i};
    i = cut[k][i];
  }
  return out;
}

/// balance_stages of a uniform `tp`: every layer's tensor-parallel part divided by it.
inline std::vector<std::pair<std::size_t, std::size_t>> balance_stages(const model_profile& m, std::uint32_t pp,
                                                                        std::uint32_t tp = 1) {
  if (tp <= 1) return balance_stages(m, pp, nullptr);
  strategy_spec s;
  s.tp = tp;
  s.pp = pp;
  auto p = uniform_plan(s, m);
  for (auto& l : p.layers) l.split = true; // forward_split is 0 where a layer does not split
  return balance_stages(m, pp, &p);
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline time_ns ns(double v) { return static_cast<time_ns>(std::llround(std::max(0.0, v))); }
} // namespace detail
//! @endcond

/// How compile() runs one layer on each device of its stage, for one micro-batch: the
/// decisions taken per layer (whether it splits, what communication follows it, whether
/// its forward runs again in the backward), as costs.
struct layer_plan {
  double forward = 0;  ///< one device's forward time (ns)
  double backward = 0; ///< one device's backward time (ns), with the forward again when recomputed
  /// Bytes of the tensor-parallel collectives (per device, whole tensor) after its
  /// forward (all-reduce of its output, then all-gather of its output) and after its
  /// backward (all-reduce of its input gradient, then all-gather of it); 0: none.
  double fwd_all_reduce = 0, fwd_all_gather = 0, bwd_all_reduce = 0, bwd_all_gather = 0;
  double params = 0;   ///< parameter bytes one device holds of it (before ZeRO divides them)
  bool recompute = false; ///< its forward runs again before its backward
};

/// The costs of layer `i` of `m` under plan `p` (strategy_tree::resolve) with
/// micro-batches of `micro_share` of the profiled batch: a split layer divides the split
/// part of its time and its parameters by tp; its collectives as resolved_layer says, a
/// block's backward all-reduce sized as its output (the uniform spec's Megatron-LM pair:
/// an all-reduce of the output after the forward and after the backward), a column's
/// by its input; a re-computed layer runs its forward again before its backward.
inline layer_plan plan_layer(const strategy_plan& p, const model_profile& m, std::size_t i, double micro_share) {
  const auto& l = m.layers[i];
  const auto& r = p.layers[i];
  const double t = p.spec.tp;
  layer_plan pl;
  pl.forward = (r.split ? double(l.forward_split) / t + double(l.forward_other)
                        : double(l.forward_split) + double(l.forward_other)) * micro_share;
  pl.backward = (r.split ? double(l.backward_split) / t + double(l.backward_other)
                         : double(l.backward_split) + double(l.backward_other)) * micro_share;
  pl.recompute = r.recompute;
  if (r.recompute) pl.backward += pl.forward;
  if (p.spec.tp > 1) {
    const double out = double(l.output_bytes) * micro_share;
    const double in = double(i > 0 ? m.layers[i - 1].output_bytes : l.stash_bytes) * micro_share;
    if (r.fwd_all_reduce) pl.fwd_all_reduce = out;
    if (r.fwd_all_gather) pl.fwd_all_gather = out;
    if (r.bwd_all_reduce) pl.bwd_all_reduce = r.part == partition::block ? out : in;
    if (r.bwd_all_gather) pl.bwd_all_gather = in;
  }
  pl.params = r.split ? double(l.param_bytes) / t : double(l.param_bytes);
  return pl;
}

/// The costs of layer `i` under the uniform spec `s` (plan_layer of uniform_plan).
inline layer_plan plan_layer(const strategy_spec& s, const model_profile& m, std::size_t i, double micro_share) {
  return plan_layer(uniform_plan(s, m), m, i, micro_share);
}

/// A ring collective as compile() builds it: one transfer per hop (member j to j + 1 in
/// rank order) carrying what that hop carries over all the ring's steps, and the step
/// count (each transfer pays one latency per step).
struct ring_transfers {
  std::vector<collective_transfer> transfers;
  std::uint32_t steps = 0;
};

/// The pipelined ring of `op` (all-reduce: 2(p-1) steps; reduce-scatter, all-gather: p-1)
/// of `bytes` over `p` members: the steps of collective_transfers' ring merged per hop,
/// as NCCL pipelines a ring's slices so that each link streams. Alone on its links it
/// takes exactly the step-by-step time, steps x (latency + bytes / p / bandwidth) on the
/// slowest hop; sharing a link, a hop runs at its share throughout instead of step by
/// step, and the ring is done (on every member) when its slowest hop is.
inline ring_transfers pipelined_ring(comm_op op, double bytes, std::uint32_t p) {
  ring_transfers r;
  if (p <= 1) return r;
  r.steps = op == comm_op::all_reduce ? 2 * (p - 1) : p - 1;
  const double per_hop = bytes / double(p) * double(r.steps);
  for (std::uint32_t i = 0; i < p; ++i) r.transfers.push_back({0, i, (i + 1) % p, per_hop});
  return r;
}

/// Compiles strategy `s` of model `m` on cluster `c` into a graph of every device the
/// strategy uses (compiled_strategy). Per device, Proteus' HTAE queues: a computation
/// stream whose order the schedule (1F1B or GPipe) fixes, a feature-communication queue
/// (tensor-parallel all-reduces, pipeline sends) and a gradient-communication queue
/// (data-parallel buckets, ZeRO's gathers). A communication is issued on its queue when
/// the queue is free (the previous one on it is done on this device) and its input is
/// ready; its transfers start when both their ends have issued it (and finished their
/// earlier steps); computation that needs it waits until it is done on its device. A
/// pipeline send holds the sender's feature queue only. Also fills the analytic
/// communication volumes and memory. Validates first (validate()). See docs/strategy.md.
///
/// Each layer follows its plan (strategy_plan, plan_layer: tensor-parallel split, the
/// tensor-parallel collectives after its forward and backward, re-computation, stage
/// pin); compile(strategy_spec) runs the uniform plan of the spec.
inline compiled_strategy compile(const strategy_plan& plan, const cluster_spec& c, const model_profile& m,
                                 const simulate_options& o = {}) {
  validate(plan, c, m, o);
  const strategy_spec& s = plan.spec;
  compiled_strategy out;
  out.strategy = s;
  out.name = plan.name;
  const std::uint32_t p = s.pp, mb = s.micro, t = s.tp, dp = s.dp;
  const std::uint32_t per_stage = dp * t, devices = s.devices();
  out.global_batch = o.global_batch > 0 ? o.global_batch : double(devices) * m.batch;
  out.micro_share = out.global_batch / (double(dp) * mb * m.batch);
  const double share = out.micro_share;
  out.stages = balance_stages(m, p, &plan);
  out.hierarchy = link_hierarchy::of(c.links, devices);
  out.intra_name = c.links.nvlink.present() ? "NVLink" : "PCIe";
  std::vector<layer_plan> plans;
  for (std::size_t i = 0; i < m.layers.size(); ++i) plans.push_back(plan_layer(plan, m, i, share));

  auto& g = out.g;
  for (std::uint32_t d = 0; d < devices; ++d) {
    const auto sd = "device " + std::to_string(d);
    const auto node = static_cast<std::int32_t>(d);
    out.compute.push_back(g.add_resource({sd + " compute", resource_kind::gpu_stream, sharing::exclusive, node, node}));
    out.features.push_back(g.add_resource({sd + " features", resource_kind::other, sharing::exclusive, node, node}));
    out.gradients.push_back(g.add_resource({sd + " gradients", resource_kind::other, sharing::exclusive, node, node}));
    out.stage_of.push_back(d / per_stage);
  }

  time_ns clock = 0;
  const double total_params = double(m.param_bytes());
  // What the recorded peak holds beyond this model's one-GPU memory (see stage_memory).
  double recorded_rest = 0;
  if (m.recorded_peak > 0) {
    double one_gpu = total_params * (2 + o.optimizer_bytes_per_param / o.bytes_per_param);
    for (auto& l : m.layers) one_gpu += double(l.held());
    recorded_rest = m.recorded_peak - one_gpu;
  }
  auto update_of = [&](std::size_t i) {
    const auto& l = m.layers[i];
    double u = total_params > 0 ? double(m.update) * double(l.param_bytes) / total_params
                                : double(m.update) / double(m.layers.size());
    if (plan.layers[i].split) u /= t;
    if (s.zero >= 1) u /= dp;
    return u;
  };
  auto input_bytes = [&](std::size_t i) {
    return double(i > 0 ? m.layers[i - 1].output_bytes : m.layers[0].stash_bytes);
  };

  // By device of a stage (index r x tp + tensor-parallel rank): a task of each.
  using per_device = std::vector<task_id>;
  const per_device none(per_stage, no_task);
  // Pipeline arrivals and the first kernels waiting for them, joined once every stage exists.
  std::vector<std::vector<per_device>> f_first(p, std::vector<per_device>(mb, none)), f_arrive = f_first,
      b_first = f_first, b_arrive = f_first;
  comm_bytes sum;
  for (std::uint32_t k = 0; k < p; ++k) {
    const std::size_t first = out.stages[k].first, last = out.stages[k].second;
    auto rank = [&](std::uint32_t i) { return k * per_stage + i; };
    per_device prev = none, gate = none, fq = none, gq = none;

    // Computation: on every device of the stage, after the previous kernel and what it waits for.
    auto kernel = [&](const char* name, double dur, const std::string& layer, phase ph) {
      per_device x(per_stage);
      const time_ns at = clock++;
      for (std::uint32_t i = 0; i < per_stage; ++i) {
        x[i] = g.add(gpu_kernel{.device = std::int32_t(rank(i))},
                     {.name = name, .duration = detail::ns(dur), .resource = out.compute[rank(i)], .trace_start = at,
                      .layer = layer, .phase = ph})
                   .id;
        if (prev[i] != no_task) g.add_dependency(prev[i], x[i], dep_kind::stream_order);
        if (gate[i] != no_task) g.add_dependency(gate[i], x[i], dep_kind::comm);
      }
      prev = x;
      gate = none;
      return x;
    };
    // Issues `op` on queue `q` of device rank(i) after `input[i]`; returns the issue task.
    auto issue = [&](std::uint32_t i, device_queue q, comm_op op, double bytes, std::uint32_t group, task_id input,
                     const char* name, const std::string& layer, phase ph, time_ns at) {
      const auto d = rank(i);
      auto& queue_last = q == device_queue::features ? fq[i] : gq[i];
      auto x = g.add(comm_task{.op = op, .bytes = std::uint64_t(std::llround(bytes)), .group_size = group,
                               .device = std::int32_t(d)},
                     {.name = name, .duration = 0,
                      .resource = q == device_queue::features ? out.features[d] : out.gradients[d],
                      .trace_start = at, .layer = layer, .phase = ph})
                   .id;
      if (input != no_task) g.add_dependency(input, x, dep_kind::comm);
      if (queue_last != no_task) g.add_dependency(queue_last, x, dep_kind::control);
      return x;
    };
    auto done_task = [&](const std::vector<task_id>& after, const char* name, const std::string& layer, phase ph,
                         time_ns at) {
      auto x = g.add(cpu_task{}, {.name = name, .duration = 0, .resource = no_resource, .trace_start = at,
                                  .layer = layer, .phase = ph})
                   .id;
      for (auto a : after) g.add_dependency(a, x, dep_kind::comm);
      return x;
    };
    // Collective `op` of `bytes` per device on queue `q` of every device of the stage,
    // after `input`, among each tensor-parallel group (kind tp) or each data-parallel
    // group (the same tensor-parallel rank of every replica); ring in rank order.
    // Returns when it is done, by device.
    auto collective = [&](device_queue q, comm_kind kind, comm_op op, double bytes, const per_device& input,
                          const char* name, const std::string& layer, phase ph) {
      const std::uint32_t size = kind == comm_kind::tp ? t : dp;
      const time_ns at = clock++;
      per_device iss(per_stage), done(per_stage);
      for (std::uint32_t i = 0; i < per_stage; ++i)
        iss[i] = issue(i, q, op, bytes, size, input[i], name, layer, ph, at);
      // A ring pipelines its steps: each hop (member j to j + 1) is one transfer of all the
      // bytes it carries over the steps, paying one latency per step (pipelined_ring).
      const auto ring = pipelined_ring(op, bytes, size);
      fine_transfer_options fo;
      fo.op = op;
      fo.name = name;
      fo.latency_count = ring.steps;
      fo.trace_start = at;
      fo.iteration = 0;
      fo.layer = layer;
      fo.ph = ph;
      const std::string done_name = std::string(name) + " done";
      std::vector<std::int32_t> ranks(size);
      std::vector<task_id> starts(size), hops;
      std::vector<std::uint32_t> member(size);
      for (std::uint32_t grp = 0; grp < per_stage / size; ++grp) {
        for (std::uint32_t j = 0; j < size; ++j) {
          member[j] = kind == comm_kind::tp ? grp * t + j : j * t + grp;
          ranks[j] = std::int32_t(rank(member[j]));
          starts[j] = iss[member[j]];
        }
        auto built = add_fine_transfers(g, out.links, out.hierarchy, ranks, ring.transfers, starts, fo);
        out.transfers.push_back({built.first_task, task_id(g.id_bound()), kind});
        // Done on every member when its slowest hop is: the ring's data flows through all.
        hops.clear();
        for (auto& l : built.last) hops.insert(hops.end(), l.begin(), l.end());
        std::sort(hops.begin(), hops.end());
        hops.erase(std::unique(hops.begin(), hops.end()), hops.end());
        const auto all = done_task(hops, done_name.c_str(), layer, ph, at);
        for (std::uint32_t j = 0; j < size; ++j) {
          const auto i = member[j];
          done[i] = all;
          (q == device_queue::features ? fq[i] : gq[i]) = all;
          out.queue_uses.push_back({iss[i], all, rank(i), q, kind});
        }
      }
      return done;
    };
    // Sends `bytes` from every device of the stage to its peer (same replica and
    // tensor-parallel rank) of stage `to`, on the sender's feature queue after `input`.
    // Returns, by device, when it has arrived (and the sender's queue is free again).
    auto send = [&](std::uint32_t to, double bytes, const per_device& input, const char* name,
                    const std::string& layer, phase ph) {
      const time_ns at = clock++;
      per_device arrived(per_stage);
      const std::vector<collective_transfer> steps{{0, 0, 1, bytes}};
      fine_transfer_options fo;
      fo.op = comm_op::send;
      fo.name = name;
      fo.trace_start = at;
      fo.iteration = 0;
      fo.layer = layer;
      fo.ph = ph;
      const std::string done_name = std::string(name) + " done";
      for (std::uint32_t i = 0; i < per_stage; ++i) {
        const auto x = issue(i, device_queue::features, comm_op::send, bytes, 2, input[i], name, layer, ph, at);
        auto built = add_fine_transfers(g, out.links, out.hierarchy,
                                        {std::int32_t(rank(i)), std::int32_t(to * per_stage + i)}, steps,
                                        {x, no_task}, fo);
        out.transfers.push_back({built.first_task, task_id(g.id_bound()), comm_kind::pp});
        arrived[i] = done_task(built.last[0], done_name.c_str(), layer, ph, at);
        fq[i] = arrived[i];
        out.queue_uses.push_back({x, arrived[i], rank(i), device_queue::features, comm_kind::pp});
      }
      return arrived;
    };
    auto after_gate = [&](const per_device& x) {
      per_device v(per_stage);
      for (std::uint32_t i = 0; i < per_stage; ++i) v[i] = gate[i] != no_task ? gate[i] : x[i];
      return v;
    };

    if (m.other > 0) kernel("outside the layers", double(m.other), "", phase::other);

    // ZeRO-3 gathers each layer's parameters before its first forward and first backward.
    std::vector<per_device> gather_f(m.layers.size()), gather_b(m.layers.size());
    if (s.zero == 3 && dp > 1)
      for (auto i = first; i < last; ++i) {
        gather_f[i] = collective(device_queue::gradients, comm_kind::zero, comm_op::all_gather, plans[i].params, none,
                                 "zero-3 all-gather", m.layers[i].name, phase::forward);
        sum.zero += (dp - 1.0) / dp * plans[i].params;
      }

    std::vector<per_device> last_forward(m.layers.size()), ready(m.layers.size());
    auto forward = [&](std::uint32_t j) {
      for (auto i = first; i < last; ++i) {
        const auto& l = m.layers[i];
        const auto& pl = plans[i];
        auto x = kernel("forward", pl.forward, l.name, phase::forward);
        if (i == first) f_first[k][j] = x;
        if (!gather_f[i].empty() && j == 0)
          for (std::uint32_t d = 0; d < per_stage; ++d) g.add_dependency(gather_f[i][d], x[d], dep_kind::comm);
        last_forward[i] = x;
        if (pl.fwd_all_reduce > 0) {
          gate = collective(device_queue::features, comm_kind::tp, comm_op::all_reduce, pl.fwd_all_reduce, x,
                            "tp all-reduce", l.name, phase::forward);
          sum.tp += 2.0 * (t - 1) / t * pl.fwd_all_reduce;
        }
        if (pl.fwd_all_gather > 0) {
          gate = collective(device_queue::features, comm_kind::tp, comm_op::all_gather, pl.fwd_all_gather,
                            after_gate(x), "tp all-gather", l.name, phase::forward);
          sum.tp += (t - 1.0) / t * pl.fwd_all_gather;
        }
        if (i + 1 == last && k + 1 < p) {
          const double bytes = double(l.output_bytes) * share;
          f_arrive[k + 1][j] = send(k + 1, bytes, after_gate(x), "pp send activations", l.name, phase::forward);
          sum.pp += bytes;
        }
      }
    };
    auto backward = [&](std::uint32_t j) {
      for (auto i = last; i-- > first;) {
        const auto& l = m.layers[i];
        const auto& pl = plans[i];
        const bool gathered = gather_b[i].empty() && s.zero == 3 && dp > 1;
        if (gathered) {
          gather_b[i] = collective(device_queue::gradients, comm_kind::zero, comm_op::all_gather, pl.params,
                                   last_forward[i], "zero-3 all-gather", l.name, phase::backward);
          sum.zero += (dp - 1.0) / dp * pl.params;
        }
        auto x = kernel("backward", pl.backward, l.name, phase::backward);
        if (gathered)
          for (std::uint32_t d = 0; d < per_stage; ++d) g.add_dependency(gather_b[i][d], x[d], dep_kind::comm);
        if (i + 1 == last) b_first[k][j] = x;
        ready[i] = x;
        if (pl.bwd_all_reduce > 0) {
          gate = collective(device_queue::features, comm_kind::tp, comm_op::all_reduce, pl.bwd_all_reduce, x,
                            "tp all-reduce", l.name, phase::backward);
          sum.tp += 2.0 * (t - 1) / t * pl.bwd_all_reduce;
          ready[i] = gate;
        }
        if (pl.bwd_all_gather > 0) {
          gate = collective(device_queue::features, comm_kind::tp, comm_op::all_gather, pl.bwd_all_gather,
                            after_gate(x), "tp all-gather", l.name, phase::backward);
          sum.tp += (t - 1.0) / t * pl.bwd_all_gather;
          ready[i] = gate;
        }
        if (i == first && k > 0) {
          const double bytes = input_bytes(i) * share;
          b_arrive[k - 1][j] = send(k - 1, bytes, ready[i], "pp send gradients", l.name, phase::backward);
          sum.pp += bytes;
        }
      }
    };
    if (s.schedule == pipeline_schedule::gpipe) {
      for (std::uint32_t j = 0; j < mb; ++j) forward(j);
      for (std::uint32_t j = 0; j < mb; ++j) backward(j);
    } else {
      const std::uint32_t warm = std::min(p - k - 1, mb);
      for (std::uint32_t j = 0; j < warm; ++j) forward(j);
      for (std::uint32_t j = 0; j + warm < mb; ++j) {
        forward(j + warm);
        backward(j);
      }
      for (std::uint32_t j = mb - warm; j < mb; ++j) backward(j);
    }

    // Gradient reduction in buckets, in the order the last micro-batch's backward makes them ready.
    per_device last_bucket = none;
    if (dp > 1) {
      double bucket = 0;
      const per_device* bucket_ready = nullptr;
      auto flush = [&] {
        if (bucket <= 0 && bucket_ready == nullptr) return;
        const bool rs = s.zero >= 1;
        last_bucket = collective(device_queue::gradients, comm_kind::dp,
                                 rs ? comm_op::reduce_scatter : comm_op::all_reduce, bucket,
                                 bucket_ready ? *bucket_ready : none, rs ? "dp reduce-scatter" : "dp all-reduce", "",
                                 phase::backward);
        sum.dp += (rs ? 1.0 : 2.0) * (dp - 1.0) / dp * bucket;
        bucket = 0;
        bucket_ready = nullptr;
      };
      for (auto i = last; i-- > first;) {
        bucket += plans[i].params;
        bucket_ready = &ready[i];
        if (bucket >= double(o.bucket_bytes)) flush();
      }
      flush();
    }
    double update = 0;
    for (auto i = first; i < last; ++i) update += update_of(i);
    auto u = kernel("weight update", update, "", phase::weight_update);
    for (std::uint32_t d = 0; d < per_stage; ++d)
      if (last_bucket[d] != no_task) g.add_dependency(last_bucket[d], u[d], dep_kind::comm);
    if ((s.zero == 1 || s.zero == 2) && dp > 1) {
      double bytes = 0;
      for (auto i = first; i < last; ++i) bytes += plans[i].params;
      collective(device_queue::gradients, comm_kind::zero, comm_op::all_gather, bytes, u, "zero all-gather", "",
                 phase::weight_update);
      sum.zero += (dp - 1.0) / dp * bytes;
    }

    // Memory of one device of this stage.
    stage_memory mem;
    // Re-computed layers keep their input, and the largest of them its stash while it
    // runs again; the others keep their stash.
    double stash = 0, inputs = 0, largest = 0;
    for (auto i = first; i < last; ++i) {
      mem.params += plans[i].params;
      if (!plans[i].recompute) { stash += double(m.layers[i].held()) * share; continue; }
      inputs += input_bytes(i) * share;
      largest = std::max(largest, double(m.layers[i].held()) * share);
    }
    mem.recorded_rest = recorded_rest;
    mem.gradients = mem.params;
    mem.optimizer = mem.params / o.bytes_per_param * o.optimizer_bytes_per_param;
    if (s.zero >= 1) mem.optimizer /= dp;
    if (s.zero >= 2) mem.gradients /= dp;
    if (s.zero >= 3) mem.params /= dp;
    mem.in_flight = s.schedule == pipeline_schedule::gpipe ? mb : std::min(p - k, mb);
    mem.activations = mem.in_flight * (inputs + stash) + largest;
    out.memory.push_back(mem);
  }
  for (std::uint32_t k = 0; k < p; ++k)
    for (std::uint32_t j = 0; j < mb; ++j)
      for (std::uint32_t i = 0; i < per_stage; ++i) {
        if (k > 0) g.add_dependency(f_arrive[k][j][i], f_first[k][j][i], dep_kind::comm);
        if (k + 1 < p) g.add_dependency(b_arrive[k][j][i], b_first[k][j][i], dep_kind::comm);
      }
  out.comm = {sum.dp / p, sum.tp / p, sum.pp / p, sum.zero / p};
  return out;
}

/// compile() of the uniform plan of `s` (uniform_plan: every layer as the spec says).
inline compiled_strategy compile(const strategy_spec& s, const cluster_spec& c, const model_profile& m,
                                 const simulate_options& o = {}) {
  return compile(uniform_plan(s, m), c, m, o);
}

/// What simulate predicts for one strategy.
struct evaluation {
  strategy_spec strategy;
  std::string name;            ///< strategy_plan::name (the spec for a uniform one)
  time_ns predicted = 0;       ///< iteration time
  double samples_per_s = 0;    ///< global batch / iteration time
  double global_batch = 0;     ///< samples per iteration, all replicas
  double peak_memory = 0;      ///< the largest device's peak, bytes
  bool oom = false;            ///< peak_memory above the cluster's device memory
  comm_bytes comm;             ///< bytes each device sends per iteration (mean over devices)
  std::vector<stage_memory> memory; ///< by stage
  std::vector<std::pair<std::size_t, std::size_t>> stages;
  link_use dp_link, tp_link, pp_link; ///< the busiest link of each kind (busiest_links)
  std::uint32_t busiest_device = 0;   ///< the device the breakdown is of (its rank)
  /// Breakdown of the iteration on its busiest device (they add up to `predicted`).
  /// dp_exposed: gradient reduction between the last backward and the update, plus what
  /// the gradient queue runs after the update (ZeRO-1/2's all-gather).
  time_ns compute = 0, tp_comm = 0, dp_exposed = 0, update = 0, other = 0, bubble = 0;
  /// What bounds the iteration: "compute", "pipeline bubble", "tensor-parallel all-reduces over ...",
  /// "data-parallel gradient sync over ...", "time outside the layers".
  std::string bound;
};

/// The links each kind of communication loaded most in replay `r` of `cs`: for tp, pp and
/// dp (data-parallel reduction and ZeRO's gathers together), the link resource whose
/// transfers of that kind need the most time at full bandwidth (the lowest id among
/// equals), its load over `iteration` and the bandwidth share those transfers got on it.
/// A kind without transfers gets "none".
inline std::array<link_use, 3> busiest_links(const compiled_strategy& cs, const replay_result& r, time_ns iteration) {
  const auto& g = cs.g;
  const std::size_t nres = g.resource_count();
  // Slots: 0 tp, 1 pp, 2 dp (with zero).
  auto slot = [](comm_kind k) { return k == comm_kind::tp ? 0 : k == comm_kind::pp ? 1 : 2; };
  std::array<std::vector<double>, 3> nominal, replayed;
  std::array<std::vector<std::uint8_t>, 3> used;
  for (std::size_t k = 0; k < 3; ++k) {
    nominal[k].assign(nres, 0);
    replayed[k].assign(nres, 0);
    used[k].assign(nres, 0);
  }
  for (auto& tr : cs.transfers) {
    const auto k = std::size_t(slot(tr.kind));
    for (task_id x = tr.first; x < tr.last; ++x) {
      const auto res = g.resource_of(x);
      if (res == no_resource) continue;
      nominal[k][res] += double(g.duration(x));
      replayed[k][res] += double(r.duration(x));
      used[k][res] = 1;
    }
  }
  std::vector<std::uint8_t> is_nic(nres, 0);
  for (auto& [key, res] : cs.links.nic_out) is_nic[res] = 1;
  for (auto& [key, res] : cs.links.nic_in) is_nic[res] = 1;
  std::array<link_use, 3> out;
  for (std::size_t k = 0; k < 3; ++k) {
    std::size_t best = nres;
    for (std::size_t res = 0; res < nres; ++res)
      if (used[k][res] && (best == nres || nominal[k][res] > nominal[k][best])) best = res;
    if (best == nres) continue;
    auto& u = out[k];
    if (is_nic[best]) {
      u.name = "NIC";
      u.link = cs.hierarchy.nic;
    } else {
      u.name = cs.intra_name;
      u.link = cs.hierarchy.intra;
    }
    u.resource = g.resource_at(resource_id(best)).name;
    u.load = iteration > 0 ? nominal[k][best] / double(iteration) : 0;
    u.share = replayed[k][best] > 0 ? nominal[k][best] / replayed[k][best] : 1;
  }
  return out;
}

/// A span on one of a device's tracks in a replay of a compiled strategy.
struct device_span {
  std::uint32_t device = 0; ///< rank
  std::uint8_t track = 0;   ///< 0: computation, 1: feature queue, 2: gradient queue
  task_id task = no_task;   ///< the kernel, or the communication's issue task (its name, layer, phase)
  time_ns start = 0, end = 0;
};

/// The tracks of every device in replay `r` of `cs`: its kernels on the computation
/// track, and each communication on its queue's track from its issue to when it is done
/// on the device. Sorted by device, track, start.
inline std::vector<device_span> device_spans(const compiled_strategy& cs, const replay_result& r) {
  std::vector<device_span> out;
  std::vector<std::int32_t> device_of(cs.g.resource_count(), -1);
  for (std::size_t d = 0; d < cs.compute.size(); ++d) device_of[cs.compute[d]] = std::int32_t(d);
  cs.g.for_each_task([&](task_id x) {
    const auto res = cs.g.resource_of(x);
    if (res != no_resource && device_of[res] >= 0 && r.start[x] >= 0)
      out.push_back({std::uint32_t(device_of[res]), 0, x, r.start[x], r.end[x]});
  });
  for (auto& u : cs.queue_uses)
    out.push_back({u.device, std::uint8_t(u.queue == device_queue::features ? 1 : 2), u.issue, r.start[u.issue],
                   r.end[u.done]});
  std::sort(out.begin(), out.end(), [](const device_span& a, const device_span& b) {
    return std::tie(a.device, a.track, a.start, a.task) < std::tie(b.device, b.track, b.start, b.task);
  });
  return out;
}

/// Compiles `s` (compile()), replays the graph of every device with the overlap factor,
/// and reads the iteration time, throughput, memory, the busiest link of each kind of
/// communication and what bounds the iteration on the busiest device (the most
/// computation; the lowest rank among equals).
inline evaluation simulate(const strategy_plan& plan, const cluster_spec& c, const model_profile& m,
                           const simulate_options& o = {}) {
  const strategy_spec& s = plan.spec;
  auto cs = compile(plan, c, m, o);
  replay_options ro;
  ro.overlap_slowdown = o.overlap_slowdown;
  auto r = replay(cs.g, trace_order_policy{}, ro);
  evaluation e;
  e.strategy = s;
  e.name = plan.name;
  e.predicted = r.makespan;
  e.global_batch = cs.global_batch;
  e.samples_per_s = r.makespan > 0 ? cs.global_batch / (double(r.makespan) / 1e9) : 0;
  for (auto& mem : cs.memory) e.peak_memory = std::max(e.peak_memory, mem.total());
  e.oom = e.peak_memory > c.memory_bytes;
  e.comm = cs.comm;
  e.memory = cs.memory;
  e.stages = cs.stages;
  auto links = busiest_links(cs, r, r.makespan);
  e.tp_link = links[0];
  e.pp_link = links[1];
  e.dp_link = links[2];
  const std::size_t n = cs.compute.size();
  std::vector<time_ns> comp(n, 0), tpc(n, 0), bwd_end(n, 0), upd_start(n, 0), upd(n, 0), grad_end(n, 0);
  std::vector<std::int32_t> device_of(cs.g.resource_count(), -1);
  for (std::size_t d = 0; d < n; ++d) device_of[cs.compute[d]] = std::int32_t(d);
  cs.g.for_each_task([&](task_id x) {
    const auto res = cs.g.resource_of(x);
    if (res == no_resource || device_of[res] < 0) return;
    const auto d = std::size_t(device_of[res]);
    const auto ph = cs.g.phase_of(x);
    if (ph == phase::forward || ph == phase::backward) comp[d] += r.duration(x);
    if (ph == phase::backward) bwd_end[d] = std::max(bwd_end[d], r.end[x]);
    if (ph == phase::weight_update) { upd_start[d] = r.start[x]; upd[d] = r.duration(x); }
  });
  for (auto& u : cs.queue_uses) {
    const auto d = u.device;
    if (u.kind == comm_kind::tp) {
      tpc[d] += r.end[u.done] - r.start[u.issue];
      if (cs.g.phase_of(u.issue) == phase::backward) bwd_end[d] = std::max(bwd_end[d], r.end[u.done]);
    }
    if (u.queue == device_queue::gradients) grad_end[d] = std::max(grad_end[d], r.end[u.done]);
  }
  const auto k = static_cast<std::size_t>(std::max_element(comp.begin(), comp.end()) - comp.begin());
  e.busiest_device = std::uint32_t(k);
  e.compute = comp[k];
  e.tp_comm = tpc[k];
  e.update = upd[k];
  e.other = m.other;
  // Gradient sync before the update, and ZeRO's gather after it, that nothing hides.
  e.dp_exposed = std::max<time_ns>(0, upd_start[k] - bwd_end[k]) +
                 std::max<time_ns>(0, grad_end[k] - (upd_start[k] + upd[k]));
  e.bubble = std::max<time_ns>(0, e.predicted - e.compute - e.tp_comm - e.update - e.other - e.dp_exposed);
  std::vector<std::pair<time_ns, std::string>> parts{
      {e.bubble, s.pp > 1 ? "pipeline bubble (" + std::to_string(s.pp) + " stages, " + std::to_string(s.micro) +
                                " micro-batches; sends over " + e.pp_link.describe() + ")"
                          : "waiting (nothing runs on the busiest device)"},
      {e.tp_comm, "tensor-parallel all-reduces over " + e.tp_link.describe()},
      {e.dp_exposed, "data-parallel gradient sync" + std::string(s.zero ? " and ZeRO gathers" : "") + " over " +
                         e.dp_link.describe() + " not hidden by computation"},
      {e.other, "time outside the layers (kept as traced)"}};
  auto worst = std::max_element(parts.begin(), parts.end(),
                                [](auto& a, auto& b) { return a.first < b.first; });
  e.bound = worst->first * 10 > e.predicted ? worst->second : "compute";
  return e;
}

/// simulate() of the uniform plan of `s`.
inline evaluation simulate(const strategy_spec& s, const cluster_spec& c, const model_profile& m,
                           const simulate_options& o = {}) {
  return simulate(uniform_plan(s, m), c, m, o);
}

/// Every strategy using exactly `devices` devices: dp x tp x pp = devices, pp at most
/// the layer count, tp dividing every known layer width, micro in {1} without a
/// pipeline and {pp, 2pp, 4pp} with one (and, with a global batch, dividing it), zero,
/// recompute and schedule as in `base`.
inline std::vector<strategy_spec> grid(std::uint32_t devices, const model_profile& m, const strategy_spec& base = {},
                                       const simulate_options& o = {}) {
  std::vector<strategy_spec> out;
  for (std::uint32_t pp = 1; pp <= devices; ++pp) {
    if (devices % pp || pp > m.layers.size()) continue;
    for (std::uint32_t tp = 1; tp <= devices / pp; ++tp) {
      if ((devices / pp) % tp) continue;
      bool ok = true;
      for (auto& l : m.layers) ok = ok && !(l.width && l.splits() && l.width % tp);
      if (!ok) continue;
      const std::uint32_t dp = devices / pp / tp;
      std::vector<std::uint32_t> micros = pp == 1 ? std::vector<std::uint32_t>{1}
                                                  : std::vector<std::uint32_t>{pp, 2 * pp, 4 * pp};
      for (auto mb : micros) {
        if (!splits_global_batch(o, m, dp, mb)) continue;
        auto s = base;
        s.dp = dp;
        s.tp = tp;
        s.pp = pp;
        s.micro = mb;
        out.push_back(s);
      }
    }
  }
  return out;
}

} // namespace daydream::strategy

#endif
