// Defines basic_graph: typed tasks over a flat core, with per-kind payloads held by Boost.Hana.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_GRAPH_HPP
#define DAYDREAM_GRAPH_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/fwd.hpp>
#include <daydream/kinds.hpp>
#include <daydream/recorded_device.hpp>
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

/// The common fields of a task, given when it is added (use designated initializers).
///
///     g.add(daydream::gpu_kernel{}, {.name = "volta_sgemm", .duration = 30'000,
///                                    .resource = stream, .layer = "fc1",
///                                    .phase = daydream::phase::forward});
struct task_fields {
  std::string_view name = {};       ///< task name; interned, so the view need not outlive add()
  time_ns duration = 0;             ///< execution time in nanoseconds, not negative
  resource_id resource = no_resource; ///< where it runs; no_resource: unconstrained in replay
  time_ns gap = 0;                  ///< idle time after the task on its resource, in the trace
  time_ns trace_start = 0;          ///< start time in the trace (orders ties in replay)
  std::string_view layer = {};      ///< DNN layer (module), interned; empty for none
  enum phase phase = phase::other;  ///< forward, backward, weight update or other
  std::int32_t iteration = 0;       ///< training iteration; negative: outside any iteration
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
/// graph was not instantiated with fails to compile with a message that says so.
///
/// Invalidation: adding tasks, resources or dependencies invalidates no id or handle
/// (references returned by payload() and resource_at() may dangle, as with
/// std::vector); remove() and erase() invalidate the handles of the removed tasks only;
/// compact() renumbers every task. The graph is a regular value type: copies are deep
/// and independent.
///
///     daydream::graph g;
///     auto thr = g.add_resource({"thread 1", daydream::resource_kind::cpu_thread});
///     auto st = g.add_resource({"stream 7", daydream::resource_kind::gpu_stream});
///     auto launch = g.add(daydream::cpu_task{daydream::cpu_call::launch},
///                         {.name = "cudaLaunchKernel", .duration = 5'000, .resource = thr});
///     auto kernel = g.add(daydream::gpu_kernel{}, {.name = "volta_sgemm",
///                         .duration = 30'000, .resource = st});
///     g.add_dependency(launch, kernel, daydream::dep_kind::launch);
template <class... Kinds> class basic_graph {
  static_assert(sizeof...(Kinds) > 0, "daydream::basic_graph needs at least one task kind");
  static_assert(sizeof...(Kinds) < 255, "daydream::basic_graph supports at most 254 task kinds");
  static_assert((task_kind<Kinds> && ...),
                "daydream::basic_graph: every kind must be a default-constructible, copyable class");

public:
  /// Whether `K` is one of this graph's kinds.
  template <class K> static constexpr bool has_kind = (std::is_same_v<K, Kinds> || ...);
  /// The position of `K` among the graph's kinds (kind_count if it is none of them).
  template <class K> static constexpr std::uint8_t kind_index =
      static_cast<std::uint8_t>(detail::index_of<K, Kinds...>());
  /// Number of task kinds of the graph.
  static constexpr std::size_t kind_count = sizeof...(Kinds);

  // ---- resources ----

  /// Adds a resource and returns its id (dense, from 0). Names need not be unique, but
  /// find_resource returns the first match. Invalidates references from resource_at().
  ///
  ///     auto link = g.add_resource({"nic0", daydream::resource_kind::link,
  ///                                 daydream::sharing::fair, 0, -1, 25e9 / 8});
  resource_id add_resource(resource r) {
    core_.resources.push_back(std::move(r));
    return static_cast<resource_id>(core_.resources.size() - 1);
  }
  /// The id of the first resource named `name`, or no_resource.
  resource_id find_resource(std::string_view name) const {
    for (std::size_t i = 0; i < core_.resources.size(); ++i)
      if (core_.resources[i].name == name) return static_cast<resource_id>(i);
    return no_resource;
  }
  /// The resource `r`; throws std::out_of_range if there is none.
  const resource& resource_at(resource_id r) const { return core_.resources.at(r); }
  /// The resource `r`, to change its name, sharing or bandwidth in place.
  resource& resource_at(resource_id r) { return core_.resources.at(r); }
  /// Number of resources (their ids are 0 .. resource_count() - 1).
  std::size_t resource_count() const noexcept { return core_.resources.size(); }

  // ---- tasks ----

  /// Adds a task of kind `K` with its payload and common fields; returns its handle.
  /// Throws daydream::error for a negative duration or gap, an unknown resource, or a
  /// resource that does not fit the kind (resource_fits: a gpu_kernel on a CPU thread).
  /// Fails to compile if `K` is not one of the graph's kinds. Invalidates no id or
  /// handle; views made by tasks() before the call do not see the new task.
  ///
  ///     auto k = g.add(daydream::gpu_kernel{.device = 0, .stream = 7},
  ///                    {.name = "volta_sgemm", .duration = 30'000, .resource = stream});
  template <class K> handle<K> add(K payload, const task_fields& f) {
    static_assert(has_kind<K>, "daydream::basic_graph::add: this graph was not instantiated "
                               "with this task kind; add it to basic_graph<Kinds...>.");
    if constexpr (has_kind<K>) return add_impl(std::move(payload), f);
    else return {};
  }

  /// Number of live tasks.
  std::size_t size() const noexcept { return core_.live_tasks; }
  /// Whether the graph has no live task.
  bool empty() const noexcept { return core_.live_tasks == 0; }
  /// One past the largest id ever given out; ids below it may be dead (removed).
  task_id id_bound() const noexcept { return core_.id_bound(); }
  /// Whether `t` names a live task.
  bool contains(task_id t) const noexcept { return core_.is_alive(t); }
  /// Number of dependencies between live tasks.
  std::size_t dependency_count() const noexcept { return core_.live_edges; }

  /// Whether task `t` is of kind `K` (false for a kind the graph does not have).
  template <class K> bool is(task_id t) const noexcept {
    if constexpr (!has_kind<K>) return false;
    else return t < core_.kind.size() && core_.kind[t] == kind_index<K>;
  }
  /// The typed handle of `t`, or an empty handle if `t` is not of kind `K`.
  ///
  ///     if (auto call = g.as<daydream::cpu_task>(t)) g.payload(call).call = ...;
  template <class K> handle<K> as(task_id t) const noexcept {
    return is<K>(t) ? handle<K>::unchecked(t) : handle<K>{};
  }

  /// The payload of a typed task; the reference is valid until the next add() or
  /// compact(). Fails to compile if `K` is not one of the graph's kinds.
  ///
  ///     g.payload(kernel).stream = 13;
  template <class K> K& payload(handle<K> h) {
    static_assert(has_kind<K>, "daydream::basic_graph::payload: this graph was not "
                               "instantiated with this task kind, so no task has its payload.");
    if constexpr (has_kind<K>) {
      check_handle(h, "payload");
      return payloads<K>()[core_.local[h.id]];
    } else
      return *static_cast<K*>(nullptr);
  }
  /// The payload of a typed task (read only).
  template <class K> const K& payload(handle<K> h) const {
    static_assert(has_kind<K>, "daydream::basic_graph::payload: this graph was not "
                               "instantiated with this task kind, so no task has its payload.");
    if constexpr (has_kind<K>) {
      check_handle(h, "payload");
      return payloads<K>()[core_.local[h.id]];
    } else
      return *static_cast<const K*>(nullptr);
  }

  /// Calls `f(handle<K>, K&)` with the real kind of task `t` (compile-time dispatch over
  /// the graph's kinds) and returns what `f` returns; `f` must return the same type for
  /// every kind. A generic lambda is the usual `f`.
  ///
  ///     g.visit(t, [](auto h, auto& payload) { ... });
  template <class F> decltype(auto) visit(task_id t, F&& f) {
    return visit_impl<0>(*this, t, f);
  }
  /// Calls `f(handle<K>, const K&)` with the real kind of task `t`.
  template <class F> decltype(auto) visit(task_id t, F&& f) const {
    return visit_impl<0>(*this, t, f);
  }

  /// The kind of resource tasks of the kind of `t` run on (kind_traits<K>::resource), e.g.
  /// resource_kind::gpu_stream for a gpu_kernel.
  resource_kind kind_resource(task_id t) const {
    static constexpr resource_kind kinds[] = {kind_traits<Kinds>::resource...};
    return kinds[core_.kind[t]];
  }

  /// The name of the kind of task `t` (kind_traits<K>::name), e.g. "gpu_kernel".
  std::string_view kind_name(task_id t) const {
    static constexpr std::string_view names[] = {kind_traits<Kinds>::name...};
    return names[core_.kind[t]];
  }

  // ---- common fields (ids below id_bound(); removed tasks keep their last values) ----

  /// The task's name ("volta_sgemm_128x64_nn", "cudaLaunchKernel").
  std::string_view name(task_id t) const { return core_.names[core_.name[t]]; }
  /// The task's layer (module) name; empty when it belongs to none.
  std::string_view layer(task_id t) const { return core_.names[core_.layer[t]]; }
  /// The interned id of the task's layer: equal ids are equal layers.
  name_id layer_id(task_id t) const { return core_.layer[t]; }
  /// The interned id of the task's name.
  name_id name_id_of(task_id t) const { return core_.name[t]; }
  /// Execution time, in nanoseconds.
  time_ns duration(task_id t) const { return core_.duration[t]; }
  /// Idle time the replay keeps after the task on its resource, in nanoseconds.
  time_ns gap(task_id t) const { return core_.gap[t]; }
  /// Start time in the trace; orders ties in replay.
  time_ns trace_start(task_id t) const { return core_.trace_start[t]; }
  /// The resource the task runs on, or no_resource.
  resource_id resource_of(task_id t) const { return core_.res[t]; }
  /// The phase of the training iteration the task belongs to.
  enum phase phase_of(task_id t) const { return core_.ph[t]; }
  /// The training iteration the task belongs to.
  std::int32_t iteration(task_id t) const { return core_.iteration[t]; }
  /// The replay priority set by reschedule() (smaller first; default_priority).
  std::int64_t priority(task_id t) const { return core_.priority[t]; }
  /// Bytes the task allocates (positive) or frees (negative) when it starts.
  std::int64_t mem_delta(task_id t) const { return core_.mem_delta[t]; }

  /// Renames task `t`. Invalidates nothing.
  void set_name(task_id t, std::string_view n) { core_.name[t] = core_.names.intern(n); }
  /// Moves task `t` to layer `l` (empty: none). Invalidates nothing.
  void set_layer(task_id t, std::string_view l) { core_.layer[t] = core_.names.intern(l); }
  /// Sets the phase of task `t`. Invalidates nothing.
  void set_phase(task_id t, enum phase p) { core_.ph[t] = p; }
  /// Sets the iteration of task `t`. Invalidates nothing.
  void set_iteration(task_id t, std::int32_t i) { core_.iteration[t] = i; }
  /// Sets the bytes task `t` allocates (positive) or frees (negative) when it starts;
  /// replay_result::peak_memory sums them. Invalidates nothing.
  void set_mem_delta(task_id t, std::int64_t bytes) { core_.mem_delta[t] = bytes; }
  /// The GPUs the tasks ran on as the profiler recorded them (Kineto's
  /// `deviceProperties`); empty for a graph built by hand or from a trace without them.
  const std::vector<recorded_device>& devices() const noexcept { return devices_; }
  /// Sets the recorded GPUs (see devices()). Invalidates references from devices().
  void set_devices(std::vector<recorded_device> d) { devices_ = std::move(d); }
  /// The recorded GPU of index `id` (recorded_device::id), or nullptr.
  const recorded_device* device_of(std::int32_t id) const noexcept {
    for (auto& d : devices_)
      if (d.id == id) return &d;
    return nullptr;
  }
  /// Interns a string in the graph's name table (for name_id comparisons).
  name_id intern(std::string_view s) { return core_.names.intern(s); }
  /// The string of an interned id.
  std::string_view str(name_id n) const { return core_.names[n]; }

  // ---- dependencies ----

  /// Adds `from -> to` of kind `k` (`to` waits for `from`); a second edge between the
  /// same pair is ignored (the first kind stays). Returns whether an edge was added.
  /// Throws for a dead task, `from == to`, or a launch dependency that does not go from
  /// CPU work to GPU-side work (launch_fits: a kernel launches nothing, a CPU call is
  /// not launched); a cycle is not detected here (replay, apply and check_invariants
  /// do). Invalidates nothing.
  ///
  ///     g.add_dependency(kernel, sync_call, daydream::dep_kind::sync);
  bool add_dependency(task_id from, task_id to, dep_kind k) {
    core_.check_task(from, "add_dependency");
    core_.check_task(to, "add_dependency");
    if (k == dep_kind::launch && !launch_fits(kind_resource(from), kind_resource(to)))
      throw error("daydream: add_dependency: a launch dependency " + describe(from) + " -> " +
                  describe(to) + " must go from CPU work to GPU-side work");
    return core_.link(from, to, k);
  }
  /// Removes `from -> to`; returns whether it existed. No bridging: the order it
  /// expressed is lost (see daydream::remove for the bridging removal of a task).
  /// Invalidates nothing.
  bool remove_dependency(task_id from, task_id to) {
    if (!core_.is_alive(from) || !core_.is_alive(to)) return false;
    return core_.unlink(from, to);
  }
  /// Whether there is a dependency `from -> to` (not a path: one edge).
  bool has_dependency(task_id from, task_id to) const {
    return core_.is_alive(from) && core_.is_alive(to) && core_.find_edge(from, to) != detail::no_edge;
  }
  /// The kind of `from -> to`; throws daydream::error if there is no such edge.
  dep_kind dependency_kind(task_id from, task_id to) const {
    auto e = has_dependency(from, to) ? core_.find_edge(from, to) : detail::no_edge;
    if (e == detail::no_edge)
      throw error("daydream: no dependency #" + std::to_string(from) + " -> #" +
                  std::to_string(to));
    return core_.edges[e].kind;
  }
  /// The dependencies leaving `t` (a forward range of daydream::dependency, newest
  /// first). Invalidated by any change to the dependencies of `t`.
  ///
  ///     for (auto d : g.successors(t)) if (d.kind == daydream::dep_kind::launch) ...;
  auto successors(task_id t) const { return core_.out(t); }
  /// The dependencies entering `t` (a forward range of daydream::dependency).
  auto predecessors(task_id t) const { return core_.in(t); }
  /// Number of dependencies entering `t`.
  std::size_t in_degree(task_id t) const { return core_.n_in[t]; }
  /// Number of dependencies leaving `t`.
  std::size_t out_degree(task_id t) const { return core_.n_out[t]; }

  /// Calls `f(task_id)` for every live task, in id order. `f` may change fields and
  /// dependencies, and remove the task it is given, but not add tasks.
  template <class F> void for_each_task(F&& f) const {
    for (task_id t = 0; t < core_.id_bound(); ++t)
      if (core_.alive[t]) f(t);
  }
  /// Calls `f(handle<K>)` for every live task of kind K, in id order (same rules as
  /// for_each_task).
  template <class K, class F> void for_each(F&& f) const {
    static_assert(has_kind<K>, "daydream::basic_graph::for_each: this graph was not "
                               "instantiated with this task kind.");
    if constexpr (has_kind<K>) {
      const auto& ids = owner<K>();
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (core_.alive[ids[i]]) f(handle<K>::unchecked(ids[i]));
    }
  }
  /// The ids of the tasks of kind `K` ever added (dead ones included), in id order.
  /// Invalidated by add() of a `K` and by compact().
  template <class K> const std::vector<task_id>& ids_of() const {
    static_assert(has_kind<K>, "daydream::basic_graph::ids_of: this graph was not "
                               "instantiated with this task kind.");
    return owners_[has_kind<K> ? kind_index<K> : 0];
  }

  /// Reserves room for `tasks` tasks in the flat arrays. Invalidates nothing.
  void reserve(std::size_t tasks) { core_.reserve(tasks); }
  /// Reserves room for `more` dependency records beyond those there: a pass that adds
  /// many to a copied graph (whose arrays have no room to spare) grows them once instead
  /// of by doubling. Invalidates nothing.
  void reserve_dependencies(std::size_t more) { core_.edges.reserve(core_.edges.size() + more); }
  /// Reserves room for `tasks` tasks of kind `K` beyond those there (their payloads and
  /// ids; growing by doubling both copies and touches fresh memory). Invalidates
  /// payload references when it reallocates, as add() does.
  template <class K> void reserve(std::size_t tasks) {
    static_assert(has_kind<K>, "daydream::basic_graph::reserve: this graph was not "
                               "instantiated with this task kind.");
    if constexpr (has_kind<K>) {
      payloads<K>().reserve(payloads<K>().size() + tasks);
      owners_[kind_index<K>].reserve(owners_[kind_index<K>].size() + tasks);
    }
  }

  /// Appends `n` tasks of kind `K` at once, each with a default payload and default fields
  /// (no name, no resource, no layer, zero duration and gap, phase::other, iteration 0),
  /// and returns the first id: the ids are that one and the `n - 1` after it. For
  /// builders that then set every task's fields in place (set_duration, set_name, payload()):
  /// as each writes the fields of one task only, several threads may fill disjoint tasks
  /// at once. Invalidates payload references, as add() does.
  ///
  ///     auto first = g.add_defaults<daydream::cpu_task>(slices.size());
  template <class K> task_id add_defaults(std::size_t n) {
    static_assert(has_kind<K>, "daydream::basic_graph::add_defaults: this graph was not "
                               "instantiated with this task kind.");
    if constexpr (has_kind<K>) {
      auto& vec = payloads<K>();
      const auto first = core_.new_tasks(kind_index<K>, static_cast<std::uint32_t>(vec.size()), n);
      vec.resize(vec.size() + n);
      auto& own = owner<K>();
      own.reserve(own.size() + n);
      for (std::size_t i = 0; i < n; ++i) own.push_back(static_cast<task_id>(first + i));
      return first;
    } else {
      return no_task;
    }
  }

  /// Marks a task dead and unlinks its edges, without bridging: the order through it is
  /// lost. Prefer daydream::remove. Invalidates the handles of `t`.
  void erase(task_id t) {
    core_.check_task(t, "erase");
    core_.kill(t);
  }

  /// Renumbers live tasks densely (keeping their relative order) and drops dead edge
  /// records. Invalidates every handle, id, view and reference; returns the
  /// old-id -> new-id map (no_task for removed tasks). O(V + E).
  ///
  ///     auto map = g.compact();
  ///     kernel = g.as<daydream::gpu_kernel>(map[kernel.id]);
  std::vector<task_id> compact();

  /// The flat core: what the replay kernel and cost models read. No stability promise.
  const detail::graph_core& core() const noexcept { return core_; }
  /// Mutable core access for primitives; prefer the primitives.
  detail::graph_core& core() noexcept { return core_; }

private:
  // "#3 gpu_kernel \"sgemm\"" for messages.
  std::string describe(task_id t) const {
    return "#" + std::to_string(t) + " " + std::string(kind_name(t)) + " \"" +
           std::string(name(t)) + "\"";
  }
  // The kind check of typed accessors (DAYDREAM_ASSERT: on unless NDEBUG). A handle made
  // with handle<K>::unchecked() for a task of another kind would read another kind's
  // payload array out of bounds.
  template <class K> void check_handle([[maybe_unused]] handle<K> h, [[maybe_unused]] const char* what) const {
    DAYDREAM_ASSERT(is<K>(h.id), handle_error<K>(h.id, what));
  }
  template <class K> std::string handle_error(task_id t, const char* what) const {
    std::string s = std::string("basic_graph::") + what + ": handle<" +
                    std::string(kind_traits<K>::name) + "> names task #" + std::to_string(t);
    if (t >= core_.id_bound()) return s + ", which does not exist";
    return s + ", which is a " + std::string(kind_name(t)) +
           " (make handles with g.as<K>(id), which checks the kind)";
  }

  template <class K> handle<K> add_impl(K payload, const task_fields& f) {
    if (f.duration < 0 || f.gap < 0)
      throw error("daydream: task \"" + std::string(f.name) + "\" has a negative duration or gap");
    if (f.resource != no_resource && f.resource >= core_.resources.size())
      throw error("daydream: task \"" + std::string(f.name) + "\" names resource #" +
                  std::to_string(f.resource) + ", which does not exist");
    if (f.resource != no_resource &&
        !resource_fits(kind_traits<K>::resource, core_.resources[f.resource].kind))
      throw error("daydream: task \"" + std::string(f.name) + "\" is a " +
                  std::string(kind_traits<K>::name) + ", which runs on a " +
                  std::string(to_string(kind_traits<K>::resource)) + ", not on resource #" +
                  std::to_string(f.resource) + " \"" + core_.resources[f.resource].name +
                  "\" (a " + std::string(to_string(core_.resources[f.resource].kind)) + ")");
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
    return handle<K>::unchecked(id);
  }
  template <class K> detail::column<K>& payloads() {
    return boost::hana::at_c<kind_index<K>>(payloads_);
  }
  template <class K> const detail::column<K>& payloads() const {
    return boost::hana::at_c<kind_index<K>>(payloads_);
  }
  template <class K> std::vector<task_id>& owner() { return owners_[kind_index<K>]; }
  template <class K> const std::vector<task_id>& owner() const { return owners_[kind_index<K>]; }

  template <std::size_t I, class Self, class F>
  static decltype(auto) visit_impl(Self& self, task_id t, F& f) {
    using K = std::remove_cvref_t<decltype(boost::hana::at_c<I>(self.payloads_)[0])>;
    if constexpr (I + 1 == sizeof...(Kinds)) {
      return f(handle<K>::unchecked(t), boost::hana::at_c<I>(self.payloads_)[self.core_.local[t]]);
    } else {
      if (self.core_.kind[t] == I)
        return f(handle<K>::unchecked(t), boost::hana::at_c<I>(self.payloads_)[self.core_.local[t]]);
      return visit_impl<I + 1>(self, t, f);
    }
  }

  detail::graph_core core_;
  boost::hana::basic_tuple<detail::column<Kinds>...> payloads_; // large ones on huge pages
  std::vector<task_id> owners_[sizeof...(Kinds)];
  std::vector<recorded_device> devices_; // not tasks: the replay never reads them
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
  boost::hana::basic_tuple<detail::column<Kinds>...> new_payloads;
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
    out.trace_start[id] = c.trace_start[t]; out.res[id] = c.res[t]; out.name[id] = c.name[t];
    // Copy only stored values, so that an unused column stays unallocated.
    if (auto p = std::as_const(c.priority)[t]) out.priority[id] = p;
    if (auto m = std::as_const(c.mem_delta)[t]) out.mem_delta[id] = m;
    out.layer[id] = c.layer[t]; out.iteration[id] = c.iteration[t]; out.ph[id] = c.ph[t];
  }
  // Re-add edges in a deterministic order: by source, in each list's order reversed so
  // that the new out-lists keep the old iteration order.
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
