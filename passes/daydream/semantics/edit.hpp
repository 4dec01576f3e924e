// Defines the graph edits the bundled passes share: the tasks of an operator, and replacement of task groups by launched kernels.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_EDIT_HPP
#define DAYDREAM_SEMANTICS_EDIT_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/task.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/update.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// The CPU tasks of the operator around CPU task `t`: the run of tasks next to it in
/// the program order of its thread that belong to the same operator (cpu_task::op) and
/// layer, `t` included, in program order. Just `{t}` when `t` names no operator. Two
/// back-to-back calls of the same operator in the same layer form one run.
inline std::vector<task_id> operator_tasks(const graph& g, task_id t) {
  const auto c = g.as<cpu_task>(t);
  const auto op = c ? g.payload(c).op : no_name;
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

/// A kernel that replaces a group of tasks (see replace_with_kernels).
struct new_kernel {
  std::string name;     ///< the kernel's name
  time_ns duration = 0; ///< nanoseconds
  /// CPU time of the call that launches it, nanoseconds: the framework's dispatch of the
  /// operator that runs it. Negative: the duration of the group's first launch call.
  time_ns call = -1;
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
/// kernel, the calls `new_kernel::call` or else the duration of the group's first launch
/// call (5 us if it has none, as insert_launched takes 0). The memory the old tasks
/// allocated or freed moves to the new tasks on the same side: what their CPU tasks did
/// (the trace's [memory] events charge CPU calls) to the first new call, what their GPU
/// tasks did (an estimate from tensor sizes charges kernels) to the first new kernel.
/// When `old` holds no GPU kernel there is nowhere to put the
/// new ones: the group is removed and no kernel is inserted. Invalidates the handles
/// of the removed tasks.
inline replacement_result replace_with_kernels(graph& g, const std::vector<task_id>& old,
                                               const std::vector<new_kernel>& ks,
                                               const task_fields& common) {
  replacement_result r;
  std::vector<task_id> cpu, gpu, launches;
  std::int64_t cpu_mem = 0, gpu_mem = 0;
  for (auto t : old) {
    (g.is<cpu_task>(t) ? cpu_mem : gpu_mem) += g.mem_delta(t);
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
      r.kernels.push_back(insert_launched(g, payload, f, just_before(first_gpu),
                                          first_cpu == no_task ? position{} : just_before(first_cpu),
                                          launch_call{.duration = k.call >= 0 ? k.call : launch}));
    }
    if (!r.kernels.empty()) {
      const auto& front = r.kernels.front();
      add_mem_delta(g, front.launch ? front.launch.id : front.task.id, cpu_mem);
      add_mem_delta(g, front.task, gpu_mem);
    }
  }
  remove(g, old);
  return r;
}

} // namespace daydream::passes

#endif
