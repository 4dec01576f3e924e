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
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h> // madvise: huge pages for the result arrays
#endif

/// Bytes of working memory replay() keeps per thread between calls, so that repeated
/// replays of a graph pay no page faults for it (default 1 GiB; 0 keeps nothing).
#ifndef DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP
#  define DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP (std::size_t(1) << 30)
#endif

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

/// Returns the whole pages inside [p, p + bytes) to the system (Linux; elsewhere a
/// no-op): their contents become zero.
inline void discard_pages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_DONTNEED)
  advise_whole_pages(p, bytes, 4096, MADV_DONTNEED);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Reserves room for `n` elements in the empty vector `v`, on huge pages where the
/// system allows.
template <class T> void reserve_advised(std::vector<T>& v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
}

/// A selection policy's key function, type-erased: replay() hands the kernels this, so
/// that they are compiled once for all policies (and keys are computed rarely).
class key_ref {
public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, key_ref>)
  key_ref(const F& f) noexcept // NOLINT: converts any key function
      : obj_(&f), fn_([](const void* o, task_id t, time_ns ready) {
          return (*static_cast<const F*>(o))(t, ready);
        }) {}
  priority_key operator()(task_id t, time_ns ready) const { return fn_(obj_, t, ready); }

private:
  const void* obj_;
  priority_key (*fn_)(const void*, task_id, time_ns);
};

/// The event queue of replay_flat. Every resource is an agent with at most one pending
/// event, held in a winner tree: each node keeps the earliest event below it, so
/// changing an agent's event costs log2(resources) steps of a few instructions. Events
/// are ordered by (time, tw), where tw packs the event type above the id of the task or
/// resource it concerns.
class agent_queue {
public:
  /// An agent's event.
  struct key {
    time_ns time;
    std::uint64_t tw;
  };
  /// The time of "no event".
  static constexpr time_ns none = std::numeric_limits<time_ns>::max();
  /// Times from here on mean "no event": an idle agent `a` has time `none - a`, so that
  /// equal times in the tree are real ties (rare: event times are in nanoseconds).
  static constexpr time_ns idle = none - (time_ns(1) << 32);

  explicit agent_queue(std::size_t agents) {
    while (p_ < agents) p_ *= 2;
    tw_.assign(p_, 0);
    time_.assign(2 * std::size_t(p_), none);
    win_.assign(2 * std::size_t(p_), 0);
    for (std::uint32_t a = 0; a < p_; ++a) {
      win_[p_ + a] = a;
      time_[p_ + a] = none - time_ns(a);
    }
    for (std::uint32_t i = p_ - 1; i >= 1; --i) {
      const std::uint32_t first = 2 * i + (time_[2 * i + 1] < time_[2 * i] ? 1 : 0);
      win_[i] = win_[first];
      time_[i] = time_[first];
    }
  }
  /// The agent with the earliest event; its time is `idle` or more when none has one.
  std::uint32_t top() const noexcept { return win_[p_ > 1 ? 1 : p_]; }
  /// The event of agent `a`.
  key at(std::uint32_t a) const noexcept { return {time_[p_ + a], tw_[a]}; }

  /// Sets the event of agent `a`; time `none` clears it.
  void set(std::uint32_t a, time_ns time, std::uint64_t tw) noexcept {
    time_ns* __restrict t = time_.data();
    std::uint32_t* __restrict w = win_.data();
    const std::uint64_t* __restrict tws = tw_.data();
    tw_[a] = tw;
    if (time == none) time = none - time_ns(a);
    std::uint32_t i = p_ + a;
    t[i] = time;
    time_ns ct = time;
    std::uint32_t ca = a;
    while (i > 1) {
      const time_ns ot = t[i ^ 1u];
      const std::uint32_t oa = w[i ^ 1u];
      i >>= 1;
      bool other_first = ot < ct;
      if (ot == ct) [[unlikely]] other_first = tws[oa] < tws[ca];
      ct = other_first ? ot : ct;
      ca = other_first ? oa : ca;
      w[i] = ca;
      t[i] = ct;
    }
  }

private:
  std::uint32_t p_ = 1;
  std::vector<std::uint64_t> tw_;  // by agent
  std::vector<time_ns> time_;      // by node: the earliest event time below
  std::vector<std::uint32_t> win_; // by node: its agent (nodes 1 .. p_-1; p_ + a: the leaf of a)
};

