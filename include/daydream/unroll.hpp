// Defines unroll: n back-to-back copies of an iteration graph, and its steady-state time.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_UNROLL_HPP
#define DAYDREAM_UNROLL_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/depend.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace daydream {

/// A graph of several copies of one graph, and which copy each task belongs to.
template <class Graph> struct unrolled {
  Graph graph;                     ///< the copies, in one graph (ids dense, copy by copy)
  std::vector<std::uint32_t> copy; ///< by task id of `graph`: which copy (0 .. copies-1)
  std::vector<task_id> original;   ///< by task id of `graph`: the task of the input it copies
  std::uint32_t copies = 0;        ///< number of copies
};

/// Makes `n` copies of `g` that run back to back, as consecutive training iterations.
///
/// Copy k+1 follows copy k in the program order of every exclusive resource (the last
/// task of copy k on a thread or stream precedes the first task of copy k+1 there, with
/// the resource's order kind); fair-share resources have no program order and get no
/// such edge. Two ways to add cross-iteration dependencies:
/// - every dependency `a -> b` of `g` whose kind is in `carried` is also added from `a`
///   of copy k to `b` of copy k+1;
/// - every `{from, to, kind}` of `across` (ids of `g`) is added from `from` of copy k
///   to `to` of copy k+1: a layer's weight update before its next forward, say.
/// Iteration numbers of copy k are shifted by k times the span of `g`'s iterations; trace
/// start times by k times its trace span, so trace-order ties stay in copy order.
/// Resources are shared by all copies; priorities and mem_delta are copied. The input
/// is not changed. O(n (V + E)), plus, per resource, (tasks without an order
/// predecessor) x (tasks without an order successor) edges per copy.
///
///     // weight update of fc1 -> forward of fc1 in the next iteration
///     auto u = daydream::unroll(g, 4, {}, {{fc1_update, fc1_forward, daydream::dep_kind::data}});
///     auto r = daydream::replay(u.graph);
///     auto per_iteration = daydream::steady_state_time(u, r);
template <class Graph>
unrolled<Graph> unroll(const Graph& g, std::uint32_t n, dep_mask carried = {},
                       const std::vector<dependency>& across = {}) {
  if (n == 0) throw error("daydream: unroll: need at least one copy");
  for (auto& d : across) {
    g.core().check_task(d.from, "unroll (cross-iteration dependency)");
    g.core().check_task(d.to, "unroll (cross-iteration dependency)");
  }
  unrolled<Graph> u;
  u.copies = n;
  auto& out = u.graph;
  const auto& c = g.core();
  for (std::size_t r = 0; r < g.resource_count(); ++r) out.add_resource(g.resource_at(resource_id(r)));
  out.reserve(std::size_t(n) * g.size());

  std::int32_t it_lo = std::numeric_limits<std::int32_t>::max(), it_hi = std::numeric_limits<std::int32_t>::min();
  time_ns t_lo = std::numeric_limits<time_ns>::max(), t_hi = std::numeric_limits<time_ns>::min();
  bool overflow = false; // the shifted iterations or times of the last copy do not fit
  g.for_each_task([&](task_id t) {
    it_lo = std::min(it_lo, c.iteration[t]); it_hi = std::max(it_hi, c.iteration[t]);
    time_ns end = 0;
    overflow |= __builtin_add_overflow(c.trace_start[t], c.duration[t], &end) ||
                __builtin_add_overflow(end, c.gap[t], &end);
    t_lo = std::min(t_lo, c.trace_start[t]); t_hi = std::max(t_hi, end);
  });
  const std::int32_t it_span = g.empty() ? 0 : static_cast<std::int32_t>(std::min<std::int64_t>(
      std::int64_t(it_hi) - it_lo + 1, std::numeric_limits<std::int32_t>::max()));
  time_ns t_span = 0, last = 0;
  if (!g.empty()) {
    overflow |= std::int64_t(it_hi) - it_lo + 1 > std::numeric_limits<std::int32_t>::max() ||
                std::int64_t(n - 1) > (std::int64_t(std::numeric_limits<std::int32_t>::max()) - std::max(it_hi, 0)) / it_span;
    overflow |= __builtin_sub_overflow(t_hi, t_lo, &t_span) ||
                __builtin_mul_overflow(time_ns(n - 1), t_span, &last) || __builtin_add_overflow(t_hi, last, &last);
  }
  if (overflow)
    throw error("daydream: unroll: the iteration numbers or trace times of " + std::to_string(n) +
                " copies do not fit in their integer types");

  // First and last task in program order of every resource (tasks without an order
  // predecessor / successor on the same resource).
  std::vector<std::vector<task_id>> firsts(g.resource_count()), lasts(g.resource_count());
  g.for_each_task([&](task_id t) {
    auto r = c.res[t];
    if (r == no_resource || c.resources[r].share == sharing::fair) return;
    if (prev_on_resource(g, t) == no_task) firsts[r].push_back(t);
    if (next_on_resource(g, t) == no_task) lasts[r].push_back(t);
  });

  std::vector<task_id> all, map, prev_map;
  all.reserve(g.size());
  g.for_each_task([&](task_id t) { all.push_back(t); });
  for (std::uint32_t k = 0; k < n; ++k) {
    // Copy k, with every dependency among its tasks, shifted by k iterations.
    map = copy_subgraph(out, g, all, {}, [&](task_id, task_fields& f) {
      f.trace_start += time_ns(k) * t_span;
      f.iteration += std::int32_t(k) * it_span;
      return position{};
    });
    for (auto t : all) {
      u.copy.push_back(k);
      u.original.push_back(t);
    }
    if (k > 0) {
      for (std::size_t r = 0; r < firsts.size(); ++r)
        for (auto a : lasts[r])
          for (auto b : firsts[r]) add_program_order(out, prev_map[a], map[b]);
      if (carried.bits)
        g.for_each_task([&](task_id t) {
          for (auto d : g.successors(t))
            if (carried.contains(d.kind)) out.add_dependency(prev_map[t], map[d.to], d.kind);
        });
      for (auto& d : across) out.add_dependency(prev_map[d.from], map[d.to], d.kind);
    }
    prev_map = map;
  }
  return u;
}

/// The steady-state iteration time of a replayed unrolled graph: the mean distance
/// between the ends of consecutive copies, the first copy (the warm-up) excluded.
/// With one copy, its makespan. `r` must be a replay of `u.graph`.
///
///     auto u = daydream::unroll(g, 5);
///     auto t = daydream::steady_state_time(u, daydream::replay(u.graph, daydream::priority_policy{}));
template <class Graph>
time_ns steady_state_time(const unrolled<Graph>& u, const replay_result& r) {
  std::vector<time_ns> ends(u.copies, 0);
  for (task_id t = 0; t < u.copy.size(); ++t)
    if (r.end[t] >= 0) ends[u.copy[t]] = std::max(ends[u.copy[t]], r.end[t]);
  if (u.copies == 1) return r.makespan;
  return (ends.back() - ends.front()) / time_ns(u.copies - 1);
}

} // namespace daydream

#endif
