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
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// Why a task started when it did, as recorded by the replay.
enum class binding : std::uint8_t {
  none,       ///< a root task: started at time 0
  dependency, ///< started as soon as its last dependency finished (see `edge`)
  resource,   ///< waited for its resource (previous task, or the CPU gap after it)
};

/// The name of a binding value ("resource").
inline constexpr std::string_view to_string(binding b) noexcept {
  switch (b) {
  case binding::none: return "none";
  case binding::dependency: return "dependency";
  case binding::resource: return "resource";
  }
  return "?";
}

/// One step of a critical path: the task, and how it was reached from the step before.
struct critical_step {
  task_id task = no_task;      ///< the task
  binding why = binding::none; ///< why it started when it did
  dep_kind edge = dep_kind::control; ///< meaningful when `why == binding::dependency`
  friend constexpr bool operator==(const critical_step&, const critical_step&) = default;
};

/// What a replay predicts: per-task start and end, makespan, per-resource busy time,
/// peak memory and the critical path. Indexed by the task ids of the replayed graph: a
/// later change to the graph does not change it, compact() makes its ids stale.
///
///     auto r = daydream::replay(g);
///     std::cout << r.makespan << " ns, kernel ran " << r.start[k] << ".." << r.end[k];
///     for (auto step : r.critical_path()) std::cout << g.name(step.task) << '\n';
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

  /// The chain of tasks that determined the makespan, first task first: from the task
  /// that ends last (the smallest id among equals), follow `pred` back to a root. Each
  /// step says why its task started when it did: after its latest dependency (with the
  /// edge kind), or after its resource freed up.
  std::vector<critical_step> critical_path() const {
    std::vector<critical_step> path;
    task_id last = no_task;
    for (task_id t = 0; t < end.size(); ++t)
      if (end[t] >= 0 && (last == no_task || end[t] > end[last])) last = t;
    for (auto t = last; t != no_task; t = pred[t]) path.push_back({t, why[t], edge[t]});
    std::reverse(path.begin(), path.end());
    return path;
  }
  /// How long task `t` took in the replay (longer than its duration on a shared link).
  time_ns duration(task_id t) const { return end[t] - start[t]; }
};

