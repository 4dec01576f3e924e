// Defines basic_graph: typed tasks over a flat core, with per-kind payloads held by Boost.Hana.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_GRAPH_HPP
#define DAYDREAM_GRAPH_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/fwd.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <boost/hana/at.hpp>
#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/integral_constant.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream {

/// The common fields of a task, given when it is added.
struct task_fields {
  std::string_view name = {};       ///< interned
  time_ns duration = 0;
  resource_id resource = no_resource;
  time_ns gap = 0;                  ///< idle time after the task on its resource, in the trace
  time_ns trace_start = 0;          ///< start time in the trace (orders ties in replay)
  std::string_view layer = {};      ///< DNN layer (module), interned; empty for none
  enum phase phase = phase::other;
  std::int32_t iteration = 0;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
template <class K, class... Ks> constexpr std::size_t index_of() {
  constexpr bool matches[] = {std::is_same_v<K, Ks>..., false};
  for (std::size_t i = 0; i < sizeof...(Ks); ++i)
    if (matches[i]) return i;
  return sizeof...(Ks);
}
} // namespace detail
//! @endcond

/// A task dependency graph over the task kinds `Kinds...`.
///
/// Every task has a dense id (task_id). The fields the replay needs live in flat
/// arrays of `core()`; kind-specific payloads live in one std::vector per kind, held in
/// a Boost.Hana tuple and reached by compile-time dispatch. An operation on a kind the
/// graph was not instantiated with fails to compile.
///
/// Invalidation: adding tasks or dependencies invalidates nothing (ids and handles are
/// stable); remove() invalidates the handles of the removed tasks; compact() renumbers.
///
///     daydream::graph g;
///     auto thr = g.add_resource({"thread 1", daydream::resource_kind::cpu_thread});
///     auto launch = g.add(daydream::cpu_task{daydream::cpu_call::launch},
///                         {.name = "cudaLaunchKernel", .duration = 5'000, .resource = thr});
template <class... Kinds> class basic_graph {
  static_assert(sizeof...(Kinds) > 0, "daydream::basic_graph needs at least one task kind");
  static_assert(sizeof...(Kinds) < 255, "daydream::basic_graph supports at most 254 task kinds");
  static_assert((task_kind<Kinds> && ...),
                "daydream::basic_graph: every kind must be a default-constructible, copyable class");

public:
  /// Whether `K` is one of this graph's kinds.
  template <class K> static constexpr bool has_kind = (std::is_same_v<K, Kinds> || ...);
  /// The position of `K` among the graph's kinds.
  template <class K> static constexpr std::uint8_t kind_index =
      static_cast<std::uint8_t>(detail::index_of<K, Kinds...>());
  static constexpr std::size_t kind_count = sizeof...(Kinds);

  // ---- resources ----

  /// Adds a resource; returns its id. Names need not be unique, but find_resource
  /// returns the first match.
  resource_id add_resource(resource r) {
    core_.resources.push_back(std::move(r));
    return static_cast<resource_id>(core_.resources.size() - 1);
  }
  resource_id find_resource(std::string_view name) const {
    for (std::size_t i = 0; i < core_.resources.size(); ++i)
      if (core_.resources[i].name == name) return static_cast<resource_id>(i);
    return no_resource;
  }
  const resource& resource_at(resource_id r) const { return core_.resources.at(r); }
  resource& resource_at(resource_id r) { return core_.resources.at(r); }
  std::size_t resource_count() const noexcept { return core_.resources.size(); }

  // ---- tasks ----

  /// Adds a task of kind `K` with its payload and common fields.
  template <class K> handle<K> add(K payload, const task_fields& f) {
    static_assert(has_kind<K>, "daydream::basic_graph::add: this graph was not instantiated "
                               "with this task kind; add it to basic_graph<Kinds...>.");
    if (f.duration < 0)
      throw error("daydream: task \"" + std::string(f.name) + "\" has a negative duration");
    if (f.resource != no_resource && f.resource >= core_.resources.size())
      throw error("daydream: task \"" + std::string(f.name) + "\" names resource #" +
                  std::to_string(f.resource) + ", which does not exist");
    auto& vec = payloads<K>();
    auto id = core_.new_task(kind_index<K>, static_cast<std::uint32_t>(vec.size()));
    vec.push_back(std::move(payload));
    owner<K>().push_back(id);
    core_.duration[id] = f.duration;
    core_.gap[id] = f.gap;
    core_.trace_start[id] = f.trace_start;
    core_.res[id] = f.resource;
    core_.name[id] = core_.names.intern(f.name);
    core_.layer[id] = core_.names.intern(f.layer);
    core_.ph[id] = f.phase;
    core_.iteration[id] = f.iteration;
    return handle<K>{id};
  }

  /// Number of live tasks.
  std::size_t size() const noexcept { return core_.live_tasks; }
  bool empty() const noexcept { return core_.live_tasks == 0; }
  /// One past the largest id ever given out; ids below it may be dead.
  task_id id_bound() const noexcept { return core_.id_bound(); }
  bool contains(task_id t) const noexcept { return core_.is_alive(t); }
  std::size_t dependency_count() const noexcept { return core_.live_edges; }

  /// Whether task `t` is of kind `K`.
  template <class K> bool is(task_id t) const noexcept {
    if constexpr (!has_kind<K>) return false;
    else return t < core_.kind.size() && core_.kind[t] == kind_index<K>;
  }
  /// The typed handle of `t`, or an empty handle if `t` is not of kind `K`.
  template <class K> handle<K> as(task_id t) const noexcept {
    return is<K>(t) ? handle<K>{t} : handle<K>{};
  }

  /// The payload of a typed task.
  template <class K> K& payload(handle<K> h) {
    static_assert(has_kind<K>, "daydream::basic_graph::payload: not a kind of this graph");
    return payloads<K>()[core_.local[h.id]];
  }
  template <class K> const K& payload(handle<K> h) const {
    static_assert(has_kind<K>, "daydream::basic_graph::payload: not a kind of this graph");
    return payloads<K>()[core_.local[h.id]];
  }

  /// Calls `f(handle<K>, K&)` with the task's real kind (compile-time dispatch).
  template <class F> decltype(auto) visit(task_id t, F&& f) {
    return visit_impl<0>(*this, t, f);
  }
  template <class F> decltype(auto) visit(task_id t, F&& f) const {
    return visit_impl<0>(*this, t, f);
  }

  /// The name of the kind of task `t` (kind_traits<K>::name).
  std::string_view kind_name(task_id t) const {
    static constexpr std::string_view names[] = {kind_traits<Kinds>::name...};
    return names[core_.kind[t]];
  }

  // common fields
  std::string_view name(task_id t) const { return core_.names[core_.name[t]]; }
  std::string_view layer(task_id t) const { return core_.names[core_.layer[t]]; }
  name_id layer_id(task_id t) const { return core_.layer[t]; }
  name_id name_id_of(task_id t) const { return core_.name[t]; }
  time_ns duration(task_id t) const { return core_.duration[t]; }
  time_ns gap(task_id t) const { return core_.gap[t]; }
  time_ns trace_start(task_id t) const { return core_.trace_start[t]; }
  resource_id resource_of(task_id t) const { return core_.res[t]; }
  enum phase phase_of(task_id t) const { return core_.ph[t]; }
  std::int32_t iteration(task_id t) const { return core_.iteration[t]; }
  std::int64_t priority(task_id t) const { return core_.priority[t]; }
  std::int64_t mem_delta(task_id t) const { return core_.mem_delta[t]; }

  void set_name(task_id t, std::string_view n) { core_.name[t] = core_.names.intern(n); }
  void set_layer(task_id t, std::string_view l) { core_.layer[t] = core_.names.intern(l); }
  void set_phase(task_id t, enum phase p) { core_.ph[t] = p; }
  void set_iteration(task_id t, std::int32_t i) { core_.iteration[t] = i; }
  void set_mem_delta(task_id t, std::int64_t bytes) { core_.mem_delta[t] = bytes; }
  name_id intern(std::string_view s) { return core_.names.intern(s); }
  std::string_view str(name_id n) const { return core_.names[n]; }

  // ---- dependencies ----

  /// Adds `from -> to` of kind `k`; a second edge between the same pair is ignored.
  /// Returns whether an edge was added. Invalidates nothing.
  bool add_dependency(task_id from, task_id to, dep_kind k) {
    core_.check_task(from, "add_dependency");
    core_.check_task(to, "add_dependency");
    return core_.link(from, to, k);
  }
  /// Removes `from -> to`; returns whether it existed. Invalidates nothing.
  bool remove_dependency(task_id from, task_id to) { return core_.unlink(from, to); }
  bool has_dependency(task_id from, task_id to) const {
    return core_.is_alive(from) && core_.is_alive(to) && core_.find_edge(from, to) != detail::no_edge;
  }
  /// The kind of `from -> to`; throws if there is no such edge.
  dep_kind dependency_kind(task_id from, task_id to) const {
    auto e = core_.find_edge(from, to);
    if (e == detail::no_edge) throw error("daydream: no dependency between the given tasks");
    return core_.edges[e].kind;
  }
  /// The dependencies leaving / entering `t` (range of daydream::dependency).
  auto successors(task_id t) const { return core_.out(t); }
  auto predecessors(task_id t) const { return core_.in(t); }
  std::size_t in_degree(task_id t) const { return core_.n_in[t]; }
  std::size_t out_degree(task_id t) const { return core_.n_out[t]; }

  /// Calls `f(task_id)` for every live task, in id order.
  template <class F> void for_each_task(F&& f) const {
    for (task_id t = 0; t < core_.id_bound(); ++t)
      if (core_.alive[t]) f(t);
  }
  /// Calls `f(handle<K>)` for every live task of kind K, in id order.
  template <class K, class F> void for_each(F&& f) const {
    static_assert(has_kind<K>, "daydream::basic_graph::for_each: not a kind of this graph");
    for (auto t : owner<K>())
      if (core_.alive[t]) f(handle<K>{t});
  }
  /// The ids of the tasks of kind `K` ever added (dead ones included), in id order.
  template <class K> const std::vector<task_id>& ids_of() const { return owner<K>(); }

  void reserve(std::size_t tasks) { core_.reserve(tasks); }

  /// Marks a task dead and unlinks its edges, without bridging. Prefer daydream::remove.
  void erase(task_id t) {
    core_.check_task(t, "erase");
    core_.kill(t);
  }

  /// Renumbers live tasks densely (keeping their relative order) and drops dead edge
  /// records. Invalidates every handle and id; returns the old-id -> new-id map
  /// (no_task for removed tasks).
  std::vector<task_id> compact();

  /// The flat core: what the replay kernel and cost models read.
  const detail::graph_core& core() const noexcept { return core_; }
  /// Mutable core access for primitives; prefer the primitives.
  detail::graph_core& core() noexcept { return core_; }

private:
  template <class K> std::vector<K>& payloads() {
    return boost::hana::at_c<kind_index<K>>(payloads_);
  }
  template <class K> const std::vector<K>& payloads() const {
    return boost::hana::at_c<kind_index<K>>(payloads_);
  }
  template <class K> std::vector<task_id>& owner() { return owners_[kind_index<K>]; }
  template <class K> const std::vector<task_id>& owner() const { return owners_[kind_index<K>]; }

  template <std::size_t I, class Self, class F>
  static decltype(auto) visit_impl(Self& self, task_id t, F& f) {
    using K = std::remove_cvref_t<decltype(boost::hana::at_c<I>(self.payloads_)[0])>;
    if constexpr (I + 1 == sizeof...(Kinds)) {
      return f(handle<K>{t}, boost::hana::at_c<I>(self.payloads_)[self.core_.local[t]]);
    } else {
      if (self.core_.kind[t] == I)
        return f(handle<K>{t}, boost::hana::at_c<I>(self.payloads_)[self.core_.local[t]]);
      return visit_impl<I + 1>(self, t, f);
    }
  }

  detail::graph_core core_;
  boost::hana::basic_tuple<std::vector<Kinds>...> payloads_;
  std::vector<task_id> owners_[sizeof...(Kinds)];
};

