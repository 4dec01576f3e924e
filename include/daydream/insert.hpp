// Defines the insert primitives: a task with dependencies, into a program order or at a position, a kernel with its launch, a copy of a task.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_INSERT_HPP
#define DAYDREAM_INSERT_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

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

/// Adds a task and the given dependencies (`{from, to, kind}`, where `no_task` on
/// either side stands for the new task). Checks the named tasks before adding anything;
/// does not check for cycles (a dependency from a successor of a task to the new task
/// and from the new task to that task closes one: apply() and replay() refuse it).
/// Invalidates nothing.
///
///     auto k = daydream::insert(g, daydream::gpu_kernel{}, {.name = "decode", .duration = 40,
///                               .resource = s}, {{launch, daydream::no_task, daydream::dep_kind::launch}});
template <class Graph, class Kind>
handle<Kind> insert(Graph& g, Kind payload, const task_fields& f,
                    std::initializer_list<dependency> deps = {}) {
  for (auto& d : deps) {
    if (d.from == no_task && d.to == no_task)
      throw error("daydream: insert: a dependency must name a task on one side");
    if (d.from != no_task) g.core().check_task(d.from, "insert");
    if (d.to != no_task) g.core().check_task(d.to, "insert");
  }
  auto h = g.add(std::move(payload), f);
  for (auto& d : deps)
    g.add_dependency(d.from == no_task ? h.id : d.from, d.to == no_task ? h.id : d.to, d.kind);
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

/// Adds a task at position `p`: insert_before or insert_after its anchor, or, for an
/// empty position, g.add with the resource of `f`. Invalidates nothing.
///
///     auto k = daydream::insert_at(g, daydream::gpu_kernel{}, {.name = "cast", .duration = 3'000},
///                                  daydream::just_before(gemm));
template <class Graph, class Kind> handle<Kind> insert_at(Graph& g, Kind payload, task_fields f, position p) {
  if (p.anchor == no_task) return g.add(std::move(payload), f);
  return p.before ? insert_before(g, std::move(payload), f, p.anchor)
                  : insert_after(g, std::move(payload), f, p.anchor);
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
/// puts the GPU task on `f.resource` outside any program order. Everything that could
/// refuse the GPU task is checked before anything is inserted. Invalidates nothing.
///
///     // an encode kernel after relu's kernel, launched right after relu's launch
///     auto [call, enc] = daydream::insert_launched(g, daydream::gpu_kernel{},
///         {.name = "gist_encode", .duration = 12'000}, daydream::just_after(relu),
///         daydream::just_after(daydream::launch_of(g, relu)));
template <class Graph, class Kind>
launched<Kind> insert_launched(Graph& g, Kind payload, task_fields f, position gpu_pos, position cpu_pos,
                               launch_call call = {}) {
  static_assert(Graph::template has_kind<cpu_task>,
                "daydream::insert_launched: the graph has no cpu_task kind to launch from");
  static_assert(!is_cpu(kind_traits<Kind>::resource),
                "daydream::insert_launched: the launched task must be GPU-side work; this "
                "kind runs on a CPU thread (kind_traits<Kind>::resource), and the CPU does not "
                "launch CPU work. Use insert_after for a CPU task.");
  if (cpu_pos.anchor != no_task) g.core().check_task(cpu_pos.anchor, "insert_launched");
  if (gpu_pos.anchor != no_task) g.core().check_task(gpu_pos.anchor, "insert_launched");
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

} // namespace daydream

#endif
