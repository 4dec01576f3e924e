// Defines io::write_chakra and io::read_chakra: Chakra execution traces (MLCommons; ASTRA-sim's input), one file per NPU.
// SPDX-License-Identifier: MIT
//
//   graph --write_chakra--> DIR/PREFIX.0.et ... PREFIX.{N-1}.et   (one per NPU; a one-worker graph
//                                                                 whose collectives span N workers: N copies)
//   a.0.et a.1.et ... --load_chakra_job--> job (one rank per NPU) --match, build_job_graph, replay
//   a.et --read_chakra--> one NPU's graph
//
// Needs daydream::chakra (protobuf; data/chakra/et_def.proto compiled at build time).
// docs/formats.md, "Chakra execution traces", says what is written, read and lost.
#ifndef DAYDREAM_IO_CHAKRA_HPP
#define DAYDREAM_IO_CHAKRA_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/detail/chakra_read.hpp>
#include <daydream/io/detail/chakra_wire.hpp>
#include <daydream/io/detail/chakra_write.hpp>
#include <daydream/job/model.hpp>
#include <daydream/kinds.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::io {

/// Options of write_chakra.
struct chakra_write_options {
  /// NPUs to write; 0: the graph's own (the nodes of its resources), or, for a graph of one
  /// worker whose collectives span more (a data-parallel what-if: ddp:workers=64), that many
  /// identical copies of it.
  std::int32_t npus = 0;
  std::string prefix = "daydream"; ///< files are PREFIX.N.et
  std::string version = "0.0.4";   ///< GlobalMetadata.version (ASTRA-sim's examples use 0.0.4)
  /// NPUs of the whole job, written as the `npus` attribute (for one rank of a job
  /// written alone); 0: the NPUs written.
  std::int32_t world = 0;
  /// The recorded time of each iteration (kineto_trace::measured), written as the
  /// `daydream.measured` attribute for the job mode's measured column; empty: none (a
  /// what-if's graph, whose times are predictions).
  std::map<std::int32_t, time_ns> measured;
  /// The iterations to analyse (kineto_trace::steady_state_iterations), written as
  /// `daydream.steady`; empty: every iteration of the graph.
  std::vector<std::int32_t> steady;
};

/// One NPU's execution trace, in memory: the bytes of a `.et` file.
struct chakra_et {
  std::int32_t npu = 0;
  std::string name;        ///< PREFIX.N.et
  std::string bytes;       ///< GlobalMetadata, then one Node per task, each length-prefixed
  std::size_t nodes = 0;   ///< nodes written
  std::size_t collectives = 0; ///< COMM_COLL, COMM_SEND and COMM_RECV nodes among them
};

/// What write_chakra produced.
struct chakra_export {
  std::vector<chakra_et> files;
  std::size_t dropped_dependencies = 0; ///< dependencies between NPUs (a file holds one NPU)
  bool copies = false;                  ///< NPUs 1.. are copies of the graph's one worker
  std::vector<std::filesystem::path> paths; ///< where write_chakra_files wrote them
};