template <class... Kinds> std::vector<task_id> basic_graph<Kinds...>::compact() {
  auto& c = core_;
  const task_id n = c.id_bound();
  std::vector<task_id> map(n, no_task);
  task_id next = 0;
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t]) map[t] = next++;

  detail::graph_core out;
  out.names = std::move(c.names);
  out.resources = std::move(c.resources);
  out.reserve(next);
  boost::hana::basic_tuple<std::vector<Kinds>...> new_payloads;
  std::vector<task_id> new_owners[sizeof...(Kinds)];
  for (task_id t = 0; t < n; ++t) {
    if (!c.alive[t]) continue;
    std::uint32_t loc = 0;
    visit(t, [&]<class K>(handle<K>, K& p) {
      auto& v = boost::hana::at_c<kind_index<K>>(new_payloads);
      loc = static_cast<std::uint32_t>(v.size());
      v.push_back(std::move(p));
      new_owners[kind_index<K>].push_back(map[t]);
    });
    auto id = out.new_task(c.kind[t], loc);
    out.duration[id] = c.duration[t]; out.gap[id] = c.gap[t];
    out.trace_start[id] = c.trace_start[t]; out.priority[id] = c.priority[t];
    out.mem_delta[id] = c.mem_delta[t]; out.res[id] = c.res[t]; out.name[id] = c.name[t];
    out.layer[id] = c.layer[t]; out.iteration[id] = c.iteration[t]; out.ph[id] = c.ph[t];
  }
  // Re-add edges in a deterministic order: by source, in each list's order reversed so
  // that the new lists keep the old iteration order.
  out.edges.reserve(c.live_edges);
  for (task_id t = 0; t < n; ++t) {
    if (!c.alive[t]) continue;
    std::vector<dependency> outs(c.out(t).begin(), c.out(t).end());
    for (auto it = outs.rbegin(); it != outs.rend(); ++it) {
      auto e = static_cast<detail::edge_id>(out.edges.size());
      auto a = map[it->from], b = map[it->to];
      out.edges.push_back({a, b, out.head_out[a], out.head_in[b], it->kind});
      out.head_out[a] = e; out.head_in[b] = e;
      ++out.n_out[a]; ++out.n_in[b]; ++out.live_edges;
    }
  }
  core_ = std::move(out);
  payloads_ = std::move(new_payloads);
  for (std::size_t i = 0; i < sizeof...(Kinds); ++i) owners_[i] = std::move(new_owners[i]);
  return map;
}

} // namespace daydream

#endif
