// Defines the update primitives: durations, resources, bytes, gaps.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_UPDATE_HPP
#define DAYDREAM_UPDATE_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace daydream {

/// Sets the duration of `t` (nanoseconds, not negative). Invalidates nothing.
///
///     daydream::set_duration(g, allreduce, 1'800'000);
template <class Graph> void set_duration(Graph& g, task_id t, time_ns d) {
  g.core().check_task(t, "set_duration");
  if (d < 0) throw error("daydream: set_duration: negative duration for task #" + std::to_string(t));
  g.core().duration[t] = d;
}

/// Multiplies the duration of `t` by `factor` (rounded to the nearest nanosecond).
/// `scale_duration(g, t, 1.0 / 3)` models a 3x faster kernel. Invalidates nothing.
template <class Graph> void scale_duration(Graph& g, task_id t, double factor) {
  g.core().check_task(t, "scale_duration");
  if (!(factor >= 0) || !std::isfinite(factor))
    throw error("daydream: scale_duration: factor must be finite and not negative");
  auto& d = g.core().duration[t];
  const double scaled = double(d) * factor;
  // llround of a value beyond 64 bits is unspecified (LLONG_MIN on x86): refuse it.
  if (!(scaled < 0x1p63))
    throw error("daydream: scale_duration: task #" + std::to_string(t) + " would last longer than 2^63 ns");
  d = static_cast<time_ns>(std::llround(scaled));
}

/// Sets the idle time the replay keeps after `t` on its resource (nanoseconds, not
/// negative). Invalidates nothing.
///
///     daydream::set_gap(g, launch, 0);   // a faster framework: no CPU overhead after it
template <class Graph> void set_gap(Graph& g, task_id t, time_ns gap) {
  g.core().check_task(t, "set_gap");
  if (gap < 0) throw error("daydream: set_gap: negative gap for task #" + std::to_string(t));
  g.core().gap[t] = gap;
}

/// Moves `t` to resource `r`. Its program order on the old resource is bridged (the
/// task before it now precedes the task after it, with the kind of the edge that left
/// `t`) and it joins no program order on the new one: it runs there when ready, in the
/// order the selection policy picks. Its other dependencies stay. Moving a task to the
/// resource it is on does nothing. Throws daydream::error if `r` does not fit the task's
/// kind (resource_fits: a CPU task onto a GPU stream). Invalidates nothing.
///
///     daydream::move_to(g, allreduce, side_stream);   // overlap it with the main stream
template <class Graph> void move_to(Graph& g, task_id t, resource_id r) {
  auto& c = g.core();
  c.check_task(t, "move_to");
  if (r >= c.resources.size())
    throw error("daydream: move_to: resource #" + std::to_string(r) + " does not exist");
  if (r == c.res[t]) return;
  if (!resource_fits(g.kind_resource(t), c.resources[r].kind))
    throw error("daydream: move_to: task #" + std::to_string(t) + " \"" + std::string(g.name(t)) +
                "\" is a " + std::string(g.kind_name(t)) + ", which runs on a " +
                std::string(to_string(g.kind_resource(t))) + ", not on resource #" +
                std::to_string(r) + " \"" + c.resources[r].name + "\" (a " +
                std::string(to_string(c.resources[r].kind)) + ")");
  std::vector<dependency> ins, outs;
  for (auto d : c.in(t))
    if (dep_mask::order().contains(d.kind) && c.res[d.from] == c.res[t]) ins.push_back(d);
  for (auto d : c.out(t))
    if (dep_mask::order().contains(d.kind) && c.res[d.to] == c.res[t]) outs.push_back(d);
  for (auto& i : ins) c.unlink(i.from, t);
  for (auto& o : outs) c.unlink(t, o.to);
  for (auto& i : ins)
    for (auto& o : outs) c.link(i.from, o.to, o.kind);
  c.res[t] = r;
}

/// Sets the byte count of a memory copy, communication task, or any kind with a
/// `bytes` member. Does not change the duration: cost models do. Fails to compile for a
/// kind without bytes (cpu_task). Invalidates nothing.
///
///     daydream::set_bytes(g, allreduce, allreduce_bytes / 2);
template <class Graph, class Kind> void set_bytes(Graph& g, handle<Kind> t, std::uint64_t n) {
  static_assert(kind_traits<Kind>::has_bytes,
                "daydream::set_bytes: this task kind carries no byte count; only "
                "memcpy_task, comm_task, gpu_kernel or a kind with a `bytes` member can be resized.");
  if constexpr (kind_traits<Kind>::has_bytes) {
    g.core().check_task(t.id, "set_bytes");
    g.payload(t).bytes = n;
  }
}

/// Adds `bytes` to the memory task `t` allocates when it starts (negative: frees), on
/// top of what it already allocates: the replay's peak_memory sums mem_delta in start
/// order. Invalidates nothing.
///
///     daydream::add_mem_delta(g, encode, -stashed_bytes / 2);   // half the stash kept
template <class Graph> void add_mem_delta(Graph& g, task_id t, std::int64_t bytes) {
  g.core().check_task(t, "add_mem_delta");
  g.set_mem_delta(t, g.mem_delta(t) + bytes);
}

} // namespace daydream

#endif
