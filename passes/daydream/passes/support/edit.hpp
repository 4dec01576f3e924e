// Defines the graph edits the bundled passes share: launches, positions, copies and replacement of task groups.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_SUPPORT_EDIT_HPP
#define DAYDREAM_PASSES_SUPPORT_EDIT_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// The CPU call that launched GPU task `t` (the source of its launch dependency), or
/// no_task.
inline task_id launch_of(const graph& g, task_id t) {
  for (auto d : g.predecessors(t))
    if (d.kind == dep_kind::launch && g.is<cpu_task>(d.from)) return d.from;
  return no_task;
}

/// The GPU tasks that CPU call `call` launched (targets of its launch dependencies).
inline std::vector<task_id> launched_by(const graph& g, task_id call) {
  std::vector<task_id> out;
  for (auto d : g.successors(call))
    if (d.kind == dep_kind::launch) out.push_back(d.to);
  return out;
}

/// The CPU tasks of the operator around CPU task `t`: the run of tasks next to it in
/// the program order of its thread that belong to the same operator (cpu_task::op) and
/// layer, `t` included, in program order. Just `{t}` when `t` names no operator. Two
/// back-to-back calls of the same operator in the same layer form one run.
inline std::vector<task_id> operator_tasks(const graph& g, task_id t) {
  const auto op = g.payload(g.as<cpu_task>(t)).op;
  if (op == no_name) return {t};
  auto same = [&](task_id u) {
    auto h = g.as<cpu_task>(u);
    return h && g.payload(h).op == op && g.layer_id(u) == g.layer_id(t);
  };
  std::vector<task_id> before;
  for (auto u = prev_on_resource(g, t); u != no_task && same(u); u = prev_on_resource(g, u))
    before.push_back(u);
  std::vector<task_id> out(before.rbegin(), before.rend());
  out.push_back(t);
  for (auto u = next_on_resource(g, t); u != no_task && same(u); u = next_on_resource(g, u))
    out.push_back(u);
  return out;
}

/// A place in the program order of a resource: right before or right after `anchor`
/// (the new task takes the anchor's resource). An empty anchor means "in no program
/// order": the task runs on the resource named by its task_fields as soon as it is
/// ready, in the order the replay's policy picks.
struct position {
  task_id anchor = no_task; ///< the task the new one goes next to; no_task: no program order
  bool before = false;      ///< right before the anchor (else right after)
};
/// Right before `t` in the program order of t's resource.
inline position just_before(task_id t) { return {t, true}; }
/// Right after `t` in the program order of t's resource.
inline position just_after(task_id t) { return {t, false}; }

/// Adds a task at position `p` (see position). Invalidates nothing.
template <class Kind> handle<Kind> insert_at(graph& g, Kind payload, task_fields f, position p) {
  if (p.anchor == no_task) return g.add(std::move(payload), f);
  return p.before ? insert_before(g, std::move(payload), f, p.anchor)
                  : insert_after(g, std::move(payload), f, p.anchor);
}

/// The CPU runtime call that issues inserted GPU work.
struct issue_call {
  cpu_call call = cpu_call::launch;           ///< what the call does
  std::string_view name = "cudaLaunchKernel"; ///< its name
  time_ns duration = 0; ///< 0: 5 us, a typical launch on current drivers
};

/// Inserts GPU work (a kernel or a copy) at `device_pos` together with the CPU call that
/// issues it at `cpu_pos`, and the launch dependency between them. With an empty
/// `cpu_pos` anchor no call is inserted (the returned launch handle is empty). The
/// call takes layer, phase and iteration from `f`. Invalidates nothing.
///
///     auto [call, enc] = daydream::passes::insert_issued(g, daydream::gpu_kernel{},
///         {.name = "gist_encode", .duration = 12'000}, just_after(kernel), just_after(launch));
template <class Kind>
launched<Kind> insert_issued(graph& g, Kind payload, task_fields f, position device_pos,
                             position cpu_pos, issue_call call = {}) {
  launched<Kind> out;
  out.task = insert_at(g, std::move(payload), f, device_pos);
  if (cpu_pos.anchor != no_task) {
    task_fields cf{.name = call.name, .duration = call.duration > 0 ? call.duration : 5'000,
                   .resource = no_resource, .gap = 0, .trace_start = 0, .layer = f.layer,
                   .phase = f.phase, .iteration = f.iteration};
    out.launch = insert_at(g, cpu_task{call.call, no_name, 0, 0}, cf, cpu_pos);
    g.add_dependency(out.launch.id, out.task.id, dep_kind::launch);
  }
  return out;
}