/// The Chakra execution traces of `g`, one per NPU (see chakra_write_options::npus):
/// every live task a node with its duration (duration_micros, rounded; the exact
/// nanoseconds in `daydream.duration_ns`), CPU work and GPU kernels as COMP_NODE
/// (`is_cpu_op`), collectives as COMM_COLL_NODE with `comm_type`, `comm_size` (int64) and
/// `pg_name`, sends and receives whose peer the task's group ranks say as COMM_SEND_NODE /
/// COMM_RECV_NODE with `comm_src`, `comm_dst` and a `comm_tag` that pairs the k-th send of
/// a pair of NPUs with its k-th receive; program order and forced order as ctrl_deps, the
/// rest (launches, syncs, data, communication) as data_deps. Everything the replay reads
/// is kept in `daydream.*` attributes (resource, gap, start, priority, memory, iteration,
/// phase, layer, dependency kinds), so read_chakra gives back a graph that replays to the
/// same times. Dependencies between tasks of different NPUs cannot be written (counted in
/// dropped_dependencies). Throws daydream::error for npus < 0 or above 65536.
inline chakra_export write_chakra(const graph& g, const chakra_write_options& o = {}) {
  namespace c = detail::chakra;
  if (o.npus < 0 || o.npus > 65536) throw error("daydream: write_chakra: npus must be 0 to 65536");
  chakra_export out;
  // The NPUs: the nodes of the resources tasks run on.
  std::set<std::int32_t> nodes;
  for (std::size_t r = 0; r < g.resource_count(); ++r) nodes.insert(g.resource_at(resource_id(r)).node);
  if (nodes.empty()) nodes.insert(0);
  const auto npu_of = c::npu_of_tasks(g, *nodes.begin());
  std::uint32_t span = 1;
  g.for_each<comm_task>([&](handle<comm_task> h) {
    if (c::coll_type(g.payload(h).op)) span = std::max(span, g.payload(h).group_size);
  });
  std::vector<std::pair<std::int32_t, std::int32_t>> plan; // (npu written, node of the graph)
  if (nodes.size() == 1 && (o.npus > 1 || (o.npus == 0 && span > 1))) {
    out.copies = true;
    const std::int32_t n = o.npus > 0 ? o.npus : std::int32_t(span);
    for (std::int32_t k = 0; k < n; ++k) plan.push_back({k, *nodes.begin()});
  } else {
    for (auto n : nodes) plan.push_back({n, n});
  }
  time_ns origin = std::numeric_limits<time_ns>::max();
  g.for_each_task([&](task_id t) { origin = std::min(origin, g.trace_start(t)); });
  if (origin == std::numeric_limits<time_ns>::max()) origin = 0;
  g.for_each_task([&](task_id t) {
    for (auto d : g.successors(t))
      if (npu_of[t] != npu_of[d.to]) ++out.dropped_dependencies;
  });
  for (const auto& step : plan) {
    const std::int32_t npu = step.first, source = step.second; // not a binding: lambdas capture it (clang 14)
    c::npu_context ctx;
    ctx.npu = npu;
    ctx.source = source;
    ctx.copies = out.copies;
    c::pb::GlobalMetadata meta;
    meta.set_version(o.version);
    c::attr_string(*meta.mutable_attr(), "producer", "daydream");
    c::attr_int(*meta.mutable_attr(), "npu", npu);
    c::attr_int(*meta.mutable_attr(), "npus", o.world > 0 ? std::int64_t(o.world) : std::int64_t(plan.size()));
    if (!o.measured.empty()) {
      auto& l = *c::add_attr(*meta.mutable_attr(), "daydream.measured").mutable_int64_list();
      for (auto [i, t] : o.measured) { l.add_values(i); l.add_values(t); }
    }
    if (!o.steady.empty()) {
      auto& l = *c::add_attr(*meta.mutable_attr(), "daydream.steady").mutable_int64_list();
      for (auto i : o.steady) l.add_values(i);
    }
    for (std::size_t r = 0; r < g.resource_count(); ++r) {
      auto& res = g.resource_at(resource_id(r));
      if (res.node != source) continue;
      ctx.local[resource_id(r)] = std::int64_t(ctx.local.size());
      auto& l = *c::add_attr(*meta.mutable_attr(), "daydream.resource").mutable_string_list();
      l.add_values(res.name);
      l.add_values(std::to_string(int(res.kind)));
      l.add_values(std::to_string(int(res.share)));
      l.add_values(std::to_string(res.device));
      l.add_values(c::fmt_double(res.bandwidth));
    }
    chakra_et et;
    et.npu = npu;
    et.name = o.prefix + "." + std::to_string(npu) + ".et";
    c::put_message(et.bytes, meta);
    c::pb::Node n;
    g.for_each_task([&](task_id t) {
      if (npu_of[t] != source) return;
      n.Clear();
      if (c::write_node(g, t, ctx, origin, [&](task_id f) { return npu_of[f] == source; }, n)) ++et.collectives;
      c::put_message(et.bytes, n);
      ++et.nodes;
    });
    out.files.push_back(std::move(et));
  }
  return out;
}

