// Defines the insert primitives: a task with dependencies, into a program order or at a position, a kernel with its launch (or launched like another), a copy of a task or of a subgraph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_INSERT_HPP
#define DAYDREAM_INSERT_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream {

/// The dependency kind of program order on resource `r` of `g`: cpu_order on a CPU
/// thread, stream_order elsewhere (and for no_resource).
template <class Graph> dep_kind order_kind(const Graph& g, resource_id r) {
  return r != no_resource && is_cpu(g.resource_at(r).kind) ? dep_kind::cpu_order
                                                           : dep_kind::stream_order;
}

/// The next task after `t` in the program order of its resource (an order edge to a task
/// on the same resource), or no_task. O(out-degree).
template <class Graph> task_id next_on_resource(const Graph& g, task_id t) {
  for (auto d : g.successors(t))
    if (dep_mask::order().contains(d.kind) && g.resource_of(d.to) == g.resource_of(t)) return d.to;
  return no_task;
}
/// The previous task before `t` in the program order of its resource, or no_task.
/// O(in-degree).
template <class Graph> task_id prev_on_resource(const Graph& g, task_id t) {
  for (auto d : g.predecessors(t))
    if (dep_mask::order().contains(d.kind) && g.resource_of(d.from) == g.resource_of(t)) return d.from;
  return no_task;
}

/// A dependency of a task about to be inserted on task `t`: `t -> new`, of kind `k`
/// (`{t, no_task, k}`: the new task waits for `t`).
///
///     daydream::insert(g, daydream::cpu_task{}, f, {daydream::edge_from(ready, daydream::dep_kind::comm)});
constexpr dependency edge_from(task_id t, dep_kind k) noexcept { return {t, no_task, k}; }
/// A dependency of task `t` on a task about to be inserted: `new -> t`, of kind `k`
/// (`{no_task, t, k}`: `t` waits for the new task).
constexpr dependency edge_to(task_id t, dep_kind k) noexcept { return {no_task, t, k}; }
/// edge_from(t, k) for every task of `ts` (ids, handles or task references), in order.
///
///     auto deps = daydream::edges_from(ready_tasks, daydream::dep_kind::comm);
template <class Range>
  requires requires(const Range& r) { std::begin(r); std::end(r); }
std::vector<dependency> edges_from(const Range& ts, dep_kind k) {
  std::vector<dependency> out;
  for (auto t : ts) out.push_back(edge_from(static_cast<task_id>(t), k));
  return out;
}

/// The dependencies an insert primitive adds with its new task, where `no_task` on either
/// side stands for the new task: a braced list (`{edge_from(a, k), edge_to(b, k)}`), a
/// std::vector<dependency>, or any range of dependency. Made where it is passed, and only
/// there: it may view the list it was made from.
class dependency_list {
public:
  /// No dependencies.
  dependency_list() = default;
  /// The dependencies of a braced list.
  dependency_list(std::initializer_list<dependency> d) noexcept // NOLINT: a list is a dependency_list
      : view_(d.begin(), d.size()) {}
  /// The dependencies of a vector (viewed, not copied).
  dependency_list(const std::vector<dependency>& d) noexcept : view_(d) {} // NOLINT
  /// The dependencies of any other range of dependency (copied).
  template <class Range>
    requires(!std::is_same_v<std::remove_cvref_t<Range>, std::vector<dependency>> &&
             !std::is_same_v<std::remove_cvref_t<Range>, dependency_list> &&
             requires(const Range& r) {
               { *std::begin(r) } -> std::convertible_to<dependency>;
               std::end(r);
             })
  dependency_list(const Range& r) : own_(std::begin(r), std::end(r)), view_(own_) {} // NOLINT
  dependency_list(const dependency_list&) = delete;
  dependency_list& operator=(const dependency_list&) = delete;

