// Defines chained_replay: the replay of a graph whose exclusive resources run their tasks in dependency order, as one topological pass.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_CHAIN_HPP
#define DAYDREAM_DETAIL_REPLAY_CHAIN_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/replay_links.hpp>
#include <daydream/detail/replay_scratch.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

// The per-task steps of the pass are inlined where they are called: as calls, their
// prologues, epilogues and reloaded state took about 13% of the pass's instructions
// (docs/performance.md, "Against the traversal floor").
#if defined(__GNUC__) || defined(__clang__)
#  define DAYDREAM_CHAIN_INLINE __attribute__((always_inline)) inline
#else
#  define DAYDREAM_CHAIN_INLINE inline
#endif

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// The working memory of chained_replay, kept per thread between replays as
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

/// The replay of a graph without an overlap slowdown, as one topological pass with an
/// event queue for the fair-share resources only, when the graph is *chained*: every
/// exclusive resource runs its tasks in an order the dependencies already impose (each
/// task on it depends directly on the one before it, as program-order and stream-order
/// edges make a trace's threads and streams). A task may take no time on a lane (a
/// trace's markers: the origin anchor, joins) or without a resource (a barrier after
/// 0). One pass replays once: construct it, then run() (see replay_chained).
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
/// - The event loop handles the completions of one time T in this order: every task
///   that takes time and is not on a fair-share resource, by id; then the transfers
///   that finish at T, in the order of the fair-share steps that finish them (resource
///   by resource, by id; a resource may take a second step at T), by id within a step;
///   then the tasks that take no time on a lane, through their dispatches (so after
///   all of those: a tie between two tasks that take no time, or a transfer made ready
///   by one, is not modelled and the kernel replays the graph). A task that becomes
///   ready at 0 through such a task is bound by it, not a root.
///   The dependency that binds a start is the one ending last, the first among equals
///   in that order, through its first edge in the out-list; a transfer made ready at T
///   starts before the first fair-share step at T, or, when the last of its
///   dependencies in that order is a transfer, right after the step that finished it.
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
class chained_replay {
public:
  chained_replay(const graph_core& c, replay_result& out, replay_times times = {})
      : c_(c), r_(out), s_(lease_.get()), times_(times) {}
  chained_replay(const chained_replay&) = delete;
  chained_replay& operator=(const chained_replay&) = delete;

  /// Replays the graph into the result. Returns false, leaving the result valid but
  /// unspecified, when the graph is not chained (or has a cycle, or names a resource
  /// that does not exist): the event-driven kernel then replays it.
  bool run() {
    if (!fits()) return false;
    size_results();
    if (!count_dependencies()) return false;
    set_up_links();
    for (;;) {
      if (!drain() || walk_.zero) return false;
      if (queue_.empty()) break;
      if (!step_queue()) return false;
    }
    if (walk_.taken + transfers_ != r_.tasks) return false; // a cycle: the kernel names it
    sum_lanes();
    sum_peak_memory();
    return true;
  }

private:
  /// A fair-share resource's mark in place of its last task (see `lane`): no task has it.
  static constexpr task_id on_link = no_task - 1;
  /// The bit of a dependency counter set until the first dependency ends.
  static constexpr std::uint32_t unseen = std::uint32_t(1) << 31;
  /// The link number of an exclusive resource.
  static constexpr std::uint32_t no_link = ~std::uint32_t(0);

  /// A fair-share resource ("link"): its sharing, and the version of its last step in
  /// the queue (an older one is void).
  struct link_state {
    fair_link share;
    std::uint64_t version = 0;
    resource_id id = no_resource;
  };

  /// An event of the queue of the fair-share resources: (time, step, who). Steps of one
  /// time: 0, transfers made ready by the completions of other tasks (who: the task);
  /// 1 + k, resource k's "transfers may have finished" (who: its version).
  struct event {
    time_ns time;
    std::uint64_t step;
    std::uint64_t who;
    bool operator>(const event& o) const {
      return std::tie(time, step, who) > std::tie(o.time, o.step, o.who);
    }
  };

