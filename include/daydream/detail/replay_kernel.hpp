// Defines replay_flat: the replay kernel (Daydream's Algorithm 1, event driven, with the overlap slowdown).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_KERNEL_HPP
#define DAYDREAM_DETAIL_REPLAY_KERNEL_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/replay_chain.hpp>
#include <daydream/detail/replay_queue.hpp>
#include <daydream/detail/replay_scratch.hpp>
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
#include <string>
#include <utility>
#include <vector>

namespace daydream::detail {

/// The replay kernel: Daydream's Algorithm 1 as a discrete-event simulation, with the
/// effects of replay_options. It gives exactly the results of the plain event loop the
/// tests keep as its oracle (tests/support/reference_replay.hpp: one heap event per
/// completion, dispatch and fair-share step), computed faster. The differences are in
/// bookkeeping only:
/// - one queue entry per resource (agent_queue) instead of one per event, and the
///   dispatch of a task on an exclusive resource folded into its completion event;
/// - the state of a task in one record and its out-edges in one range (a replay over
///   many resources touches the graph at as many places at once); no allocation per
///   event;
/// - the policy's key is computed only when two tasks compete for a resource.
/// With an overlap slowdown, every dispatch is a queue event of its own (the folding
/// needs the end of a task when it starts, which a later transfer may change), and the
/// running tasks of the slowed streams of a node are re-timed when its first transfer
/// starts or its last one ends. `Overlap` says whether there is a slowdown (replay_flat
/// picks the instance), so that a replay without one pays nothing for it.
/// The result is written into `r`, whose arrays' memory is reused where it has room (see
/// replay_into); if the replay throws, `r` is left valid but unspecified.
template <bool Overlap>
void replay_flat_impl(const graph_core& c, key_ref key, const replay_options& opt, replay_result& r) {
  using task_rec = replay_scratch::task_rec;
  const task_id n = c.id_bound();
  const auto nres = static_cast<std::uint32_t>(c.resources.size());
  if (nres >= (std::uint32_t(1) << 31)) throw error("daydream: replay: too many resources");

  r.busy.assign(nres, 0);
  r.start.clear();
  r.end.clear();
  r.pred.clear();
  r.why.clear();
  r.edge.clear();
  r.makespan = 0;
  r.peak_memory = 0;
  r.tasks = 0;

  // Overlap slowdown (replay_options): while a task runs on a link of node k, the tasks
  // on the exclusive GPU streams of node k progress `slowdown` times slower. Roles of
  // resources: 1 slowed computation, 2 communication; by node, the running slowed tasks
  // with the work they have left and their rate since `since`.
  const double slowdown = opt.overlap_slowdown;
  constexpr bool overlap = Overlap;
  std::vector<std::uint32_t> node_of, comm_active;
  std::vector<std::uint8_t> role;
  std::vector<std::vector<task_id>> computing;
  std::vector<double> work_left, rate;
  std::vector<time_ns> since, begin;
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
    begin.assign(n, 0);
  }

  replay_scratch spare;
  auto& scratch = replay_scratch::acquire(spare);
  struct releaser {
    replay_scratch& s;
    ~releaser() { s.release(); }
  } releaser_{scratch};
  scratch.prepare(std::size_t(n) + 1, c.live_edges);
  task_rec* const R = scratch.recs.data();
  std::uint64_t* const adj = scratch.adj.data();

  const bool with_memory = c.mem_delta.allocated();
  std::vector<task_id> roots; // tasks without dependencies, in id order
  {
    // The out-edges of a task, in the order of its out-list (the order does not matter).
    const edge_rec* const edges = c.edges.data();
    std::uint32_t pos = 0;
    for (task_id t = 0; t < n; ++t) {
      task_rec& x = R[t];
      x.at = -1;
      x.pred = no_task;
      x.why = binding::none;
      x.edge = dep_kind::control;
      x.mem = false;
      if (!c.alive[t]) {
        x.out = pos;
        x.dur = x.gap = 0;
        x.res = no_resource;
        x.wait = 1;
        continue;
      }
      x.dur = c.duration[t];
      x.gap = c.gap[t];
      x.res = c.res[t];
      x.wait = c.n_in[t];
      x.mem = with_memory && c.mem_delta[t] != 0;
      if (x.res != no_resource && x.res >= nres)
        throw error("daydream: replay: task " + describe_task(c, t) + " names resource #" +
                    std::to_string(x.res) + ", which does not exist");
      ++r.tasks;
      if (x.wait == 0) roots.push_back(t);
      x.out = pos;
      for (auto e = c.head_out[t]; e != no_edge; e = edges[e].next_out)
        adj[pos++] = edges[e].dst | (std::uint64_t(edges[e].kind) << 32);
    }
    R[n].out = pos;
  }

