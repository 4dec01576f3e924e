// Defines the slack query: how much each task can grow before the replayed makespan does.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SLACK_HPP
#define DAYDREAM_SLACK_HPP

#include <daydream/config.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace daydream {

/// How long each task of `g` could run longer than it did in the replay `r` before the
/// makespan grows, by task id (-1 for removed ids): its latest end minus its end. The
/// tasks of the critical path have slack 0; a pass that speeds up a task with slack
/// changes nothing ("no effect"), one that slows it by less than its slack neither.
///
/// The latest ends are computed backwards from the makespan over the dependencies and the
/// program order the replay gave each exclusive resource (the order its tasks started in,
/// with the gap after each task): a task ends at the latest when the first task that
/// waits for it (a successor, or the next task on its thread or stream after the gap)
/// must start. This keeps the order of the replay fixed: growing one task by up to its
/// slack replays to the same makespan when the order does not change, which holds for a
/// trace-order replay unless the growth reorders ready tasks. Tasks on fair-share
/// resources are bound by their dependencies only. Throws daydream::error if `r` is not
/// a replay of `g`. O(V log V + E).
///
///     auto r = daydream::replay(g);
///     auto s = daydream::slack(g, r);
///     if (s[k] > 0) std::cout << g.name(k) << " can take " << s[k] << " ns longer for free\n";
template <class Graph> std::vector<time_ns> slack(const Graph& g, const replay_result& r) {
  check_replay_of(g, r, "slack");
  const task_id n = g.id_bound();
  const auto& c = g.core();
  // The program order the replay gave each exclusive resource: its tasks by start (ties:
  // a task of no duration first, then no gap first, which is the order a resource can
  // run them in at one instant; then by dependency order).
  std::vector<std::uint32_t> rank(n, 0), waiting(n, 0);
  std::vector<task_id> order;
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t] && (waiting[t] = c.n_in[t]) == 0) order.push_back(t);
  for (std::size_t i = 0; i < order.size(); ++i) {
    rank[order[i]] = static_cast<std::uint32_t>(i);
    for (auto d : g.successors(order[i]))
      if (--waiting[d.to] == 0) order.push_back(d.to);
  }
  if (order.size() != g.size()) throw error("daydream: slack: the graph has a cycle");
  std::vector<std::vector<task_id>> on(g.resource_count());
  for (auto t : order) {
    const resource_id res = c.res[t];
    if (res != no_resource && c.resources[res].share == sharing::exclusive) on[res].push_back(t);
  }
  std::vector<task_id> next_on(n, no_task);
  for (auto& ts : on) {
    std::sort(ts.begin(), ts.end(), [&](task_id a, task_id b) {
      if (r.start[a] != r.start[b]) return r.start[a] < r.start[b];
      if (r.end[a] != r.end[b]) return r.end[a] < r.end[b];
      if (c.gap[a] != c.gap[b]) return c.gap[a] < c.gap[b];
      return rank[a] < rank[b];
    });
    for (std::size_t i = 0; i + 1 < ts.size(); ++i) next_on[ts[i]] = ts[i + 1];
  }
  // A topological order of dependencies and program orders together.
  order.clear();
  for (task_id t = 0; t < n; ++t) waiting[t] = 0;
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t] && next_on[t] != no_task) ++waiting[next_on[t]];
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t] && (waiting[t] += c.n_in[t]) == 0) order.push_back(t);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const task_id t = order[i];
    for (auto d : g.successors(t))
      if (--waiting[d.to] == 0) order.push_back(d.to);
    if (next_on[t] != no_task && --waiting[next_on[t]] == 0) order.push_back(next_on[t]);
  }
  if (order.size() != g.size())
    throw error("daydream: slack: the replay's program orders contradict the dependencies");

  std::vector<time_ns> latest_start(n, 0), out(n, -1);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const task_id t = *it;
    time_ns le = r.makespan;
    for (auto d : g.successors(t)) le = std::min(le, latest_start[d.to]);
    if (next_on[t] != no_task) le = std::min(le, latest_start[next_on[t]] - c.gap[t]);
    latest_start[t] = le - (r.end[t] - r.start[t]);
    out[t] = le - r.end[t];
  }
  return out;
}

} // namespace daydream

#endif
