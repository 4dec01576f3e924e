// Defines replay_chained: the replay of a graph whose exclusive resources run their tasks in dependency order, as one topological pass.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_CHAIN_HPP
#define DAYDREAM_DETAIL_REPLAY_CHAIN_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/replay_scratch.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::detail {

/// The working memory of replay_chained, kept per thread between replays as
/// replay_scratch is: a dependency counter per task and the traversal order.
struct chain_scratch {
  std::vector<std::uint32_t> wait;
  std::vector<task_id> order;
  bool busy = false;

  static chain_scratch& acquire(chain_scratch& spare) {
    thread_local chain_scratch mine;
    auto& s = mine.busy ? spare : mine;
    s.busy = true;
    return s;
  }
  void release() noexcept {
    busy = false;
    if ((wait.capacity() + order.capacity()) * sizeof(std::uint32_t) >
        std::size_t(DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP)) {
      wait = {};
      order = {};
    }
  }
};

/// The replay of `c` without an overlap slowdown, in one topological pass, when the
/// graph is *chained*: every exclusive resource runs its tasks in an order the
/// dependencies already impose (each task on it depends directly on the one before it,
/// as program-order and stream-order edges make a trace's threads and streams), there is
/// no fair-share resource, and every live task takes time (duration > 0). Returns false,
/// leaving `out` unspecified, when the graph is not chained (or has a cycle or names a
/// resource that does not exist): replay_flat then runs the event-driven kernel.
///
/// Why it gives exactly the kernel's (and the reference event loop's) result: on a
/// chained resource at most one task is ready at a time, the one after the last task
/// started there, and only once that one has ended; so no policy ever chooses, and a
/// task starts at max(ready, end + gap of the task before it on its resource). Since
/// every task takes time, every completion at time T was queued before T, and the
/// event loop takes the completions of one time in task-id order: the dependency that
/// binds a task's start is the one ending last, the smallest id among equals, through
/// its first edge in the out-list. A task that waited for its resource (start > ready)
/// is bound by the task before it there. Peak memory sums allocations in (start, id)
/// order: on a resource, starts increase along the chain, so the per-resource lists are
/// merged. Whether a resource is chained is checked as the pass reaches its tasks: the
/// last task started on the resource must have an edge to the next one (a walk of its
/// out-list, which the pass has just read). A resource ordered only through longer paths
/// (as removals can leave one) is not accepted.
///
/// Cost: O(V + E) plus O(M log K) for M tasks with memory on K resources; no event
/// queue and no working records: the result arrays are the state, with a dependency
/// counter per task.
inline bool replay_chained(const graph_core& c, replay_result& out) {
  const task_id n = c.id_bound();
  const auto nres = static_cast<std::uint32_t>(c.resources.size());
  for (const auto& res : c.resources)
    if (res.share == sharing::fair) return false;

  chain_scratch spare;
  auto& s = chain_scratch::acquire(spare);
  struct releaser {
    chain_scratch& s;
    ~releaser() { s.release(); }
  } releaser_{s};

  replay_result r;
  r.busy.assign(nres, 0);
  // The state of the pass lives in the results, zero-filled (a memset each): `end` is
  // the latest end among the dependencies seen so far until the task runs. Every task
  // takes time, so an `end` still 0 when a task runs marks a root, and the first
  // dependency to end always wins the comparison below (its end is at least 1).
  reserve_advised(r.start, n);
  reserve_advised(r.end, n);
  reserve_advised(r.pred, n);
  reserve_advised(r.why, n);
  reserve_advised(r.edge, n);
  r.start.resize(n);
  r.end.resize(n);
  r.pred.resize(n);
  r.why.resize(n);
  r.edge.resize(n);
  if (s.wait.capacity() < n) {
    s.wait = {};
    reserve_advised(s.wait, n);
  }
  if (s.order.capacity() < n) {
    s.order = {};
    reserve_advised(s.order, n);
  }
  s.wait.assign(c.n_in.begin(), c.n_in.end());
  s.order.resize(n);

  time_ns* const start = r.start.data();
  time_ns* const end = r.end.data();
  task_id* const pred = r.pred.data();
  binding* const why = r.why.data();
  dep_kind* const edge = r.edge.data();
  std::uint32_t* const wait = s.wait.data();
  task_id* const order = s.order.data();
  const edge_rec* const edges = c.edges.data();
  const edge_id* const head_out = c.head_out.data();
  const time_ns* const duration = c.duration.data();
  const time_ns* const gap = c.gap.data();
  const resource_id* const res = c.res.data();
  const std::uint8_t* const alive = c.alive.data();
  const bool with_memory = c.mem_delta.allocated();
  const auto& mem_delta = c.mem_delta;

  std::size_t queued = 0;
  for (task_id t = 0; t < n; ++t) {
    if (alive[t]) {
      ++r.tasks;
      if (wait[t] == 0) order[queued++] = t;
    } else { // a removed id
      start[t] = end[t] = -1;
      pred[t] = no_task;
      edge[t] = dep_kind::control;
    }
  }

  struct lane {
    time_ns free_at = 0; // end of the last task plus its gap
    time_ns end = 0;     // end of the last task (they increase along the chain)
    task_id last = no_task;
  };
  std::vector<lane> lanes(nres);
  using mem_entry = std::pair<time_ns, task_id>;
  std::vector<std::vector<mem_entry>> mem_on; // by resource, in start order
  std::vector<mem_entry> mem_loose;           // tasks without a resource
  if (with_memory) mem_on.resize(nres);
  time_ns loose_end = 0;

  for (std::size_t i = 0; i < queued; ++i) {
    const task_id t = order[i];
    const time_ns dur = duration[t];
    if (dur <= 0) return false;
    const resource_id rr = res[t];
    time_ns at = end[t]; // ready (0 for a root)
    binding w = at == 0 ? binding::none : binding::dependency;
    if (at == 0) {
      pred[t] = no_task;
      edge[t] = dep_kind::control;
    }
    time_ns e;
    if (rr < nres) {
      lane& l = lanes[rr];
      if (l.last != no_task) { // chained: the last task started here is a dependency
        auto k = head_out[l.last];
        while (k != no_edge && edges[k].dst != t) k = edges[k].next_out;
        if (k == no_edge) return false;
      }
      if (l.free_at > at) {
        at = l.free_at;
        pred[t] = l.last;
        w = binding::resource;
      }
      r.busy[rr] += dur;
      l.last = t;
      e = at + dur;
      l.end = e;
      l.free_at = e + gap[t];
      if (with_memory && mem_delta[t] != 0) mem_on[rr].push_back({at, t});
    } else {
      if (rr != no_resource) return false; // names no resource: the kernel says so
      e = at + dur;
      loose_end = std::max(loose_end, e);
      if (with_memory && mem_delta[t] != 0) mem_loose.push_back({at, t});
    }
    start[t] = at;
    end[t] = e;
    why[t] = w;
    for (auto k = head_out[t]; k != no_edge; k = edges[k].next_out) {
      const edge_rec& x = edges[k];
      const task_id d = x.dst;
      // The last dependency to end binds the start; ties: the smallest id.
      if (e > end[d] || (e == end[d] && t < pred[d])) {
        pred[d] = t;
        edge[d] = x.kind;
        end[d] = e;
      }
      if (--wait[d] == 0) order[queued++] = d;
    }
  }
  if (queued != r.tasks) return false; // a cycle: the kernel names it

  r.makespan = loose_end;
  for (auto& l : lanes) r.makespan = std::max(r.makespan, l.end);
  if (with_memory) {
    std::sort(mem_loose.begin(), mem_loose.end());
    // Merge the lists, each in (start, id) order, smallest first: by a scan of the
    // heads when they are few, else through a heap.
    struct cursor {
      const mem_entry* at;
      const mem_entry* end;
    };
    std::vector<cursor> lists;
    for (auto& v : mem_on)
      if (!v.empty()) lists.push_back({v.data(), v.data() + v.size()});
    if (!mem_loose.empty()) lists.push_back({mem_loose.data(), mem_loose.data() + mem_loose.size()});
    std::int64_t sum = 0;
    if (lists.size() <= 8) {
      while (!lists.empty()) {
        std::size_t best = 0;
        for (std::size_t j = 1; j < lists.size(); ++j)
          if (*lists[j].at < *lists[best].at) best = j;
        r.peak_memory = std::max(r.peak_memory, sum += mem_delta[lists[best].at->second]);
        if (++lists[best].at == lists[best].end) {
          lists[best] = lists.back();
          lists.pop_back();
        }
      }
    } else {
      using head = std::pair<mem_entry, std::uint32_t>; // entry, list
      std::priority_queue<head, std::vector<head>, std::greater<>> heads;
      for (std::uint32_t j = 0; j < lists.size(); ++j) heads.push({*lists[j].at, j});
      while (!heads.empty()) {
        auto j = heads.top().second;
        heads.pop();
        r.peak_memory = std::max(r.peak_memory, sum += mem_delta[lists[j].at->second]);
        if (++lists[j].at != lists[j].end) heads.push({*lists[j].at, j});
      }
    }
  }
  out = std::move(r);
  return true;
}

} // namespace daydream::detail

#endif