  /// The state of an exclusive resource. A fair-share resource's `last` is `on_link`,
  /// which no task's binding dependency is: its transfers leave the common path where
  /// the chain check does, and cost the other tasks no test of their own.
  struct lane {
    time_ns free_at = 0; // end of the last task plus its gap
    time_ns busy = 0;    // the durations of its tasks so far
    task_id last = no_task;
  };

  /// The columns the pass reads and the arrays it writes. The loop over the tasks works
  /// on a copy of its own: a variable whose address reaches a call that is not inlined
  /// lives in memory, and every store to a result array would then reload it. So the
  /// array pointers and the walk's counters stay in registers; the rare steps (a
  /// transfer's start, a tie between equal ends) read the members.
  struct columns {
    time_ns* start;
    time_ns* end;
    task_id* pred;
    binding* why;
    dep_kind* edge;
    std::uint32_t* wait;
    task_id* order;
    const edge_rec* edges;
    const edge_id* head_out;
    const time_ns* duration;
    const time_ns* gap;
    const resource_id* res;
    const std::uint32_t* n_in;     // dependencies per task: 0 for a root
    const std::int64_t* mem_delta; // nullptr when no task allocates
    const std::uint32_t* link_of;  // by resource: its link, or no_link
    lane* lanes;
    std::vector<chain_scratch::mem_entry>* mem; // (start, task) of the tasks with memory
    task_id n;
    std::uint32_t nres;
  };

  /// The counters of the walk over the ready tasks.
  struct walk {
    std::size_t queued = 0;  // ready tasks on the stack (`order`)
    std::size_t taken = 0;   // tasks the pass ran, transfers aside
    time_ns loose_end = 0;   // the latest end of a task without a lane
    bool zero = false;       // a tie the pass does not model: it gives up
  };

  /// What a task's start came to, as the pass computes it.
  struct timing {
    time_ns at;  // start (ready time until the task is placed)
    time_ns end;
    binding why;
  };
  /// What became of a task taken from the stack.
  enum class outcome : std::uint8_t { ran, deferred, refused };

  // ---- set-up ----

  bool fits() const noexcept {
    return c_.resources.size() < (std::size_t(1) << 30) && c_.id_bound() < on_link;
  }

  /// The results are written in place, every entry of every task once (a removed id
  /// included), so that a caller's result is reused without clearing it: its arrays are
  /// resized, and reallocated only when they are too small.
  void size_results() {
    const task_id n = c_.id_bound();
    const auto nres = static_cast<std::uint32_t>(c_.resources.size());
    r_.busy.assign(nres, 0);
    r_.makespan = 0;
    r_.peak_memory = 0;
    r_.tasks = 0;
    size_for_overwrite(r_.start, n);
    size_for_overwrite(r_.end, n);
    size_for_overwrite(r_.pred, n);
    size_for_overwrite(r_.why, n);
    size_for_overwrite(r_.edge, n);
    size_for_overwrite(s_.wait, n);
    size_for_overwrite(s_.order, n);
    s_.mem.clear();
    k_ = {r_.start.data(), r_.end.data(), r_.pred.data(), r_.why.data(), r_.edge.data(),
          s_.wait.data(), s_.order.data(), c_.edges.data(), c_.head_out.data(),
          times_.duration ? times_.duration : c_.duration.data(), times_.gap ? times_.gap : c_.gap.data(),
          c_.res.data(), c_.n_in.data(),
          // The memory column, read through its array (nullptr when no task allocates).
          c_.mem_delta.data(), nullptr, nullptr, &s_.mem, n, nres};
  }

