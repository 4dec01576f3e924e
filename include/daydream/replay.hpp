// Defines the replay kernel (Daydream's Algorithm 1, event driven) and its result.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REPLAY_HPP
#define DAYDREAM_REPLAY_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/fwd.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

namespace daydream {

/// Why a task started when it did, as recorded by the replay.
enum class binding : std::uint8_t {
  none,       ///< a root task: started at time 0
  dependency, ///< started as soon as its last dependency finished (see `edge`)
  resource,   ///< waited for its resource (previous task, or the CPU gap after it)
};

/// One step of a critical path: the task, and how it was reached from the step before.
struct critical_step {
  task_id task = no_task;
  binding why = binding::none;
  dep_kind edge = dep_kind::control; ///< meaningful when `why == binding::dependency`
};

/// What a replay predicts: per-task start and end, makespan, per-resource busy time,
/// peak memory and the critical path.
struct replay_result {
  std::vector<time_ns> start;  ///< by task id; -1 for removed ids
  std::vector<time_ns> end;    ///< by task id; -1 for removed ids
  std::vector<time_ns> busy;   ///< by resource id: time with at least one task running
  std::vector<task_id> pred;   ///< by task id: the task that determined its start, or no_task
  std::vector<binding> why;    ///< by task id
  std::vector<dep_kind> edge;  ///< by task id: the kind of the binding edge
  time_ns makespan = 0;        ///< latest end (the first task starts at 0)
  std::int64_t peak_memory = 0;///< highest running sum of mem_delta, in start order
  std::size_t tasks = 0;       ///< live tasks replayed

  /// The chain of tasks that determined the makespan, first task first.
  std::vector<critical_step> critical_path() const {
    std::vector<critical_step> path;
    task_id last = no_task;
    for (task_id t = 0; t < end.size(); ++t)
      if (end[t] >= 0 && (last == no_task || end[t] > end[last])) last = t;
    for (auto t = last; t != no_task; t = pred[t]) path.push_back({t, why[t], edge[t]});
    std::reverse(path.begin(), path.end());
    return path;
  }
  time_ns duration(task_id t) const { return end[t] - start[t]; }
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// The event loop, on the flat core only. `key(t, ready)` is the policy.
template <class KeyFn> replay_result replay_core(const graph_core& c, KeyFn&& key) {
  const task_id n = c.id_bound();
  const std::size_t nres = c.resources.size();
  replay_result r;
  r.start.assign(n, -1);
  r.end.assign(n, -1);
  r.pred.assign(n, no_task);
  r.why.assign(n, binding::none);
  r.edge.assign(n, dep_kind::control);
  r.busy.assign(nres, 0);

  std::vector<std::uint32_t> waiting(n, 0);
  std::vector<time_ns> ready_at(n, 0);

  // Events: completions sort before dispatches at the same time, so everything that
  // becomes ready at `t` competes for a resource freed at `t`.
  enum : std::uint8_t { ev_complete = 0, ev_shared = 1, ev_dispatch = 2 };
  struct event {
    time_ns time;
    std::uint8_t type;
    std::uint64_t seq;
    std::uint32_t who;     // task (complete) or resource (dispatch, shared)
    std::uint64_t version; // shared-resource completion version
    bool operator>(const event& o) const {
      if (time != o.time) return time > o.time;
      if (type != o.type) return type > o.type;
      return seq > o.seq;
    }
  };
  std::priority_queue<event, std::vector<event>, std::greater<>> events;
  std::uint64_t seq = 0;

  struct ready_entry {
    priority_key k;
    task_id t;
    bool operator>(const ready_entry& o) const { return o.k < k; }
  };
  struct res_state {
    std::priority_queue<ready_entry, std::vector<ready_entry>, std::greater<>> ready;
    time_ns free_at = 0;
    task_id last = no_task;
    bool dispatch_pending = false;
    // fair sharing (processor sharing with a virtual clock)
    double vclock = 0;
    time_ns updated = 0;
    std::uint64_t version = 0;
    std::priority_queue<std::pair<double, task_id>, std::vector<std::pair<double, task_id>>,
                        std::greater<>> active;
    time_ns busy_since = 0;
  };
  std::vector<res_state> rs(nres);
  // Tasks without a resource run unconstrained (as if each had its own resource).
  auto is_fair = [&](resource_id res) { return c.resources[res].share == sharing::fair; };

  auto advance_shared = [&](res_state& s, time_ns now) {
    if (!s.active.empty())
      s.vclock += double(now - s.updated) / double(s.active.size());
    s.updated = now;
  };
  auto arm_shared = [&](res_state& s, resource_id res, time_ns now) {
    ++s.version;
    if (s.active.empty()) return;
    double left = std::max(0.0, s.active.top().first - s.vclock);
    auto when = now + static_cast<time_ns>(std::llround(left * double(s.active.size())));
    events.push({when, ev_shared, seq++, res, s.version});
  };

  std::size_t started = 0;
  auto start_task = [&](task_id t, time_ns now) {
    r.start[t] = now;
    ++started;
    auto res = c.res[t];
    if (res != no_resource && is_fair(res)) {
      auto& s = rs[res];
      advance_shared(s, now);
      if (s.active.empty()) s.busy_since = now;
      s.active.push({s.vclock + double(c.duration[t]), t});
      arm_shared(s, res, now);
    } else {
      events.push({now + c.duration[t], ev_complete, seq++, t, 0});
    }
  };

  auto make_ready = [&](task_id t, time_ns now) {
    ready_at[t] = now;
    auto res = c.res[t];
    if (res == no_resource || is_fair(res)) {
      start_task(t, now);
      return;
    }
    auto& s = rs[res];
    s.ready.push({key(t, now), t});
    if (!s.dispatch_pending) {
      s.dispatch_pending = true;
      events.push({std::max(now, s.free_at), ev_dispatch, seq++, res, 0});
    }
  };

  auto complete = [&](task_id t, time_ns now) {
    r.end[t] = now;
    for (auto e = c.head_out[t]; e != no_edge; e = c.edges[e].next_out) {
      auto& ed = c.edges[e];
      auto d = ed.dst;
      // The last dependency to finish binds the start (ties: the first one seen).
      if (r.pred[d] == no_task || now > ready_at[d]) {
        r.pred[d] = t; r.edge[d] = ed.kind; r.why[d] = binding::dependency;
        ready_at[d] = now;
      }
      if (--waiting[d] == 0) make_ready(d, now);
    }
  };

  for (task_id t = 0; t < n; ++t) {
    if (!c.alive[t]) continue;
    ++r.tasks;
    waiting[t] = c.n_in[t];
  }
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t] && waiting[t] == 0) make_ready(t, 0);

