// Defines the sync stage of Kineto ingestion: what each synchronizing runtime call waits for, as dependencies.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_SYNCS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_SYNCS_HPP

#include <daydream/dependency.hpp>
#include <daydream/io/detail/kineto_cuts.hpp>
#include <daydream/io/detail/kineto_edges.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_tasks.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// What the sync stage did.
struct sync_result {
  std::vector<std::uint8_t> state; ///< per cuda_sync record: 0 no call, 1 used, 2 non-blocking call, 3 nothing to wait for
  std::size_t backpressure = 0;    ///< launch/copy calls blocked by a full launch queue
  std::size_t cross_stream = 0;    ///< cudaStreamWaitEvent calls that became dependencies between streams
};

/// Finds what synchronizing runtime calls wait for (stage 15). Holds the lookups the
/// inference needs; `run` adds the dependencies.
class sync_resolver {
public:
  sync_resolver(const decoded_trace& d, thread_table& tt, const gpu_links& L, const flat_events& F,
                const thread_plan& P, const task_map& T, const build_settings& s)
      : d_(d), tt_(tt), L_(L), F_(F), P_(P), T_(T), s_(s) {}

  /// On stream `st`: the last op launched before `t` that ended by `deadline`, or no_index.
  std::uint32_t waited_on(const stream_rec& st, time_ns t, time_ns deadline) const {
    auto it = std::lower_bound(st.launch_max.begin(), st.launch_max.end(), t);
    for (auto k = static_cast<std::size_t>(it - st.launch_max.begin()); k-- > 0;) {
      auto o = st.ops[k];
      if (d_.gpu[o].ts + d_.gpu[o].dur <= deadline) return o;
    }
    return no_index;
  }

  /// The stream of the last GPU op thread `t` launched before `ts` (where an event record
  /// at `ts` records), or no_index.
  std::uint32_t stream_launched_last(std::uint32_t t, time_ns ts) const {
    auto& idx = tt_.runtime[t];
    auto it = std::lower_bound(idx.begin(), idx.end(), ts, [&](std::uint32_t e, time_ns v) { return d_.cpu[e].ts < v; });
    while (it != idx.begin()) {
      --it;
      if (L_.launches(*it)) return L_.first_stream_of(*it);
    }
    return no_index;
  }
  /// The stream of the first GPU op thread `t` launches after `ts`, or no_index.
  std::uint32_t stream_launched_next(std::uint32_t t, time_ns ts) const {
    auto& idx = tt_.runtime[t];
    auto it = std::upper_bound(idx.begin(), idx.end(), ts, [&](time_ns v, std::uint32_t e) { return v < d_.cpu[e].ts; });
    for (; it != idx.end(); ++it)
      if (L_.launches(*it)) return L_.first_stream_of(*it);
    return no_index;
  }

  /// Adds a dependency from every GPU op a synchronizing call waits for to the call's
  /// last slice (device, stream and event syncs; back-pressure of long launches), and
  /// between streams for cudaStreamWaitEvent. Uses the `cuda_sync` records when the
  /// trace has them; without, infers event waits when `infer_event_waits` is set.
  sync_result run(edge_list& E) {
    sync_result R;
    R.state.assign(d_.syncs.size(), 0);
    index_records();
    for (std::uint32_t e = 0; e < d_.cpu.size(); ++e) {
      if (!is_runtime(d_, e) || tt_.on_ignored(d_, e)) continue;
      auto& x = d_.cpu[e];
      auto [first, last] = T_.pieces_of(e);
      if (last == no_pos) continue;
      const time_ns end = F_.end_of(e);
      auto sit = x.correlation >= 0 ? sync_by_corr_.find(x.correlation) : sync_by_corr_.end();
      const std::uint32_t rec = sit != sync_by_corr_.end() ? sit->second : no_index;
      const call c{e, x, tt_.threads[x.thread].slices[last], end, end + s_.sync_tolerance,
                   rec != no_index ? &d_.syncs[rec] : nullptr};
      const std::size_t edges_before = E.list.size();
      record_use use = record_use::waited;
      if (P_.blocking_copy[e] != no_index) {
        // Only when the call was cut at its copy's start: the piece before launches it.
        if (first != last) wait_for_op(E, c.w, P_.blocking_copy[e]);
      } else {
        use = wait(E, c, R);
      }
      if (rec == no_index) continue;
      // The cuda_sync record is represented when the call got a dependency from it.
      if (use == record_use::waited) R.state[rec] = E.list.size() > edges_before ? 1 : 3;
      else if (use == record_use::non_blocking) R.state[rec] = 2;
    }
    return R;
  }

private:
  /// A runtime call being resolved: its last slice waits for what the call waits for.
  struct call {
    std::uint32_t e;       ///< the CPU event
    const cpu_event& x;
    slice& w;              ///< its last slice
    time_ns end;           ///< its end
    time_ns deadline;      ///< what it waits for ended by then
    const sync_event* rec; ///< its cuda_sync record, or null
  };
  /// What a call makes of its cuda_sync record: nothing, a wait (state 1, or 3 when
  /// nothing was waited for), or a call that does not block (state 2).
  enum class record_use : std::uint8_t { none, waited, non_blocking };