/// The working memory of replay_flat, kept per thread between replays so that a search
/// replaying thousands of times pays no page faults for it: one record per task and the
/// out-edges in CSR form (56 bytes per task at 1 dependency per task). At most
/// DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP bytes are kept; larger buffers are freed.
struct replay_scratch {
  /// The state of one task during a replay.
  struct task_rec {
    time_ns dur, gap;
    time_ns at;         // when the task became ready (latest dependency so far), then its end
    std::uint32_t out;  // its first out-edge in `adj`; the next record's `out` ends them
    resource_id res;
    std::uint32_t wait; // dependencies not yet ended
    task_id pred;
    binding why;
    dep_kind edge;
    bool mem;           // allocates or frees memory (mem_delta != 0)
  };
  std::vector<task_rec> recs;
  std::vector<std::uint64_t> adj; // dst | kind << 32
  bool busy = false;

  /// This thread's scratch, or `spare` if it is in use (a replay inside a replay).
  static replay_scratch& acquire(replay_scratch& spare) {
    thread_local replay_scratch mine;
    auto& s = mine.busy ? spare : mine;
    s.busy = true;
    return s;
  }
  void prepare(std::size_t tasks, std::size_t edges) {
    grow(recs, tasks);
    grow(adj, edges);
  }
  /// Whether the buffers are too large to keep after the replay.
  bool too_large() const noexcept {
    return recs.capacity() * sizeof(task_rec) + adj.capacity() * sizeof(std::uint64_t) >
           std::size_t(DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP);
  }
  void release() noexcept {
    busy = false;
    if (too_large()) {
      recs = {};
      adj = {};
    }
  }

private:
  template <class T> static void grow(std::vector<T>& v, std::size_t n) {
    if (v.capacity() < n) {
      v = {};
      reserve_advised(v, n);
    }
    v.resize(n);
  }
};

