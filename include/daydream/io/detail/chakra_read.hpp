// Defines the Chakra reader's steps: the metadata, the resources, one node as a task, the dependencies.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_CHAKRA_READ_HPP
#define DAYDREAM_IO_DETAIL_CHAKRA_READ_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/chakra_wire.hpp>
#include <daydream/io/detail/chakra_write.hpp>
#include <daydream/kinds.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/update.hpp>

#include <cstdint>
#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::io::detail::chakra {

/// "node 12 ('aten::mm')": a node in messages.
inline std::string node_label(const pb::Node& n) {
  return "node " + std::to_string(n.id()) + " ('" + n.name() + "')";
}

/// Whether the schema version is one this reader knows: 0.0.x and 1.0.x (Chakra's
/// converters write "0.0.4", "1.0.1", "1.0.2-chakra.0.0.4", ...).
inline bool known_version(const std::string& v) { return v.rfind("0.0.", 0) == 0 || v.rfind("1.0.", 0) == 0; }

/// The schema version of a trace: GlobalMetadata.version, else its `schema` attribute.
inline std::string version_of(const pb::GlobalMetadata& m) {
  if (!m.version().empty()) return m.version();
  return string_attr(m.attr(), "schema");
}

/// The resources of NPU `npu` as the file lists them (attributes `daydream.resource`:
/// name, kind, sharing, device, bandwidth, written by write_chakra); empty for a file
/// daydream did not write.
inline std::vector<resource> listed_resources(const pb::GlobalMetadata& m, std::int32_t npu, const std::string& name) {
  std::vector<resource> out;
  for (auto& a : m.attr()) {
    if (a.name() != "daydream.resource") continue;
    if (a.value_case() != pb::AttributeProto::kStringList || a.string_list().values_size() != 5)
      throw error(name + ": a daydream.resource attribute that is not 5 strings (name, kind, sharing, device, bandwidth)");
    auto& v = a.string_list().values();
    resource r;
    r.name = v[0];
    try {
      const int kind = std::stoi(v[1]), share = std::stoi(v[2]);
      if (kind < 0 || kind > int(resource_kind::other) || share < 0 || share > 1) throw std::out_of_range("kind");
      r.kind = resource_kind(kind);
      r.share = sharing(share);
      r.device = std::stoi(v[3]);
      r.bandwidth = std::stod(v[4]);
    } catch (const std::exception&) {
      throw error(name + ": the daydream.resource attribute of '" + v[0] + "' has a bad kind, sharing, device or bandwidth");
    }
    r.node = npu;
    out.push_back(std::move(r));
  }
  return out;
}

/// The resources of a file daydream did not write: per NPU a CPU thread, a compute
/// stream, a communication stream and a memory channel (one task at a time each, as
/// ASTRA-sim's hardware resource issues them).
inline std::vector<resource> default_resources(std::int32_t npu) {
  const std::string p = "npu " + std::to_string(npu) + ": ";
  return {{p + "cpu", resource_kind::cpu_thread, sharing::exclusive, npu, -1, 0},
          {p + "compute", resource_kind::gpu_stream, sharing::exclusive, npu, npu, 0},
          {p + "communication", resource_kind::gpu_stream, sharing::exclusive, npu, npu, 0},
          {p + "memory", resource_kind::copy_engine, sharing::exclusive, npu, npu, 0}};
}

/// What reading a node needs to know about its file.
struct read_context {
  std::string file;
  std::int32_t npu = 0;
  bool listed = false;                  ///< resources from the file's daydream.resource list
  std::vector<resource_id> res;         ///< local index -> graph resource
  std::vector<std::string>* warnings = nullptr;
  std::size_t zero_comm = 0;            ///< collectives without a size
  bool drop_missing = false;            ///< leave out dependencies on missing nodes (else an error)
  std::size_t missing = 0;              ///< dependencies on missing nodes left out
  std::size_t self = 0;                 ///< dependencies of nodes on themselves left out
  std::size_t backward = 0;             ///< control dependencies that closed cycles, left out
};

