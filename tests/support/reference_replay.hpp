// Defines testing::reference_replay: the plain event-loop replay, the oracle the shipping replay kernel is tested against.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_REFERENCE_REPLAY_HPP
#define DAYDREAM_TESTS_SUPPORT_REFERENCE_REPLAY_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

namespace daydream::testing {

/// The reference replay: Daydream's Algorithm 1 as a plain event loop on the flat core,
/// one heap event per completion, dispatch and fair-share step, with the overlap
/// slowdown. `key(t, ready)` is the policy. The shipping kernel (detail::replay_flat)
/// must give exactly its results; the property tests and the fuzzer compare the two.
template <class KeyFn>
replay_result reference_replay(const detail::graph_core& c, KeyFn&& key, const replay_options& opt = {}) {
  using namespace daydream::detail;
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

} // namespace daydream::testing

#endif
