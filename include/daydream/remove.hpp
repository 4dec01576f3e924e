// Defines the remove primitive: delete tasks and bridge their dependencies.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REMOVE_HPP
#define DAYDREAM_REMOVE_HPP

#include <daydream/dependency.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace daydream {

/// Removes task `t` and bridges its dependencies: every predecessor `p` of `t` gets an
/// edge to every successor `s` of `t`, so the order among the remaining tasks is exactly
/// what it was (reachability among them is unchanged). The bridged edge takes the kind
/// of the edge `t -> s` (why `s` waited); where `p -> s` exists already it stays as is,
/// and where the order of `p` and `s` already follows from other bridges (p precedes
/// another predecessor of t, or another successor of t precedes s) none is added, except
/// to keep the program order of t's resource a chain of direct edges.
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
  // Skip the bridges that other bridges imply: p -> s is implied when p already precedes
  // another predecessor q of t (q -> s is bridged too), or when another successor s' of
  // t already precedes s (p -> s' is bridged). Both relations are acyclic, so every
  // skipped pair stays ordered through a chain of kept bridges. Without this, removing
  // the tasks of a chain one by one piles edges onto its neighbours (quadratic growth).
  std::vector<task_id> pred_ids, succ_ids;
  for (auto& i : ins) pred_ids.push_back(i.from);
  for (auto& o : outs) succ_ids.push_back(o.to);
  std::sort(pred_ids.begin(), pred_ids.end());
  std::sort(succ_ids.begin(), succ_ids.end());
  auto among = [](const std::vector<task_id>& v, task_id x) { return std::binary_search(v.begin(), v.end(), x); };
  // A thread's or stream's program order stays a chain of direct edges, implied or not:
  // next_on_resource, insert_after and unroll walk it.
  auto keeps_program_order = [&](const dependency& in, const dependency& out) {
    return dep_mask::order().contains(in.kind) && dep_mask::order().contains(out.kind) &&
           c.res[in.from] == c.res[t] && c.res[out.to] == c.res[t];
  };
  std::vector<std::uint8_t> implied_pred(ins.size(), 0), implied_succ(outs.size(), 0);
  if (ins.size() > 1)
    for (std::size_t i = 0; i < ins.size(); ++i)
      for (auto d : c.out(ins[i].from))
        if (d.to != ins[i].from && among(pred_ids, d.to)) { implied_pred[i] = 1; break; }
  if (outs.size() > 1)
    for (std::size_t j = 0; j < outs.size(); ++j)
      for (auto d : c.in(outs[j].to))
        if (d.from != outs[j].to && among(succ_ids, d.from)) { implied_succ[j] = 1; break; }
  for (std::size_t i = 0; i < ins.size(); ++i)
    for (std::size_t j = 0; j < outs.size(); ++j)
      if (ins[i].from != outs[j].to &&
          ((!implied_pred[i] && !implied_succ[j]) || keeps_program_order(ins[i], outs[j])))
        c.link(ins[i].from, outs[j].to, outs[j].kind);
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
