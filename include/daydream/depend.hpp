// Defines the dependency primitives between tasks already in a graph: wait_for, add_program_order, move_dependency, reachable_from.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DEPEND_HPP
#define DAYDREAM_DEPEND_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/insert.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace daydream {

/// By task id: whether the task is reachable from `t` along dependencies (`t` itself
/// included). A dependency from such a task into `t` would close a cycle. O(V + E).
///
///     auto after = daydream::reachable_from(g, optimizer_step);
///     if (!after[unscale]) daydream::wait_for(g, optimizer_step, unscale, daydream::dep_kind::sync);
template <class Graph> std::vector<bool> reachable_from(const Graph& g, task_id t) {
  g.core().check_task(t, "reachable_from");
  std::vector<bool> seen(g.id_bound(), false);
  std::vector<task_id> todo{t};
  seen[t] = true;
  while (!todo.empty()) {
    const auto u = todo.back();
    todo.pop_back();
    for (auto d : g.successors(u))
      if (!seen[d.to]) {
        seen[d.to] = true;
        todo.push_back(d.to);
      }
  }
  return seen;
}

/// What wait_for does with a task that comes after the waiter (one reachable from it, so
/// that the dependency would close a cycle).
enum class on_cycle : std::uint8_t {
  add,  ///< add it anyway: apply() refuses the pass and names the cycle (no search: O(1) a task)
  skip, ///< leave that task out (one search from the waiter: O(V + E) a call)
};

/// Makes `waiter` wait for task `t`: a dependency `t -> waiter` of kind `k`, unless `t` is
/// the waiter or the dependency exists already (its kind stays). Returns whether one was
/// added. Throws for a removed task. Does not look for a cycle. Invalidates nothing.
///
///     daydream::wait_for(g, optimizer_kernel, allreduce, daydream::dep_kind::comm);
template <class Graph> bool wait_for(Graph& g, task_id waiter, task_id t, dep_kind k) {
  g.core().check_task(waiter, "wait_for");
  g.core().check_task(t, "wait_for");
  return t != waiter && g.add_dependency(t, waiter, k);
}

/// Makes `waiter` wait for every task of `ts` (ids, handles or task references), in order,
/// as wait_for(g, waiter, t, k) does for one. With on_cycle::skip, the tasks reachable from
/// the waiter are left out (searched once, and only when some dependency is to be added).
/// Returns the number of dependencies added. Invalidates nothing.
///
///     // the optimizer's kernel waits for every all-reduce of its iteration
///     daydream::wait_for(g, optimizer_kernel, allreduces, daydream::dep_kind::comm);
///     // a synchronize waits for the collectives that do not come after it
///     daydream::wait_for(g, sync_call, collectives, daydream::dep_kind::sync, daydream::on_cycle::skip);
template <class Graph, class Range>
  requires requires(const Range& r) { std::begin(r); std::end(r); }
std::size_t wait_for(Graph& g, task_id waiter, const Range& ts, dep_kind k, on_cycle cycles = on_cycle::add) {
  g.core().check_task(waiter, "wait_for");
  std::vector<task_id> todo;
  for (auto x : ts) {
    const auto t = static_cast<task_id>(x);
    g.core().check_task(t, "wait_for");
    if (t != waiter && !g.has_dependency(t, waiter)) todo.push_back(t);
  }
  if (todo.empty()) return 0;
  std::size_t added = 0;
  if (cycles == on_cycle::skip) {
    const auto after = reachable_from(g, waiter);
    for (auto t : todo) added += !after[t] && g.add_dependency(t, waiter, k);
  } else {
    for (auto t : todo) added += g.add_dependency(t, waiter, k);
  }
  return added;
}

/// Puts task `b` after task `a` in the program order of their resource: a dependency
/// `a -> b` of the resource's order kind (order_kind: cpu_order on a thread, stream_order
/// elsewhere). For joining two runs of a program order, the last task of one and the first
/// of the other: it replaces no order edge (to put a task between two others, insert it
/// with insert_between). Throws daydream::error if `a` and `b` are not on one resource.
/// Returns whether a dependency was added (one between them stays as it is). Invalidates
/// nothing.
///
///     // the second micro-batch starts on the stream where the first one ends
///     daydream::add_program_order(g, last_of_first, first_of_second);
template <class Graph> bool add_program_order(Graph& g, task_id a, task_id b) {
  g.core().check_task(a, "add_program_order");
  g.core().check_task(b, "add_program_order");
  if (g.resource_of(a) != g.resource_of(b))
    throw error("daydream: add_program_order: task #" + std::to_string(a) + " and task #" + std::to_string(b) +
                " are not on one resource");
  return g.add_dependency(a, b, order_kind(g, g.resource_of(a)));
}

/// Moves dependency `d` (`d.from -> d.to`) to leave `from` and enter `to` instead, with the
/// same kind: what waited for the last task of a window now waits for the last task of
/// its repetition, say. Throws daydream::error if `d` does not exist. Returns whether the
/// moved dependency was added (not when `from -> to` existed already: that one keeps its
/// kind). Invalidates nothing.
///
///     for (auto d : leaving) daydream::move_dependency(g, d, copy[d.from], d.to);
template <class Graph> bool move_dependency(Graph& g, const dependency& d, task_id from, task_id to) {
  g.core().check_task(from, "move_dependency");
  g.core().check_task(to, "move_dependency");
  if (!g.has_dependency(d.from, d.to))
    throw error("daydream: move_dependency: there is no dependency #" + std::to_string(d.from) + " -> #" +
                std::to_string(d.to));
  if (d.from == from && d.to == to) return false;
  const auto k = g.dependency_kind(d.from, d.to);
  g.remove_dependency(d.from, d.to);
  return g.add_dependency(from, to, k);
}

} // namespace daydream

#endif
