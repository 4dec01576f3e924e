// Defines the Chakra writer's steps: which NPU a task belongs to, and one task as a Chakra node.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_CHAKRA_WRITE_HPP
#define DAYDREAM_IO_DETAIL_CHAKRA_WRITE_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/chakra_wire.hpp>
#include <daydream/kinds.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::io::detail::chakra {

/// The Chakra collective of a comm_op, or nullopt for one Chakra has no collective for.
inline std::optional<pb::CollectiveCommType> coll_type(comm_op op) {
  switch (op) {
  case comm_op::all_reduce: return pb::ALL_REDUCE;
  case comm_op::reduce_scatter: return pb::REDUCE_SCATTER;
  case comm_op::all_gather: return pb::ALL_GATHER;
  case comm_op::broadcast: return pb::BROADCAST;
  case comm_op::reduce: return pb::REDUCE;
  case comm_op::all_to_all: return pb::ALL_TO_ALL;
  default: return std::nullopt;
  }
}

/// The comm_op of a Chakra collective (comm_op::other for GATHER, SCATTER, BARRIER, ...).
inline comm_op op_of_coll(std::int64_t t) {
  switch (t) {
  case pb::ALL_REDUCE: return comm_op::all_reduce;
  case pb::REDUCE_SCATTER:
  case pb::REDUCE_SCATTER_BLOCK: return comm_op::reduce_scatter;
  case pb::ALL_GATHER: return comm_op::all_gather;
  case pb::BROADCAST: return comm_op::broadcast;
  case pb::REDUCE: return comm_op::reduce;
  case pb::ALL_TO_ALL: return comm_op::all_to_all;
  default: return comm_op::other;
  }
}

/// Whether a dependency of kind `k` is written as a control dependency (program order and
/// forced order) rather than a data dependency.
inline bool is_ctrl(dep_kind k) {
  return k == dep_kind::cpu_order || k == dep_kind::stream_order || k == dep_kind::control;
}

/// Which NPU each task of `g` belongs to: its resource's node; a task without a resource
/// takes the node of its first neighbour with one, else `fallback`.
inline std::vector<std::int32_t> npu_of_tasks(const graph& g, std::int32_t fallback) {
  std::vector<std::int32_t> npu(g.id_bound(), fallback);
  auto node_of = [&](task_id t) -> std::optional<std::int32_t> {
    auto r = g.resource_of(t);
    if (r == no_resource) return std::nullopt;
    return g.resource_at(r).node;
  };
  g.for_each_task([&](task_id t) {
    if (auto n = node_of(t)) { npu[t] = *n; return; }
    for (auto d : g.predecessors(t))
      if (auto n = node_of(d.from)) { npu[t] = *n; return; }
    for (auto d : g.successors(t))
      if (auto n = node_of(d.to)) { npu[t] = *n; return; }
  });
  return npu;
}

/// What a node needs from its NPU's file: its index of resources, its send/recv counters.
struct npu_context {
  std::int32_t npu = 0;                      ///< the NPU written (a copy's own number)
  std::int32_t source = 0;                   ///< the node of the graph it is written from
  bool copies = false;                       ///< one of several copies of a one-worker graph
  std::map<resource_id, std::int64_t> local; ///< graph resource -> index in the file
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> tags; ///< (src, dst) -> next tag
};

/// The peer of a point-to-point comm_task on `npu`: the other rank of its two group ranks.
inline std::optional<std::int32_t> p2p_peer(const comm_task& c, std::int32_t npu) {
  if (c.group_ranks.size() != 2) return std::nullopt;
  if (c.group_ranks[0] == npu) return c.group_ranks[1];
  if (c.group_ranks[1] == npu) return c.group_ranks[0];
  return std::nullopt;
}