  /// The first dependency.
  const dependency* begin() const noexcept { return view_.data(); }
  /// One past the last dependency.
  const dependency* end() const noexcept { return view_.data() + view_.size(); }
  /// Number of dependencies.
  std::size_t size() const noexcept { return view_.size(); }
  /// Whether there are none.
  bool empty() const noexcept { return view_.empty(); }

private:
  std::vector<dependency> own_;
  std::span<const dependency> view_;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
// Checks the dependencies of a task about to be inserted, before anything is added.
template <class Graph> void check_new_dependencies(const Graph& g, const dependency_list& deps, const char* what) {
  for (auto& d : deps) {
    if (d.from == no_task && d.to == no_task)
      throw error(std::string("daydream: ") + what + ": a dependency must name a task on one side");
    if (d.from != no_task) g.core().check_task(d.from, what);
    if (d.to != no_task) g.core().check_task(d.to, what);
  }
}
// Adds the dependencies of the new task `id`, in order.
template <class Graph> void add_new_dependencies(Graph& g, task_id id, const dependency_list& deps) {
  for (auto& d : deps) g.add_dependency(d.from == no_task ? id : d.from, d.to == no_task ? id : d.to, d.kind);
}
} // namespace detail
//! @endcond

/// Adds a task and the given dependencies (`{from, to, kind}`, where `no_task` on
/// either side stands for the new task: edge_from, edge_to). Checks the named tasks before
/// adding anything; does not check for cycles (a dependency from a successor of a task to
/// the new task and from the new task to that task closes one: apply() and replay()
/// refuse it). Invalidates nothing.
///
///     auto k = daydream::insert(g, daydream::gpu_kernel{}, {.name = "decode", .duration = 40,
///                               .resource = s}, {daydream::edge_from(launch, daydream::dep_kind::launch)});
template <class Graph, class Kind>
handle<Kind> insert(Graph& g, Kind payload, const task_fields& f, const dependency_list& deps = {}) {
  detail::check_new_dependencies(g, deps, "insert");
  auto h = g.add(std::move(payload), f);
  detail::add_new_dependencies(g, h.id, deps);
  return h;
}

/// Inserts a task into the program order of resource `f.resource` between `a` and `b`
/// (either may be no_task: at the front / at the end). The `a -> b` edge, if any, is
/// replaced by `a -> new -> b` with the resource's order kind (order_kind). When
/// `f.resource` is no_resource, the resource of `a` (or `b`) is used; both must be on
/// the inserted task's resource. The new task's trace_start, when left 0, becomes the
/// end of `a` in the trace, so trace-order ties keep it in place. Invalidates nothing.
///
///     // an encode kernel right after relu's kernel on its stream
///     auto enc = daydream::insert_between(g, daydream::gpu_kernel{}, {.name = "gist_encode",
///                    .duration = 12'000}, relu, daydream::next_on_resource(g, relu));
template <class Graph, class Kind>
handle<Kind> insert_between(Graph& g, Kind payload, task_fields f, task_id a, task_id b) {
  if (a != no_task) g.core().check_task(a, "insert_between");
  if (b != no_task) g.core().check_task(b, "insert_between");
  if (a != no_task && a == b)
    throw error("daydream: insert_between: task #" + std::to_string(a) + " on both sides");
  if (f.resource == no_resource)
    f.resource = a != no_task ? g.resource_of(a) : b != no_task ? g.resource_of(b) : no_resource;
  for (auto t : {a, b})
    if (t != no_task && g.resource_of(t) != f.resource)
      throw error("daydream: insert_between: task #" + std::to_string(t) +
                  " is not on the resource of the inserted task");
  if (f.trace_start == 0 && a != no_task)
    f.trace_start = g.trace_start(a) + g.duration(a);
  auto k = order_kind(g, f.resource);
  // add() checks the fields first: a refused task leaves the a -> b edge in place.
  auto h = g.add(std::move(payload), f);
  if (a != no_task && b != no_task) g.remove_dependency(a, b);
  if (a != no_task) g.add_dependency(a, h.id, k);
  if (b != no_task) g.add_dependency(h.id, b, k);
  return h;
}

