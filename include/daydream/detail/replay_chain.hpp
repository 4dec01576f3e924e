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
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

// The per-task step of the pass is inlined where it is called (twice): as a call, its
// prologue, epilogue and reloaded captures took about 13% of the pass's instructions
// (docs/performance.md, "Against the traversal floor").
#if defined(__GNUC__) || defined(__clang__)
#  define DAYDREAM_CHAIN_INLINE __attribute__((always_inline))
#else
#  define DAYDREAM_CHAIN_INLINE
#endif

namespace daydream::detail {

/// The working memory of replay_chained, kept per thread between replays as
/// replay_scratch is: a dependency counter per task, the traversal order, and the
/// (start, task) entries of the tasks with memory, with their buckets.
struct chain_scratch {
  using mem_entry = std::pair<time_ns, task_id>;
  std::vector<std::uint32_t> wait;
  std::vector<task_id> order;
  std::vector<mem_entry> mem, sorted;
  std::vector<std::uint32_t> bucket;
  bool busy = false;

  static chain_scratch& acquire(chain_scratch& spare) {
    thread_local chain_scratch mine;
    auto& s = mine.busy ? spare : mine;
    s.busy = true;
    return s;
  }
  void release() noexcept {
    busy = false;
    if ((wait.capacity() + order.capacity() + bucket.capacity()) * sizeof(std::uint32_t) +
            (mem.capacity() + sorted.capacity()) * sizeof(mem_entry) >
        std::size_t(DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP)) {
      wait = {};
      order = {};
      mem = {};
      sorted = {};
      bucket = {};
    }
  }
};

/// The replay of `c` without an overlap slowdown, as one topological pass with an event
/// queue for the fair-share resources only, when the graph is *chained*: every exclusive
/// resource runs its tasks in an order the dependencies already impose (each task on it
/// depends directly on the one before it, as program-order and stream-order edges make
/// a trace's threads and streams) and every live task takes time (duration > 0).
/// Writes the result into `out`, reusing its arrays' memory (see replay_into). Returns
/// false, leaving `out` valid but unspecified, when the graph is not chained (or has a
/// cycle, or names a resource that does not exist): replay_flat then runs the
/// event-driven kernel.
///
/// Why it gives exactly the kernel's (and the reference event loop's) result:
/// - On a chained resource at most one task is ready at a time, the one after the last
///   task started there, and only once that one has ended; so no policy ever chooses,
///   and a task starts at max(ready, end + gap of the task before it on its resource),
///   bound by that task if it waited. Its end is known as soon as it is ready: the pass
///   computes it then, whatever the simulated time (a task without a resource likewise).
/// - Only the transfers of a fair-share resource depend on one another through time.
///   Their starts and the resources' "a transfer may have finished" steps go through a
///   queue in the event loop's order; what the pass computes ahead never ends before
///   the time it was computed from (every task takes time), so the queue never falls
///   behind.
/// - Since every task takes time, the event loop handles the completions of one time T
///   in this order: every task not on a fair-share resource, by id; then the transfers
///   that finish at T, in the order of the fair-share steps that finish them (resource
///   by resource, by id; a resource may take a second step at T), by id within a step.
///   The dependency that binds a start is the one ending last, the first among equals
///   in that order, through its first edge in the out-list; a transfer made ready at T starts before the first
///   fair-share step at T, or, when the last of its dependencies in that order is a
///   transfer, right after the step that finished it.
/// - Peak memory sums allocations in (start, id) order, the entries sorted by buckets of
///   start time.
/// Whether a resource is chained is checked as the pass reaches its tasks: the last task
/// started on the resource must have an edge to the next one (a walk of its out-list).
/// A resource ordered only through longer paths (as removals can leave one) is not
/// accepted.
///
/// Cost: O(V + E) plus O(F log F) for F transfers on fair-share resources and O(M) for
/// M tasks with memory spread over the makespan (O(M log M) at worst, all at one time):
/// no event per task and no working records (the result arrays are the state, with a
/// dependency counter per task), and no clearing of the results (each entry is written
/// once).
inline bool replay_chained(const graph_core& c, replay_result& out) {
  const task_id n = c.id_bound();
  const auto nres = static_cast<std::uint32_t>(c.resources.size());
  // A fair-share resource's mark in place of its last task (see `lane`): no task has it.
  constexpr task_id on_link = no_task - 1;
  if (nres >= (std::uint32_t(1) << 30) || n >= on_link) return false;

  chain_scratch spare;
  auto& s = chain_scratch::acquire(spare);
  struct releaser {
    chain_scratch& s;
    ~releaser() { s.release(); }
  } releaser_{s};

  // The results are written in place, every entry of every task once (a removed id
  // included), so that a caller's result is reused without clearing it: its arrays are
  // resized, and reallocated only when they are too small.
  replay_result& r = out;
  r.busy.assign(nres, 0);
  r.makespan = 0;
  r.peak_memory = 0;
  r.tasks = 0;
  size_for_overwrite(r.start, n);
  size_for_overwrite(r.end, n);
  size_for_overwrite(r.pred, n);
  size_for_overwrite(r.why, n);
  size_for_overwrite(r.edge, n);
  // The state of the pass lives in the results: `end` is the latest end among the
  // dependencies seen so far until the task runs. `wait` counts the dependencies not yet
  // ended, with the `unseen` bit set until the first of them ends: that one binds the
  // start whatever `end` holds (so `end` needs no clearing), and a root's `end` is 0.
  constexpr std::uint32_t unseen = std::uint32_t(1) << 31;
  if (s.wait.capacity() < n) {
    s.wait = {};
    reserve_advised(s.wait, n);
  }
  if (s.order.capacity() < n) {
    s.order = {};
    reserve_advised(s.order, n);
  }
  s.wait.resize(n);
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
  // The memory column, read through its array (nullptr when no task allocates).
  const auto* const mem_delta = c.mem_delta.data();
  const bool with_memory = mem_delta != nullptr;

  // Fair-share resources ("links"): processor sharing with a virtual clock, exactly as
  // in the kernel. `link_of` numbers them; exclusive resources are `no_link`.
  constexpr std::uint32_t no_link = ~std::uint32_t(0);
  struct link_state {
    double vclock = 0;
    time_ns updated = 0;
    time_ns busy_since = 0;
    std::uint64_t version = 0;
    resource_id id = no_resource;
    std::vector<std::pair<double, task_id>> active; // min-heap on virtual finish time
  };
  std::vector<std::uint32_t> link_of(nres, no_link);
  std::vector<link_state> links;
  for (std::uint32_t i = 0; i < nres; ++i)
    if (c.resources[i].share == sharing::fair) {
      link_of[i] = static_cast<std::uint32_t>(links.size());
      links.emplace_back().id = i;
    }
  // The order of completions at one time: other tasks by id, then the transfers, step
  // by step as the queue handles the fair-share steps, by id within a step. A task's key
  // in that order (only compared between equal ends): a transfer's step number is kept
  // in its dependency counter, which is not needed once the task has started.
  std::uint32_t steps = 0;

  // The queue of the fair-share resources: (time, step, who). Steps of one time: 0,
  // transfers made ready by the completions of other tasks (who: the task); 1 + k,
  // resource k's "transfers may have finished" (who: its version).
  struct event {
    time_ns time;
    std::uint64_t step;
    std::uint64_t who;
    bool operator>(const event& o) const {
      return std::tie(time, step, who) > std::tie(o.time, o.step, o.who);
    }
  };
  std::vector<event> queue;
  auto push = [&queue](const event& ev) {
    queue.push_back(ev);
    std::push_heap(queue.begin(), queue.end(), std::greater<>{});
  };
  auto by_vtime = [](const std::pair<double, task_id>& a, const std::pair<double, task_id>& b) {
    return a > b;
  };
  auto advance = [](link_state& l, time_ns now) {
    if (!l.active.empty()) l.vclock += double(now - l.updated) / double(l.active.size());
    l.updated = now;
  };
  auto arm = [&push](link_state& l, std::uint32_t k, time_ns now) {
    ++l.version;
    if (l.active.empty()) return;
    const double left = std::max(0.0, l.active.front().first - l.vclock) * double(l.active.size());
    push({now + static_cast<time_ns>(std::llround(left)), 1 + std::uint64_t(k), l.version});
  };

  // The rare steps (a transfer's start, a tie between equal ends) are lambdas that copy
  // the array pointers they need rather than refer to the pass's variables: a variable
  // whose address reaches a call that is not inlined lives in memory, and every store
  // to a result array would then reload it. The pass's own state (the stack, the
  // counters) stays in registers.
  std::size_t transfers = 0; // tasks on fair-share resources started
  auto& mem = s.mem; // (start, task) of the tasks that allocate or free memory
  mem.clear();
  const std::uint32_t* const link_at = link_of.data();
  // Transfer t starts at `now` on its resource. False when it takes no time, which the
  // pass does not model (its place in the order of one time depends on when it became
  // ready): the kernel replays the graph.
  auto start_transfer = [&, start, why, pred, edge, duration, res, link_at,
                         with_memory](task_id t, time_ns now) {
    const resource_id rr = res[t];
    const auto k = link_at[rr];
    auto& l = links[k];
    ++transfers;
    start[t] = now;
    why[t] = now == 0 ? binding::none : binding::dependency;
    if (now == 0) {
      pred[t] = no_task;
      edge[t] = dep_kind::control;
    }
    if (with_memory && mem_delta[t] != 0) mem.push_back({now, t});
    advance(l, now);
    if (l.active.empty()) l.busy_since = now;
    l.active.push_back({l.vclock + double(duration[t]), t});
    std::push_heap(l.active.begin(), l.active.end(), by_vtime);
    arm(l, k, now);
    return duration[t] > 0;
  };
  auto has_edge = [head_out, edges](task_id a, task_id b) {
    auto k = head_out[a];
    while (k != no_edge && edges[k].dst != b) k = edges[k].next_out;
    return k != no_edge;
  };
  // A dependency t of d ends at the same time as d's binding dependency so far, pred[d]:
  // 1 when t comes later in the order of completions at that time (and binds instead),
  // 0 when it comes first, -1 when the pass does not model the tie.
  auto tie_wins = [duration, pred, res, wait, link_at, nres, has_edge](task_id t, task_id d) -> int {
    const task_id p = pred[d];
    if (duration[t] == 0 || duration[p] == 0) {
      // A task that takes no time is handled once all its dependencies were, so a
      // dependency of it ending at the same time comes first (a rank's collective
      // before the barrier that waits for it). Anything else is not modelled.
      if (duration[p] == 0 && duration[t] != 0 && has_edge(t, p)) return 1;
      return duration[t] == 0 && duration[p] != 0 && has_edge(p, t) ? 0 : -1;
    }
    auto key_of = [&](task_id x) -> std::uint64_t {
      const resource_id rr = res[x];
      return rr < nres && link_at[rr] != no_link
                 ? (std::uint64_t(1) << 63) | (std::uint64_t(wait[x]) << 32) | x
                 : std::uint64_t(x);
    };
    return key_of(t) < key_of(p) ? 1 : 0;
  };

  // Ready tasks wait on `order`, a stack (the pass takes the last first), transfers
  // included: a transfer taken from it starts through the queue at its ready time, or at
  // once when that is the time of the queue's last step (see the loop below).
  std::size_t queued = 0;
  bool zero = false; // a tie the pass does not model: it gives up
  // Task t ended at `e`: its dependents learn it; those left with nothing to wait for
  // are ready.
  auto finish = [&](task_id t, time_ns e) DAYDREAM_CHAIN_INLINE {
    for (auto k = head_out[t]; k != no_edge; k = edges[k].next_out) {
      const edge_rec& x = edges[k];
      const task_id d = x.dst;
      // The last dependency to end binds the start; ties: the first in completion order.
      // The latest end seen so far, -1 while none was (`unseen` is the top bit; times
      // are never negative): one comparison then says whether t binds, and whether it
      // ties.
      std::uint32_t w = wait[d];
      const time_ns seen = end[d] | -static_cast<time_ns>(w >> 31);
      bool wins = e > seen;
      if (e == seen) [[unlikely]] {
        const int o = tie_wins(t, d);
        zero |= o < 0;
        wins = o > 0;
      }
      if (wins) {
        pred[d] = t;
        edge[d] = x.kind;
        end[d] = e;
      }
      w = (w & ~unseen) - 1;
      wait[d] = w;
      if (w == 0) order[queued++] = d;
    }
  };

  // The dependency counters, and the roots (ready at 0). Removed ids have no edges left
  // (removal unlinks them), so only ids without dependencies need the `alive` check.
  const std::uint32_t* const n_in = c.n_in.data();
  std::uint32_t too_many = 0; // in-degrees that reach the `unseen` bit: left to the kernel
  for (task_id t = 0; t < n; ++t) {
    const std::uint32_t deps = n_in[t];
    too_many |= deps;
    wait[t] = deps | unseen;
    if (deps != 0) continue;
    if (alive[t]) {
      end[t] = 0;
      order[queued++] = t;
    } else { // a removed id
      start[t] = end[t] = -1;
      pred[t] = no_task;
      why[t] = binding::none;
      edge[t] = dep_kind::control;
    }
  }
  if (too_many & unseen) return false;
  r.tasks = c.live_tasks;

  // The state of an exclusive resource. A fair-share resource's `last` is `on_link`,
  // which no task's binding dependency is: its transfers leave the common path where
  // the chain check does, and cost the other tasks no test of their own.
  struct lane {
    time_ns free_at = 0; // end of the last task plus its gap
    time_ns busy = 0;    // the durations of its tasks so far
    task_id last = no_task;
  };
  std::vector<lane> lanes(nres);
  for (const auto& l : links) lanes[l.id].last = on_link;
  lane* const lane_of = lanes.data();
  time_ns loose_end = 0;
  std::size_t taken = 0;   // tasks the pass ran, transfers aside
  time_ns step_at = -1;    // the time of the queue's last step (none yet)
  std::vector<task_id> finished;

  for (;;) {
    while (queued > 0) {
      const task_id t = order[--queued];
      if ((t & 3) == 0) {
        // A resource's next tasks, and those of the other resources of its worker, come
        // a few ids later (ids follow the order of a trace's records). Their columns are
        // fetched ahead: a replay over many workers moves through hundreds of places in
        // memory at once, more than the hardware prefetchers follow. Every fourth task
        // is enough (a cache line holds 8 or 16 of a column's entries) and costs a
        // quarter of the instructions (8 ids ahead measured best of 8, 16, 32).
        const task_id f = std::min(t + 8, n);
        __builtin_prefetch(duration + f);
        __builtin_prefetch(gap + f);
        __builtin_prefetch(res + f);
        __builtin_prefetch(head_out + f);
        __builtin_prefetch(start + f, 1);
        __builtin_prefetch(why + f, 1);
      }
      const time_ns dur = duration[t];
      const resource_id rr = res[t];
      time_ns at = end[t]; // ready (0 for a root)
      binding w = binding::dependency;
      time_ns e;
      if (rr < nres) {
        lane& l = lane_of[rr];
        task_id p = pred[t];
        if (at == 0) {
          p = no_task;
          edge[t] = dep_kind::control;
          w = binding::none;
        }
        // Chained: the task started last here is a dependency (at once when it binds).
        const task_id last = l.last;
        if (p != last && last != no_task) [[unlikely]] {
          if (last == on_link) {
            // A transfer is ready no earlier than the queue's last step (the stack was
            // empty then, and what was computed since ends later). Ready at that time, it
            // starts at once, as the event loop starts it while handling the step's
            // completions (or, with a step 0 of the queue, before any other step of that
            // time); later, through the queue, before the fair-share steps of its time.
            if (at == step_at) {
              if (!start_transfer(t, at)) return false;
            } else
              push({at, 0, t});
            continue;
          }
          if (!has_edge(last, t)) return false;
        }
        if (dur <= 0) return false;
        ++taken;
        if (l.free_at > at) {
          at = l.free_at;
          p = last;
          w = binding::resource;
        }
        pred[t] = p;
        l.busy += dur;
        l.last = t;
        e = at + dur;
        l.free_at = e + gap[t];
        if (with_memory && mem_delta[t] != 0) mem.push_back({at, t});
      } else {
        if (rr != no_resource) return false; // names no resource: the kernel says so
        // A task without a resource may take no time (a barrier), if it ends after 0.
        if (dur < 0 || (dur == 0 && at == 0)) return false;
        ++taken;
        if (at == 0) {
          pred[t] = no_task;
          edge[t] = dep_kind::control;
          w = binding::none;
        }
        e = at + dur;
        loose_end = std::max(loose_end, e);
        if (with_memory && mem_delta[t] != 0) mem.push_back({at, t});
      }
      start[t] = at;
      end[t] = e;
      why[t] = w;
      finish(t, e);
    }
    if (zero) return false;
    if (queue.empty()) break;
    const event ev = queue.front();
    std::pop_heap(queue.begin(), queue.end(), std::greater<>{});
    queue.pop_back();
    const time_ns now = ev.time;
    step_at = now;
    if (ev.step == 0) { // a transfer starts
      if (!start_transfer(static_cast<task_id>(ev.who), now)) return false;
    } else { // transfers of resource k may have finished
      const auto k = static_cast<std::uint32_t>(ev.step - 1);
      auto& l = links[k];
      if (ev.who != l.version) continue;
      advance(l, now);
      // Finish every transfer with at most half a nanosecond left (see the kernel).
      const double share = double(l.active.size());
      finished.clear();
      while (!l.active.empty() && std::max(0.0, l.active.front().first - l.vclock) * share <= 0.5) {
        finished.push_back(l.active.front().second);
        std::pop_heap(l.active.begin(), l.active.end(), by_vtime);
        l.active.pop_back();
      }
      if (l.active.empty()) r.busy[l.id] += now - l.busy_since;
      arm(l, k, now);
      ++steps;
      for (auto t : finished) wait[t] = steps;
      for (auto t : finished) {
        end[t] = now;
        loose_end = std::max(loose_end, now);
        finish(t, now);
      }
    }
  }
  if (taken + transfers != r.tasks) return false; // a cycle: the kernel names it

  // A lane's busy time and last end (its ends increase along the chain).
  r.makespan = loose_end;
  for (std::uint32_t rr = 0; rr < nres; ++rr) {
    const lane& l = lanes[rr];
    if (l.last == on_link || l.last == no_task) continue;
    r.busy[rr] = l.busy;
    r.makespan = std::max(r.makespan, end[l.last]);
  }
  // Peak memory: the allocations summed in (start, id) order. The starts lie in
  // [0, makespan]: the entries are spread over about half as many buckets of equal width,
  // each bucket sorted (most hold a few entries), so the cost does not grow with the
  // number of resources as a merge of per-resource lists does (log2 R passes).
  if (!mem.empty()) {
    const std::size_t m = mem.size();
    const std::size_t about = std::max<std::size_t>(1, m / 2); // buckets
    unsigned shift = 0;
    while (static_cast<std::uint64_t>(r.makespan >> shift) >= about) ++shift;
    const auto buckets = static_cast<std::size_t>(r.makespan >> shift) + 1;
    auto& at = s.bucket; // bucket b: [at[b], at[b + 1])
    at.assign(buckets + 1, 0);
    for (const auto& x : mem) ++at[static_cast<std::size_t>(x.first >> shift) + 1];
    for (std::size_t b = 0; b < buckets; ++b) at[b + 1] += at[b];
    auto& sorted = s.sorted;
    size_for_overwrite(sorted, m);
    for (const auto& x : mem) sorted[at[static_cast<std::size_t>(x.first >> shift)]++] = x;
    // at[b] is now the end of bucket b, the start of bucket b + 1.
    std::uint32_t from = 0;
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::uint32_t to = at[b];
      if (to - from > 1) std::sort(sorted.begin() + from, sorted.begin() + to);
      from = to;
    }
    std::int64_t sum = 0;
    for (const auto& x : sorted) r.peak_memory = std::max(r.peak_memory, sum += mem_delta[x.second]);
  }
  return true;
}

} // namespace daydream::detail

#undef DAYDREAM_CHAIN_INLINE

#endif