  while (!events.empty()) {
    auto ev = events.top();
    events.pop();
    const time_ns now = ev.time;
    if (ev.type == ev_complete) {
      complete(ev.who, now);
    } else if (ev.type == ev_dispatch) {
      auto& s = rs[ev.who];
      s.dispatch_pending = false;
      if (s.ready.empty()) continue;
      if (s.free_at > now) { // still in the gap of the previous task
        s.dispatch_pending = true;
        events.push({s.free_at, ev_dispatch, seq++, ev.who, 0});
        continue;
      }
      auto t = s.ready.top().t;
      s.ready.pop();
      if (now > ready_at[t] && s.last != no_task) { // waited for the resource
        r.pred[t] = s.last; r.why[t] = binding::resource;
      }
      start_task(t, now);
      r.busy[ev.who] += c.duration[t];
      s.last = t;
      s.free_at = now + c.duration[t] + c.gap[t];
      if (!s.ready.empty()) {
        s.dispatch_pending = true;
        events.push({s.free_at, ev_dispatch, seq++, ev.who, 0});
      }
    } else { // a transfer on a fair-share resource may have finished
      auto& s = rs[ev.who];
      if (ev.version != s.version) continue;
      advance_shared(s, now);
      // Finish every transfer whose virtual finish time has come (with a tolerance for
      // the rounding of `now` to whole nanoseconds).
      const double eps = 0.5 / double(std::max<std::size_t>(1, s.active.size()));
      while (!s.active.empty() && s.active.top().first <= s.vclock + eps) {
        auto t = s.active.top().second;
        s.active.pop();
        events.push({now, ev_complete, seq++, t, 0});
      }
      if (s.active.empty()) r.busy[ev.who] += now - s.busy_since;
      arm_shared(s, ev.who, now);
    }
  }

  if (started != r.tasks) {
    std::vector<std::uint8_t> stuck(n, 0);
    for (task_id t = 0; t < n; ++t) stuck[t] = c.alive[t] && r.start[t] < 0;
    auto cycle = find_cycle_among(c, stuck);
    throw error("daydream: replay: the graph has a cycle: " + describe_tasks(c, cycle));
  }

  for (task_id t = 0; t < n; ++t) r.makespan = std::max(r.makespan, r.end[t]);

  // Peak memory: running sum of allocations in start order.
  std::vector<std::pair<time_ns, std::int64_t>> mem;
  for (task_id t = 0; t < n; ++t)
    if (c.alive[t] && c.mem_delta[t] != 0) mem.push_back({r.start[t], c.mem_delta[t]});
  std::stable_sort(mem.begin(), mem.end(),
                   [](auto& a, auto& b) { return a.first < b.first; });
  std::int64_t cur = 0;
  for (auto& [at, d] : mem) r.peak_memory = std::max(r.peak_memory, cur += d);
  return r;
}

} // namespace detail
//! @endcond

/// Replays `g` and predicts when every task runs.
///
/// Daydream's Algorithm 1 as a discrete-event simulation: a task becomes ready when all
/// its dependencies have finished; an exclusive resource (thread, stream) runs one ready
/// task at a time, chosen by `policy`, and stays idle for the task's `gap` after it, so
/// CPU gaps of the trace are preserved; a fair-share resource (a link) runs all of its
/// ready tasks at once, splitting its capacity evenly. Deterministic: equal inputs give
/// equal results. Throws daydream::error naming the tasks of a cycle if there is one.
/// Complexity: O((V + E) log V).
///
///     auto r = daydream::replay(g);                          // trace order
///     auto p = daydream::replay(g, daydream::priority_policy{});
template <class Graph, class Policy = trace_order_policy>
replay_result replay(const Graph& g, const Policy& policy = {}) {
  static_assert(selection_policy<Policy, Graph>,
                "daydream::replay(g, policy): the policy must have a member "
                "`priority_key key(const Graph&, task_id, time_ns ready) const`.");
  return detail::replay_core(g.core(),
                             [&](task_id t, time_ns ready) { return policy.key(g, t, ready); });
}

} // namespace daydream

#endif