/// The comm_size of a communication node: an integer, not negative, at most INT64_MAX
/// (an unsigned value above it is a negative size written unsigned). Throws naming the
/// node; 0 when absent.
inline std::uint64_t comm_size_of(const pb::Node& n, const read_context& c) {
  auto* a = find_attr(n.attr(), "comm_size");
  if (!a) return 0;
  bool big = false;
  auto v = int_value(*a, big);
  if (!v) throw error(c.file + ": " + node_label(n) + ": comm_size is not an integer");
  if (big)
    throw error(c.file + ": " + node_label(n) + ": comm_size " + std::to_string(std::uint64_t(*v)) +
                " overflows int64 (a negative size written unsigned?)");
  if (*v < 0) throw error(c.file + ": " + node_label(n) + ": comm_size " + std::to_string(*v) + " is negative");
  return std::uint64_t(*v);
}

/// An integer attribute that must fit `lo`..`hi`; throws naming the node otherwise.
inline std::int64_t bounded_attr(const pb::Node& n, std::string_view name, std::int64_t fallback, std::int64_t lo,
                                 std::int64_t hi, const read_context& c) {
  const auto v = int_attr(n.attr(), name, fallback);
  if (v < lo || v > hi)
    throw error(c.file + ": " + node_label(n) + ": " + std::string(name) + " " + std::to_string(v) + " is out of range");
  return v;
}

