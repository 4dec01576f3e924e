// Defines the edge stage of Kineto ingestion: program order, launches, anchors and joins; then durations, gaps and memory of the tasks.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_EDGES_HPP
#define DAYDREAM_IO_DETAIL_KINETO_EDGES_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_cuts.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_tasks.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// A dependency to add once all are known.
struct edge_req {
  task_id from, to;
  dep_kind kind;
};

/// The dependencies found so far, and when each GPU op became ready through them.
struct edge_list {
  std::vector<edge_req> list;
  std::vector<time_ns> gpu_ready; ///< per gpu event: latest trace time a dependency released it (min if none)

  void add(task_id a, task_id b, dep_kind k) {
    if (a == no_task || b == no_task || a == b) return;
    list.push_back({a, b, k});
  }
};

/// Program order on a stream with lanes (assign_lanes): each lane in start order, and
/// every op after the last op of each other lane that ended by its start (within
/// lane_overlap_tolerance), as a data dependency: the replay keeps the order the trace
/// shows, and a graph's join waits for every branch before it. An edge that an earlier
/// one already implies (through the op before it on its lane) is left out. An op also
/// follows (stream_order) each other lane's op still running at its start that another
/// launch launched: the stream runs a launch's work after the work launched before it.
inline void add_lane_edges(const decoded_trace& d, const gpu_links& L, const stream_rec& st, const task_map& T,
                           edge_list& E) {
  const std::size_t n = st.lanes();
  // known[l * n + m]: the latest position of lane m that lane l's last op follows
  std::vector<std::size_t> known(n * n, no_pos);
  for (std::size_t k = 0; k < st.ops.size(); ++k) {
    const auto o = st.ops[k];
    const std::size_t l = st.lane_at(k);
    if (auto p = st.lane_prev(k); p != no_pos) E.add(T.gpu_task[st.ops[p]], T.gpu_task[o], dep_kind::stream_order);
    const time_ns by = d.gpu[o].ts + lane_overlap_tolerance;
    for (std::size_t m = 0; m < n; ++m) {
      if (m == l) continue;
      std::size_t p = st.last_on_lane_before(m, k);
      if (p != no_pos && d.gpu[st.ops[p]].ts + d.gpu[st.ops[p]].dur > by &&
          (L.launch_of[o] == no_index || L.launch_of[st.ops[p]] != L.launch_of[o]))
        E.add(T.gpu_task[st.ops[p]], T.gpu_task[o], dep_kind::stream_order); // still running, another launch's
      while (p != no_pos && d.gpu[st.ops[p]].ts + d.gpu[st.ops[p]].dur > by) p = st.last_on_lane_before(m, p);
      if (p == no_pos || (known[l * n + m] != no_pos && known[l * n + m] >= p)) continue;
      known[l * n + m] = p;
      const auto q = st.ops[p];
      E.add(T.gpu_task[q], T.gpu_task[o], dep_kind::data);
      E.gpu_ready[o] = std::max(E.gpu_ready[o], d.gpu[q].ts + d.gpu[q].dur);
    }
  }
}