  // Event types, in the order replay_core handles them at equal times.
  enum : std::uint64_t { ev_complete = 0, ev_shared = 1, ev_dispatch = 2 };
  auto tw_of = [](std::uint64_t type, std::uint32_t who) { return (type << 32) | who; };

  // A ready task carries what its start needs (taken from its record while that is in
  // cache, when the task becomes ready), so that the start does not touch the record:
  // a replay over many resources touches each record only when the task becomes ready
  // and when it ends.
  struct ready_entry {
    task_id t;
    time_ns ready;
    time_ns dur, gap;
    priority_key k{};     // computed once two tasks compete
    bool has_key = false;
    bool mem;
  };
  // Equal keys run in id order. std heaps put the "largest" first: the one that runs.
  auto runs_later = [](const ready_entry& a, const ready_entry& b) {
    return b.k < a.k || (!(a.k < b.k) && a.t > b.t);
  };
  // An exclusive resource runs one task at a time. Its queue event is the next thing
  // that happens to it: the end of its running task, or else the end of the task its
  // pending dispatch will start. The dispatch (at `dispatch_at`) changes only the
  // resource's own state, so it is applied ("committed") when that end comes up, or as
  // soon as a task becomes ready on the resource after the dispatch in event order. A
  // better task that becomes ready before it takes the candidate's place. A dispatch
  // scheduled at its own time, or of a task that takes no time or allocates memory
  // (peak memory needs starts in event order), is a real queue event.
  struct exclusive_state {
    std::vector<ready_entry> ready; // a heap (runs_later) once it holds two tasks
    time_ns free_at = 0;            // end of the last task plus its gap
    time_ns dispatch_at = 0;        // time of the pending dispatch
    time_ns running_end = 0;
    task_id last = no_task;         // last task started
    task_id running = no_task;      // task in progress
    task_id bound = no_task;        // the task the running one waited for, if it did
    bool pending = false;           // a dispatch is due at dispatch_at
    bool tentative = false;         // ... and was scheduled before that time
  };
  struct fair_state { // processor sharing with a virtual clock, as in replay_core
    double vclock = 0;
    time_ns updated = 0;
    time_ns busy_since = 0;
    std::vector<std::pair<double, task_id>> active; // min-heap on virtual finish time
  };
  std::vector<std::uint32_t> slot(nres, 0); // index into xs or fs
  std::vector<std::uint8_t> fair(nres, 0);
  std::vector<exclusive_state> xs;
  std::vector<fair_state> fs;
  for (std::uint32_t i = 0; i < nres; ++i) {
    fair[i] = c.resources[i].share == sharing::fair;
    slot[i] = static_cast<std::uint32_t>(fair[i] ? fs.size() : xs.size());
    if (fair[i]) fs.emplace_back();
    else xs.emplace_back();
  }
  auto by_vtime = [](const std::pair<double, task_id>& a, const std::pair<double, task_id>& b) {
    return a > b;
  };

  agent_queue q(nres);
  // Ends of tasks without a resource and of transfers on fair resources: (time, task).
  using loose_end = std::pair<time_ns, task_id>;
  std::vector<loose_end> loose;
  auto loose_later = [](const loose_end& a, const loose_end& b) { return a > b; };

  // The largest event key handled at the current time. Events of one time are handled
  // in key order, except that an event may queue one with a smaller key at that time;
  // so a dispatch scheduled before its time T has happened once a larger key at T was.
  time_ns mark_time = -1;
  std::uint64_t mark_tw = 0;
  auto mark = [&](time_ns now, std::uint64_t tw) {
    if (now != mark_time) {
      mark_time = now;
      mark_tw = tw;
    } else {
      mark_tw = std::max(mark_tw, tw);
    }
  };
  std::uint32_t current = no_resource; // resource whose event is being handled
  std::size_t started = 0;
  time_ns makespan = 0;
  std::vector<task_id> mem_order; // tasks with a mem_delta, in the order they start
  // Start times are not stored during the loop: a task's start is its end minus its
  // duration, except on fair-share resources, whose starts are kept here.
  std::vector<std::pair<task_id, time_ns>> shared_starts;
  auto started_at = [&](task_id t, bool mem) {
    ++started;
    if (mem) mem_order.push_back(t);
  };