/// Inserts a task right after `a` in the program order of `a`'s resource (the resource
/// in `f` is ignored). Invalidates nothing.
///
///     auto copy = daydream::insert_after(g, daydream::gpu_kernel{}, {.name = "cast", .duration = 3'000}, k);
template <class Graph, class Kind>
handle<Kind> insert_after(Graph& g, Kind payload, task_fields f, task_id a) {
  g.core().check_task(a, "insert_after");
  f.resource = g.resource_of(a);
  return insert_between(g, std::move(payload), f, a, next_on_resource(g, a));
}

/// Inserts a task right before `b` in the program order of `b`'s resource (the resource
/// in `f` is ignored); trace_start, when left 0, becomes `b`'s. Invalidates nothing.
///
///     auto wait = daydream::insert_before(g, daydream::cpu_task{daydream::cpu_call::sync},
///                                         {.name = "cudaStreamSynchronize", .duration = 2'000}, step);
template <class Graph, class Kind>
handle<Kind> insert_before(Graph& g, Kind payload, task_fields f, task_id b) {
  g.core().check_task(b, "insert_before");
  f.resource = g.resource_of(b);
  if (f.trace_start == 0) f.trace_start = g.trace_start(b);
  return insert_between(g, std::move(payload), f, prev_on_resource(g, b), b);
}

/// A place in the program order of a resource: right before or right after `anchor`
/// (the inserted task takes the anchor's resource). An empty anchor (`position{}`) means
/// "in no program order": the task runs on the resource named by its task_fields as soon
/// as it is ready, in the order the replay's policy picks.
struct position {
  task_id anchor = no_task; ///< the task the new one goes next to; no_task: no program order
  bool before = false;      ///< right before the anchor (else right after)
};
/// Right before `t` in the program order of t's resource.
constexpr position just_before(task_id t) noexcept { return {t, true}; }
/// Right after `t` in the program order of t's resource.
constexpr position just_after(task_id t) noexcept { return {t, false}; }

/// Adds a task at position `p` (insert_before or insert_after its anchor, or, for an
/// empty position, on the resource of `f` in no program order) and then the dependencies
/// `deps` (as insert adds them: `no_task` stands for the new task; checked before anything
/// is added). Invalidates nothing.
///
///     auto k = daydream::insert_at(g, daydream::gpu_kernel{}, {.name = "cast", .duration = 3'000},
///                                  daydream::just_before(gemm));
///     auto wait = daydream::insert_at(g, daydream::cpu_task{daydream::cpu_call::sync},
///                                     {.name = "found_inf.item()", .duration = 5'000}, daydream::just_before(step),
///                                     {daydream::edge_from(unscale, daydream::dep_kind::sync)});
template <class Graph, class Kind>
handle<Kind> insert_at(Graph& g, Kind payload, task_fields f, position p, const dependency_list& deps = {}) {
  detail::check_new_dependencies(g, deps, "insert_at");
  handle<Kind> h;
  if (p.anchor == no_task) h = g.add(std::move(payload), f);
  else h = p.before ? insert_before(g, std::move(payload), f, p.anchor) : insert_after(g, std::move(payload), f, p.anchor);
  detail::add_new_dependencies(g, h.id, deps);
  return h;
}

/// A GPU task inserted together with the CPU call that launches it.
template <class Kind> struct launched {
  handle<cpu_task> launch; ///< the launch call on the CPU thread (empty when none was inserted)
  handle<Kind> task;       ///< the launched GPU task
};

/// The CPU runtime call insert_launched adds to issue GPU work.
struct launch_call {
  cpu_call call = cpu_call::launch;           ///< what the call does (launch, memcpy, ...)
  std::string_view name = "cudaLaunchKernel"; ///< its name (copied into the graph)
  /// Nanoseconds; 0: the duration of the CPU anchor when that is a call of the same kind
  /// with a non-zero duration, else 5 us (a typical cudaLaunchKernel on current drivers).
  time_ns duration = 0;
};