/// Adds node `n` to `g` as a task; returns its id, or no_task for a node that is no work
/// (METADATA_NODE, INVALID_NODE: kept as zero-time tasks so that dependencies hold).
inline task_id add_node(graph& g, const pb::Node& n, read_context& c) {
  constexpr auto i32 = std::numeric_limits<std::int32_t>::max();
  constexpr auto i64 = std::numeric_limits<std::int64_t>::max();
  const std::int64_t max_time = 1'000'000'000'000'000; // 11.6 days per task: sums of many stay in range
  task_fields f;
  f.name = n.name();
  const auto dur_ns = find_attr(n.attr(), "daydream.duration_ns");
  if (!dur_ns && n.duration_micros() > std::uint64_t(max_time / 1000))
    throw error(c.file + ": " + node_label(n) + ": duration_micros " + std::to_string(n.duration_micros()) + " is out of range");
  f.duration = dur_ns ? bounded_attr(n, "daydream.duration_ns", 0, 0, max_time, c) : time_ns(n.duration_micros()) * 1000;
  // Start times only order ties (wall-clock nanoseconds are about 1.7e18): a wider range.
  const std::int64_t max_start = i64 / 4;
  if (n.start_time_micros() > std::uint64_t(max_start / 1000))
    throw error(c.file + ": " + node_label(n) + ": start_time_micros is out of range");
  f.trace_start = bounded_attr(n, "daydream.start_ns", time_ns(n.start_time_micros()) * 1000, -max_start, max_start, c);
  f.gap = bounded_attr(n, "daydream.gap_ns", 0, 0, max_time, c);
  f.iteration = std::int32_t(bounded_attr(n, "daydream.iteration", 0, -i32 - 1, i32, c));
  f.phase = phase(bounded_attr(n, "daydream.phase", std::int64_t(phase::other), 0, std::int64_t(phase::other), c));
  const std::string layer = string_attr(n.attr(), "daydream.layer");
  f.layer = layer;
  const bool cpu = int_attr(n.attr(), "is_cpu_op", 0) != 0;
  const std::string kind = string_attr(n.attr(), "daydream.kind");
  // The resource: the listed one, else the NPU's default of the node's type.
  auto resource_at = [&](std::size_t k) { return k < c.res.size() ? c.res[k] : no_resource; };
  if (c.listed) {
    const auto r = bounded_attr(n, "daydream.resource", -1, -1, std::int64_t(c.res.size()) - 1, c);
    f.resource = r < 0 ? no_resource : c.res[std::size_t(r)];
  }
  const auto type = n.type();
  const std::int32_t device = std::int32_t(bounded_attr(n, "daydream.device", c.npu, -i32 - 1, i32, c));
  const std::int32_t stream = std::int32_t(bounded_attr(n, "daydream.stream", 0, -i32 - 1, i32, c));
  task_id t = no_task;
  if (type == pb::COMM_COLL_NODE || type == pb::COMM_SEND_NODE || type == pb::COMM_RECV_NODE ||
      (kind == "comm_task")) {
    comm_task p;
    p.bytes = comm_size_of(n, c);
    if (type == pb::COMM_COLL_NODE) p.op = op_of_coll(bounded_attr(n, "comm_type", 0, 0, i32, c));
    else if (type == pb::COMM_SEND_NODE) p.op = comm_op::send;
    else if (type == pb::COMM_RECV_NODE) p.op = comm_op::recv;
    if (find_attr(n.attr(), "daydream.comm_op"))
      p.op = comm_op(bounded_attr(n, "daydream.comm_op", 0, 0, std::int64_t(comm_op::other), c));
    if (kind == "comm_task" && type == pb::COMP_NODE) p.bytes = std::uint64_t(bounded_attr(n, "daydream.bytes", 0, 0, i64, c));
    p.group_size = std::uint32_t(bounded_attr(n, "daydream.group_size", 1, 0, i32, c));
    // The process group: daydream's own (empty when the trace named none: written as pg_name
    // "0", ASTRA-sim's world) in a file daydream wrote, else pg_name.
    p.group = kind.empty() ? string_attr(n.attr(), "pg_name") : string_attr(n.attr(), "daydream.group");
    if (auto* gr = find_attr(n.attr(), "daydream.group_ranks"); gr && gr->value_case() == pb::AttributeProto::kInt64List)
      for (auto r : gr->int64_list().values()) p.group_ranks.push_back(std::int32_t(r));
    if (type == pb::COMM_SEND_NODE || type == pb::COMM_RECV_NODE) {
      const auto src = bounded_attr(n, "comm_src", c.npu, 0, i32, c), dst = bounded_attr(n, "comm_dst", c.npu, 0, i32, c);
      if (p.group_ranks.empty()) p.group_ranks = {std::int32_t(src), std::int32_t(dst)};
      p.group_size = 2;
    }
    p.device = device;
    p.stream = stream;
    if (type == pb::COMM_COLL_NODE && p.bytes == 0) ++c.zero_comm;
    if (!c.listed) f.resource = resource_at(2);
    t = g.add(std::move(p), f).id;
  } else if (kind == "memcpy_task" || type == pb::MEM_LOAD_NODE || type == pb::MEM_STORE_NODE) {
    memcpy_task p;
    p.direction = copy_kind(bounded_attr(n, "daydream.direction", std::int64_t(type == pb::MEM_STORE_NODE ? copy_kind::d2h
                                                                                                          : copy_kind::h2d),
                                         0, std::int64_t(copy_kind::memset), c));
    p.bytes = std::uint64_t(bounded_attr(n, "daydream.bytes", int_attr(n.attr(), "tensor_size", 0), 0, i64, c));
    p.device = device;
    p.stream = stream;
    if (!c.listed) f.resource = resource_at(3);
    t = g.add(p, f).id;
  } else if (cpu || kind == "cpu_task" || type == pb::METADATA_NODE || type == pb::INVALID_NODE) {
    cpu_task p;
    p.call = cpu_call(bounded_attr(n, "daydream.call", 0, 0, std::int64_t(cpu_call::runtime), c));
    if (type == pb::METADATA_NODE || type == pb::INVALID_NODE) f.duration = 0;
    if (!c.listed) f.resource = (type == pb::METADATA_NODE || type == pb::INVALID_NODE) ? no_resource : resource_at(0);
    t = g.add(p, f).id;
  } else {
    gpu_kernel p;
    p.device = device;
    p.stream = stream;
    p.flops = std::uint64_t(bounded_attr(n, "num_ops", 0, 0, i64, c));
    p.bytes = std::uint64_t(bounded_attr(n, "tensor_size", 0, 0, i64, c));
    if (!c.listed) f.resource = resource_at(1);
    t = g.add(p, f).id;
  }
  if (auto pr = int_attr(n.attr(), "daydream.priority", 0)) reschedule(g, t, pr);
  if (auto m = int_attr(n.attr(), "daydream.mem_delta", 0)) g.set_mem_delta(t, m);
  return t;
}