  // Puts the resource's next event in the queue (defined below).
  std::function<void(exclusive_state&, std::uint32_t)> refresh_ref;
  // Re-plans the running slowed tasks of node k at a new rate.
  auto retime = [&](std::uint32_t k, time_ns now, double new_rate) {
    for (auto t : computing[k]) {
      work_left[t] = std::max(0.0, work_left[t] - double(now - since[t]) * rate[t]);
      since[t] = now;
      rate[t] = new_rate;
      const auto rr = R[t].res;
      auto& s = xs[slot[rr]];
      s.running_end = now + static_cast<time_ns>(std::llround(work_left[t] / new_rate));
      s.free_at = s.running_end + R[t].gap;
      if (s.pending) s.dispatch_at = s.free_at;
      if (rr != current) refresh_ref(s, rr);
    }
  };
  // A task starts at `at` on resource `rr` (not no_resource): a transfer may slow a node.
  auto start_overlap = [&](resource_id rr, time_ns at) {
    if (role[rr] == 2 && comm_active[node_of[rr]]++ == 0) retime(node_of[rr], at, 1.0 / slowdown);
  };
  // The planned end of slowed task `t`, started at `at` on stream `rr`.
  auto slowed_end = [&](task_id t, resource_id rr, time_ns at) {
    const auto k = node_of[rr];
    work_left[t] = double(R[t].dur);
    since[t] = at;
    begin[t] = at;
    rate[t] = comm_active[k] ? 1.0 / slowdown : 1.0;
    computing[k].push_back(t);
    shared_starts.push_back({t, at});
    return at + static_cast<time_ns>(std::llround(work_left[t] / rate[t]));
  };

  // The pending dispatch of `s` happens: its best ready task starts at dispatch_at.
  auto commit = [&](exclusive_state& s, std::uint32_t rr) {
    const time_ns at = s.dispatch_at;
    if (s.ready.size() > 1) std::pop_heap(s.ready.begin(), s.ready.end(), runs_later);
    const task_id t = s.ready.back().t;
    const time_ns ready = s.ready.back().ready, dur = s.ready.back().dur, gap = s.ready.back().gap;
    const bool mem = s.ready.back().mem;
    s.ready.pop_back();
    // Waited for the resource: written into the record when the task ends.
    s.bound = at > ready ? s.last : no_task;
    started_at(t, mem);
    if (overlap) start_overlap(rr, at);
    r.busy[rr] += dur;
    s.last = t;
    s.running = t;
    s.running_end = overlap && role[rr] == 1 ? slowed_end(t, rr, at) : at + dur;
    s.free_at = s.running_end + gap;
    s.pending = !s.ready.empty();
    if (s.pending) {
      s.dispatch_at = s.free_at;
      s.tentative = !overlap && s.free_at > at;
    }
  };
  // Puts the resource's next event in the queue.
  auto refresh = [&](exclusive_state& s, std::uint32_t rr) {
    if (s.running != no_task) {
      q.set(rr, s.running_end, tw_of(ev_complete, s.running));
    } else if (s.pending) {
      const ready_entry& x = s.ready.front();
      if (x.dur == 0 || x.mem) s.tentative = false;
      if (s.tentative) q.set(rr, s.dispatch_at + x.dur, tw_of(ev_complete, x.t));
      else q.set(rr, s.dispatch_at, tw_of(ev_dispatch, rr));
    } else {
      q.set(rr, agent_queue::none, 0);
    }
  };
  refresh_ref = refresh;

  auto advance_shared = [](fair_state& s, time_ns now) {
    if (!s.active.empty()) s.vclock += double(now - s.updated) / double(s.active.size());
    s.updated = now;
  };
  auto arm_shared = [&](fair_state& s, std::uint32_t f, time_ns now) {
    if (s.active.empty()) {
      q.set(f, agent_queue::none, 0);
      return;
    }
    const double left = std::max(0.0, s.active.front().first - s.vclock) * double(s.active.size());
    q.set(f, now + static_cast<time_ns>(std::llround(left)), tw_of(ev_shared, f));
  };