/// Inserts GPU work (a kernel or a copy) at `gpu_pos` together with the CPU call that
/// issues it at `cpu_pos`, and the launch dependency between them. The call is
/// described by `call` and takes layer, phase and iteration from `f`. With an empty
/// `cpu_pos` no call is inserted and the result's `launch` is empty; an empty `gpu_pos`
/// puts the GPU task on `f.resource` outside any program order. Then `deps` are added, where
/// `no_task` stands for the GPU task (edge_from, edge_to). Everything that could refuse the
/// GPU task is checked before anything is inserted. Invalidates nothing.
///
///     // an encode kernel after relu's kernel, launched right after relu's launch
///     auto [call, enc] = daydream::insert_launched(g, daydream::gpu_kernel{},
///         {.name = "gist_encode", .duration = 12'000}, daydream::just_after(relu),
///         daydream::just_after(daydream::launch_of(g, relu)));
template <class Graph, class Kind>
launched<Kind> insert_launched(Graph& g, Kind payload, task_fields f, position gpu_pos, position cpu_pos,
                               launch_call call = {}, const dependency_list& deps = {}) {
  static_assert(Graph::template has_kind<cpu_task>,
                "daydream::insert_launched: the graph has no cpu_task kind to launch from");
  static_assert(!is_cpu(kind_traits<Kind>::resource),
                "daydream::insert_launched: the launched task must be GPU-side work; this "
                "kind runs on a CPU thread (kind_traits<Kind>::resource), and the CPU does not "
                "launch CPU work. Use insert_after for a CPU task.");
  if (cpu_pos.anchor != no_task) g.core().check_task(cpu_pos.anchor, "insert_launched");
  if (gpu_pos.anchor != no_task) g.core().check_task(gpu_pos.anchor, "insert_launched");
  detail::check_new_dependencies(g, deps, "insert_launched");
  if (f.duration < 0 || f.gap < 0 || call.duration < 0)
    throw error("daydream: insert_launched: task \"" + std::string(f.name) + "\" has a negative duration or gap");
  if (gpu_pos.anchor == no_task && f.resource != no_resource && f.resource >= g.resource_count())
    throw error("daydream: insert_launched: task \"" + std::string(f.name) + "\" names resource #" +
                std::to_string(f.resource) + ", which does not exist");
  launched<Kind> out;
  if (cpu_pos.anchor != no_task) {
    time_ns d = call.duration;
    if (d == 0) {
      auto a = g.template as<cpu_task>(cpu_pos.anchor);
      d = a && g.payload(a).call == call.call ? g.duration(cpu_pos.anchor) : 0;
      if (d == 0) d = 5'000;
    }
    task_fields cf{.name = call.name, .duration = d, .resource = no_resource, .gap = 0,
                   .trace_start = 0, .layer = f.layer, .phase = f.phase, .iteration = f.iteration};
    out.launch = insert_at(g, cpu_task{call.call, no_name, 0}, cf, cpu_pos);
  }
  out.task = insert_at(g, std::move(payload), f, gpu_pos);
  if (out.launch) g.add_dependency(out.launch.id, out.task.id, dep_kind::launch);
  detail::add_new_dependencies(g, out.task.id, deps);
  return out;
}

/// Inserts a launch call on a CPU thread right after `cpu_after` and the GPU task `task`
/// on its stream right after `gpu_after` (or, when gpu_after is no_task, on
/// `f.resource` outside any program order), with a launch dependency between them: the
/// common case of the positional insert_launched above. The call is named
/// "cudaLaunchKernel" and takes the layer, phase and iteration of `f`.
/// `launch_duration` 0 copies the duration of `cpu_after` if it is a launch call, else
/// uses 5 us. Invalidates nothing.
///
///     auto [call, kernel] = daydream::insert_launched(g, daydream::gpu_kernel{},
///         {.name = "gist_encode", .duration = 12'000}, relu_launch, relu_kernel);
template <class Graph, class Kind>
launched<Kind> insert_launched(Graph& g, Kind payload, task_fields f, task_id cpu_after,
                               task_id gpu_after, time_ns launch_duration = 0) {
  g.core().check_task(cpu_after, "insert_launched");
  return insert_launched(g, std::move(payload), f, gpu_after == no_task ? position{} : just_after(gpu_after),
                         just_after(cpu_after), launch_call{.duration = launch_duration});
}