  /// The dependency counters, and the roots (ready at 0). `end` holds the latest end
  /// among the dependencies seen so far until the task runs; `wait` counts the
  /// dependencies not yet ended, with the `unseen` bit set until the first of them ends:
  /// that one binds the start whatever `end` holds (so `end` needs no clearing), and a
  /// root's `end` is 0. Removed ids have no edges left (removal unlinks them), so only
  /// ids without dependencies need the `alive` check. False when an in-degree reaches
  /// the `unseen` bit (left to the kernel).
  bool count_dependencies() {
    const std::uint32_t* const n_in = c_.n_in.data();
    const std::uint8_t* const alive = c_.alive.data();
    std::uint32_t too_many = 0;
    for (task_id t = 0; t < k_.n; ++t) {
      const std::uint32_t deps = n_in[t];
      too_many |= deps;
      k_.wait[t] = deps | unseen;
      if (deps != 0) continue;
      if (alive[t]) {
        k_.end[t] = 0;
        k_.order[walk_.queued++] = t;
      } else { // a removed id
        k_.start[t] = k_.end[t] = -1;
        k_.pred[t] = no_task;
        k_.why[t] = binding::none;
        k_.edge[t] = dep_kind::control;
      }
    }
    if (too_many & unseen) return false;
    r_.tasks = c_.live_tasks;
    return true;
  }

  /// Numbers the fair-share resources (`link_of`) and gives every resource its lane.
  void set_up_links() {
    link_of_.assign(k_.nres, no_link);
    for (std::uint32_t i = 0; i < k_.nres; ++i)
      if (c_.resources[i].share == sharing::fair) {
        link_of_[i] = static_cast<std::uint32_t>(links_.size());
        links_.emplace_back().id = i;
      }
    lanes_.assign(k_.nres, lane{});
    for (const auto& l : links_) lanes_[l.id].last = on_link;
    k_.link_of = link_of_.data();
    k_.lanes = lanes_.data();
  }

  // ---- the walk ----

  /// Runs the ready tasks on the stack, the last first, until none is left (transfers
  /// go to the queue). False when the graph turns out not to be chained.
  bool drain() {
    const columns k = k_;
    walk w = walk_;
    bool chained = true;
    while (w.queued > 0) {
      const task_id t = k.order[--w.queued];
      if ((t & 3) == 0) prefetch_ahead(k, t);
      if (!take(k, w, t)) {
        chained = false;
        break;
      }
    }
    walk_ = w;
    return chained;
  }

  /// A resource's next tasks, and those of the other resources of its worker, come a
  /// few ids later (ids follow the order of a trace's records). Their columns are
  /// fetched ahead: a replay over many workers moves through hundreds of places in
  /// memory at once, more than the hardware prefetchers follow. Every fourth task is
  /// enough (a cache line holds 8 or 16 of a column's entries) and costs a quarter of
  /// the instructions (8 ids ahead measured best of 8, 16, 32).
  DAYDREAM_CHAIN_INLINE static void prefetch_ahead(const columns& k, task_id t) {
    const task_id f = std::min(t + 8, k.n);
    __builtin_prefetch(k.duration + f);
    __builtin_prefetch(k.gap + f);
    __builtin_prefetch(k.res + f);
    __builtin_prefetch(k.head_out + f);
    __builtin_prefetch(k.start + f, 1);
    __builtin_prefetch(k.why + f, 1);
  }

  /// Task `t`, taken from the stack, runs: its start and end are written and its
  /// dependents learn its end. A transfer goes to the queue instead. False when the
  /// graph turns out not to be chained.
  DAYDREAM_CHAIN_INLINE bool take(const columns& k, walk& w, task_id t) {
    const resource_id rr = k.res[t];
    timing x{k.end[t], 0, binding::dependency}; // ready (0 for a root)
    const outcome o = rr < k.nres ? place_on_lane(k, w, t, rr, x) : place_loose(k, w, t, rr, x);
    if (o != outcome::ran) return o == outcome::deferred;
    k.start[t] = x.at;
    k.end[t] = x.end;
    k.why[t] = x.why;
    // A task that takes no time on a lane ends after the fair-share steps of its time: a
    // transfer it makes ready starts after them, which the queue does not model.
    if (k.duration[t] == 0 && rr < k.nres) [[unlikely]]
      w.zero |= feeds_transfer(t);
    finish(k, w, t, x.end);
    return true;
  }