  /// Indexes the cuda_sync records by correlation, and the event records by start.
  void index_records() {
    sync_by_corr_.clear();
    for (std::uint32_t i = 0; i < d_.syncs.size(); ++i)
      if (d_.syncs[i].correlation >= 0) sync_by_corr_.emplace(d_.syncs[i].correlation, i);
    records_.clear();
    for (std::uint32_t e = 0; e < d_.cpu.size(); ++e)
      if (is_runtime(d_, e) && !tt_.on_ignored(d_, e) && L_.sem[e] == call_semantics::event_record)
        records_.push_back(e);
    std::sort(records_.begin(), records_.end(), [&](auto a, auto b) { return d_.cpu[a].ts < d_.cpu[b].ts; });
  }

  /// On a stream with lanes: `f(q)` for each op `q` of another lane that ran alongside GPU
  /// op `o` (the last op of its lane to start before `o`, still running when `o` started,
  /// so that the lane edges do not order it before `o`) and ended by `limit`.
  template <class F> void lane_partners(std::uint32_t o, time_ns limit, F&& f) const {
    auto& st = L_.streams[L_.op_stream[o]];
    if (st.lanes() < 2) return;
    const std::size_t k = L_.op_pos[o], l = st.lane_at(k);
    for (std::size_t m = 0; m < st.lanes(); ++m) {
      const auto p = m == l ? no_pos : st.last_on_lane_before(m, k);
      if (p == no_pos) continue;
      const auto q = st.ops[p];
      const time_ns e = d_.gpu[q].ts + d_.gpu[q].dur;
      if (e > d_.gpu[o].ts + lane_overlap_tolerance && e <= limit) f(q);
    }
  }

  /// Makes slice `w` wait for GPU op `o`, when there is one and it is a task (and, on a
  /// stream with lanes, for the ops of its other lanes that ran alongside it).
  void wait_for_op(edge_list& E, slice& w, std::uint32_t o) const {
    if (o == no_index || T_.gpu_task[o] == no_task) return;
    auto wait = [&](std::uint32_t q) {
      if (T_.gpu_task[q] == no_task) return;
      E.add(T_.gpu_task[q], w.task, dep_kind::sync);
      w.wait_until = std::max(w.wait_until, d_.gpu[q].ts + d_.gpu[q].dur);
    };
    wait(o);
    lane_partners(o, w.end + s_.sync_tolerance, wait);
  }

  /// Adds what call `c` waits for, by what the call does.
  record_use wait(edge_list& E, const call& c, sync_result& R) {
    switch (L_.sem[c.e]) {
    case call_semantics::device_sync: wait_device(E, c); return record_use::waited;
    case call_semantics::stream_sync: wait_stream(E, c); return record_use::waited;
    case call_semantics::event_sync: wait_event(E, c); return record_use::waited;
    case call_semantics::stream_wait:
      if (join_streams(E, c)) ++R.cross_stream;
      return record_use::waited;
    case call_semantics::launch:
    case call_semantics::async_copy: {
      // Back-pressure: a launch that blocks until the GPU frees a queue slot returns
      // right after some GPU op ends.
      if (c.end - c.x.ts < s_.implicit_sync_min) return record_use::none;
      auto o = op_ending_before(c.end, c.x.ts);
      if (o != no_index) { wait_for_op(E, c.w, o); ++R.backpressure; }
      return record_use::non_blocking;
    }
    default: return record_use::non_blocking; // a non-blocking call (cudaEventQuery)
    }
  }

  /// A device sync waits for the last op that ended in time on every stream of its
  /// device (of every device without a record).
  void wait_device(edge_list& E, const call& c) const {
    std::int32_t dev = c.rec ? c.rec->device : -1;
    for (auto& st : L_.streams) {
      if (dev >= 0 && st.device != dev) continue;
      auto o = waited_on(st, c.x.ts, c.deadline);
      if (o != no_index) wait_for_op(E, c.w, o);
    }
  }