/// The replay kernel without replay_options effects: the model and the results of
/// replay_core, computed faster. The differences are in bookkeeping only:
/// - one queue entry per resource (agent_queue) instead of one per event, and the
///   dispatch of a task on an exclusive resource folded into its completion event;
/// - the state of a task in one record and its out-edges in one range (a replay over
///   many resources touches the graph at as many places at once); no allocation per
///   event;
/// - the policy's key is computed only when two tasks compete for a resource.
inline replay_result replay_flat(const graph_core& c, key_ref key) {
  using task_rec = replay_scratch::task_rec;
  const task_id n = c.id_bound();
  const auto nres = static_cast<std::uint32_t>(c.resources.size());
  if (nres >= (std::uint32_t(1) << 31)) throw error("daydream: replay: too many resources");

  replay_result r;
  r.busy.assign(nres, 0);

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

  struct ready_entry {
    task_id t;
    time_ns ready;
    priority_key k{};     // computed once two tasks compete
    bool has_key = false;
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
  auto started_at = [&](task_id t) {
    ++started;
    if (R[t].mem) mem_order.push_back(t);
  };

  // The pending dispatch of `s` happens: its best ready task starts at dispatch_at.
  auto commit = [&](exclusive_state& s, std::uint32_t rr) {
    const time_ns at = s.dispatch_at;
    task_id t;
    if (s.ready.size() == 1) {
      t = s.ready.front().t;
      s.ready.clear();
    } else {
      std::pop_heap(s.ready.begin(), s.ready.end(), runs_later);
      t = s.ready.back().t;
      s.ready.pop_back();
    }
    task_rec& x = R[t];
    if (at > x.at && s.last != no_task) { // waited for the resource
      x.pred = s.last;
      x.why = binding::resource;
    }
    started_at(t);
    r.busy[rr] += x.dur;
    s.last = t;
    s.free_at = at + x.dur + x.gap;
    s.running = t;
    s.running_end = at + x.dur;
    s.pending = !s.ready.empty();
    if (s.pending) {
      s.dispatch_at = s.free_at;
      s.tentative = s.free_at > at;
    }
  };
  // Puts the resource's next event in the queue.
  auto refresh = [&](exclusive_state& s, std::uint32_t rr) {
    if (s.running != no_task) {
      q.set(rr, s.running_end, tw_of(ev_complete, s.running));
    } else if (s.pending) {
      const task_rec& x = R[s.ready.front().t];
      if (x.dur == 0 || x.mem) s.tentative = false;
      if (s.tentative) q.set(rr, s.dispatch_at + x.dur, tw_of(ev_complete, s.ready.front().t));
      else q.set(rr, s.dispatch_at, tw_of(ev_dispatch, rr));
    } else {
      q.set(rr, agent_queue::none, 0);
    }
  };

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
      started_at(t);
      loose.push_back({now + x.dur, t});
      std::push_heap(loose.begin(), loose.end(), loose_later);
      return;
    }
    if (fair[rr]) {
      started_at(t);
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
      s.tentative = s.dispatch_at > now;
    }
    // The queue event changes when a dispatch becomes due or its candidate changes.
    if (rr != current && s.running == no_task && (!was_pending || s.ready.front().t != before))
      refresh(s, rr);
  };

  auto complete = [&](task_id t, time_ns now) {
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
  reserve_advised(r.start, n);
  reserve_advised(r.end, n);
  reserve_advised(r.pred, n);
  reserve_advised(r.why, n);
  reserve_advised(r.edge, n);
  constexpr task_id chunk = task_id(1) << 20;
  for (task_id lo = 0; lo < n; lo += std::min(chunk, n - lo)) {
    const task_id hi = lo + std::min(chunk, n - lo);
    for (task_id t = lo; t < hi; ++t) {
      const task_rec& x = R[t];
      r.start.push_back(x.at - x.dur); // -1 for removed tasks: at = -1, dur = 0
      r.end.push_back(x.at);
      r.pred.push_back(x.pred);
      r.why.push_back(x.why);
      r.edge.push_back(x.edge);
    }
    if (discard) discard_pages(R + lo, std::size_t(hi - lo) * sizeof(task_rec));
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
/// Complexity: O(V log R + E) for R resources (O((V + E) log V) with options); the
/// policy's key is computed only for tasks that compete for a busy resource.
///
///     auto r = daydream::replay(g);                          // trace order
///     auto p = daydream::replay(g, daydream::priority_policy{});
///     auto s = daydream::replay(g, daydream::trace_order_policy{}, {.overlap_slowdown = 1.2});
template <class Graph, class Policy = trace_order_policy>
replay_result replay(const Graph& g, const Policy& policy = {}, const replay_options& options = {}) {
  static_assert(selection_policy<Policy, Graph>,
                "daydream::replay(g, policy): the policy must have a member "
                "`priority_key key(const Graph&, task_id, time_ns ready) const`.");
  if constexpr (selection_policy<Policy, Graph>) {
    auto policy_key = [&](task_id t, time_ns ready) { return policy.key(g, t, ready); };
    const detail::key_ref key(policy_key);
    // Without options the flat kernel gives the same result, faster.
    if (options.overlap_slowdown == 1.0) return detail::replay_flat(g.core(), key);
    return detail::replay_core(g.core(), key, options);
  } else
    return replay_result{}; // not reached: the assertion above fails first
}

} // namespace daydream

#endif
