// Defines compile and simulate: a strategy on a cluster, compiled from a model profile into a graph of one replica and replayed.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_SIMULATE_HPP
#define DAYDREAM_STRATEGY_SIMULATE_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
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
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
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
  double total() const noexcept { return params + gradients + optimizer + activations; }
};

/// A link a kind of communication uses, and how many groups share it (static share).
struct link_use {
  std::string name;  ///< "NVLink", "PCIe", "NIC", "none"
  link_spec link;    ///< bandwidth after the share
  std::uint32_t sharing = 1; ///< groups that share the physical link
  std::string describe() const {
    if (name == "none") return "none";
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %.4g GB/s", name.c_str(), link.bandwidth / 1e9);
    return std::string(buf) + (sharing > 1 ? " (1/" + std::to_string(sharing) + " of it)" : "");
  }
};

/// A strategy compiled into a graph of one data-parallel replica and one device per
/// pipeline stage (tensor-parallel ranks of a stage and data-parallel replicas are
/// identical: they are costed, not simulated).
struct compiled_strategy {
  strategy_spec strategy;
  std::string name;          ///< strategy_plan::name
  graph g;
  std::vector<std::pair<std::size_t, std::size_t>> stages; ///< [first, last) layers of each stage
  std::vector<stage_memory> memory;                        ///< by stage
  comm_bytes comm;
  link_use dp_link, tp_link, pp_link;
  double global_batch = 0;   ///< samples per iteration, all replicas
  double micro_share = 1;    ///< a micro-batch's size over the profiled batch
  std::vector<resource_id> compute, tensor, features, gradients; ///< by stage
};

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
  if (o.global_batch > 0 && m.batch > 1) {
    const double per = o.global_batch / (double(s.dp) * s.micro);
    if (per < 1 || per != std::floor(per))
      throw usage_error(what + "a global batch of " + std::to_string(std::int64_t(o.global_batch)) +
                        " does not split into dp x micro = " + std::to_string(s.dp * s.micro) + " micro-batches");
  }
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
/// stage (layer_plan::stage) lies in that stage; the cut is the best among those that
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
// Ranks are placed tp innermost, then dp, then pp (Megatron-LM's order): rank =
// (stage x dp + replica) x tp + tp rank; node = rank / devices per node.
struct placement {
  strategy_spec s;
  cluster c;
  std::uint32_t node(std::uint32_t rank) const { return rank / c.workers_per_machine; }
  std::uint32_t rank(std::uint32_t stage, std::uint32_t replica, std::uint32_t t) const {
    return (stage * s.dp + replica) * s.tp + t;
  }
  link_spec intra() const { return c.intra(); }
  std::string intra_name() const { return c.nvlink.present() ? "NVLink" : "PCIe"; }
  // The link of a ring over `size` ranks starting at `first` with `stride`, and the groups
  // of this kind (keyed by group_of(rank)) that have members on the first node: they share its NIC.
  template <class GroupOf>
  link_use ring(std::uint32_t first, std::uint32_t size, std::uint32_t stride, GroupOf group_of) const {
    if (size <= 1) return {"none", {}, 1};
    std::set<std::uint32_t> nodes;
    for (std::uint32_t k = 0; k < size; ++k) nodes.insert(node(first + k * stride));
    if (nodes.size() == 1) return {intra_name(), intra(), 1};
    std::set<std::uint32_t> groups;
    const std::uint32_t n0 = node(first);
    for (std::uint32_t r = n0 * c.workers_per_machine; r < (n0 + 1) * c.workers_per_machine && r < s.devices(); ++r)
      groups.insert(group_of(r));
    const auto share = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(groups.size()));
    auto l = c.network.shared_by(share);
    if (size > nodes.size()) l = bottleneck(l, intra());
    return {"NIC", l, share};
  }
};
inline time_ns ns(double v) { return static_cast<time_ns>(std::llround(std::max(0.0, v))); }
} // namespace detail
//! @endcond