/// Inserts GPU work right before or right after GPU task `at.anchor` in the program order
/// of its stream (`just_before(k)`, `just_after(k)`), launched like it: by a new CPU call on
/// the same side of the call that launched the anchor (launch_of), with a launch dependency
/// between them, so the framework issues the new work where it issued the anchor. When the
/// anchor shows no launch call, only the GPU task is inserted (the result's `launch` is
/// empty). The call is described by `call` (a duration of 0: the duration of the anchor's
/// launch call when that is a call of the same kind with a non-zero duration, else 5 us, as
/// insert_launched) and takes layer, phase and iteration from `f`; the GPU task takes the
/// anchor's stream, and, when `f.trace_start` is 0, the anchor's start (before) or end
/// (after) in the trace. Then `deps` are added, where `no_task` stands for the GPU task.
/// Everything is checked before anything is inserted. Invalidates nothing.
///
///     // a compression kernel right after the gradient's last kernel, launched right after its launch
///     auto [call, k] = daydream::insert_launched_like(g, daydream::gpu_kernel{},
///         {.name = "dgc_compress", .duration = 20'000}, daydream::just_after(grad_kernel));
///     // a decompression kernel right before the optimizer's first kernel, waiting for the exchange
///     daydream::insert_launched_like(g, daydream::gpu_kernel{}, {.name = "dgc_decompress", .duration = 9'000},
///         daydream::just_before(step_kernel), {}, {daydream::edge_from(gather, daydream::dep_kind::comm)});
template <class Graph, class Kind>
launched<Kind> insert_launched_like(Graph& g, Kind payload, const task_fields& f, position at, launch_call call = {},
                                    const dependency_list& deps = {}) {
  if (at.anchor == no_task)
    throw error("daydream: insert_launched_like: needs a GPU task to insert next to (just_before(k) or just_after(k))");
  g.core().check_task(at.anchor, "insert_launched_like");
  const auto l = launch_of(g, at.anchor);
  return insert_launched(g, std::move(payload), f, at, l == no_task ? position{} : position{l, at.before}, call, deps);
}

/// The common fields of task `t`, to copy it or to build a similar task. The views
/// point into the graph's name table, which never moves its strings.
///
///     auto f = daydream::fields_of(g, kernel);
///     f.duration /= 2;
template <class Graph> task_fields fields_of(const Graph& g, task_id t) {
  return {.name = g.name(t), .duration = g.duration(t), .resource = g.resource_of(t),
          .gap = g.gap(t), .trace_start = g.trace_start(t), .layer = g.layer(t),
          .phase = g.phase_of(t), .iteration = g.iteration(t)};
}

/// Adds a copy of task `t`: the same kind and payload, the fields `f` (start from
/// fields_of(g, t)), the same priority and mem_delta, no dependencies, at position
/// `pos`. Returns the copy's id. Invalidates nothing.
///
///     auto again = daydream::copy_task(g, fwd, daydream::fields_of(g, fwd), daydream::just_before(bwd));
template <class Graph> task_id copy_task(Graph& g, task_id t, const task_fields& f, position pos = {}) {
  g.core().check_task(t, "copy_task");
  auto id = g.visit(t, [&](auto, const auto& p) -> task_id { return insert_at(g, p, f, pos).id; });
  if (auto m = g.mem_delta(t)) g.set_mem_delta(id, m);
  if (auto p = g.priority(t)) g.core().priority[id] = p;
  return id;
}

/// What copy_subgraph gives the copies besides the tasks.
struct copy_options {
  /// The kinds of the dependencies among the copied tasks that their copies get too:
  /// `a -> b`, both copied, gives `a' -> b'`. Every kind by default.
  dep_mask among = dep_mask::all();
  /// The kinds of the dependencies entering a copied task from a task that is not copied
  /// that its copy gets too: `u -> b` gives `u -> b'` (a repeated window keeps waiting for
  /// what its original waited for). None by default; only for copies within one graph.
  dep_mask from_outside = {};
};