  auto make_ready = [&](task_id t, time_ns now) {
    task_rec& x = R[t];
    x.at = now;
    // Resources, and the dependents of tasks, move forward through ids: fetch what the
    // tasks a few ids ahead will need. A replay over many resources walks as many places
    // in memory at once, more than the hardware prefetchers follow (replay of a 10^6-task
    // graph of 128 workers: 30% faster; lookahead 4 measured best of 4, 8, 16, 32).
    __builtin_prefetch(R + std::min(t + 4, n), 1);
    __builtin_prefetch(adj + std::min<std::size_t>(x.out + 4, c.live_edges), 0);
    const resource_id rr = x.res;
    if (rr == no_resource) {
      started_at(t, x.mem);
      loose.push_back({now + x.dur, t});
      std::push_heap(loose.begin(), loose.end(), loose_later);
      return;
    }
    if (fair[rr]) {
      started_at(t, x.mem);
      if (overlap) start_overlap(rr, now);
      shared_starts.push_back({t, now});
      auto& s = fs[slot[rr]];
      advance_shared(s, now);
      if (s.active.empty()) s.busy_since = now;
      s.active.push_back({s.vclock + double(x.dur), t});
      std::push_heap(s.active.begin(), s.active.end(), by_vtime);
      arm_shared(s, rr, now);
      return;
    }
    auto& s = xs[slot[rr]];
    // Ready after the pending dispatch happened (in event order): too late for it.
    if (s.running == no_task && s.pending && s.tentative &&
        (s.dispatch_at < now || (s.dispatch_at == now && mark_tw > tw_of(ev_dispatch, rr))))
      commit(s, rr);
    const bool was_pending = s.pending;
    const task_id before = was_pending ? s.ready.front().t : no_task;
    // Entries are written field by field: a whole-struct copy of a just-built entry
    // stalls on store forwarding, and this runs once per task.
    auto& e = s.ready.emplace_back();
    e.t = t;
    e.ready = now;
    e.dur = x.dur;
    e.gap = x.gap;
    e.mem = x.mem;
    if (s.ready.size() > 1) {
      auto& first = s.ready.front();
      if (!first.has_key) {
        first.k = key(first.t, first.ready);
        first.has_key = true;
      }
      auto& last = s.ready.back();
      last.k = key(t, now);
      last.has_key = true;
      std::push_heap(s.ready.begin(), s.ready.end(), runs_later);
    }
    if (!was_pending) {
      s.pending = true;
      s.dispatch_at = std::max(now, s.free_at);
      s.tentative = !overlap && s.dispatch_at > now;
    }
    // The queue event changes when a dispatch becomes due or its candidate changes.
    if (rr != current && s.running == no_task && (!was_pending || s.ready.front().t != before))
      refresh(s, rr);
  };

  auto complete = [&](task_id t, time_ns now) {
    if (overlap && R[t].res != no_resource && role[R[t].res] != 0) {
      const auto rr = R[t].res;
      const auto k = node_of[rr];
      if (role[rr] == 1) {
        auto& v = computing[k];
        v.erase(std::find(v.begin(), v.end(), t));
        // The dispatch counted the nominal time; the start is in shared_starts.
        r.busy[rr] += (now - begin[t]) - R[t].dur;
      } else if (--comm_active[k] == 0) {
        retime(k, now, 1.0);
      }
    }
    R[t].at = now;
    makespan = std::max(makespan, now);
    for (auto i = R[t].out, last = R[t + 1].out; i < last; ++i) {
      const auto d = static_cast<task_id>(adj[i]);
      task_rec& y = R[d];
      // The last dependency to finish binds the start (ties: the first one seen).
      if (y.pred == no_task || now > y.at) {
        y.pred = t;
        y.edge = static_cast<dep_kind>(adj[i] >> 32);
        y.why = binding::dependency;
        y.at = now;
      }
      if (--y.wait == 0) make_ready(d, now);
    }
  };

  for (auto t : roots) make_ready(t, 0);
  roots = {};

  for (;;) {
    const std::uint32_t a = q.top();
    const auto k = q.at(a);
    if (!loose.empty() && (k.time >= agent_queue::idle || k.time > loose.front().first ||
                           (k.time == loose.front().first && k.tw > loose.front().second))) {
      const auto [now, t] = loose.front(); // a completion: type 0, who = t
      std::pop_heap(loose.begin(), loose.end(), loose_later);
      loose.pop_back();
      mark(now, t);
      complete(t, now);
      continue;
    }
    if (k.time >= agent_queue::idle) break;
    const time_ns now = k.time;
    const std::uint64_t type = k.tw >> 32;
    const auto who = static_cast<std::uint32_t>(k.tw);
    mark(now, k.tw);
    if (type == ev_complete) {
      auto& s = xs[slot[a]];
      if (s.running != who) commit(s, a); // the dispatch that started it
      s.running = no_task;
      if (s.bound != no_task) {
        R[who].pred = s.bound;
        R[who].why = binding::resource;
      }
      current = a;
      complete(who, now);
      current = no_resource;
      refresh(s, a);
    } else if (type == ev_dispatch) {
      auto& s = xs[slot[a]];
      commit(s, a);
      refresh(s, a);
    } else { // a transfer on a fair-share resource may have finished
      auto& s = fs[slot[a]];
      advance_shared(s, now);
      // Finish every transfer with at most half a nanosecond left (see replay_core).
      const double share = double(s.active.size());
      while (!s.active.empty() && std::max(0.0, s.active.front().first - s.vclock) * share <= 0.5) {
        const task_id t = s.active.front().second;
        std::pop_heap(s.active.begin(), s.active.end(), by_vtime);
        s.active.pop_back();
        loose.push_back({now, t});
        std::push_heap(loose.begin(), loose.end(), loose_later);
      }
      if (s.active.empty()) r.busy[a] += now - s.busy_since;
      arm_shared(s, a, now);
    }
  }

