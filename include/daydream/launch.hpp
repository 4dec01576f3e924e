// Defines launch_of and launched_by: the CPU call that launched GPU work, and the GPU work a call launched.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_LAUNCH_HPP
#define DAYDREAM_LAUNCH_HPP

#include <daydream/dependency.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <vector>

namespace daydream {

/// The CPU call that launched task `t`: the source of its launch dependency
/// (dep_kind::launch) when that source is a cpu_task, else no_task (a task the trace
/// shows no launch for, or a CPU task). O(in-degree). Invalidates nothing.
///
///     auto call = daydream::launch_of(g, kernel);   // its cudaLaunchKernel
///     if (call != daydream::no_task) daydream::set_duration(g, call, 2'000);
template <class Graph> task_id launch_of(const Graph& g, task_id t) {
  static_assert(Graph::template has_kind<cpu_task>,
                "daydream::launch_of: the graph has no cpu_task kind, so nothing is launched");
  for (auto d : g.predecessors(t))
    if (d.kind == dep_kind::launch && g.template is<cpu_task>(d.from)) return d.from;
  return no_task;
}

/// The tasks CPU call `call` launched: the targets of its launch dependencies, in the
/// order of its out-list (use sort_in_trace_order for trace order). Empty for a call
/// that launched nothing. O(out-degree).
///
///     for (auto k : daydream::launched_by(g, call)) daydream::scale_duration(g, k, 0.5);
template <class Graph> std::vector<task_id> launched_by(const Graph& g, task_id call) {
  std::vector<task_id> out;
  for (auto d : g.successors(call))
    if (d.kind == dep_kind::launch) out.push_back(d.to);
  return out;
}

} // namespace daydream

#endif