  /// Task `t`, ready at `x.at`, on resource `rr`: it starts once the task before it there
  /// has ended, and after that task's gap.
  DAYDREAM_CHAIN_INLINE outcome place_on_lane(const columns& k, walk& w, task_id t,
                                              resource_id rr, timing& x) {
    lane& l = k.lanes[rr];
    task_id p = k.pred[t];
    if (k.n_in[t] == 0) { // a root (a task ready at 0 through a dependency that took no time is not)
      p = no_task;
      k.edge[t] = dep_kind::control;
      x.why = binding::none;
    }
    // Chained: the task started last here is a dependency (at once when it binds).
    const task_id last = l.last;
    if (p != last && last != no_task) [[unlikely]] {
      if (last == on_link) return defer_transfer(t, x.at) ? outcome::deferred : outcome::refused;
      if (!has_edge(last, t)) return outcome::refused;
    }
    const time_ns dur = k.duration[t];
    if (dur < 0) return outcome::refused;
    ++w.taken;
    if (l.free_at > x.at) {
      x.at = l.free_at;
      p = last;
      x.why = binding::resource;
    }
    k.pred[t] = p;
    l.busy += dur;
    l.last = t;
    x.end = x.at + dur;
    l.free_at = x.end + k.gap[t];
    if (k.mem_delta != nullptr && k.mem_delta[t] != 0) k.mem->push_back({x.at, t});
    return outcome::ran;
  }

  /// Task `t`, ready at `x.at`, without a resource: it starts at once.
  DAYDREAM_CHAIN_INLINE outcome place_loose(const columns& k, walk& w, task_id t,
                                            resource_id rr, timing& x) {
    if (rr != no_resource) return outcome::refused; // names no resource: the kernel says so
    // A task without a resource may take no time (a barrier), if it ends after 0.
    const time_ns dur = k.duration[t];
    if (dur < 0 || (dur == 0 && x.at == 0)) return outcome::refused;
    ++w.taken;
    if (k.n_in[t] == 0) {
      k.pred[t] = no_task;
      k.edge[t] = dep_kind::control;
      x.why = binding::none;
    }
    x.end = x.at + dur;
    w.loose_end = std::max(w.loose_end, x.end);
    if (k.mem_delta != nullptr && k.mem_delta[t] != 0) k.mem->push_back({x.at, t});
    return outcome::ran;
  }

  /// Task t ended at `e`: its dependents learn it; those left with nothing to wait for
  /// are ready (pushed on the stack).
  DAYDREAM_CHAIN_INLINE void finish(const columns& k, walk& w, task_id t, time_ns e) {
    for (auto i = k.head_out[t]; i != no_edge; i = k.edges[i].next_out) {
      const edge_rec& x = k.edges[i];
      const task_id d = x.dst;
      // The last dependency to end binds the start; ties: the first in completion order.
      // The latest end seen so far, -1 while none was (`unseen` is the top bit; times
      // are never negative): one comparison then says whether t binds, and whether it
      // ties.
      std::uint32_t c = k.wait[d];
      const time_ns seen = k.end[d] | -static_cast<time_ns>(c >> 31);
      bool wins = e > seen;
      if (e == seen) [[unlikely]] {
        const int o = tie_wins(t, d);
        w.zero |= o < 0;
        wins = o > 0;
      }
      if (wins) {
        k.pred[d] = t;
        k.edge[d] = x.kind;
        k.end[d] = e;
      }
      c = (c & ~unseen) - 1;
      k.wait[d] = c;
      if (c == 0) k.order[w.queued++] = d;
    }
  }

  /// Whether a dependent of task `t` runs on a fair-share resource.
  bool feeds_transfer(task_id t) const noexcept {
    for (auto i = k_.head_out[t]; i != no_edge; i = k_.edges[i].next_out) {
      const resource_id rr = k_.res[k_.edges[i].dst];
      if (rr < k_.nres && k_.link_of[rr] != no_link) return true;
    }
    return false;
  }

  /// Whether task `a` has an edge to task `b`.
  bool has_edge(task_id a, task_id b) const noexcept {
    auto i = k_.head_out[a];
    while (i != no_edge && k_.edges[i].dst != b) i = k_.edges[i].next_out;
    return i != no_edge;
  }