  /// A stream sync waits for the last op that ended in time on its stream: the record's,
  /// or the one its thread launched on last.
  void wait_stream(edge_list& E, const call& c) const {
    const time_ns s = c.x.ts;
    std::uint32_t si = c.rec && c.rec->stream >= 0 ? L_.stream_index(c.rec->device, c.rec->stream) : no_index;
    if (si == no_index) si = stream_launched_last(c.x.thread, s);
    std::uint32_t o = si != no_index ? waited_on(L_.streams[si], s, c.deadline) : no_index;
    if (o == no_index) {
      // the stream is unknown or inconsistent: the latest op launched before that ended in time
      time_ns best = std::numeric_limits<time_ns>::min();
      for (auto& st : L_.streams) {
        auto k = waited_on(st, s, c.deadline);
        if (k != no_index && d_.gpu[k].ts + d_.gpu[k].dur > best) { best = d_.gpu[k].ts + d_.gpu[k].dur; o = k; }
      }
    }
    wait_for_op(E, c.w, o);
  }

  /// An event sync waits for the op the event recorded: the record's, or, inferred,
  /// the one event_source finds.
  void wait_event(edge_list& E, const call& c) {
    std::uint32_t o = no_index;
    if (c.rec) {
      if (c.rec->record_correlation >= 0 && c.rec->wait_stream >= 0) {
        auto rit = L_.runtime_of_corr(c.rec->record_correlation);
        auto si = L_.stream_index(c.rec->device, c.rec->wait_stream);
        if (rit != no_index && si != no_index) o = waited_on(L_.streams[si], d_.cpu[rit].ts + 1, c.deadline);
      }
    } else if (s_.infer_event_waits) {
      o = event_source(c.x, c.deadline, no_index);
    }
    wait_for_op(E, c.w, o);
  }

  /// A stream wait (cudaStreamWaitEvent) makes the first op launched on the waiting
  /// stream after the call wait for the op the event recorded, when they are on two
  /// streams and in order. Returns whether it did.
  bool join_streams(edge_list& E, const call& c) {
    const time_ns s = c.x.ts;
    std::uint32_t src = no_index, dst = no_index;
    if (c.rec) {
      auto rit = L_.runtime_of_corr(c.rec->record_correlation);
      auto ss = c.rec->wait_stream >= 0 ? L_.stream_index(c.rec->device, c.rec->wait_stream) : no_index;
      auto ds = c.rec->stream >= 0 ? L_.stream_index(c.rec->device, c.rec->stream) : no_index;
      if (rit != no_index && ss != no_index) src = L_.last_launched_before(L_.streams[ss], d_.cpu[rit].ts + 1);
      if (ds != no_index) dst = L_.first_launched_after(L_.streams[ds], s);
    } else if (s_.infer_event_waits) {
      auto ds = stream_launched_next(c.x.thread, c.end);
      if (ds != no_index) dst = L_.first_launched_after(L_.streams[ds], s);
      src = dst != no_index ? wait_source(c.x, ds, d_.gpu[dst].ts + s_.sync_tolerance) : no_index;
      if (src == no_index) src = event_source(c.x, std::numeric_limits<time_ns>::max(), ds);
    }
    const bool joins = src != no_index && dst != no_index && L_.op_stream[src] != L_.op_stream[dst] &&
                       d_.gpu[src].ts + d_.gpu[src].dur <= d_.gpu[dst].ts + s_.sync_tolerance;
    if (joins) {
      // on streams with lanes: what ran alongside `src`, and the ops alongside `dst`
      std::vector<std::uint32_t> from{src}, to{dst};
      lane_partners(src, d_.gpu[dst].ts + s_.sync_tolerance, [&](std::uint32_t q) { from.push_back(q); });
      auto& ds = L_.streams[L_.op_stream[dst]];
      const std::size_t k = L_.op_pos[dst];
      for (std::size_t m = 0; ds.lanes() > 1 && m < ds.lanes(); ++m) {
        const auto p = m == ds.lane_at(k) ? no_pos : ds.first_on_lane_after(m, k);
        if (p != no_pos && d_.gpu[dst].ts + d_.gpu[dst].dur > d_.gpu[ds.ops[p]].ts + lane_overlap_tolerance)
          to.push_back(ds.ops[p]);
      }
      for (auto a : from)
        for (auto b : to) {
          E.add(T_.gpu_task[a], T_.gpu_task[b], dep_kind::sync);
          E.gpu_ready[b] = std::max(E.gpu_ready[b], d_.gpu[a].ts + d_.gpu[a].dur);
        }
    }
    return joins;
  }

