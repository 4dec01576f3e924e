// Forward declarations of daydream's public types; default template arguments live here.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_FWD_HPP
#define DAYDREAM_FWD_HPP

namespace daydream {

// The built-in task kinds (kinds.hpp).
struct cpu_task;
struct gpu_kernel;
struct memcpy_task;
struct comm_task;

// What daydream reads from a kind (kinds.hpp); a typed task id (task.hpp).
template <class Kind> struct kind_traits;
template <class Kind> struct handle;

// The task graph over a set of kinds (graph.hpp).
template <class... Kinds> class basic_graph;

/// The graph over the four built-in kinds; what trace ingestion builds.
using graph = basic_graph<cpu_task, gpu_kernel, memcpy_task, comm_task>;

// Durations and gaps changed over a shared graph (overlay.hpp).
template <class Graph> class basic_duration_overlay;
/// An overlay over the graph of the four built-in kinds.
using duration_overlay = basic_duration_overlay<graph>;

// Selection policies (reschedule.hpp) and what a replay predicts (replay.hpp).
struct trace_order_policy;
struct priority_policy;
struct replay_result;

// What the replay reads from a pass (pass.hpp).
template <class Pass> struct pass_traits;

/// A task seen through a selection view; `Kind` is void when the view spans all kinds.
template <class Graph, class Kind = void> struct task_ref;

} // namespace daydream

#endif