  if (started != r.tasks) {
    std::vector<std::uint8_t> stuck(n, 0);
    for (task_id t = 0; t < n; ++t) stuck[t] = c.alive[t] && R[t].wait > 0; // never ready
    auto cycle = find_cycle_among(c, stuck);
    throw error("daydream: replay: the graph has a cycle: " + describe_tasks(c, cycle));
  }
  r.makespan = makespan;

  // The results out of the records. Buffers that will not be kept are returned to the
  // system as they are read, so that the records and the results do not both take all
  // their memory at once (it matters for graphs of 10^8 tasks).
  const bool discard = scratch.too_large();
  if (discard) scratch.adj = {};
  clear_for_append(r.start, n);
  clear_for_append(r.end, n);
  clear_for_append(r.pred, n);
  clear_for_append(r.why, n);
  clear_for_append(r.edge, n);
  // A block of records at a time (it stays in cache while each result array takes its
  // field), appended with one size check per block and array.
  constexpr task_id chunk = task_id(1) << 12;
  for (task_id lo = 0; lo < n; lo += std::min(chunk, n - lo)) {
    const task_id hi = lo + std::min(chunk, n - lo);
    const task_rec* const b = R + lo;
    const std::size_t m = hi - lo;
    // -1 for removed tasks: at = -1, dur = 0
    append_generated(r.start, m, [b](std::size_t i) { return b[i].at - b[i].dur; });
    append_generated(r.end, m, [b](std::size_t i) { return b[i].at; });
    append_generated(r.pred, m, [b](std::size_t i) { return b[i].pred; });
    append_generated(r.why, m, [b](std::size_t i) { return b[i].why; });
    append_generated(r.edge, m, [b](std::size_t i) { return b[i].edge; });
    if (discard) discard_pages(b, m * sizeof(task_rec));
  }

  for (const auto& [t, at] : shared_starts) r.start[t] = at;
  const time_ns* const start = r.start.data();

  // Peak memory: running sum of allocations in start order, ties in id order. Tasks
  // with memory start through real events, in event order: only runs of equal start
  // times need sorting.
  for (std::size_t i = 0, j; i < mem_order.size(); i = j) {
    for (j = i + 1; j < mem_order.size() && start[mem_order[j]] == start[mem_order[i]];) ++j;
    if (j - i > 1)
      std::sort(mem_order.begin() + std::ptrdiff_t(i), mem_order.begin() + std::ptrdiff_t(j));
  }
  std::int64_t sum = 0;
  for (auto t : mem_order) r.peak_memory = std::max(r.peak_memory, sum += c.mem_delta[t]);
}

/// replay_flat_impl into a fresh result.
template <bool Overlap>
replay_result replay_flat_impl(const graph_core& c, key_ref key, const replay_options& opt) {
  replay_result r;
  replay_flat_impl<Overlap>(c, key, opt, r);
  return r;
}

/// The replay: one topological pass when the graph is chained and there is no overlap
/// slowdown (replay_chained), else the event-driven kernel (replay_flat_impl), compiled
/// without the overlap slowdown's bookkeeping when replay_options asks for none. Both
/// give the same results, written into `out` (its arrays' memory reused where it has
/// room; valid but unspecified if the replay throws).
inline void replay_flat_into(const graph_core& c, key_ref key, const replay_options& opt,
                             replay_result& out) {
  const double slowdown = opt.overlap_slowdown;
  if (!(slowdown >= 1.0) || !std::isfinite(slowdown))
    throw error("daydream: replay: overlap_slowdown must be a finite factor >= 1");
  if (slowdown != 1.0) return replay_flat_impl<true>(c, key, opt, out);
  if (replay_chained(c, out)) return;
  replay_flat_impl<false>(c, key, opt, out);
}

/// replay_flat_into a fresh result.
inline replay_result replay_flat(const graph_core& c, key_ref key, const replay_options& opt = {}) {
  replay_result r;
  replay_flat_into(c, key, opt, r);
  return r;
}

} // namespace daydream::detail

#endif