/// The common fields of task `t`, to copy it or to build a similar task. The views
/// point into the graph's name table, which never moves its strings.
inline task_fields fields_of(const graph& g, task_id t) {
  return {.name = g.name(t), .duration = g.duration(t), .resource = g.resource_of(t),
          .gap = g.gap(t), .trace_start = g.trace_start(t), .layer = g.layer(t),
          .phase = g.phase_of(t), .iteration = g.iteration(t)};
}

/// Adds a copy of task `t`: the same kind and payload, the fields `f` (start from
/// fields_of(g, t)), the same priority and mem_delta, no dependencies, at position
/// `pos`. Returns the copy's id. Invalidates nothing.
inline task_id copy_task(graph& g, task_id t, const task_fields& f, position pos = {}) {
  auto id = g.visit(t, [&](auto, const auto& p) -> task_id { return insert_at(g, p, f, pos).id; });
  g.set_mem_delta(id, g.mem_delta(t));
  reschedule(g, id, g.priority(t));
  return id;
}

/// Adds `bytes` to the memory task `t` allocates (negative: frees) when it starts.
inline void add_mem_delta(graph& g, task_id t, std::int64_t bytes) {
  g.set_mem_delta(t, g.mem_delta(t) + bytes);
}

/// The earliest of `ts` in trace order (trace start, then id), or no_task if empty.
inline task_id first_in_trace(const graph& g, const std::vector<task_id>& ts) {
  task_id best = no_task;
  for (auto t : ts)
    if (best == no_task || std::pair(g.trace_start(t), t) < std::pair(g.trace_start(best), best))
      best = t;
  return best;
}

/// A kernel that replaces a group of tasks (see replace_with_kernels).
struct new_kernel {
  std::string name;     ///< the kernel's name
  time_ns duration = 0; ///< nanoseconds
};

/// What replace_with_kernels did.
struct replacement_result {
  std::vector<launched<gpu_kernel>> kernels; ///< the inserted kernels and their launches
  std::size_t cpu_removed = 0; ///< CPU tasks removed
  std::size_t gpu_removed = 0; ///< GPU kernels and copies removed
  time_ns cpu_time = 0; ///< summed duration of the removed CPU tasks
  time_ns gpu_time = 0; ///< summed duration of the removed GPU kernels and copies
};

/// Replaces a group of tasks by a chain of new kernels, each launched by a new CPU
/// call: the calls go where the group's first CPU task was (in trace order), the
/// kernels where its first GPU kernel was, then every task of `old` is removed with
/// daydream::remove (dependencies bridged, so everything that waited for the group now
/// waits for what came before it or for the new tasks). The new tasks take layer, phase
/// and iteration from `common`, the kernels device and stream from the first old
/// kernel, the calls the duration of the group's first launch call (5 us if it has
/// none). The memory the old tasks allocated or freed (their summed mem_delta) moves
/// to the first new kernel. When `old` holds no GPU kernel there is nowhere to put the
/// new ones: the group is removed and no kernel is inserted. Invalidates the handles
/// of the removed tasks.
inline replacement_result replace_with_kernels(graph& g, const std::vector<task_id>& old,
                                               const std::vector<new_kernel>& ks,
                                               const task_fields& common) {
  replacement_result r;
  std::vector<task_id> cpu, gpu, launches;
  std::int64_t mem = 0;
  for (auto t : old) {
    mem += g.mem_delta(t);
    if (auto c = g.as<cpu_task>(t)) {
      cpu.push_back(t);
      r.cpu_time += g.duration(t);
      if (g.payload(c).call == cpu_call::launch) launches.push_back(t);
    } else {
      if (g.is<gpu_kernel>(t)) gpu.push_back(t);
      r.gpu_time += g.duration(t);
    }
  }
  r.cpu_removed = cpu.size();
  r.gpu_removed = old.size() - cpu.size();
  const task_id first_cpu = first_in_trace(g, cpu), first_gpu = first_in_trace(g, gpu);
  const task_id first_launch = first_in_trace(g, launches);
  const time_ns launch = first_launch == no_task ? 0 : g.duration(first_launch);
  if (first_gpu != no_task) {
    const auto& model = g.payload(g.as<gpu_kernel>(first_gpu));
    const gpu_kernel payload{.device = model.device, .stream = model.stream};
    for (auto& k : ks) {
      task_fields f = common;
      f.name = k.name;
      f.duration = k.duration;
      r.kernels.push_back(insert_issued(g, payload, f, just_before(first_gpu),
                                        first_cpu == no_task ? position{} : just_before(first_cpu),
                                        issue_call{.duration = launch}));
    }
    if (!r.kernels.empty()) add_mem_delta(g, r.kernels.front().task, mem);
  }
  remove(g, old);
  return r;
}

} // namespace daydream::passes

#endif