/// How the replay models effects beyond the graph itself. The defaults change nothing.
///
///     daydream::replay_options o;
///     o.overlap_slowdown = 1.3; // kernels run 1.3x slower while a transfer is active
///     auto r = daydream::replay(g, daydream::trace_order_policy{}, o);
struct replay_options {
  /// Proteus' overlap factor (Duan et al., "Proteus: Simulating the Performance of
  /// Distributed DNN Training", 2023): while at least one task runs on a `link` resource
  /// of node k, every task on an exclusive `gpu_stream` resource of node k progresses
  /// this many times slower (communication kernels compete with computation for SMs and
  /// memory bandwidth). A kernel that overlaps communication for only part of its run is
  /// slowed for that part only. 1 (the default) turns the effect off; must be >= 1.
  double overlap_slowdown = 1.0;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// The event loop, on the flat core only. `key(t, ready)` is the policy.
template <class KeyFn>
replay_result replay_core(const graph_core& c, KeyFn&& key, const replay_options& opt = {}) {
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

  // Overlap slowdown: roles of resources (1: slowed computation, 2: communication), by
  // node; the running slowed tasks of each node with their remaining work and rate.
  const double slowdown = opt.overlap_slowdown;
  if (!(slowdown >= 1.0) || !std::isfinite(slowdown))
    throw error("daydream: replay: overlap_slowdown must be a finite factor >= 1");
  const bool overlap = slowdown != 1.0;
  std::vector<std::uint32_t> node_of, comm_active;
  std::vector<std::uint8_t> role;
  std::vector<std::vector<task_id>> computing;
  std::vector<double> work_left, rate;
  std::vector<time_ns> since, planned;
  std::vector<std::uint64_t> version_of;
  if (overlap) {
    std::vector<std::int32_t> nodes;
    for (auto& res : c.resources) nodes.push_back(res.node);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    node_of.resize(nres);
    role.assign(nres, 0);
    for (std::size_t i = 0; i < nres; ++i) {
      auto& res = c.resources[i];
      node_of[i] = static_cast<std::uint32_t>(
          std::lower_bound(nodes.begin(), nodes.end(), res.node) - nodes.begin());
      if (res.kind == resource_kind::link) role[i] = 2;
      else if (res.kind == resource_kind::gpu_stream && res.share == sharing::exclusive) role[i] = 1;
    }
    comm_active.assign(nodes.size(), 0);
    computing.resize(nodes.size());
    work_left.assign(n, 0);
    rate.assign(n, 1);
    since.assign(n, 0);
    planned.assign(n, 0);
    version_of.assign(n, 0);
  }

  // Events: completions sort before dispatches at the same time, so everything that
  // becomes ready at `t` competes for a resource freed at `t`. Events of one type at one
  // time are handled by task or resource id, never by the order in which they were
  // queued: the result depends on the set of edges, not on the order of adjacency lists.
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
      if (who != o.who) return who > o.who;
      return seq > o.seq;
    }
  };
  std::priority_queue<event, std::vector<event>, std::greater<>> events;
  std::uint64_t seq = 0;

  struct ready_entry {
    priority_key k;
    task_id t;
    // Equal keys run in id order, whatever the policy returns.
    bool operator>(const ready_entry& o) const { return o.k < k || (!(k < o.k) && t > o.t); }
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
  // Real time until the first active transfer of `s` finishes, at the current share.
  auto shared_left = [](const res_state& s) {
    return std::max(0.0, s.active.top().first - s.vclock) * double(s.active.size());
  };
  auto arm_shared = [&](res_state& s, resource_id res, time_ns now) {
    ++s.version;
    if (s.active.empty()) return;
    auto when = now + static_cast<time_ns>(std::llround(shared_left(s)));
    events.push({when, ev_shared, seq++, res, s.version});
  };

  // Re-plans the running slowed tasks of node k at a new rate.
  auto retime = [&](std::uint32_t k, time_ns now, double new_rate) {
    for (auto t : computing[k]) {
      work_left[t] = std::max(0.0, work_left[t] - double(now - since[t]) * rate[t]);
      since[t] = now;
      rate[t] = new_rate;
      planned[t] = now + static_cast<time_ns>(std::llround(work_left[t] / new_rate));
      events.push({planned[t], ev_complete, seq++, t, ++version_of[t]});
      auto& s = rs[c.res[t]];
      s.free_at = planned[t] + c.gap[t];
      // A pending dispatch may now be too late: queue one at the new time as well.
      if (s.dispatch_pending) events.push({s.free_at, ev_dispatch, seq++, c.res[t], 0});
    }
  };

  std::size_t started = 0;
  auto start_task = [&](task_id t, time_ns now) {
    r.start[t] = now;
    ++started;
    auto res = c.res[t];
    if (overlap && res != no_resource && role[res] == 2 && comm_active[node_of[res]]++ == 0)
      retime(node_of[res], now, 1.0 / slowdown);
    if (res != no_resource && is_fair(res)) {
      auto& s = rs[res];
      advance_shared(s, now);
      if (s.active.empty()) s.busy_since = now;
      s.active.push({s.vclock + double(c.duration[t]), t});
      arm_shared(s, res, now);
    } else if (overlap && res != no_resource && role[res] == 1) {
      auto k = node_of[res];
      work_left[t] = double(c.duration[t]);
      since[t] = now;
      rate[t] = comm_active[k] ? 1.0 / slowdown : 1.0;
      planned[t] = now + static_cast<time_ns>(std::llround(work_left[t] / rate[t]));
      computing[k].push_back(t);
      events.push({planned[t], ev_complete, seq++, t, version_of[t]});
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
    if (overlap && c.res[t] != no_resource && role[c.res[t]] != 0) {
      auto res = c.res[t];
      auto k = node_of[res];
      if (role[res] == 1) {
        auto& v = computing[k];
        v.erase(std::find(v.begin(), v.end(), t));
        r.busy[res] += (now - r.start[t]) - c.duration[t]; // dispatch counted the nominal time
      } else if (--comm_active[k] == 0) {
        retime(k, now, 1.0);
      }
    }
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
    if (c.res[t] != no_resource && c.res[t] >= nres)
      throw error("daydream: replay: task " + describe_task(c, t) + " names resource #" +
                  std::to_string(c.res[t]) + ", which does not exist");
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
      if (overlap && ev.version != version_of[ev.who]) continue; // re-planned since
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
      s.free_at = (overlap && role[ev.who] == 1 ? planned[t] : now + c.duration[t]) + c.gap[t];
      if (!s.ready.empty()) {
        s.dispatch_pending = true;
        events.push({s.free_at, ev_dispatch, seq++, ev.who, 0});
      }
    } else { // a transfer on a fair-share resource may have finished
      auto& s = rs[ev.who];
      if (ev.version != s.version) continue;
      advance_shared(s, now);
      // Finish every transfer that has at most half a nanosecond left: the event time
      // was rounded to whole nanoseconds. Any transfer left over then needs more than
      // half a nanosecond, so the next event lies in the future and the loop ends.
      const double share = double(s.active.size());
      while (!s.active.empty() &&
             std::max(0.0, s.active.top().first - s.vclock) * share <= 0.5) {
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
/// `options` adds effects beyond the graph (replay_options; by default none).
/// Complexity: O((V + E) log V).
///
///     auto r = daydream::replay(g);                          // trace order
///     auto p = daydream::replay(g, daydream::priority_policy{});
///     auto s = daydream::replay(g, daydream::trace_order_policy{}, {.overlap_slowdown = 1.2});
template <class Graph, class Policy = trace_order_policy>
replay_result replay(const Graph& g, const Policy& policy = {}, const replay_options& options = {}) {
  static_assert(selection_policy<Policy, Graph>,
                "daydream::replay(g, policy): the policy must have a member "
                "`priority_key key(const Graph&, task_id, time_ns ready) const`.");
  if constexpr (selection_policy<Policy, Graph>)
    return detail::replay_core(
        g.core(), [&](task_id t, time_ns ready) { return policy.key(g, t, ready); }, options);
  else
    return replay_result{}; // not reached: the assertion above fails first
}

} // namespace daydream

#endif