  /// For event waits without cuda_sync records: the op recorded by the latest event
  /// record of the same process before the call, on the stream its thread used last.
  /// Without records of its own, the event is taken to have been recorded after the
  /// GPU op launched last before the call on a stream other than `not_stream`.
  std::uint32_t event_source(const cpu_event& x, time_ns deadline, std::uint32_t not_stream) {
    auto it = std::lower_bound(records_.begin(), records_.end(), x.ts, [&](std::uint32_t r, time_ns v) { return d_.cpu[r].ts < v; });
    while (it != records_.begin()) {
      --it;
      auto r = *it;
      if (tt_.threads[d_.cpu[r].thread].key.pid != tt_.threads[x.thread].key.pid) continue;
      auto si = stream_launched_last(d_.cpu[r].thread, d_.cpu[r].ts);
      if (si == no_index || si == not_stream) break;
      return waited_on(L_.streams[si], d_.cpu[r].ts, deadline);
    }
    if (by_launch_.empty()) {
      for (std::uint32_t o = 0; o < d_.gpu.size(); ++o)
        if (L_.launch_of[o] != no_index) by_launch_.push_back(o);
      std::sort(by_launch_.begin(), by_launch_.end(), [&](auto a, auto b) { return L_.launch_time(d_, a) < L_.launch_time(d_, b); });
    }
    auto jt = std::lower_bound(by_launch_.begin(), by_launch_.end(), x.ts, [&](std::uint32_t o, time_ns v) { return L_.launch_time(d_, o) < v; });
    const auto pid = tt_.threads[x.thread].key.pid;
    for (int tries = 0; jt != by_launch_.begin() && tries < 256; ++tries) {
      --jt;
      auto o = *jt;
      if (L_.op_stream[o] == not_stream || tt_.threads[d_.cpu[L_.launch_of[o]].thread].key.pid != pid) continue;
      return d_.gpu[o].ts + d_.gpu[o].dur <= deadline ? o : no_index;
    }
    return no_index;
  }

  /// For a stream wait without cuda_sync records: the op the event was recorded after,
  /// when the latest event record of the process before the wait is known. The record's
  /// stream is not in the trace; each other stream's last op launched before the record
  /// is a candidate, and the one that ended last by `limit` (the waiting op's start) is
  /// taken: the op whose end released the waiting stream. no_index when no record or no
  /// candidate is known.
  std::uint32_t wait_source(const cpu_event& x, std::uint32_t waiting_stream, time_ns limit) {
    auto it = std::lower_bound(records_.begin(), records_.end(), x.ts, [&](std::uint32_t r, time_ns v) { return d_.cpu[r].ts < v; });
    while (it != records_.begin()) {
      --it;
      auto r = *it;
      if (tt_.threads[d_.cpu[r].thread].key.pid != tt_.threads[x.thread].key.pid) continue;
      std::uint32_t best = no_index;
      time_ns best_end = std::numeric_limits<time_ns>::min();
      for (std::uint32_t si = 0; si < L_.streams.size(); ++si) {
        if (si == waiting_stream) continue;
        auto o = L_.last_launched_before(L_.streams[si], d_.cpu[r].ts);
        if (o == no_index) continue;
        const time_ns oe = d_.gpu[o].ts + d_.gpu[o].dur;
        if (oe <= limit && oe > best_end) { best = o; best_end = oe; }
      }
      return best;
    }
    return no_index;
  }

  /// The GPU op, launched before `s`, that ended last within the implicit-sync window
  /// before `end` and was still running at `s`.
  std::uint32_t op_ending_before(time_ns end, time_ns s) {
    if (ends_.empty()) {
      ends_.resize(d_.gpu.size());
      for (std::uint32_t i = 0; i < d_.gpu.size(); ++i) ends_[i] = i;
      std::sort(ends_.begin(), ends_.end(), [&](auto a, auto b) {
        return d_.gpu[a].ts + d_.gpu[a].dur < d_.gpu[b].ts + d_.gpu[b].dur;
      });
    }
    auto it = std::upper_bound(ends_.begin(), ends_.end(), end, [&](time_ns v, std::uint32_t o) { return v < d_.gpu[o].ts + d_.gpu[o].dur; });
    while (it != ends_.begin()) {
      --it;
      auto o = *it;
      time_ns oe = d_.gpu[o].ts + d_.gpu[o].dur;
      if (end - oe > s_.implicit_sync_window) break;
      if (oe > s && L_.launch_time(d_, o) < s) return o;
    }
    return no_index;
  }

  const decoded_trace& d_;
  thread_table& tt_;
  const gpu_links& L_;
  const flat_events& F_;
  const thread_plan& P_;
  const task_map& T_;
  const build_settings& s_;
  std::unordered_map<std::int64_t, std::uint32_t> sync_by_corr_; ///< cuda_sync records by correlation
  std::vector<std::uint32_t> records_, ends_, by_launch_;
};

/// Stage 15: see sync_resolver::run.
inline sync_result add_sync_edges(const decoded_trace& d, thread_table& tt, const gpu_links& L, const flat_events& F,
                                  const thread_plan& P, const task_map& T, const build_settings& s, edge_list& E) {
  sync_resolver r(d, tt, L, F, P, T, s);
  return r.run(E);
}

//! @endcond

} // namespace daydream::io::detail

#endif