  /// A dependency t of d ends at the same time as d's binding dependency so far, pred[d]:
  /// 1 when t comes later in the order of completions at that time (and binds instead),
  /// 0 when it comes first, -1 when the pass does not model the tie. That order: other
  /// tasks by id, then the transfers, step by step as the queue handles the fair-share
  /// steps, by id within a step (a transfer's step number is kept in its dependency
  /// counter, which is not needed once the task has started).
  int tie_wins(task_id t, task_id d) const noexcept {
    const task_id p = k_.pred[d];
    const time_ns* const duration = k_.duration;
    if (duration[t] == 0 || duration[p] == 0) {
      // A task that takes no time on a lane (a marker on a thread) ends through its
      // dispatch, which the event loop handles after every completion of its time: after
      // any task that takes time and ends then.
      if (duration[t] != 0 && on_lane(p)) return 1;
      if (duration[p] != 0 && on_lane(t)) return 0;
      // A task that takes no time is handled once all its dependencies were, so a
      // dependency of it ending at the same time comes first (a rank's collective
      // before the barrier that waits for it). Anything else is not modelled.
      if (duration[p] == 0 && duration[t] != 0 && has_edge(t, p)) return 1;
      return duration[t] == 0 && duration[p] != 0 && has_edge(p, t) ? 0 : -1;
    }
    return completion_key(t) < completion_key(p) ? 1 : 0;
  }

  /// Whether task x runs on an exclusive resource (not a fair-share link, not loose).
  bool on_lane(task_id x) const noexcept {
    const resource_id rr = k_.res[x];
    return rr < k_.nres && k_.link_of[rr] == no_link;
  }

  /// Task x's place in the order of completions at one time (see tie_wins).
  std::uint64_t completion_key(task_id x) const noexcept {
    const resource_id rr = k_.res[x];
    return rr < k_.nres && k_.link_of[rr] != no_link
               ? (std::uint64_t(1) << 63) | (std::uint64_t(k_.wait[x]) << 32) | x
               : std::uint64_t(x);
  }

  // ---- the fair-share resources ----

  /// Transfer t, taken from the stack, ready at `at`. It is ready no earlier than the
  /// queue's last step (the stack was empty then, and what was computed since ends
  /// later). Ready at that time, it starts at once, as the event loop starts it while
  /// handling the step's completions (or, with a step 0 of the queue, before any other
  /// step of that time); later, through the queue, before the fair-share steps of its
  /// time. False when it takes no time (see start_transfer).
  bool defer_transfer(task_id t, time_ns at) {
    if (at == step_at_) return start_transfer(t, at);
    push({at, 0, t});
    return true;
  }

  /// Transfer t starts at `now` on its resource. False when it takes no time, which the
  /// pass does not model (its place in the order of one time depends on when it became
  /// ready): the kernel replays the graph.
  bool start_transfer(task_id t, time_ns now) {
    const auto k = k_.link_of[k_.res[t]];
    auto& l = links_[k];
    ++transfers_;
    k_.start[t] = now;
    const bool root = k_.n_in[t] == 0;
    k_.why[t] = root ? binding::none : binding::dependency;
    if (root) {
      k_.pred[t] = no_task;
      k_.edge[t] = dep_kind::control;
    }
    if (k_.mem_delta != nullptr && k_.mem_delta[t] != 0) k_.mem->push_back({now, t});
    l.share.start(t, k_.duration[t], now);
    arm(l, k, now);
    return k_.duration[t] > 0;
  }

  void push(const event& ev) {
    queue_.push_back(ev);
    std::push_heap(queue_.begin(), queue_.end(), std::greater<>{});
  }

  /// Queues the next step of link `k` (the one queued before is void).
  void arm(link_state& l, std::uint32_t k, time_ns now) {
    ++l.version;
    if (!l.share.idle()) push({l.share.next_end(now), 1 + std::uint64_t(k), l.version});
  }