/// copy_subgraph's default placement: each copy has its original's fields and runs on its
/// resource in no program order.
struct keep_fields {
  /// Leaves `f` as it is; no program order.
  constexpr position operator()(task_id, task_fields&) const noexcept { return {}; }
};

/// Copies the tasks `ts` of `src` (ids, handles or task references, in the order they are
/// copied) into `dst`, with the dependencies `options` names, and returns the id map: by
/// id of `src`, the id of the copy in `dst` (no_task for a task not copied). `dst` may be
/// `src` itself (copies within one graph) or another graph with the same resources.
///
/// Each copy has its original's kind, payload, priority and mem_delta, and the fields
/// `place(t, f)` leaves in `f`: `place` is called with the original's id and its fields
/// (fields_of) in copy order and returns the copy's position (insert_at: right before or
/// after an anchor in a program order, or position{} for none). Then, for each copied task
/// in order, the dependencies leaving its original (in successor order) to another copied
/// task, of a kind in `options.among`, are added between the copies; then, if
/// `options.from_outside` names kinds, for each copied task in order the dependencies
/// entering its original from tasks not copied (in predecessor order). Throws
/// daydream::error, before copying anything, for a task of `ts` that is not live or is
/// listed twice. Invalidates nothing (payload references of `dst`, as add() does).
/// O(copied tasks + their dependencies).
///
///     // repeat a window of tasks once, waiting for what it waited for
///     auto copy = daydream::copy_subgraph(g, g, window, {.from_outside = daydream::dep_mask::all()});
///     // the forward of a layer again, right before its backward, as backward work
///     auto again = daydream::copy_subgraph(g, g, forward, {}, [&](daydream::task_id, daydream::task_fields& f) {
///       f.phase = daydream::phase::backward;
///       return daydream::just_before(first_backward);
///     });
template <class Graph, class Range, class Place = keep_fields>
  requires requires(const Range& r) { std::begin(r); std::end(r); }
std::vector<task_id> copy_subgraph(Graph& dst, const Graph& src, const Range& ts, const copy_options& options = {},
                                   Place place = {}) {
  const bool same = static_cast<const void*>(&dst) == static_cast<const void*>(&src);
  if (!same && !options.from_outside.empty())
    throw error("daydream: copy_subgraph: dependencies from outside the copied tasks need the copies in the same graph");
  const task_id bound = src.id_bound();
  std::vector<task_id> ids;
  for (auto t : ts) ids.push_back(static_cast<task_id>(t));
  std::vector<task_id> map(bound, no_task);
  for (auto t : ids) {
    src.core().check_task(t, "copy_subgraph");
    if (map[t] != no_task)
      throw error("daydream: copy_subgraph: task #" + std::to_string(t) + " is listed twice");
    map[t] = t; // marks it listed; set to its copy below
  }
  for (auto t : ids) {
    task_fields f = fields_of(src, t);
    const position pos = place(t, f);
    // The payload is copied into insert_at's parameter before `dst` grows.
    const auto id = src.visit(t, [&](auto, const auto& p) -> task_id { return insert_at(dst, p, f, pos).id; });
    // Copy only stored values, so that an unused column stays unallocated.
    if (auto p = src.priority(t)) dst.core().priority[id] = p;
    if (auto m = src.mem_delta(t)) dst.set_mem_delta(id, m);
    map[t] = id;
  }
  // Copies placed next to an original are its neighbours now: ids from `bound` on are
  // copies, never originals.
  for (auto t : ids)
    for (auto d : src.successors(t))
      if (options.among.contains(d.kind) && d.to < bound && map[d.to] != no_task)
        dst.add_dependency(map[t], map[d.to], d.kind);
  if (!options.from_outside.empty())
    for (auto t : ids)
      for (auto d : src.predecessors(t))
        if (options.from_outside.contains(d.kind) && d.from < bound && map[d.from] == no_task)
          dst.add_dependency(d.from, map[t], d.kind);
  return map;
}

} // namespace daydream

#endif
