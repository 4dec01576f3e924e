// Defines the remove primitive: delete tasks and bridge their dependencies.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REMOVE_HPP
#define DAYDREAM_REMOVE_HPP

#include <daydream/dependency.hpp>
#include <daydream/task.hpp>

#include <vector>

namespace daydream {

/// Removes task `t` and bridges its dependencies: every predecessor `p` of `t` gets an
/// edge to every successor `s` of `t`, so the order among the remaining tasks is exactly
/// what it was (reachability among them is unchanged). The bridged edge takes the kind
/// of the edge `t -> s` (why `s` waited); where `p -> s` exists already it stays as is.
///
/// Removing a CPU launch call therefore re-parents the GPU work it launched onto the
/// launch call's own predecessors (the previous call on its thread): the kernel still
/// runs, launched as soon as the thread reaches that point. To drop the kernel as well,
/// remove it too. The removed task's gap goes with it.
///
/// Invalidates the handles of `t` only. O(in-degree x out-degree).
///
///     daydream::remove(g, launch);   // prev -> launch -> next  becomes  prev -> next
template <class Graph> void remove(Graph& g, task_id t) {
  auto& c = g.core();
  c.check_task(t, "remove");
  std::vector<dependency> ins(c.in(t).begin(), c.in(t).end());
  std::vector<dependency> outs(c.out(t).begin(), c.out(t).end());
  c.kill(t);
  for (auto& i : ins)
    for (auto& o : outs)
      if (i.from != o.to) c.link(i.from, o.to, o.kind);
}

/// Removes every task of `ts` (any range of ids, handles or task_refs, a selection view
/// included: the ids are collected first), bridging as remove(g, t) does, one at a time
/// in the range's order. Reachability among the remaining tasks does not depend on that
/// order. Invalidates the handles of the removed tasks only.
///
///     daydream::remove(g, daydream::tasks<daydream::cpu_task>(g) |
///                             daydream::where(daydream::name_matches("^cudaEventRecord")));
template <class Graph, class Range>
  requires requires(Range&& r) { r.begin(); r.end(); }
void remove(Graph& g, Range&& ts) {
  std::vector<task_id> ids;
  for (auto t : ts) ids.push_back(static_cast<task_id>(t));
  for (auto t : ids) remove(g, t);
}

} // namespace daydream

#endif