/// write_chakra, then the files in `dir` (created if needed): DIR/PREFIX.N.et. Throws
/// daydream::error naming a file that cannot be written.
inline chakra_export write_chakra_files(const graph& g, const std::filesystem::path& dir,
                                        const chakra_write_options& o = {}) {
  auto out = write_chakra(g, o);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw error("daydream: write_chakra: cannot create " + dir.string() + ": " + ec.message());
  for (auto& f : out.files) {
    auto p = dir / f.name;
    std::ofstream s(p, std::ios::binary);
    s.write(f.bytes.data(), std::streamsize(f.bytes.size()));
    if (!s) throw error("daydream: write_chakra: cannot write " + p.string());
    out.paths.push_back(p);
  }
  return out;
}

/// Options of read_chakra.
struct chakra_read_options {
  std::int32_t npu = -1; ///< the NPU; -1: the file's `npu` attribute, else the N of NAME.N.et, else 0
  /// A dependency on a node the file does not have, or of a node on itself, is an error
  /// (false), or is left out and counted in a warning (true): execution traces cut from a
  /// longer run (Chakra's converters' windows) refer to nodes before the window.
  bool drop_missing_dependencies = false;
};

/// One NPU's execution trace read back.
struct chakra_trace {
  std::string file;            ///< where it came from (names it in messages)
  std::int32_t npu = -1;       ///< its NPU: the file's `npu` attribute, the N of NAME.N.et, else -1
  std::string version;         ///< the schema version it says
  graph g;                     ///< its nodes as tasks (resources with node = npu)
  std::size_t nodes = 0;       ///< nodes read
  bool written_by_daydream = false; ///< its resources and exact times are daydream's
  std::map<std::int32_t, time_ns> measured; ///< recorded iteration times the file gives (`daydream.measured`)
  std::vector<std::int32_t> steady;  ///< iterations to analyse the file names (`daydream.steady`)
  std::int32_t npus = 0;             ///< NPUs of the job the file says (`npus`), 0 if it does not
  std::vector<std::string> warnings; ///< an unknown schema version, collectives without sizes, ...
};