/// The kind-specific part of task `t` as node `n`: its type and the attributes ASTRA-sim
/// and the reader need. Returns whether it was written as communication.
inline bool write_kind(const graph& g, task_id t, npu_context& ctx, pb::Node& n) {
  auto& a = *n.mutable_attr();
  bool comm = false;
  g.visit(t, [&](auto, const auto& p) {
    using K = std::decay_t<decltype(p)>;
    attr_string(a, "daydream.kind", kind_traits<K>::name);
    if constexpr (std::is_same_v<K, cpu_task>) {
      n.set_type(pb::COMP_NODE);
      attr_bool(a, "is_cpu_op", true);
      attr_int(a, "daydream.call", std::int64_t(p.call));
    } else if constexpr (std::is_same_v<K, gpu_kernel>) {
      n.set_type(pb::COMP_NODE);
      attr_bool(a, "is_cpu_op", false);
      attr_int(a, "daydream.device", p.device);
      attr_int(a, "daydream.stream", p.stream);
      // Chakra's compute attributes (ASTRA-sim's roofline reads them): the FLOPs and
      // bytes the ingest derived from the operator's shapes, when known.
      if (p.flops) attr_int(a, "num_ops", std::int64_t(std::min<std::uint64_t>(p.flops, INT64_MAX)));
      if (p.bytes) attr_int(a, "tensor_size", std::int64_t(std::min<std::uint64_t>(p.bytes, INT64_MAX)));
    } else if constexpr (std::is_same_v<K, memcpy_task>) {
      n.set_type(pb::COMP_NODE);
      attr_bool(a, "is_cpu_op", false);
      attr_int(a, "daydream.direction", std::int64_t(p.direction));
      attr_int(a, "daydream.bytes", std::int64_t(std::min<std::uint64_t>(p.bytes, INT64_MAX)));
      attr_int(a, "daydream.device", p.device);
      attr_int(a, "daydream.stream", p.stream);
    } else if constexpr (std::is_same_v<K, comm_task>) {
      attr_bool(a, "is_cpu_op", false);
      attr_int(a, "daydream.comm_op", std::int64_t(p.op));
      attr_int(a, "daydream.group_size", p.group_size);
      attr_int(a, "daydream.device", p.device);
      attr_int(a, "daydream.stream", p.stream);
      if (!p.group.empty()) attr_string(a, "daydream.group", p.group);
      if (!p.group_ranks.empty()) {
        auto& l = *add_attr(a, "daydream.group_ranks").mutable_int64_list();
        for (auto r : p.group_ranks) l.add_values(r);
      }
      const auto size = std::int64_t(std::min<std::uint64_t>(p.bytes, INT64_MAX));
      // A copy of one worker has no peer of its own: its sends stay computation.
      auto peer = ctx.copies ? std::nullopt : p2p_peer(p, ctx.source);
      if (auto c = coll_type(p.op)) {
        n.set_type(pb::COMM_COLL_NODE);
        attr_int(a, "comm_type", *c);
        attr_int(a, "comm_size", size);
        attr_string(a, "pg_name", p.group.empty() ? std::string("0") : p.group);
        comm = true;
      } else if ((p.op == comm_op::send || p.op == comm_op::recv) && peer) {
        const bool send = p.op == comm_op::send;
        const std::int64_t src = send ? ctx.npu : *peer, dst = send ? *peer : ctx.npu;
        n.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
        attr_int(a, "comm_src", src);
        attr_int(a, "comm_dst", dst);
        attr_int(a, "comm_size", size);
        attr_int(a, "comm_tag", ctx.tags[{src, dst}]++);
        if (!p.group.empty()) attr_string(a, "pg_name", p.group);
        comm = true;
      } else {
        // Chakra has no node for it (a send without its peer, a push, a pull): its time
        // as computation on the NPU.
        n.set_type(pb::COMP_NODE);
        attr_int(a, "daydream.bytes", size);
      }
    } else {
      n.set_type(pb::COMP_NODE);
      attr_bool(a, "is_cpu_op", is_cpu(kind_traits<K>::resource));
    }
  });
  return comm;
}

/// Task `t` of `g` as a Chakra node of NPU `ctx.npu`: the kind-specific part, the common
/// fields, the dependencies on tasks of the same NPU (`same(from)`). Returns whether it is
/// communication.
template <class Same>
bool write_node(const graph& g, task_id t, npu_context& ctx, time_ns origin, Same&& same, pb::Node& n) {
  n.set_id(t);
  n.set_name(std::string(g.name(t)));
  const bool comm = write_kind(g, t, ctx, n);
  // From the first task, within what readers take (a quarter of int64's range).
  const time_ns start = std::clamp<time_ns>(g.trace_start(t) - origin, 0, std::numeric_limits<time_ns>::max() / 4);
  n.set_start_time_micros(std::uint64_t(start / 1000));
  n.set_duration_micros(std::uint64_t((g.duration(t) + 500) / 1000));
  auto& a = *n.mutable_attr();
  auto r = g.resource_of(t);
  attr_int(a, "daydream.resource", r == no_resource ? -1 : ctx.local.at(r));
  attr_int(a, "daydream.duration_ns", g.duration(t));
  if (g.gap(t) != 0) attr_int(a, "daydream.gap_ns", g.gap(t));
  attr_int(a, "daydream.start_ns", g.trace_start(t));
  if (g.priority(t) != 0) attr_int(a, "daydream.priority", g.priority(t));
  if (g.mem_delta(t) != 0) attr_int(a, "daydream.mem_delta", g.mem_delta(t));
  attr_int(a, "daydream.iteration", g.iteration(t));
  attr_int(a, "daydream.phase", std::int64_t(g.phase_of(t)));
  if (!g.layer(t).empty()) attr_string(a, "daydream.layer", g.layer(t));
  // In the graph's order of edges: control dependencies first, then data ones; the kinds
  // in that order.
  std::vector<dependency> deps;
  for (auto d : g.predecessors(t))
    if (same(d.from)) deps.push_back(d);
  std::reverse(deps.begin(), deps.end()); // oldest first, as added
  auto& kinds = *add_attr(a, "daydream.dep_kinds").mutable_int32_list();
  for (int pass = 0; pass < 2; ++pass)
    for (auto& d : deps)
      if (is_ctrl(d.kind) == (pass == 0)) {
        if (pass == 0) n.add_ctrl_deps(d.from);
        else n.add_data_deps(d.from);
        kinds.add_values(std::int32_t(d.kind));
      }
  return comm;
}

} // namespace daydream::io::detail::chakra
//! @endcond

#endif
