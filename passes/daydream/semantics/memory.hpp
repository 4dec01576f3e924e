// Defines the tensor-size memory model: estimate_activation_memory and the helpers passes use to move memory.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_MEMORY_HPP
#define DAYDREAM_SEMANTICS_MEMORY_HPP

#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/report.hpp>
#include <daydream/task.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/layers.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace daydream::passes {

/// Whether some task of `g` allocates or frees memory (has a nonzero mem_delta): the
/// graph carries a memory model, from the trace's [memory] events or from
/// estimate_activation_memory.
inline bool has_memory_accounting(const graph& g) {
  bool any = false;
  g.for_each_task([&](task_id t) { any = any || g.mem_delta(t) != 0; });
  return any;
}

/// The task that accounts for memory released once `t` has finished: the next task in
/// the program order of t's resource (it cannot start before `t` ends), or `t` itself
/// when nothing follows it there. The replay accounts memory when a task starts, so a
/// release put on `t` itself is counted while `t` still runs. A task inserted later
/// right after `t` comes before the release point: use it for releases that may come
/// late, not for ones that must come early.
inline task_id release_point(const graph& g, task_id t) {
  auto n = next_on_resource(g, t);
  return n == no_task ? t : n;
}

/// Options of estimate_activation_memory.
struct activation_memory_options {
  /// Replace a memory model the graph already has (otherwise it is kept: the trace's
  /// [memory] events are better than this estimate).
  bool overwrite = false;
};

/// Fills mem_delta from tensor sizes, for a trace without [memory] events, so that
/// replay_result::peak_memory predicts the peak of activation memory.
///
/// Model: each layer instance (support/layers.hpp) stashes `stash_bytes` (see stashed_bytes:
/// the largest recorded input set of its forward operators). They are allocated when
/// its first forward kernel starts and released when its last backward kernel starts.
/// In a graph without backward work (inference) every layer holds its input set from
/// its first forward kernel until its last forward kernel has ended (release_point); in
/// a training graph, layers without backward work are left out: what they hold is
/// transient, and their largest input set is often a weight (an embedding table).
/// Layers without kernels use their CPU tasks.
///
/// Limits: the replay nets a task's allocations and releases at its start, so what one
/// kernel holds only while it runs (its inputs and outputs at once, workspaces) is not
/// seen; the peak is above the memory that stays allocated all along (weights,
/// gradients, optimizer state, the caching allocator's reserve), which the model does
/// not see; the stash estimate has the limits stated at stashed_bytes; tasks outside
/// any layer allocate nothing. Returns a report: layers accounted, layers without
/// recorded sizes, the largest stash of one iteration.
///
///     daydream::passes::estimate_activation_memory(trace.g);
///     auto peak = daydream::replay(trace.g).peak_memory;
inline pass_report estimate_activation_memory(graph& g, const activation_memory_options& o = {}) {
  pass_report rep;
  rep.pass = "activation_memory";
  if (has_memory_accounting(g) && !o.overwrite) {
    rep.note("the graph already has a memory model (mem_delta); kept it");
    return rep;
  }
  g.for_each_task([&](task_id t) { g.set_mem_delta(t, 0); });
  std::size_t accounted = 0, unsized = 0;
  std::map<std::int32_t, std::uint64_t> per_iteration;
  const auto layers = layer_instances(g);
  const bool training = std::any_of(layers.begin(), layers.end(), [](const layer_instance& l) {
    return !l.backward_cpu.empty() || !l.backward_gpu.empty();
  });
  for (auto& l : layers) {
    const auto& fwd = l.forward_gpu.empty() ? l.forward_cpu : l.forward_gpu;
    if (fwd.empty()) continue;
    if (training && l.backward_cpu.empty() && l.backward_gpu.empty()) continue;
    if (l.stash_bytes == 0) { ++unsized; continue; }
    const auto& bwd = l.backward_gpu.empty() ? l.backward_cpu : l.backward_gpu;
    const auto b = static_cast<std::int64_t>(l.stash_bytes);
    add_mem_delta(g, fwd.front(), b);
    add_mem_delta(g, bwd.empty() ? release_point(g, fwd.back()) : bwd.back(), -b);
    per_iteration[l.iteration] += l.stash_bytes;
    ++accounted;
  }
  std::uint64_t most = 0;
  for (auto& [i, b] : per_iteration) most = std::max(most, b);
  rep.add("layers accounted", std::to_string(accounted));
  rep.add("layers without recorded tensor sizes", std::to_string(unsized));
  rep.add("stashed per iteration (largest)", format_bytes(double(most)));
  if (accounted == 0) rep.note("no layer with recorded tensor sizes: peak memory stays 0");
  return rep;
}

} // namespace daydream::passes

#endif