/// Stage 14: program order on every thread and stream, launch edges, anchors (a worker
/// session starts after its main thread reached its start; a stream head that needs it
/// after the main thread's slice before it) and joins (the main thread resumes when the
/// worker session ends).
inline edge_list add_structural_edges(const decoded_trace& d, thread_table& tt, const gpu_links& L,
                                      const flat_events& F, const thread_plan& P, const task_map& T,
                                      const build_settings& s) {
  edge_list E;
  auto& threads = tt.threads;
  // The list is reserved once at (about) its final size: program order on every thread
  // and stream, a launch per GPU op, the anchors and joins, and a wait per synchronizing
  // call for the sync stage (more on streams with lanes), rather than grown by doubling,
  // which copies it and for a moment holds one and a half times its size when memory
  // peaks.
  std::size_t bound = P.anchors.anchors.size() + P.joins.size() + 2 * d.gpu.size();
  for (auto& th : threads) bound += th.slices.size();
  for (auto& st : L.streams) bound += st.lanes();
  for (auto sem : L.sem) bound += sem != call_semantics::plain && sem != call_semantics::launch && sem != call_semantics::async_copy;
  E.list.reserve(bound);
  for (auto& th : threads)
    for (std::size_t k = 1; k < th.slices.size(); ++k) E.add(th.slices[k - 1].task, th.slices[k].task, dep_kind::cpu_order);
  E.gpu_ready.assign(d.gpu.size(), std::numeric_limits<time_ns>::min());
  for (auto& st : L.streams) {
    if (st.lanes() > 1) {
      add_lane_edges(d, L, st, T, E);
      continue;
    }
    for (std::size_t k = 1; k < st.ops.size(); ++k) E.add(T.gpu_task[st.ops[k - 1]], T.gpu_task[st.ops[k]], dep_kind::stream_order);
  }
  // Launches.
  for (std::uint32_t o = 0; o < d.gpu.size(); ++o) {
    auto* src = T.launch_slice(d, tt, L, P.launch_at, o);
    if (!src) continue;
    E.add(src->task, T.gpu_task[o], dep_kind::launch);
    E.gpu_ready[o] = std::max(E.gpu_ready[o], src->end);
  }
  // Anchors.
  for (auto& an : P.anchors.anchors) {
    auto& w = threads[an.thread];
    auto& m = threads[w.main];
    auto a = an.soft ? slice_ending_by(m, an.t) : slice_ending_at(m, an.t);
    auto b = slice_starting_at(w, an.t);
    if (a == no_pos || b == no_pos) continue;
    E.add(m.slices[a].task, w.slices[b].task, dep_kind::control);
    // a hard anchor ends exactly at the session's start: the idle time before the
    // session is then the main thread's, not a gap of the worker
    if (!an.soft) w.slices[b].anchored = true;
  }
  if (P.mains.first != no_index)
    for (auto& st : L.streams) {
      if (st.ops.empty() || !head_needs_anchor(d, L, F, P.launch_at, s, st.ops.front())) continue;
      auto& m = threads[P.mains.first];
      auto head = st.ops.front();
      auto a = slice_ending_by(m, d.gpu[head].ts);
      if (a == no_pos) continue;
      E.add(m.slices[a].task, T.gpu_task[head], dep_kind::control);
      E.gpu_ready[head] = std::max(E.gpu_ready[head], m.slices[a].end);
    }
  // Joins.
  for (auto& j : P.joins) {
    auto& w = threads[j.thread];
    auto& m = threads[w.main];
    auto src = slice_ending_at(w, j.B);
    std::size_t dst = j.marker ? slice_starting_at(m, j.B, mk_join) : slice_containing(m, j.B);
    if (src == no_pos || dst == no_pos) continue;
    E.add(w.slices[src].task, m.slices[dst].task, dep_kind::control);
    m.slices[dst].wait_until = std::max(m.slices[dst].wait_until, j.B);
  }
  return E;
}

/// Stage 16: durations and gaps. A waiting slice lasts from the end of what it waits for
/// to its own end; a CPU gap is the idle time to the next slice (none before an anchored
/// session or a join marker that waits). On a stream, idle time that a dependency
/// explains (a late launch, an event wait) is left to it; what none explains stays a gap.
inline void set_durations_and_gaps(const decoded_trace& d, const thread_table& tt, const gpu_links& L,
                                   const thread_plan& P, const task_map& T, const edge_list& E,
                                   const build_settings& s, daydream::graph& g) {
  for (auto& th : tt.threads) {
    for (std::size_t k = 0; k < th.slices.size(); ++k) {
      auto& sl = th.slices[k];
      time_ns dur = sl.end - sl.start;
      if (sl.wait_until != std::numeric_limits<time_ns>::min()) {
        time_ns w = std::clamp(sl.wait_until, sl.start, sl.end);
        dur = sl.end - w;
      }
      g.core().duration[sl.task] = dur;
      time_ns gap = 0;
      if (k + 1 < th.slices.size()) {
        auto& n = th.slices[k + 1];
        gap = n.start - sl.end;
        if (n.anchored || (n.marker == mk_join && n.wait_until != std::numeric_limits<time_ns>::min())) gap = 0;
      }
      g.core().gap[sl.task] = std::max<time_ns>(0, gap);
    }
  }
  std::vector<std::size_t> next_on_lane;
  for (auto& st : L.streams) {
    // the position of the next op on each op's lane
    next_on_lane.assign(st.ops.size(), no_pos);
    for (std::size_t k = 0; k < st.ops.size(); ++k)
      if (auto p = st.lane_prev(k); p != no_pos) next_on_lane[p] = k;
    for (std::size_t k = 0; k < st.ops.size(); ++k) {
      if (next_on_lane[k] == no_pos) continue;
      auto& p = d.gpu[st.ops[k]];
      auto nx = st.ops[next_on_lane[k]];
      auto& n = d.gpu[nx];
      const time_ns pend = p.ts + p.dur;
      const time_ns full = std::max<time_ns>(0, n.ts - pend);
      // The replay starts `n` at max(ready, end of `p` + gap): a start a little after
      // the launch returned is launch latency, not kept.
      const time_ns ready = E.gpu_ready[nx];
      time_ns gap = full;
      // (A copy enqueued by a blocking copy call that began while this stream was busy is
      // "ready" at the call's start only nominally: the time from the stream's previous
      // op to the copy is kept as a gap. See blocking_cut_time.)
      const auto call = L.launch_of[nx];
      const bool nominal = call != no_index && P.blocking_copy[call] != no_index && pend > d.cpu[call].ts;
      if (!nominal && ready != std::numeric_limits<time_ns>::min() && ready > pend && n.ts - ready <= s.launch_latency)
        gap = 0;
      g.core().gap[T.gpu_task[st.ops[k]]] = gap;
    }
  }
}