/// Adds the dependencies of node `n` (task `t`): its control dependencies, then its data
/// dependencies, with the kinds daydream wrote (`daydream.dep_kinds`) or `control` and
/// `data`. Throws naming the file and the node for a dependency on a node the file does
/// not have or on itself (unless `c.drop_missing`: then counted).
/// A dependency read from a file: `to` waits for `from` (task ids, which are the nodes'
/// positions in the file).
struct dep_ref {
  task_id from = no_task, to = no_task;
  dep_kind kind = dep_kind::data;
  bool ctrl = false; ///< a control dependency (ctrl_deps)
};

inline void add_node_deps(const graph& g, const pb::Node& n, task_id t,
                          const std::unordered_map<std::uint64_t, task_id>& ids, read_context& c,
                          std::vector<dep_ref>& out) {
  const pb::Int32List* kinds = nullptr;
  if (auto* a = find_attr(n.attr(), "daydream.dep_kinds"); a && a->value_case() == pb::AttributeProto::kInt32List &&
                                                            a->int32_list().values_size() ==
                                                                n.ctrl_deps_size() + n.data_deps_size())
    kinds = &a->int32_list();
  int k = 0;
  auto add = [&](std::uint64_t from, dep_kind fallback, bool ctrl) {
    dep_kind kind = fallback;
    if (kinds) {
      const auto v = kinds->values(k);
      if (v < 0 || v >= dep_kind_count)
        throw error(c.file + ": " + node_label(n) + ": dependency kind " + std::to_string(v) + " is out of range");
      kind = dep_kind(v);
    }
    ++k;
    auto it = ids.find(from);
    if (it == ids.end()) {
      if (c.drop_missing) { ++c.missing; return; }
      throw error(c.file + ": " + node_label(n) + " depends on node " + std::to_string(from) +
                  ", which the file does not have (a trace cut from a longer run? reading it with "
                  "drop_missing_dependencies, `--drop-missing-deps`, leaves such dependencies out)");
    }
    if (it->second == t) {
      if (c.drop_missing) { ++c.self; return; }
      throw error(c.file + ": " + node_label(n) + " depends on itself (`--drop-missing-deps` leaves such "
                  "dependencies out)");
    }
    // A launch edge must join CPU work to GPU work; a file may say otherwise: keep the order.
    if (kind == dep_kind::launch &&
        !launch_fits(g.kind_resource(it->second), g.kind_resource(t)))
      kind = dep_kind::data;
    out.push_back({it->second, t, kind, ctrl});
  };
  for (auto d : n.ctrl_deps()) add(d, dep_kind::control, true);
  for (auto d : n.data_deps()) add(d, dep_kind::data, false);
}

/// The positions of the tasks 0..n-1 in a topological order of `deps` (those `use` keeps),
/// the earliest in the file first among the ready ones; a task on or behind a cycle keeps
/// no_task.
template <class Use>
std::vector<task_id> topological_rank(std::size_t n, const std::vector<dep_ref>& deps, Use&& use) {
  std::vector<std::vector<task_id>> succ(n);
  std::vector<std::size_t> waiting(n, 0);
  for (auto& d : deps)
    if (use(d)) { succ[d.from].push_back(d.to); ++waiting[d.to]; }
  std::priority_queue<task_id, std::vector<task_id>, std::greater<>> ready;
  for (task_id t = 0; t < n; ++t)
    if (!waiting[t]) ready.push(t);
  std::vector<task_id> rank(n, no_task);
  task_id next = 0;
  while (!ready.empty()) {
    auto t = ready.top();
    ready.pop();
    rank[t] = next++;
    for (auto s : succ[t])
      if (--waiting[s] == 0) ready.push(s);
  }
  return rank;
}