/// Compiles strategy `s` of model `m` on cluster `c` into a graph: per pipeline stage a
/// device with a computation stream, a tensor-parallel channel, a feature-communication
/// queue (pipeline sends) and a gradient-communication queue (data-parallel reduction,
/// ZeRO's gathers); the schedule (1F1B or GPipe) fixes the order on the computation
/// stream. Also fills the analytic communication volumes and memory. Validates first
/// (validate()). See docs/strategy.md for every cost rule.
///
/// Each layer follows its plan (strategy_plan::layers: tensor-parallel split, the
/// tensor-parallel collectives after its forward and backward, re-computation, stage
/// pin); compile(strategy_spec) runs the uniform plan of the spec.
inline compiled_strategy compile(const strategy_plan& plan, const cluster_spec& c, const model_profile& m,
                                 const simulate_options& o = {}) {
  validate(plan, c, m, o);
  const strategy_spec& s = plan.spec;
  const auto& lp = plan.layers;
  compiled_strategy out;
  out.strategy = s;
  out.name = plan.name;
  const std::uint32_t p = s.pp, mb = s.micro, t = s.tp, dp = s.dp;
  out.global_batch = o.global_batch > 0 ? o.global_batch : double(s.devices()) * m.batch;
  out.micro_share = out.global_batch / (double(dp) * mb * m.batch);
  const double share = out.micro_share;
  out.stages = balance_stages(m, p, &plan);

  const detail::placement pl{s, c.links};
  out.tp_link = pl.ring(0, t, 1, [&](std::uint32_t r) { return r / t; });
  out.dp_link = pl.ring(0, dp, t, [&](std::uint32_t r) { return (r / (t * dp)) * t + r % t; });
  // Pipeline: the slowest stage boundary; devices of a node whose next stage is elsewhere share its NIC.
  out.pp_link = {"none", {}, 1};
  for (std::uint32_t k = 0; k + 1 < p; ++k) {
    const auto a = pl.rank(k, 0, 0), b = pl.rank(k + 1, 0, 0);
    link_use u{pl.intra_name(), pl.intra(), 1};
    if (pl.node(a) != pl.node(b)) {
      std::uint32_t crossing = 0;
      const auto n0 = pl.node(a);
      for (std::uint32_t r = n0 * c.links.workers_per_machine;
           r < (n0 + 1) * c.links.workers_per_machine && r + t * dp < s.devices(); ++r)
        crossing += pl.node(r + t * dp) != n0;
      crossing = std::max<std::uint32_t>(1, crossing);
      u = {"NIC", c.links.network.shared_by(crossing), crossing};
    }
    if (out.pp_link.name == "none" || u.link.bandwidth < out.pp_link.link.bandwidth) out.pp_link = u;
  }

  auto& g = out.g;
  time_ns clock = 0;
  const double total_params = double(m.param_bytes());
  auto device_bytes = [&](std::size_t i) {
    return lp[i].split ? double(m.layers[i].param_bytes) / t : double(m.layers[i].param_bytes);
  };
  auto update_of = [&](std::size_t i) {
    const auto& l = m.layers[i];
    double u = total_params > 0 ? double(m.update) * double(l.param_bytes) / total_params
                                : double(m.update) / double(m.layers.size());
    if (lp[i].split) u /= t;
    if (s.zero >= 1) u /= dp;
    return u;
  };
  auto input_bytes = [&](std::size_t i) {
    return double(i > 0 ? m.layers[i - 1].output_bytes : m.layers[0].stash_bytes);
  };

  // Tasks whose cross-stage dependencies are added once every stage exists.
  std::vector<std::vector<task_id>> f_first(p, std::vector<task_id>(mb, no_task)), f_send = f_first,
      b_first = f_first, b_send = f_first;
  comm_bytes sum;
  for (std::uint32_t k = 0; k < p; ++k) {
    const std::size_t first = out.stages[k].first, last = out.stages[k].second;
    const auto sk = std::to_string(k);
    const auto node = static_cast<std::int32_t>(k);
    auto comp = g.add_resource({"stage " + sk + " compute", resource_kind::gpu_stream, sharing::exclusive, node, node});
    auto tpr = g.add_resource({"stage " + sk + " tensor-parallel", resource_kind::link, sharing::exclusive, node, node,
                               out.tp_link.link.bandwidth});
    auto feat = g.add_resource({"stage " + sk + " features", resource_kind::link, sharing::exclusive, node, node,
                                out.pp_link.link.bandwidth});
    auto grad = g.add_resource({"stage " + sk + " gradients", resource_kind::link, sharing::exclusive, node, node,
                                out.dp_link.link.bandwidth});
    out.compute.push_back(comp);
    out.tensor.push_back(tpr);
    out.features.push_back(feat);
    out.gradients.push_back(grad);

    task_id prev = no_task, gate = no_task;
    auto kernel = [&](const std::string& name, double dur, const std::string& layer, phase ph) {
      auto h = g.add(gpu_kernel{.device = node}, {.name = name, .duration = detail::ns(dur), .resource = comp,
                                                  .trace_start = clock++, .layer = layer, .phase = ph});
      if (prev != no_task) g.add_dependency(prev, h, dep_kind::stream_order);
      if (gate != no_task) g.add_dependency(gate, h, dep_kind::comm);
      prev = h;
      gate = no_task;
      return task_id(h);
    };
    auto comm = [&](comm_op op, double bytes, std::uint32_t group, time_ns dur, resource_id res,
                    const std::string& name, const std::string& layer, phase ph) {
      auto h = g.add(comm_task{.op = op, .bytes = static_cast<std::uint64_t>(std::llround(bytes)),
                               .group_size = group, .device = node},
                     {.name = name, .duration = dur, .resource = res, .trace_start = clock++, .layer = layer,
                      .phase = ph});
      return task_id(h);
    };
    auto tp_all_reduce = [&](task_id after, const layer_profile& l, double full, phase ph) {
      const double bytes = full * share;
      auto a = comm(comm_op::all_reduce, bytes, t, ring_all_reduce_time(bytes, t, out.tp_link.link), tpr,
                    "tp all-reduce", l.name, ph);
      g.add_dependency(after, a, dep_kind::comm);
      sum.tp += 2.0 * (t - 1) / t * bytes;
      return a;
    };
    auto tp_all_gather = [&](task_id after, const layer_profile& l, double full, phase ph) {
      const double bytes = full * share;
      auto a = comm(comm_op::all_gather, bytes, t, all_gather_time(bytes, t, out.tp_link.link), tpr,
                    "tp all-gather", l.name, ph);
      g.add_dependency(after, a, dep_kind::comm);
      sum.tp += (t - 1.0) / t * bytes;
      return a;
    };
    // A layer's computation under its plan: the tensor-parallel part divided by tp when split.
    auto work = [&](std::size_t i, time_ns split_part, time_ns other) {
      return lp[i].split ? double(split_part) / t + double(other) : double(split_part) + double(other);
    };

    if (m.other > 0) kernel("outside the layers", double(m.other), "", phase::other);

    // ZeRO-3 gathers each layer's parameters before its first forward and first backward.
    std::vector<task_id> gather_f(m.layers.size(), no_task), gather_b = gather_f;
    task_id gprev = no_task;
    auto grad_chain = [&](task_id x) {
      if (gprev != no_task) g.add_dependency(gprev, x, dep_kind::stream_order);
      gprev = x;
    };
    if (s.zero == 3 && dp > 1)
      for (auto i = first; i < last; ++i) {
        const double bytes = device_bytes(i);
        gather_f[i] = comm(comm_op::all_gather, bytes, dp, all_gather_time(bytes, dp, out.dp_link.link), grad,
                           "zero-3 all-gather", m.layers[i].name, phase::forward);
        grad_chain(gather_f[i]);
        sum.zero += (dp - 1.0) / dp * bytes;
      }

    std::vector<task_id> last_forward(m.layers.size(), no_task), ready(m.layers.size(), no_task);
    std::vector<bool> backward_seen(m.layers.size(), false);
    auto forward = [&](std::uint32_t j) {
      for (auto i = first; i < last; ++i) {
        const auto& l = m.layers[i];
        auto x = kernel("forward", work(i, l.forward_split, l.forward_other) * share, l.name, phase::forward);
        if (i == first) f_first[k][j] = x;
        if (gather_f[i] != no_task && j == 0) g.add_dependency(gather_f[i], x, dep_kind::comm);
        last_forward[i] = x;
        if (t > 1 && lp[i].fwd_all_reduce) gate = tp_all_reduce(x, l, double(l.output_bytes), phase::forward);
        if (t > 1 && lp[i].fwd_all_gather)
          gate = tp_all_gather(gate != no_task ? gate : x, l, double(l.output_bytes), phase::forward);
        if (i + 1 == last && k + 1 < p) {
          const double bytes = double(l.output_bytes) * share;
          auto snd = comm(comm_op::send, bytes, 2,
                          detail::ns(out.pp_link.link.latency + out.pp_link.link.transfer_ns(bytes)), feat,
                          "pp send activations", l.name, phase::forward);
          g.add_dependency(gate != no_task ? gate : x, snd, dep_kind::comm);
          f_send[k][j] = snd;
          sum.pp += bytes;
        }
      }
    };
    auto backward = [&](std::uint32_t j) {
      for (auto i = last; i-- > first;) {
        const auto& l = m.layers[i];
        double dur = work(i, l.backward_split, l.backward_other);
        if (lp[i].recompute) dur += work(i, l.forward_split, l.forward_other);
        if (!backward_seen[i] && gather_b[i] == no_task && s.zero == 3 && dp > 1) {
          const double bytes = device_bytes(i);
          gather_b[i] = comm(comm_op::all_gather, bytes, dp, all_gather_time(bytes, dp, out.dp_link.link), grad,
                             "zero-3 all-gather", l.name, phase::backward);
          g.add_dependency(last_forward[i], gather_b[i], dep_kind::control);
          grad_chain(gather_b[i]);
          sum.zero += (dp - 1.0) / dp * bytes;
        }
        auto x = kernel("backward", dur * share, l.name, phase::backward);
        if (i + 1 == last) b_first[k][j] = x;
        if (!backward_seen[i] && gather_b[i] != no_task) g.add_dependency(gather_b[i], x, dep_kind::comm);
        backward_seen[i] = true;
        ready[i] = x;
        // The input gradient: summed (block: sized as today's per-layer all-reduce, by the
        // output; column: by the input) or gathered back whole.
        if (t > 1 && lp[i].bwd_all_reduce) {
          const double full = lp[i].part == partition::block ? double(l.output_bytes) : input_bytes(i);
          gate = tp_all_reduce(x, l, full, phase::backward);
          ready[i] = gate;
        }
        if (t > 1 && lp[i].bwd_all_gather) {
          gate = tp_all_gather(gate != no_task ? gate : x, l, input_bytes(i), phase::backward);
          ready[i] = gate;
        }
        if (i == first && k > 0) {
          const double bytes = input_bytes(i) * share;
          auto snd = comm(comm_op::send, bytes, 2,
                          detail::ns(out.pp_link.link.latency + out.pp_link.link.transfer_ns(bytes)), feat,
                          "pp send gradients", l.name, phase::backward);
          g.add_dependency(ready[i], snd, dep_kind::comm);
          b_send[k][j] = snd;
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
    task_id last_bucket = no_task;
    if (dp > 1) {
      double bucket = 0;
      task_id bucket_ready = no_task;
      auto flush = [&] {
        if (bucket <= 0 && bucket_ready == no_task) return;
        const bool rs = s.zero >= 1;
        auto x = comm(rs ? comm_op::reduce_scatter : comm_op::all_reduce, bucket, dp,
                      rs ? reduce_scatter_time(bucket, dp, out.dp_link.link)
                         : ring_all_reduce_time(bucket, dp, out.dp_link.link),
                      grad, rs ? "dp reduce-scatter" : "dp all-reduce", "", phase::backward);
        g.add_dependency(bucket_ready, x, dep_kind::comm);
        grad_chain(x);
        last_bucket = x;
        sum.dp += (rs ? 1.0 : 2.0) * (dp - 1.0) / dp * bucket;
        bucket = 0;
        bucket_ready = no_task;
      };
      for (auto i = last; i-- > first;) {
        bucket += device_bytes(i);
        bucket_ready = ready[i];
        if (bucket >= double(o.bucket_bytes)) flush();
      }
      flush();
    }
    double update = 0;
    for (auto i = first; i < last; ++i) update += update_of(i);
    auto u = kernel("weight update", update, "", phase::weight_update);
    if (last_bucket != no_task) g.add_dependency(last_bucket, u, dep_kind::comm);
    if ((s.zero == 1 || s.zero == 2) && dp > 1) {
      double bytes = 0;
      for (auto i = first; i < last; ++i) bytes += device_bytes(i);
      auto x = comm(comm_op::all_gather, bytes, dp, all_gather_time(bytes, dp, out.dp_link.link), grad,
                    "zero all-gather", "", phase::weight_update);
      g.add_dependency(u, x, dep_kind::comm);
      grad_chain(x);
      sum.zero += (dp - 1.0) / dp * bytes;
    }

    // Memory of one device of this stage.
    stage_memory mem;
    // Re-computed layers keep their input, and the largest of them its stash while it
    // runs again; the others keep their stash.
    double stash = 0, inputs = 0, largest = 0;
    for (auto i = first; i < last; ++i) {
      const double pb = device_bytes(i);
      mem.params += pb;
      if (!lp[i].recompute) { stash += double(m.layers[i].stash_bytes) * share; continue; }
      inputs += input_bytes(i) * share;
      largest = std::max(largest, double(m.layers[i].stash_bytes) * share);
    }
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
    for (std::uint32_t j = 0; j < mb; ++j) {
      if (k > 0) g.add_dependency(f_send[k - 1][j], f_first[k][j], dep_kind::comm);
      if (k + 1 < p) g.add_dependency(b_send[k + 1][j], b_first[k][j], dep_kind::comm);
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
  link_use dp_link, tp_link, pp_link;
  /// Breakdown of the iteration on its busiest stage (they add up to `predicted`).
  /// dp_exposed: gradient reduction between the last backward and the update, plus what
  /// the gradient queue runs after the update (ZeRO-1/2's all-gather).
  time_ns compute = 0, tp_comm = 0, dp_exposed = 0, update = 0, other = 0, bubble = 0;
  /// What bounds the iteration: "compute", "pipeline bubble", "tensor-parallel all-reduces over ...",
  /// "data-parallel gradient sync over ...", "time outside the layers".
  std::string bound;
};

/// Compiles `s` (compile()), replays the graph with the overlap factor, and reads the
/// iteration time, throughput, memory and what bounds the iteration.
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
  e.dp_link = cs.dp_link;
  e.tp_link = cs.tp_link;
  e.pp_link = cs.pp_link;
  // The busiest stage: the most computation.
  std::vector<time_ns> comp(cs.stages.size(), 0), tpc(cs.stages.size(), 0), bwd_end(cs.stages.size(), 0),
      upd_start(cs.stages.size(), 0), upd(cs.stages.size(), 0), grad_end(cs.stages.size(), 0);
  cs.g.for_each_task([&](task_id x) {
    const auto res = cs.g.resource_of(x);
    for (std::size_t k = 0; k < cs.stages.size(); ++k) {
      if (res == cs.compute[k]) {
        const auto ph = cs.g.phase_of(x);
        if (ph == phase::forward || ph == phase::backward) comp[k] += r.duration(x);
        if (ph == phase::backward) bwd_end[k] = std::max(bwd_end[k], r.end[x]);
        if (ph == phase::weight_update) { upd_start[k] = r.start[x]; upd[k] = r.duration(x); }
      } else if (res == cs.tensor[k]) {
        tpc[k] += r.duration(x);
        if (cs.g.phase_of(x) == phase::backward) bwd_end[k] = std::max(bwd_end[k], r.end[x]);
      }
      else if (res == cs.gradients[k]) grad_end[k] = std::max(grad_end[k], r.end[x]);
    }
  });
  const auto k = static_cast<std::size_t>(std::max_element(comp.begin(), comp.end()) - comp.begin());
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
        if (o.global_batch > 0 && m.batch > 1) {
          const double per = o.global_batch / (double(dp) * mb);
          if (per < 1 || per != std::floor(per)) continue;
        }
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