  /// Handles the first event of the queue. False when the graph turns out not to be
  /// chained.
  bool step_queue() {
    const event ev = queue_.front();
    std::pop_heap(queue_.begin(), queue_.end(), std::greater<>{});
    queue_.pop_back();
    step_at_ = ev.time;
    if (ev.step == 0) return start_transfer(static_cast<task_id>(ev.who), ev.time);
    step_link(static_cast<std::uint32_t>(ev.step - 1), ev.time, ev.who);
    return true;
  }

  /// Transfers of link `k` may have finished at `now` (if `version` is its last step):
  /// they end, in the order the link finishes them, and their dependents learn it.
  void step_link(std::uint32_t k, time_ns now, std::uint64_t version) {
    auto& l = links_[k];
    if (version != l.version) return;
    finished_.clear();
    l.share.finish_due(now, [this](task_id t) { finished_.push_back(t); });
    if (l.share.idle()) r_.busy[l.id] += now - l.share.busy_since();
    arm(l, k, now);
    ++steps_;
    for (auto t : finished_) k_.wait[t] = steps_;
    for (auto t : finished_) {
      k_.end[t] = now;
      walk_.loose_end = std::max(walk_.loose_end, now);
      finish(k_, walk_, t, now);
    }
  }

  // ---- the result ----

  /// A lane's busy time and last end (its ends increase along the chain).
  void sum_lanes() {
    r_.makespan = walk_.loose_end;
    for (std::uint32_t rr = 0; rr < k_.nres; ++rr) {
      const lane& l = lanes_[rr];
      if (l.last == on_link || l.last == no_task) continue;
      r_.busy[rr] = l.busy;
      r_.makespan = std::max(r_.makespan, k_.end[l.last]);
    }
  }

  /// Peak memory: the allocations summed in (start, id) order. The starts lie in
  /// [0, makespan]: the entries are spread over about half as many buckets of equal
  /// width, each bucket sorted (most hold a few entries), so the cost does not grow with
  /// the number of resources as a merge of per-resource lists does (log2 R passes).
  void sum_peak_memory() {
    const auto& mem = s_.mem;
    if (mem.empty()) return;
    const std::size_t m = mem.size();
    const std::size_t about = std::max<std::size_t>(1, m / 2); // buckets
    unsigned shift = 0;
    while (static_cast<std::uint64_t>(r_.makespan >> shift) >= about) ++shift;
    const auto buckets = static_cast<std::size_t>(r_.makespan >> shift) + 1;
    auto& at = s_.bucket; // bucket b: [at[b], at[b + 1])
    at.assign(buckets + 1, 0);
    for (const auto& x : mem) ++at[static_cast<std::size_t>(x.first >> shift) + 1];
    for (std::size_t b = 0; b < buckets; ++b) at[b + 1] += at[b];
    auto& sorted = s_.sorted;
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
    for (const auto& x : sorted) r_.peak_memory = std::max(r_.peak_memory, sum += k_.mem_delta[x.second]);
  }

  const graph_core& c_;
  replay_result& r_;
  scratch_lease<chain_scratch> lease_;
  chain_scratch& s_;
  replay_times times_;
  columns k_{};
  walk walk_;
  std::vector<std::uint32_t> link_of_; // by resource: its link, or no_link
  std::vector<link_state> links_;
  std::vector<lane> lanes_;            // by resource
  std::vector<event> queue_;           // a min-heap
  std::vector<task_id> finished_;      // the transfers a step finished
  std::uint32_t steps_ = 0;            // fair-share steps taken
  std::size_t transfers_ = 0;          // transfers started
  time_ns step_at_ = -1;               // the time of the queue's last step (none yet)
};

/// The replay of `c` without an overlap slowdown by chained_replay, into `out` (its
/// arrays' memory reused; see replay_into). Returns false, leaving `out` valid but
/// unspecified, when the graph is not chained (or has a cycle, or names a resource that
/// does not exist): replay_flat then runs the event-driven kernel. `times` replaces the
/// graph's durations and gaps where set.
inline bool replay_chained(const graph_core& c, replay_result& out, replay_times times = {}) {
  return chained_replay(c, out, times).run();
}

} // namespace daydream::detail
//! @endcond

#undef DAYDREAM_CHAIN_INLINE

#endif
