// Defines event_replay: the event-driven replay kernel (Daydream's Algorithm 1, with the overlap slowdown).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_EVENTS_HPP
#define DAYDREAM_DETAIL_REPLAY_EVENTS_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/diagnostics.hpp>
#include <daydream/detail/replay_links.hpp>
#include <daydream/detail/replay_overlap.hpp>
#include <daydream/detail/replay_queue.hpp>
#include <daydream/detail/replay_scratch.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// The steps of the event loop are inlined into it, as one function: as calls, each
// would reload the engine's state it uses and store what it changed.
#if defined(__GNUC__) || defined(__clang__)
#  define DAYDREAM_EVENTS_INLINE __attribute__((always_inline)) inline
#else
#  define DAYDREAM_EVENTS_INLINE inline
#endif

//! @cond DAYDREAM_INTERNAL
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
///
/// One engine replays once: construct it, then run(), which writes the result into `r`,
/// whose arrays' memory is reused where it has room (see replay_into); if the replay
/// throws, `r` is left valid but unspecified.
template <bool Overlap> class event_replay {
public:
  event_replay(const graph_core& c, key_ref key, const replay_options& opt, replay_result& r,
               replay_times times = {})
      : c_(c), key_(key), r_(r), slowdown_(opt.overlap_slowdown), n_(c.id_bound()),
        nres_(resource_count(c)), q_(nres_), scratch_(lease_.get()),
        dur_(times.duration ? times.duration : c.duration.data()), gap_(times.gap ? times.gap : c.gap.data()) {}
  event_replay(const event_replay&) = delete;
  event_replay& operator=(const event_replay&) = delete;

  /// Replays the graph into the result.
  void run() {
    reset_result();
    if constexpr (Overlap) overlap_.prepare(c_, slowdown_);
    load_records();
    load_resources();
    for (auto t : roots_) make_ready(t, 0);
    roots_ = {};
    while (next_event()) {
    }
    check_all_started();
    r_.makespan = makespan_;
    write_results();
    write_peak_memory();
  }

private:
  using task_rec = replay_scratch::task_rec;

  /// Event types, in the order the reference event loop handles them at equal times.
  enum : std::uint64_t { ev_complete = 0, ev_shared = 1, ev_dispatch = 2 };
  /// An event's key after its time: the type above the task or resource it concerns.
  static std::uint64_t tw_of(std::uint64_t type, std::uint32_t who) noexcept {
    return (type << 32) | who;
  }

  /// A ready task carries what its start needs (taken from its record while that is in
  /// cache, when the task becomes ready), so that the start does not touch the record:
  /// a replay over many resources touches each record only when the task becomes ready
  /// and when it ends.
  struct ready_entry {
    task_id t;
    time_ns ready;
    time_ns dur, gap;
    priority_key k{}; // computed once two tasks compete
    bool has_key = false;
    bool mem;
  };
  /// Equal keys run in id order. std heaps put the "largest" first: the one that runs.
  static bool runs_later(const ready_entry& a, const ready_entry& b) noexcept {
    return b.k < a.k || (!(a.k < b.k) && a.t > b.t);
  }

  /// An exclusive resource runs one task at a time. Its queue event is the next thing
  /// that happens to it: the end of its running task, or else the end of the task its
  /// pending dispatch will start. The dispatch (at `dispatch_at`) changes only the
  /// resource's own state, so it is applied ("committed") when that end comes up, or as
  /// soon as a task becomes ready on the resource after the dispatch in event order. A
  /// better task that becomes ready before it takes the candidate's place. A dispatch
  /// scheduled at its own time, or of a task that takes no time or allocates memory
  /// (peak memory needs starts in event order), is a real queue event.
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

  /// The end of a task without a resource or of a transfer on a fair-share resource:
  /// (time, task), a completion of the event loop.
  using loose_end = std::pair<time_ns, task_id>;
  static bool loose_later(const loose_end& a, const loose_end& b) noexcept { return a > b; }

  static std::uint32_t resource_count(const graph_core& c) {
    const auto nres = static_cast<std::uint32_t>(c.resources.size());
    if (nres >= (std::uint32_t(1) << 31)) throw error("daydream: replay: too many resources");
    return nres;
  }

  // ---- set-up ----

  void reset_result() {
    r_.busy.assign(nres_, 0);
    r_.start.clear();
    r_.end.clear();
    r_.pred.clear();
    r_.why.clear();
    r_.edge.clear();
    r_.makespan = 0;
    r_.peak_memory = 0;
    r_.tasks = 0;
  }

  /// The records of the tasks and their out-edges (in the order of each out-list, which
  /// does not matter), and the tasks without dependencies, in id order.
  void load_records() {
    scratch_.prepare(std::size_t(n_) + 1, c_.live_edges);
    R_ = scratch_.recs.data();
    adj_ = scratch_.adj.data();
    const bool with_memory = c_.mem_delta.allocated();
    const edge_rec* const edges = c_.edges.data();
    std::uint32_t pos = 0;
    for (task_id t = 0; t < n_; ++t) {
      task_rec& x = R_[t];
      x.at = -1;
      x.pred = no_task;
      x.why = binding::none;
      x.edge = dep_kind::control;
      x.mem = false;
      x.out = pos;
      if (!c_.alive[t]) {
        x.dur = x.gap = 0;
        x.res = no_resource;
        x.wait = 1;
        continue;
      }
      x.dur = dur_[t];
      x.gap = gap_[t];
      x.res = c_.res[t];
      x.wait = c_.n_in[t];
      x.mem = with_memory && c_.mem_delta[t] != 0;
      if (x.res != no_resource && x.res >= nres_)
        throw error("daydream: replay: task " + describe_task(c_, t) + " names resource #" +
                    std::to_string(x.res) + ", which does not exist");
      ++r_.tasks;
      if (x.wait == 0) roots_.push_back(t);
      for (auto e = c_.head_out[t]; e != no_edge; e = edges[e].next_out)
        adj_[pos++] = edges[e].dst | (std::uint64_t(edges[e].kind) << 32);
    }
    R_[n_].out = pos;
  }

  /// The state of every resource: exclusive ones in `xs_`, fair-share ones in `fs_`.
  void load_resources() {
    slot_.assign(nres_, 0);
    fair_.assign(nres_, 0);
    for (std::uint32_t i = 0; i < nres_; ++i) {
      fair_[i] = c_.resources[i].share == sharing::fair;
      slot_[i] = static_cast<std::uint32_t>(fair_[i] ? fs_.size() : xs_.size());
      if (fair_[i]) fs_.emplace_back();
      else xs_.emplace_back();
    }
  }

  // ---- the event loop ----

  /// Handles the next event, in (time, type, who) order; false when there is none left.
  DAYDREAM_EVENTS_INLINE bool next_event() {
    const std::uint32_t a = q_.top();
    const auto k = q_.at(a);
    if (!loose_.empty() && (k.time >= agent_queue::idle || k.time > loose_.front().first ||
                            (k.time == loose_.front().first && k.tw > loose_.front().second))) {
      end_loose(); // a completion: type 0, who = the task
      return true;
    }
    if (k.time >= agent_queue::idle) return false;
    const time_ns now = k.time;
    const std::uint64_t type = k.tw >> 32;
    mark(now, k.tw);
    if (type == ev_complete) {
      end_exclusive(a, static_cast<task_id>(k.tw), now);
    } else if (type == ev_dispatch) {
      auto& s = xs_[slot_[a]];
      commit(s, a);
      refresh(s, a);
    } else {
      step_shared(a, now);
    }
    return true;
  }

  /// Notes the event being handled. Events of one time are handled in key order, except
  /// that an event may queue one with a smaller key at that time; so a dispatch
  /// scheduled before its time T has happened once a larger key at T was.
  DAYDREAM_EVENTS_INLINE void mark(time_ns now, std::uint64_t tw) noexcept {
    if (now != mark_time_) {
      mark_time_ = now;
      mark_tw_ = tw;
    } else {
      mark_tw_ = std::max(mark_tw_, tw);
    }
  }

  /// The earliest end of a task without a resource or of a finished transfer.
  DAYDREAM_EVENTS_INLINE void end_loose() {
    const auto [now, t] = loose_.front();
    std::pop_heap(loose_.begin(), loose_.end(), loose_later);
    loose_.pop_back();
    mark(now, t);
    complete(t, now);
  }

  DAYDREAM_EVENTS_INLINE void push_loose(time_ns at, task_id t) {
    loose_.push_back({at, t});
    std::push_heap(loose_.begin(), loose_.end(), loose_later);
  }

  /// Task `t` ends on exclusive resource `a` at `now`.
  DAYDREAM_EVENTS_INLINE void end_exclusive(std::uint32_t a, task_id t, time_ns now) {
    auto& s = xs_[slot_[a]];
    if (s.running != t) commit(s, a); // the dispatch that started it
    s.running = no_task;
    if (s.bound != no_task) {
      R_[t].pred = s.bound;
      R_[t].why = binding::resource;
    }
    current_ = a;
    complete(t, now);
    current_ = no_resource;
    refresh(s, a);
  }

  /// A transfer on fair-share resource `a` may have finished at `now`.
  DAYDREAM_EVENTS_INLINE void step_shared(std::uint32_t a, time_ns now) {
    auto& s = fs_[slot_[a]];
    s.finish_due(now, [this, now](task_id t) { push_loose(now, t); });
    if (s.idle()) r_.busy[a] += now - s.busy_since();
    arm_shared(s, a, now);
  }

  /// Puts the next step of fair-share resource `f` in the queue.
  DAYDREAM_EVENTS_INLINE void arm_shared(const fair_link& s, std::uint32_t f, time_ns now) {
    if (s.idle()) q_.set(f, agent_queue::none, 0);
    else q_.set(f, s.next_end(now), tw_of(ev_shared, f));
  }

  // ---- tasks become ready ----

  DAYDREAM_EVENTS_INLINE void make_ready(task_id t, time_ns now) {
    task_rec& x = R_[t];
    x.at = now;
    // Resources, and the dependents of tasks, move forward through ids: fetch what the
    // tasks a few ids ahead will need. A replay over many resources walks as many places
    // in memory at once, more than the hardware prefetchers follow (replay of a 10^6-task
    // graph of 128 workers: 30% faster; lookahead 4 measured best of 4, 8, 16, 32).
    __builtin_prefetch(R_ + std::min(t + 4, n_), 1);
    __builtin_prefetch(adj_ + std::min<std::size_t>(x.out + 4, c_.live_edges), 0);
    const resource_id rr = x.res;
    if (rr == no_resource) {
      started(t, x.mem);
      push_loose(now + x.dur, t);
    } else if (fair_[rr]) {
      start_shared(t, x, rr, now);
    } else {
      ready_exclusive(t, x, rr, now);
    }
  }

  /// Task `t` starts at `now` on fair-share resource `rr`.
  DAYDREAM_EVENTS_INLINE void start_shared(task_id t, const task_rec& x, resource_id rr, time_ns now) {
    started(t, x.mem);
    if constexpr (Overlap) start_overlap(rr, now);
    shared_starts_.push_back({t, now});
    auto& s = fs_[slot_[rr]];
    s.start(t, x.dur, now);
    arm_shared(s, rr, now);
  }

  /// Task `t` is ready at `now` on exclusive resource `rr`.
  DAYDREAM_EVENTS_INLINE void ready_exclusive(task_id t, const task_rec& x, resource_id rr, time_ns now) {
    auto& s = xs_[slot_[rr]];
    // Ready after the pending dispatch happened (in event order): too late for it.
    if (s.running == no_task && s.pending && s.tentative &&
        (s.dispatch_at < now || (s.dispatch_at == now && mark_tw_ > tw_of(ev_dispatch, rr))))
      commit(s, rr);
    const bool was_pending = s.pending;
    const task_id before = was_pending ? s.ready.front().t : no_task;
    push_ready(s, t, x, now);
    if (!was_pending) {
      s.pending = true;
      s.dispatch_at = std::max(now, s.free_at);
      s.tentative = !Overlap && s.dispatch_at > now;
    }
    // The queue event changes when a dispatch becomes due or its candidate changes.
    if (rr != current_ && s.running == no_task && (!was_pending || s.ready.front().t != before))
      refresh(s, rr);
  }

  /// Adds task `t`, ready at `now`, to the ready tasks of `s`.
  DAYDREAM_EVENTS_INLINE void push_ready(exclusive_state& s, task_id t, const task_rec& x, time_ns now) {
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
        first.k = key_(first.t, first.ready);
        first.has_key = true;
      }
      auto& last = s.ready.back();
      last.k = key_(t, now);
      last.has_key = true;
      std::push_heap(s.ready.begin(), s.ready.end(), runs_later);
    }
  }

  DAYDREAM_EVENTS_INLINE void started(task_id t, bool mem) {
    ++started_;
    if (mem) mem_order_.push_back(t);
  }

  // ---- exclusive resources ----

  /// The pending dispatch of `s` happens: its best ready task starts at dispatch_at.
  DAYDREAM_EVENTS_INLINE void commit(exclusive_state& s, std::uint32_t rr) {
    const time_ns at = s.dispatch_at;
    if (s.ready.size() > 1) std::pop_heap(s.ready.begin(), s.ready.end(), runs_later);
    const task_id t = s.ready.back().t;
    const time_ns ready = s.ready.back().ready, dur = s.ready.back().dur, gap = s.ready.back().gap;
    const bool mem = s.ready.back().mem;
    s.ready.pop_back();
    // Waited for the resource: written into the record when the task ends.
    s.bound = at > ready ? s.last : no_task;
    started(t, mem);
    if constexpr (Overlap) start_overlap(rr, at);
    r_.busy[rr] += dur;
    s.last = t;
    s.running = t;
    s.running_end = at + dur;
    if constexpr (Overlap)
      if (overlap_.role_of(rr) == overlap_state::role::slowed) s.running_end = slowed_end(t, rr, dur, at);
    s.free_at = s.running_end + gap;
    s.pending = !s.ready.empty();
    if (s.pending) {
      s.dispatch_at = s.free_at;
      s.tentative = !Overlap && s.free_at > at;
    }
  }

  /// Puts the next event of exclusive resource `rr` in the queue.
  DAYDREAM_EVENTS_INLINE void refresh(exclusive_state& s, std::uint32_t rr) {
    if (s.running != no_task) {
      q_.set(rr, s.running_end, tw_of(ev_complete, s.running));
    } else if (s.pending) {
      const ready_entry& x = s.ready.front();
      if (x.dur == 0 || x.mem) s.tentative = false;
      if (s.tentative) q_.set(rr, s.dispatch_at + x.dur, tw_of(ev_complete, x.t));
      else q_.set(rr, s.dispatch_at, tw_of(ev_dispatch, rr));
    } else {
      q_.set(rr, agent_queue::none, 0);
    }
  }

  // ---- tasks end ----

  /// Task `t` ends at `now`: its dependents learn it, and those left with nothing to
  /// wait for become ready.
  DAYDREAM_EVENTS_INLINE void complete(task_id t, time_ns now) {
    if constexpr (Overlap) end_overlap(t, now);
    R_[t].at = now;
    makespan_ = std::max(makespan_, now);
    for (auto i = R_[t].out, last = R_[t + 1].out; i < last; ++i) {
      const auto d = static_cast<task_id>(adj_[i]);
      task_rec& y = R_[d];
      // The last dependency to finish binds the start (ties: the first one seen).
      if (y.pred == no_task || now > y.at) {
        y.pred = t;
        y.edge = static_cast<dep_kind>(adj_[i] >> 32);
        y.why = binding::dependency;
        y.at = now;
      }
      if (--y.wait == 0) make_ready(d, now);
    }
  }

  // ---- the overlap slowdown ----

  /// A task starts at `at` on resource `rr`: a transfer may slow its node.
  DAYDREAM_EVENTS_INLINE void start_overlap(resource_id rr, time_ns at) {
    if (overlap_.role_of(rr) == overlap_state::role::transfer && overlap_.transfer_starts(rr))
      retime(overlap_.node_of(rr), at, overlap_.slowed_rate());
  }

  /// The planned end of slowed task `t`, which takes `dur`, started at `at` on stream `rr`.
  DAYDREAM_EVENTS_INLINE time_ns slowed_end(task_id t, resource_id rr, time_ns dur, time_ns at) {
    shared_starts_.push_back({t, at});
    return overlap_.kernel_starts(t, rr, dur, at);
  }

  /// Task `t` ends at `now`: a slowed task's busy time is corrected, a transfer may
  /// release its node.
  DAYDREAM_EVENTS_INLINE void end_overlap(task_id t, time_ns now) {
    const resource_id rr = R_[t].res;
    if (rr == no_resource) return;
    const auto role = overlap_.role_of(rr);
    if (role == overlap_state::role::slowed) {
      // The dispatch counted the nominal time; the start is in shared_starts_.
      r_.busy[rr] += (now - overlap_.kernel_ends(t, rr)) - R_[t].dur;
    } else if (role == overlap_state::role::transfer && overlap_.transfer_ends(rr)) {
      retime(overlap_.node_of(rr), now, 1.0);
    }
  }

  /// Re-plans the running slowed tasks of node `k` at a new rate.
  DAYDREAM_EVENTS_INLINE void retime(std::uint32_t k, time_ns now, double new_rate) {
    overlap_.retime(k, now, new_rate, [this](task_id t, time_ns end) {
      const resource_id rr = R_[t].res;
      auto& s = xs_[slot_[rr]];
      s.running_end = end;
      s.free_at = end + R_[t].gap;
      if (s.pending) s.dispatch_at = s.free_at;
      if (rr != current_) refresh(s, rr);
    });
  }

  // ---- the result ----

  /// Throws naming a cycle when some task never became ready.
  void check_all_started() const {
    if (started_ == r_.tasks) return;
    std::vector<std::uint8_t> stuck(n_, 0);
    for (task_id t = 0; t < n_; ++t) stuck[t] = c_.alive[t] && R_[t].wait > 0; // never ready
    auto cycle = find_cycle_among(c_, stuck);
    throw error("daydream: replay: the graph has a cycle: " + describe_tasks(c_, cycle));
  }

  /// The results out of the records. Buffers that will not be kept are returned to the
  /// system as they are read, so that the records and the results do not both take all
  /// their memory at once (it matters for graphs of 10^8 tasks).
  void write_results() {
    const bool discard = scratch_.too_large();
    if (discard) scratch_.adj = {};
    clear_for_append(r_.start, n_);
    clear_for_append(r_.end, n_);
    clear_for_append(r_.pred, n_);
    clear_for_append(r_.why, n_);
    clear_for_append(r_.edge, n_);
    // A block of records at a time (it stays in cache while each result array takes its
    // field), appended with one size check per block and array.
    constexpr task_id chunk = task_id(1) << 12;
    for (task_id lo = 0; lo < n_; lo += std::min(chunk, n_ - lo)) {
      const task_rec* const b = R_ + lo;
      const std::size_t m = std::min(chunk, n_ - lo);
      // -1 for removed tasks: at = -1, dur = 0
      append_generated(r_.start, m, [b](std::size_t i) { return b[i].at - b[i].dur; });
      append_generated(r_.end, m, [b](std::size_t i) { return b[i].at; });
      append_generated(r_.pred, m, [b](std::size_t i) { return b[i].pred; });
      append_generated(r_.why, m, [b](std::size_t i) { return b[i].why; });
      append_generated(r_.edge, m, [b](std::size_t i) { return b[i].edge; });
      if (discard) discard_pages(b, m * sizeof(task_rec));
    }
    // Start times are not kept in the records: a task's start is its end minus its
    // duration, except on fair-share resources and slowed streams.
    for (const auto& [t, at] : shared_starts_) r_.start[t] = at;
  }

  /// Peak memory: running sum of allocations in start order, ties in id order. Tasks
  /// with memory start through real events, in event order: only runs of equal start
  /// times need sorting.
  void write_peak_memory() {
    const time_ns* const start = r_.start.data();
    for (std::size_t i = 0, j; i < mem_order_.size(); i = j) {
      for (j = i + 1; j < mem_order_.size() && start[mem_order_[j]] == start[mem_order_[i]];) ++j;
      if (j - i > 1)
        std::sort(mem_order_.begin() + std::ptrdiff_t(i), mem_order_.begin() + std::ptrdiff_t(j));
    }
    std::int64_t sum = 0;
    for (auto t : mem_order_) r_.peak_memory = std::max(r_.peak_memory, sum += c_.mem_delta[t]);
  }

  const graph_core& c_;
  key_ref key_;
  replay_result& r_;
  double slowdown_;
  task_id n_;
  std::uint32_t nres_;

  std::vector<std::uint32_t> slot_;   // by resource: its index in xs_ or fs_
  std::vector<std::uint8_t> fair_;    // by resource: whether it is shared fairly
  std::vector<exclusive_state> xs_;
  std::vector<fair_link> fs_;
  overlap_state overlap_;             // prepared only with an overlap slowdown
  agent_queue q_;                     // one pending event per resource
  std::vector<loose_end> loose_;      // a heap (loose_later)

  scratch_lease<replay_scratch> lease_;
  replay_scratch& scratch_;
  const time_ns* dur_;                // the durations and gaps read (replay_times)
  const time_ns* gap_;
  task_rec* R_ = nullptr;             // the records, one per task and one past the last
  std::uint64_t* adj_ = nullptr;      // out-edges: dst | kind << 32
  std::vector<task_id> roots_;        // tasks without dependencies, in id order

  time_ns mark_time_ = -1;            // the time of the events being handled
  std::uint64_t mark_tw_ = 0;         // the largest event key handled at that time
  std::uint32_t current_ = no_resource; // resource whose event is being handled
  std::size_t started_ = 0;
  time_ns makespan_ = 0;
  std::vector<task_id> mem_order_;    // tasks with a mem_delta, in the order they start
  std::vector<std::pair<task_id, time_ns>> shared_starts_; // starts not end - duration
};

/// The event-driven kernel (event_replay) into `r`.
template <bool Overlap>
void replay_flat_impl(const graph_core& c, key_ref key, const replay_options& opt, replay_result& r,
                      replay_times times = {}) {
  event_replay<Overlap>(c, key, opt, r, times).run();
}

/// replay_flat_impl into a fresh result.
template <bool Overlap>
replay_result replay_flat_impl(const graph_core& c, key_ref key, const replay_options& opt) {
  replay_result r;
  replay_flat_impl<Overlap>(c, key, opt, r);
  return r;
}

} // namespace daydream::detail
//! @endcond

#undef DAYDREAM_EVENTS_INLINE

#endif