/// The NPU named by a file name NAME.N.et (or NAME.N.et.gz), or -1.
inline std::int32_t chakra_npu_of_name(const std::filesystem::path& p) {
  std::string s = p.filename().string();
  if (s.size() > 3 && s.ends_with(".gz")) s.resize(s.size() - 3);
  if (!s.ends_with(".et")) return -1;
  s.resize(s.size() - 3);
  const auto dot = s.rfind('.');
  const std::string num = dot == std::string::npos ? s : s.substr(dot + 1);
  if (num.empty() || num.size() > 6 || !std::all_of(num.begin(), num.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return -1;
  return std::stoi(num);
}

/// Parses the bytes of an execution trace (plain: decompress first) named `name` in
/// messages, as NPU `o.npu` (-1: the file's `npu` attribute, else 0). Nodes become tasks in
/// file order: on the resources the file lists when daydream wrote it, else on four per
/// NPU (a CPU thread for `is_cpu_op` nodes, a compute stream, a communication channel, a
/// memory channel); COMM_COLL_NODE a comm_task of its comm_type, comm_size and pg_name
/// (the collective job matching pairs across NPUs), COMM_SEND/RECV_NODE a send or receive
/// with its two ranks; durations as recorded (exact nanoseconds when daydream wrote them,
/// else duration_micros). Throws daydream::error naming the file (and the node) for a
/// truncated length prefix or message, a first message that is not GlobalMetadata, a
/// message that is not a Node, a duplicate id, a dependency on a missing node or on
/// itself, and dependencies that form a cycle (unless `o.drop_missing_dependencies`: then
/// left out and counted, a cycle of control dependencies broken where it goes back), a negative or overflowing comm_size, and values out of range. An unknown
/// schema version is read as 1.0 with a warning.
inline chakra_trace parse_chakra(std::string_view bytes, const std::string& name, const chakra_read_options& o = {}) {
  const std::int32_t npu = o.npu;
  namespace c = detail::chakra;
  // A file's bad strings (invalid UTF-8) are not worth protobuf's log lines on stderr.
  google::protobuf::LogSilencer quiet;
  chakra_trace out;
  out.file = name;
  const auto fr = c::frames(bytes, name);
  if (fr.empty()) throw error(name + ": empty: not a Chakra execution trace");
  c::pb::GlobalMetadata meta;
  if (!meta.ParseFromArray(fr[0].bytes.data(), int(fr[0].bytes.size())))
    throw error(name + ": the first message is not a Chakra GlobalMetadata: not a Chakra execution trace");
  out.version = c::version_of(meta);
  if (out.version.empty())
    out.warnings.push_back(name + ": no schema version; read as Chakra 1.0");
  else if (!c::known_version(out.version))
    out.warnings.push_back(name + ": schema version '" + out.version +
                           "' is not one this reader knows (0.0.x, 1.0.x); read as 1.0: check the results");
  out.npu = npu >= 0 ? npu : std::int32_t(c::int_attr(meta.attr(), "npu", 0));
  out.npus = std::int32_t(std::clamp<std::int64_t>(c::int_attr(meta.attr(), "npus", 0), 0, 1'000'001));
  if (out.npu < 0 || out.npu > 1'000'000) throw error(name + ": npu " + std::to_string(out.npu) + " is out of range");
  c::read_context ctx;
  ctx.file = name;
  ctx.npu = out.npu;
  ctx.warnings = &out.warnings;
  auto listed = c::listed_resources(meta, out.npu, name);
  ctx.listed = !listed.empty() || c::string_attr(meta.attr(), "producer") == "daydream";
  out.written_by_daydream = ctx.listed;
  constexpr std::int64_t i32max = std::numeric_limits<std::int32_t>::max();
  if (auto* a = c::find_attr(meta.attr(), "daydream.measured"); a && a->value_case() == c::pb::AttributeProto::kInt64List)
    for (int k = 0; k + 1 < a->int64_list().values_size(); k += 2) {
      const auto i = a->int64_list().values(k), t = a->int64_list().values(k + 1);
      if (i < 0 || i > i32max || t < 0) throw error(name + ": daydream.measured holds a bad iteration or time");
      out.measured[std::int32_t(i)] = t;
    }
  if (auto* a = c::find_attr(meta.attr(), "daydream.steady"); a && a->value_case() == c::pb::AttributeProto::kInt64List)
    for (auto i : a->int64_list().values()) {
      if (i < 0 || i > i32max) throw error(name + ": daydream.steady holds a bad iteration");
      out.steady.push_back(std::int32_t(i));
    }
  for (auto& r : ctx.listed ? listed : c::default_resources(out.npu)) ctx.res.push_back(out.g.add_resource(r));
  std::vector<c::pb::Node> nodes(fr.size() - 1);
  std::unordered_map<std::uint64_t, task_id> ids;
  std::vector<task_id> task(nodes.size(), no_task);
  for (std::size_t k = 1; k < fr.size(); ++k) {
    auto& n = nodes[k - 1];
    if (!n.ParseFromArray(fr[k].bytes.data(), int(fr[k].bytes.size())))
      throw error(name + ": byte " + std::to_string(fr[k].offset) + ": message " + std::to_string(k) +
                  " is not a Chakra Node");
    if (ids.count(n.id())) throw error(name + ": " + c::node_label(n) + " appears twice (duplicate id)");
    try {
      task[k - 1] = c::add_node(out.g, n, ctx);
    } catch (const error& e) {
      if (std::string_view(e.what()).starts_with(name)) throw;
      // The graph refused it (a kind on a resource that does not fit it): name the node.
      throw error(name + ": " + c::node_label(n) + ": " + e.what());
    }
    DAYDREAM_ASSERT(task[k - 1] == task_id(k - 1), "parse_chakra: a node's task id is its position in the file");
    ids[n.id()] = task[k - 1];
  }
  ctx.drop_missing = o.drop_missing_dependencies;
  std::vector<c::dep_ref> deps;
  for (std::size_t k = 0; k < nodes.size(); ++k) c::add_node_deps(out.g, nodes[k], task[k], ids, ctx, deps);
  try {
    c::add_deps_acyclic(out.g, nodes, deps, ctx);
  } catch (const error& e) {
    if (std::string_view(e.what()).starts_with(name)) throw;
    throw error(name + ": " + e.what());
  }
  if (ctx.missing)
    out.warnings.push_back(name + ": " + std::to_string(ctx.missing) +
                           " dependencies on nodes the file does not have were left out");
  if (ctx.self)
    out.warnings.push_back(name + ": " + std::to_string(ctx.self) + " dependencies of nodes on themselves were left out");
  if (ctx.backward)
    out.warnings.push_back(name + ": " + std::to_string(ctx.backward) +
                           " control dependencies that closed cycles were left out");
  out.nodes = nodes.size();
  if (ctx.zero_comm)
    out.warnings.push_back(name + ": " + std::to_string(ctx.zero_comm) +
                           " collective(s) without comm_size: they move no bytes in a cluster model");
  return out;
}

/// Reads one execution trace file (plain or gzip, by content); see parse_chakra. The NPU
/// is `o.npu`, else the file's `npu` attribute, else the N of NAME.N.et, else 0.
inline chakra_trace read_chakra(const std::filesystem::path& p, const chakra_read_options& o = {}) {
  auto bytes = detail::chakra::file_bytes(p);
  auto t = parse_chakra(bytes, p.string(), o);
  // The file's own attribute wins over its name.
  const auto from_name = chakra_npu_of_name(p);
  if (o.npu < 0 && t.npu == 0 && from_name > 0 && !t.written_by_daydream) {
    auto named = o;
    named.npu = from_name;
    return parse_chakra(bytes, p.string(), named);
  }
  return t;
}

/// Whether `p` holds a Chakra execution trace, by content (plain or gzip): its first
/// message parses as a GlobalMetadata with nothing unknown in it and a version or
/// attributes. What follows is not looked at: a truncated or corrupt trace is still one,
/// for read_chakra to say what is wrong with it. A Kineto JSON trace is not one.
inline bool is_chakra_file(const std::filesystem::path& p) {
  namespace c = detail::chakra;
  google::protobuf::LogSilencer quiet;
  try {
    if (!std::filesystem::is_regular_file(p)) return false;
    const auto s = c::file_bytes(p, 1 << 16);
    std::size_t pos = 0;
    auto n = c::read_varint(s, pos, p.string());
    if (!n || *n == 0 || *n > s.size() - pos) return false;
    c::pb::GlobalMetadata m;
    if (!m.ParseFromArray(s.data() + pos, int(*n))) return false;
    if (!m.GetReflection()->GetUnknownFields(m).empty()) return false;
    return !m.version().empty() || m.attr_size() > 0;
  } catch (const std::exception&) {
    return false;
  }
}

/// The execution traces of `paths`: files as given, and for a directory its `*.et` and
/// `*.et.gz` files, by NPU number (NAME.N.et) then name.
inline std::vector<std::filesystem::path> chakra_files(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::filesystem::path> out;
  for (auto& p : paths) {
    if (!std::filesystem::is_directory(p)) { out.push_back(p); continue; }
    std::vector<std::filesystem::path> in;
    for (auto& e : std::filesystem::directory_iterator(p)) {
      const auto s = e.path().filename().string();
      if (e.is_regular_file() && (s.ends_with(".et") || s.ends_with(".et.gz"))) in.push_back(e.path());
    }
    std::sort(in.begin(), in.end(), [](auto& a, auto& b) {
      return std::pair(chakra_npu_of_name(a), a.string()) < std::pair(chakra_npu_of_name(b), b.string());
    });
    out.insert(out.end(), in.begin(), in.end());
  }
  return out;
}

/// Every NPU of a job from its execution traces (chakra_files(paths)), as a daydream::job
/// whose ranks are the NPUs: for the job mode (match_collectives pairs the k-th collective
/// of each pg_name across NPUs), so `daydream whatif a.0.et a.1.et ...` replays them
/// together. Each rank's iterations are the tasks' (one iteration 0 for a trace that
/// has none), measured from the recorded start times when the trace has them (else 0:
/// not measured). NPU numbers: the files' `npu` attribute or name, else their order; the
/// job's size: the largest `npus` a file says, at least the largest NPU number plus one.
/// Throws daydream::error as read_chakra does (with `o`, whose npu is ignored), and for
/// two files of one NPU.
inline job load_chakra_job(const std::vector<std::filesystem::path>& paths, std::vector<std::string>* warnings = nullptr,
                           const chakra_read_options& o = {}) {
  const auto files = chakra_files(paths);
  if (files.empty()) throw usage_error("daydream: load_chakra_job: no execution trace given");
  job j;
  std::map<std::int32_t, std::string> seen;
  std::int32_t world = 0;
  for (std::size_t k = 0; k < files.size(); ++k) {
    auto one = o;
    one.npu = -1;
    auto t = read_chakra(files[k], one);
    if (t.npu == 0 && k > 0 && chakra_npu_of_name(files[k]) < 0 && !t.written_by_daydream) t.npu = std::int32_t(k);
    if (auto it = seen.find(t.npu); it != seen.end())
      throw error("daydream: load_chakra_job: " + it->second + " and " + t.file + " are both NPU " +
                  std::to_string(t.npu) + ": duplicate NPUs");
    seen[t.npu] = t.file;
    world = std::max(world, t.npus);
    if (warnings) warnings->insert(warnings->end(), t.warnings.begin(), t.warnings.end());
    rank_trace r;
    r.rank = t.npu;
    r.file = t.file;
    r.backend = "chakra";
    for (std::size_t x = 0; x < t.g.resource_count(); ++x) t.g.resource_at(resource_id(x)).node = r.rank;
    if (auto moved = detail::chakra::collectives_to_stream(t.g, r.rank); moved && r.rank == 0 && warnings)
      warnings->push_back(t.file + ": " + std::to_string(moved) +
                          " communication task(s) on links or channels run on one stream per NPU in the job, "
                          "where the collectives are matched across NPUs");
    // Iterations: measured from the recorded times, when there are any.
    std::map<std::int32_t, std::pair<time_ns, time_ns>> span;
    bool timed = false;
    t.g.for_each_task([&](task_id x) {
      auto& [lo, hi] = span.try_emplace(t.g.iteration(x), std::numeric_limits<time_ns>::max(), 0).first->second;
      lo = std::min(lo, t.g.trace_start(x));
      hi = std::max(hi, t.g.trace_start(x) + t.g.duration(x));
      timed = timed || t.g.trace_start(x) != 0;
    });
    if (span.empty()) span[0] = {0, 0};
    for (auto& [i, s] : span) {
      if (i < 0) continue;
      // The recorded times the file gives; else, for a host trace with start times, the
      // iteration's span; else none (0: not measured).
      auto it = t.measured.find(i);
      r.measured[i] = it != t.measured.end() ? it->second : timed && !t.written_by_daydream ? s.second - s.first : 0;
      r.steady.push_back(i);
    }
    if (!t.steady.empty()) {
      std::vector<std::int32_t> keep;
      for (auto i : t.steady)
        if (r.measured.count(i)) keep.push_back(i);
      if (!keep.empty()) r.steady = keep;
    }
    if (r.steady.empty()) { r.measured[0] = 0; r.steady = {0}; }
    r.g = std::move(t.g);
    j.ranks.push_back(std::move(r));
  }
  std::sort(j.ranks.begin(), j.ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  j.world_size = std::max(world, j.ranks.back().rank + 1);
  for (auto& r : j.ranks) r.world_size = j.world_size;
  if (j.partial())
    j.notes.push_back("partial job: " + std::to_string(j.ranks.size()) + " of " + std::to_string(j.world_size) +
                      " NPUs given; the missing ones are modelled as copies of the given ones");
  return j;
}

} // namespace daydream::io

#endif