/// What the memory stage finds.
struct memory_charges {
  std::vector<std::uint32_t> used;   ///< memory events charged to a task
  std::int64_t at_start = -1;        ///< allocated before the first device event (its total minus its bytes)
  std::int64_t peak = -1;            ///< the largest device Total Allocated
};

/// Stage 17: charges every device `[memory]` event's bytes to the slice of its thread at
/// its time (the marker cut there, or the slice containing it).
inline memory_charges charge_memory(const decoded_trace& d, const thread_table& tt, const thread_plan& P,
                                    daydream::graph& g) {
  memory_charges M;
  time_ns first_ts = std::numeric_limits<time_ns>::max();
  for (std::size_t i = 0, k = 0; i < d.memory.size(); ++i) {
    auto& m = d.memory[i];
    if (!is_device_memory(m)) continue;
    auto t = P.mem_thread[k++];
    // allocated before the trace's first allocation event (in time, not file order)
    if (m.total >= 0 && m.ts < first_ts) { first_ts = m.ts; M.at_start = m.total - m.bytes; }
    if (m.total >= 0) M.peak = std::max(M.peak, m.total);
    if (t == no_index) continue;
    auto& th = tt.threads[t];
    auto p = slice_starting_at(th, m.ts);
    if (p == no_pos) p = slice_containing(th, m.ts);
    if (p == no_pos) continue;
    g.core().mem_delta[th.slices[p].task] += m.bytes;
    M.used.push_back(static_cast<std::uint32_t>(i));
  }
  return M;
}

/// Stage 18: adds the dependencies to the graph, then breaks every cycle that timestamp
/// noise produced by dropping its weakest inferred edge (control, then sync or data
/// (between the lanes of a stream), then launch), with a warning each. A cycle of
/// program order alone is an internal error.
inline void commit_edges(const edge_list& E, daydream::graph& g, warning_log& warnings) {
  for (auto& e : E.list) g.add_dependency(e.from, e.to, e.kind);
  for (;;) {
    auto cyc = find_cycle(g);
    if (cyc.empty()) return;
    std::size_t pick = cyc.size();
    int best = -1;
    for (std::size_t i = 0; i + 1 < cyc.size(); ++i) {
      auto k = g.dependency_kind(cyc[i], cyc[i + 1]);
      int w = k == dep_kind::control ? 3 : k == dep_kind::sync || k == dep_kind::data ? 2 : k == dep_kind::launch ? 1 : 0;
      if (w > best) { best = w; pick = i; }
    }
    if (pick == cyc.size() || best == 0) throw error("daydream: internal error: program-order cycle in the built graph");
    warnings.add("dropped a " + std::string(to_string(g.dependency_kind(cyc[pick], cyc[pick + 1]))) +
                 " dependency " + std::string(g.name(cyc[pick])) + " -> " + std::string(g.name(cyc[pick + 1])) +
                 " that closed a cycle (inconsistent timestamps)");
    g.remove_dependency(cyc[pick], cyc[pick + 1]);
  }
}

//! @endcond

} // namespace daydream::io::detail

#endif
