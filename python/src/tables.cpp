// t.tasks() and t.dependencies(): the graph's own columns as numpy arrays, one bulk copy per
// column (never an object per row); strings as categorical codes into the graph's interned
// names. The Python package turns each into a DataFrame.
// SPDX-License-Identifier: MIT
#include "common.hpp"
#include "tables.hpp"

#include <array>

namespace daydream::python {

namespace {

/// The live task ids of `g`, in id order.
std::vector<task_id> live_ids(const graph& g) {
  std::vector<task_id> ids;
  ids.reserve(g.size());
  const auto& alive = g.core().alive;
  for (task_id t = 0; t < alive.size(); ++t)
    if (alive[t]) ids.push_back(t);
  return ids;
}

/// Column `col` of the live tasks: a memcpy when no task was removed, else a gather.
template <class T, class Col> py::array_t<T> gather(const Col& col, const std::vector<task_id>& ids, bool dense) {
  auto out = new_array<T>(ids.size());
  T* p = out.mutable_data();
  if (dense && !ids.empty()) {
    if constexpr (sizeof(typename Col::value_type) == sizeof(T) && std::is_trivially_copyable_v<T>) {
      std::memcpy(p, col.data(), ids.size() * sizeof(T));
      return out;
    }
  }
  for (std::size_t i = 0; i < ids.size(); ++i) p[i] = T(col[ids[i]]);
  return out;
}

py::list strings(const detail::interner& in, std::size_t n) {
  py::list out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = py::str(std::string(in[name_id(i)]));
  return out;
}

} // namespace

py::dict task_columns(const graph& g) {
  const auto& c = g.core();
  const auto ids = live_ids(g);
  const bool dense = ids.size() == c.id_bound();
  py::dict d;
  d["id"] = to_array(ids);
  d["kind"] = gather<std::uint8_t>(c.kind, ids, dense);
  py::list kinds;
  for (auto k : {"cpu_task", "gpu_kernel", "memcpy_task", "comm_task"}) kinds.append(k);
  d["kind_categories"] = kinds;
  d["name"] = gather<std::int32_t>(c.name, ids, dense);
  d["layer"] = gather<std::int32_t>(c.layer, ids, dense);
  d["string_categories"] = strings(c.names, c.names.size());
  d["phase"] = gather<std::uint8_t>(c.ph, ids, dense);
  d["phase_categories"] = std::vector<std::string>{"forward", "backward", "weight_update", "other"};
  d["iteration"] = gather<std::int32_t>(c.iteration, ids, dense);
  d["resource"] = gather<std::int32_t>(c.res, ids, dense);
  std::vector<std::string> res;
  for (std::size_t r = 0; r < g.resource_count(); ++r) res.push_back(g.resource_at(resource_id(r)).name);
  d["resource_categories"] = res;
  d["start"] = gather<std::int64_t>(c.trace_start, ids, dense);
  d["duration"] = gather<std::int64_t>(c.duration, ids, dense);
  d["gap"] = gather<std::int64_t>(c.gap, ids, dense);
  auto launched = new_array<std::int64_t>(ids.size());
  auto* lp = launched.mutable_data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    lp[i] = -1;
    for (auto dep : c.in(ids[i]))
      if (dep.kind == dep_kind::launch) { lp[i] = dep.from; break; }
  }
  d["launched_by"] = launched;
  // What the task moves and computes: a copy's or a collective's bytes; a kernel's share
  // of its operator's tensor bytes and FLOPs (recorded shapes); 0 when unknown.
  auto bytes = new_array<std::uint64_t>(ids.size()), flops = new_array<std::uint64_t>(ids.size());
  auto *bp = bytes.mutable_data(), *fp = flops.mutable_data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const task_id t = ids[i];
    bp[i] = fp[i] = 0;
    if (auto k = g.as<gpu_kernel>(t)) {
      bp[i] = g.payload(k).bytes;
      fp[i] = g.payload(k).flops;
    } else if (auto m = g.as<memcpy_task>(t)) {
      bp[i] = g.payload(m).bytes;
    } else if (auto x = g.as<comm_task>(t)) {
      bp[i] = g.payload(x).bytes;
    }
  }
  d["bytes"] = bytes;
  d["flops"] = flops;
  return d;
}

py::dict dependency_columns(const graph& g) {
  const auto& c = g.core();
  const std::size_t n = g.dependency_count();
  auto src = new_array<std::uint32_t>(n), dst = new_array<std::uint32_t>(n);
  auto kind = new_array<std::uint8_t>(n);
  auto *sp = src.mutable_data(), *dp = dst.mutable_data();
  auto* kp = kind.mutable_data();
  std::size_t i = 0;
  for (task_id t = 0; t < c.id_bound(); ++t) {
    if (!c.is_alive(t)) continue;
    for (auto dep : c.out(t)) {
      if (i == n) throw error("daydream: the graph holds more dependencies than it counts");
      sp[i] = dep.from;
      dp[i] = dep.to;
      kp[i] = static_cast<std::uint8_t>(dep.kind);
      ++i;
    }
  }
  py::dict d;
  d["src"] = src;
  d["dst"] = dst;
  d["kind"] = kind;
  std::vector<std::string> kinds;
  for (int k = 0; k < dep_kind_count; ++k) kinds.emplace_back(to_string(dep_kind(k)));
  d["kind_categories"] = kinds;
  return d;
}

void bind_tables(py::module_& m) {
  m.def("_task_columns", [](const py_trace& t) { return task_columns(t.trace.g); });
  m.def("_dependency_columns", [](const py_trace& t) { return dependency_columns(t.trace.g); });
}

} // namespace daydream::python