/// A cycle among the tasks without a rank, as "node A ('a') -> node B ('b') -> node A".
inline std::string describe_cycle(const std::vector<pb::Node>& nodes, const std::vector<dep_ref>& deps,
                                  const std::vector<task_id>& rank) {
  // Walk back from an unranked task along unranked predecessors until one repeats.
  std::vector<task_id> pred(nodes.size(), no_task);
  for (auto& d : deps)
    if (rank[d.from] == no_task && rank[d.to] == no_task) pred[d.to] = d.from;
  task_id t = 0;
  while (rank[t] != no_task || pred[t] == no_task) ++t;
  std::vector<int> seen(nodes.size(), 0);
  while (!seen[t]) { seen[t] = 1; t = pred[t]; }
  std::vector<task_id> cyc{t};
  for (auto x = pred[t]; x != t; x = pred[x]) cyc.push_back(x);
  // In dependency order, from its earliest node in the file.
  std::reverse(cyc.begin(), cyc.end());
  std::rotate(cyc.begin(), std::min_element(cyc.begin(), cyc.end()), cyc.end());
  std::string s;
  for (auto x : cyc) s += node_label(nodes[x]) + " -> ";
  return s + "node " + std::to_string(nodes[cyc.front()].id());
}

/// Adds `deps` to `g` (task ids = positions of `nodes`). A cycle is an error naming its
/// nodes; with `c.drop_missing`, control dependencies that close a cycle (that go back
/// in the order the data dependencies and the file give) are left out and counted, and
/// only a cycle of data dependencies is an error.
inline void add_deps_acyclic(graph& g, const std::vector<pb::Node>& nodes, const std::vector<dep_ref>& deps,
                             read_context& c) {
  auto rank = topological_rank(nodes.size(), deps, [](const dep_ref&) { return true; });
  const bool cyclic = std::find(rank.begin(), rank.end(), no_task) != rank.end();
  if (cyclic && c.drop_missing) {
    rank = topological_rank(nodes.size(), deps, [](const dep_ref& d) { return !d.ctrl; });
    if (std::find(rank.begin(), rank.end(), no_task) != rank.end())
      throw error(c.file + ": the data dependencies form a cycle: " +
                  describe_cycle(nodes, deps, rank));
  } else if (cyclic) {
    throw error(c.file + ": the dependencies form a cycle: " + describe_cycle(nodes, deps, rank) +
                " (`--drop-missing-deps` leaves out the control dependencies that close cycles)");
  }
  for (auto& d : deps) {
    if (cyclic && d.ctrl && rank[d.from] > rank[d.to]) { ++c.backward; continue; }
    g.add_dependency(d.from, d.to, d.kind);
  }
}

/// Moves the collectives of `g` that run on a resource other than a GPU stream (a
/// what-if's fair-shared link) to one stream of NPU `npu`, where job matching finds them
/// (it pairs communication kernels on streams); the stream keeps their order. Returns
/// how many moved.
inline std::size_t collectives_to_stream(graph& g, std::int32_t npu) {
  std::vector<task_id> move;
  g.for_each<comm_task>([&](handle<comm_task> h) {
    auto r = g.resource_of(h.id);
    if (r == no_resource || g.resource_at(r).kind != resource_kind::gpu_stream) move.push_back(h.id);
  });
  if (move.empty()) return 0;
  const auto s = g.add_resource({"npu " + std::to_string(npu) + ": collectives", resource_kind::gpu_stream,
                                 sharing::exclusive, npu, npu, 0});
  for (auto t : move) daydream::move_to(g, t, s);
  return move.size();
}

} // namespace daydream::io::detail::chakra
//! @endcond

#endif
