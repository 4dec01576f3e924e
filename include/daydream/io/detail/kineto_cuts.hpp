// Defines the cut stage of Kineto ingestion: main threads, worker sessions anchored and joined, and the slices cut at those places.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_CUTS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_CUTS_HPP

#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_layers.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_parallel.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// A run of a worker thread's slices without a long idle time inside.
struct session { std::uint32_t thread; std::size_t first, last; };
/// A worker session starts after its main thread reached time `t` (soft: inside a runtime call).
struct anchor_rec { std::uint32_t thread; time_ns t; bool soft; };
/// The main thread waits until worker session end `B` (marker: it was idle, a join marker holds the wait).
struct join_rec { std::uint32_t thread; time_ns B; bool marker; };

/// The main threads and the trace's span (stage 6).
struct main_threads {
  std::uint32_t first = no_index; ///< the main thread of the first process with the best claim
  time_ns t0 = 0;                 ///< the earliest time anything happens: the replay's time 0
  time_ns begin = 0, end = 0;     ///< first start and last end of CPU slices and GPU ops (0, 0 if none)
};

/// Stage 6: picks the main thread of each process (the one running the step markers,
/// ProfilerStep# or those of a step annotation, then Optimizer.step, then tid == pid, then
/// the busiest) and the trace's span.
inline main_threads choose_main_threads(const decoded_trace& d, thread_table& tt, const iteration_table& its) {
  main_threads M;
  auto& threads = tt.threads;
  int first_rank = -1;
  std::map<std::int64_t, std::vector<std::uint32_t>> by_pid;
  for (std::uint32_t t = 0; t < threads.size(); ++t)
    if (!threads[t].ignored && !threads[t].slices.empty()) by_pid[threads[t].key.pid].push_back(t);
  for (auto& [pid, ts] : by_pid) {
    std::uint32_t best = no_index;
    int best_rank = -1;
    time_ns best_busy = -1;
    for (auto t : ts) {
      int rank = 0;
      for (auto e : threads[t].events) {
        auto n = d.cpu[e].name;
        if (starts_with(n, "ProfilerStep#") || its.is_marker(e)) { rank = std::max(rank, 3); break; }
        if (starts_with(n, "Optimizer.step")) rank = std::max(rank, 2);
      }
      if (rank == 0 && threads[t].key.tid == pid) rank = 1;
      time_ns busy = 0;
      for (auto& s : threads[t].slices) busy += s.end - s.start;
      if (rank > best_rank || (rank == best_rank && busy > best_busy)) { best = t; best_rank = rank; best_busy = busy; }
    }
    for (auto t : ts) threads[t].main = best;
    threads[best].is_main = true;
    threads[best].backward = false; // the main thread's own work is not all backward
    if (M.first == no_index || best_rank > first_rank) { M.first = best; first_rank = best_rank; }
  }
  M.t0 = std::numeric_limits<time_ns>::max();
  for (auto& th : threads) if (!th.slices.empty()) M.t0 = std::min(M.t0, th.slices.front().start);
  for (auto& g : d.gpu) M.t0 = std::min(M.t0, g.ts);
  time_ns last = std::numeric_limits<time_ns>::min();
  for (auto& th : threads) if (!th.slices.empty()) last = std::max(last, th.slices.back().end);
  for (auto& g : d.gpu) last = std::max(last, g.ts + g.dur);
  if (last != std::numeric_limits<time_ns>::min()) { M.begin = M.t0; M.end = last; }
  return M;
}

/// Whether `g` is a copy from pageable memory that the call [st, end) spent most of its
/// copy staging: the call is long, the copy started inside it, and the call returned
/// after at least half of the copy had passed. Such a call returns when it has staged the
/// last chunk, which may still be in flight (tens to hundreds of microseconds for a large
/// copy, more than `sync_tolerance`); it still blocked the host for the copy.
inline bool staged_pageable_copy(const gpu_event& g, time_ns st, time_ns end, const build_settings& s) {
  if (g.cat != ecat::memcpy || !copy_is_pageable(g.name)) return false;
  if (end - st < s.implicit_sync_min || g.ts < st || g.ts >= end) return false;
  return 2 * (end - g.ts) >= g.dur;
}

/// The copy a runtime call waits for, if it is a blocking copy (by API, or by timing: a
/// long asynchronous copy that returns right after its copy ends), or no_index.
inline std::uint32_t blocking_copy_of(const decoded_trace& d, const gpu_links& L, const flat_events& F,
                                      const build_settings& s, std::uint32_t e) {
  auto sem = L.sem[e];
  if (sem != call_semantics::blocking_copy && sem != call_semantics::async_copy) return no_index;
  const time_ns st = d.cpu[e].ts, end = F.end_of(e);
  for (auto k = L.ops_begin[e]; k < L.ops_begin[e + 1]; ++k) {
    auto op = L.ops_list[k];
    auto& g = d.gpu[op];
    if (g.cat == ecat::kernel) continue;
    const time_ns ce = g.ts + g.dur;
    if (staged_pageable_copy(g, st, end, s)) return op;
    if (ce > end + s.sync_tolerance) continue; // returned before its copy ended: not blocking
    if (sem == call_semantics::blocking_copy) return op;
    if (end - st >= s.implicit_sync_min && ce > st && end - ce <= s.implicit_sync_window) return op;
  }
  return no_index;
}

/// Whether the stream of GPU op `o` was still running earlier work when call `r`, which
/// launched `o`, started.
inline bool stream_busy_at(const decoded_trace& d, const gpu_links& L, std::uint32_t o, std::uint32_t r) {
  auto& st = L.streams[L.op_stream[o]];
  auto it = std::lower_bound(st.ops.begin(), st.ops.end(), d.gpu[o].ts,
                             [&](std::uint32_t a, time_ns t) { return d.gpu[a].ts < t; });
  while (it != st.ops.end() && *it != o) ++it;
  if (it == st.ops.begin() || it == st.ops.end()) return false;
  auto& p = d.gpu[*(it - 1)];
  return p.ts + p.dur > d.cpu[r].ts;
}

/// Where blocking copy call `r` is cut into the piece that enqueues copy `o` and the wait
/// for it. When the stream was busy as the call began, the copy waited for the stream: the
/// cut is at the call's start (a zero-length launch piece; the copy then follows the
/// stream's earlier work). When the stream was idle, the time from the call's start to
/// the copy's is the call's own work (a stream synchronization, staging the first chunk
/// of a pageable copy): the cut is at the copy's start.
inline time_ns blocking_cut_time(const decoded_trace& d, const gpu_links& L, const flat_events& F,
                                 std::uint32_t o, std::uint32_t r) {
  const time_ns st = d.cpu[r].ts, copy = d.gpu[o].ts;
  if (copy <= st || copy >= F.end_of(r) || stream_busy_at(d, L, o, r)) return st;
  return copy;
}

/// launch_at of a call that is not cut to launch: its GPU work follows its end.
inline constexpr time_ns no_launch_cut = std::numeric_limits<time_ns>::min();

/// Stage 7: blocking copies. The call gets a piece that enqueues the copy (a launch cut:
/// zero-length at the call's start, or up to the copy's start, see blocking_cut_time),
/// and the rest of the call waits for the copy to end. Returns, per cpu event, the copy it
/// blocks on or no_index.
inline std::vector<std::uint32_t> find_blocking_copies(const decoded_trace& d, thread_table& tt, const gpu_links& L,
                                                       const flat_events& F, const build_settings& s,
                                                       std::vector<time_ns>& launch_at) {
  std::vector<std::uint32_t> blocking(d.cpu.size(), no_index);
  for (std::uint32_t e = 0; e < d.cpu.size(); ++e) {
    if (!is_runtime(d, e) || tt.on_ignored(d, e)) continue;
    auto copy = blocking_copy_of(d, L, F, s, e);
    if (copy == no_index) continue;
    auto& x = d.cpu[e];
    launch_at[e] = blocking_cut_time(d, L, F, copy, e);
    if (F.end_of(e) > x.ts) tt.threads[x.thread].cuts.push_back({launch_at[e], cut_launch, e});
    blocking[e] = copy;
  }
  return blocking;
}

/// Stage 7b: graph launches. A call that launches several GPU ops (cudaGraphLaunch,
/// hipGraphLaunch) submits them while it runs: its first op often starts long before the
/// call returns. The call gets a piece that launches them, up to its first op's start
/// (zero-length at the call's start when the stream was still busy then, as for a
/// blocking copy), and the rest of the call is its own CPU work. Sets `launch_at` of
/// each such call to where it is cut.
inline void find_graph_launches(const decoded_trace& d, thread_table& tt, const gpu_links& L, const flat_events& F,
                                std::vector<time_ns>& launch_at) {
  for (std::uint32_t e = 0; e < d.cpu.size(); ++e) {
    if (L.sem[e] != call_semantics::launch || L.ops_begin[e + 1] - L.ops_begin[e] < 2) continue;
    if (!is_runtime(d, e) || tt.on_ignored(d, e)) continue;
    auto first = L.ops_list[L.ops_begin[e]];
    for (auto k = L.ops_begin[e]; k < L.ops_begin[e + 1]; ++k)
      if (d.gpu[L.ops_list[k]].ts < d.gpu[first].ts) first = L.ops_list[k];
    auto& x = d.cpu[e];
    if (F.end_of(e) <= x.ts) continue;
    launch_at[e] = blocking_cut_time(d, L, F, first, e);
    tt.threads[x.thread].cuts.push_back({launch_at[e], cut_launch, e});
  }
}

/// Whether `t` falls strictly inside a runtime call on thread `m`. Anchors do not cut
/// runtime calls (a sync cut in two would wait for a fixed time in its first piece).
inline bool inside_runtime(const decoded_trace& d, const thread_rec& m, time_ns t) {
  auto k = slice_containing(m, t);
  return k != no_pos && m.slices[k].start < t && m.slices[k].ev != no_index && is_runtime(d, m.slices[k].ev);
}

/// Whether the first op of a stream needs an anchor on the main thread: nobody we saw
/// launched it, or it started well after its launch returned.
inline bool head_needs_anchor(const decoded_trace& d, const gpu_links& L, const flat_events& F,
                              const std::vector<time_ns>& launch_at, const build_settings& s, std::uint32_t o) {
  auto r = L.launch_of[o];
  if (r == no_index) return true;
  const time_ns launched = launch_at[r] != no_launch_cut ? launch_at[r] : F.end_of(r);
  return d.gpu[o].ts - launched > s.launch_latency;
}

/// Whether main thread `m` has a slice boundary strictly inside (a, b).
inline bool boundary_inside(const thread_rec& m, time_ns a, time_ns b) {
  auto& sl = m.slices;
  auto it = std::upper_bound(sl.begin(), sl.end(), a, [](time_ns v, const slice& s) { return v < s.start; });
  if (it != sl.end() && it->start < b) return true;
  if (it != sl.begin()) {
    auto& p = *(it - 1);
    if (p.end > a && p.end < b) return true;
  }
  return false;
}

/// Worker sessions and the anchors that start them (stage 8).
struct anchor_plan {
  std::vector<session> sessions;
  std::vector<anchor_rec> anchors;
};

/// Stage 8: splits each worker thread into sessions at idle times of at least
/// `session_gap` across which its main thread did something, and anchors each session
/// to the main thread at its start (cutting the main thread there unless inside a
/// runtime call). The main thread itself starts at an origin anchor at `t0`; a stream
/// whose first op needs an anchor gets one on the first main thread.
inline anchor_plan plan_anchors(const decoded_trace& d, thread_table& tt, const gpu_links& L, const flat_events& F,
                                const std::vector<time_ns>& launch_at, const main_threads& M,
                                const build_settings& s) {
  anchor_plan P;
  auto& threads = tt.threads;
  for (std::uint32_t t = 0; t < threads.size(); ++t) {
    auto& th = threads[t];
    if (th.ignored || th.slices.empty() || th.main == no_index) continue;
    if (th.is_main) { th.cuts.push_back({M.t0, cut_anchor}); continue; } // origin
    auto& m = threads[th.main];
    std::size_t first = 0;
    for (std::size_t k = 1; k <= th.slices.size(); ++k) {
      bool split = k == th.slices.size();
      if (!split) {
        time_ns a = th.slices[k - 1].end, b = th.slices[k].start;
        split = b - a >= s.session_gap && boundary_inside(m, a, b);
      }
      if (!split) continue;
      P.sessions.push_back({t, first, k - 1});
      const time_ns at = th.slices[first].start;
      const bool soft = inside_runtime(d, m, at);
      if (!soft) m.cuts.push_back({at, cut_anchor});
      P.anchors.push_back({t, at, soft});
      first = k;
    }
  }
  if (M.first != no_index)
    for (auto& st : L.streams)
      if (!st.ops.empty() && head_needs_anchor(d, L, F, launch_at, s, st.ops.front()) &&
          !inside_runtime(d, threads[M.first], d.gpu[st.ops.front()].ts))
        threads[M.first].cuts.push_back({d.gpu[st.ops.front()].ts, cut_anchor});
  return P;
}

/// Applies the cuts of a thread (sorted) to its slices: splits slices at them and puts
/// zero-length markers (anchor, join, memory) where the thread is idle.
inline void apply_cuts(thread_rec& th) {
  if (th.cuts.empty()) return;
  std::sort(th.cuts.begin(), th.cuts.end());
  std::vector<slice> out;
  out.reserve(th.slices.size() + th.cuts.size());
  std::size_t c = 0;
  auto marker = [&](time_ns t, std::uint8_t kind) {
    slice m;
    m.start = m.end = t;
    m.marker = kind;
    m.cut_before = true;
    out.push_back(m);
  };
  auto idle = [&](const cut& k) {
    switch (k.type) {
    case cut_anchor:
      if (out.empty() || out.back().end != k.t) marker(k.t, mk_anchor);
      break;
    case cut_join:
      if (out.empty() || !(out.back().marker == mk_join && out.back().start == k.t)) marker(k.t, mk_join);
      break;
    case cut_memory:
      if (out.empty() || out.back().start != k.t || out.back().end != k.t) marker(k.t, mk_memory);
      break;
    default: break;
    }
  };
  for (auto& s0 : th.slices) {
    while (c < th.cuts.size() && th.cuts[c].t < s0.start) idle(th.cuts[c++]);
    slice s = s0;
    // cuts at this slice's start; a launch cut at a zero-length slice of another event
    // waits for the slice of its own event
    while (c < th.cuts.size() && th.cuts[c].t == s.start &&
           !(th.cuts[c].type == cut_launch && th.cuts[c].ev != s.ev && s.start == s.end)) {
      auto& k = th.cuts[c++];
      if (k.type == cut_anchor) { if (out.empty() || out.back().end != k.t) marker(k.t, mk_anchor); }
      else if (k.type == cut_join) marker(k.t, mk_join);
      else if (k.type == cut_memory) s.cut_before = true;
      else if (k.type == cut_launch && k.ev == s.ev) {
        slice z = s;
        z.end = z.start;
        out.push_back(z);
        s.cut_before = true;
      }
    }
    while (c < th.cuts.size() && th.cuts[c].t < s.end) {
      auto t = th.cuts[c++].t;
      if (t == s.start) continue;
      slice a = s;
      a.end = t;
      out.push_back(a);
      s.start = t;
      s.cut_before = true;
      s.anchored = false;
    }
    out.push_back(s);
  }
  while (c < th.cuts.size()) idle(th.cuts[c++]);
  th.slices = std::move(out);
  th.cuts.clear();
}

/// Applies the cuts of type `type` of every thread now, keeping the others for later.
inline void apply_cuts_of_type(thread_table& tt, std::uint8_t type, unsigned workers = 1) {
  parallel_for(tt.threads.size(), workers, [&](std::size_t t) {
    auto& th = tt.threads[t];
    std::vector<cut> now, later;
    for (auto& c : th.cuts) (c.type == type ? now : later).push_back(c);
    if (now.empty()) return;
    th.cuts = std::move(now);
    apply_cuts(th);
    th.cuts = std::move(later);
  });
}

/// Stage 9: joins. A main thread blocked (inside one slice for at least `join_coverage`
/// of it, or idle) while a worker session ran resumes when the session ends; an idle
/// main thread gets a join cut there.
inline std::vector<join_rec> plan_joins(thread_table& tt, const anchor_plan& P, const build_settings& s) {
  std::vector<join_rec> joins;
  for (auto& ss : P.sessions) {
    auto& w = tt.threads[ss.thread];
    auto& m = tt.threads[w.main];
    auto& L = w.slices[ss.last];
    const time_ns B = L.end, first = w.slices[ss.first].start;
    auto& sl = m.slices;
    auto it = std::upper_bound(sl.begin(), sl.end(), B, [](time_ns v, const slice& x) { return v < x.start; });
    const slice* cont = nullptr;
    if (it != sl.begin() && (it - 1)->start < B && B < (it - 1)->end) cont = &*(it - 1);
    if (cont) {
      if (cont->start > L.start) continue; // main did something while the last slice ran
      double cover = double(B - std::max(first, cont->start)) / double(cont->end - cont->start);
      if (cover < s.join_coverage) continue;
      joins.push_back({ss.thread, B, false});
    } else {
      time_ns prev_end = it == sl.begin() ? std::numeric_limits<time_ns>::min() : (it - 1)->end;
      time_ns next_start = it == sl.end() ? std::numeric_limits<time_ns>::max() : it->start;
      if (it == sl.end() || prev_end > L.start) continue;
      const time_ns from = std::max(prev_end, first);
      if (next_start <= from || double(B - from) / double(next_start - from) < s.join_coverage) continue;
      m.cuts.push_back({B, cut_join});
      joins.push_back({ss.thread, B, true});
    }
  }
  return joins;
}

/// Whether a `[memory]` event is about device memory.
inline bool is_device_memory(const memory_event& m) noexcept {
  return m.device_type == 1 || m.device_type == 6 || (m.device_type < 0 && m.device_id >= 0);
}

/// Stage 10: the thread each device `[memory]` event is charged to (its own, or its
/// process's main thread when its own has no slices), with a memory cut there. One
/// entry per device memory event, in file order; no_index when no thread takes it.
inline std::vector<std::uint32_t> plan_memory(const decoded_trace& d, thread_table& tt, const main_threads& M) {
  std::vector<std::uint32_t> mem_thread;
  auto& threads = tt.threads;
  for (std::uint32_t i = 0; i < d.memory.size(); ++i) {
    auto& m = d.memory[i];
    if (!is_device_memory(m)) continue;
    auto t = m.thread;
    if (t >= threads.size() || threads[t].ignored || threads[t].slices.empty()) {
      t = no_index;
      for (std::uint32_t k = 0; k < threads.size(); ++k)
        if (threads[k].is_main && threads[k].key.pid == d.threads[m.thread].pid) { t = k; break; }
      if (t == no_index) t = M.first;
    }
    mem_thread.push_back(t);
    if (t == no_index) continue;
    threads[t].cuts.push_back({m.ts, cut_memory});
  }
  return mem_thread;
}

/// Stage 11: gives every slice its iteration, phase and layer. Backward work without a
/// forward operator takes the layer of the backward work before it.
inline void classify_slices(thread_table& tt, const flat_events& F, const iteration_table& its, layer_namer& layers) {
  for (auto& th : tt.threads) {
    name_id last_bwd_layer = no_name;
    for (auto& s : th.slices) {
      s.iteration = its.at(s.start);
      if (s.ev == no_index) {
        s.ph = s.marker == mk_join && s.iteration >= 0 ? phase::backward : phase::other;
        continue;
      }
      auto& a = F.attr[s.ev];
      bool unmapped = false;
      s.layer = layers.layer_of(s.ev, unmapped);
      if (a.bwd != no_index && !unmapped) last_bwd_layer = s.layer;
      if (unmapped || (th.backward && a.bwd == no_index && s.layer == no_name)) s.layer = last_bwd_layer;
      if (s.iteration < 0) s.ph = phase::other;
      else if (a.mark) s.ph = static_cast<phase>(a.mark - 1);
      else if (th.backward) s.ph = phase::backward;
      else if (a.op != no_index) s.ph = phase::forward;
      else s.ph = phase::other;
    }
  }
}

/// Marks the main-thread slices that joins wait in, so merging keeps them apart.
inline void mark_join_targets(thread_table& tt, const std::vector<join_rec>& joins) {
  for (auto& j : joins) {
    if (j.marker) continue;
    auto& m = tt.threads[tt.threads[j.thread].main];
    auto k = slice_containing(m, j.B);
    if (k != no_pos) m.slices[k].no_merge = true;
  }
}

/// Stage 12: merges contiguous plain slices of the same operator, layer, phase and
/// iteration (never runtime calls, markers, join targets or slices after a cut).
inline void merge_slices(const decoded_trace& d, thread_rec& th, const flat_events& F) {
  auto plain = [&](const slice& s) {
    return s.ev != no_index && s.marker == mk_none && !is_runtime(d, s.ev) && !s.no_merge;
  };
  auto& sl = th.slices;
  if (sl.size() < 2) return;
  std::size_t w = 0;
  for (std::size_t r = 1; r < sl.size(); ++r) {
    auto& p = sl[w];
    auto& s = sl[r];
    if (plain(p) && plain(s) && !s.cut_before && p.end == s.start && F.attr[p.ev].op == F.attr[s.ev].op &&
        p.layer == s.layer && p.ph == s.ph && p.iteration == s.iteration) {
      p.end = s.end;
      continue;
    }
    sl[++w] = s;
  }
  sl.resize(w + 1);
}

/// What the cut stages (6-12) decide besides the slices themselves.
struct thread_plan {
  main_threads mains;
  std::vector<std::uint32_t> blocking_copy; ///< per cpu event
  /// Per cpu event: where a blocking copy or a graph launch is cut, its first piece
  /// launching its GPU work (no_launch_cut for every other call).
  std::vector<time_ns> launch_at;
  anchor_plan anchors;
  std::vector<join_rec> joins;
  std::vector<std::uint32_t> mem_thread;    ///< per device memory event
};

/// Stages 6-12 in order: from flattened threads to the final slices of every thread.
inline thread_plan cut_threads(const decoded_trace& d, thread_table& tt, const gpu_links& L, const flat_events& F,
                               const iteration_table& its, layer_namer& layers, const build_settings& s) {
  thread_plan P;
  P.mains = choose_main_threads(d, tt, its);
  P.launch_at.assign(d.cpu.size(), no_launch_cut);
  P.blocking_copy = find_blocking_copies(d, tt, L, F, s, P.launch_at);
  find_graph_launches(d, tt, L, F, P.launch_at);
  P.anchors = plan_anchors(d, tt, L, F, P.launch_at, P.mains, s);
  // Cutting and merging a thread's slices reads and writes that thread only: the threads
  // go in parallel (the result is the same whatever the number of workers).
  apply_cuts_of_type(tt, cut_anchor, s.threads);
  P.joins = plan_joins(tt, P.anchors, s);
  P.mem_thread = plan_memory(d, tt, P.mains);
  parallel_for(tt.threads.size(), s.threads, [&](std::size_t t) { apply_cuts(tt.threads[t]); });
  classify_slices(tt, F, its, layers);
  mark_join_targets(tt, P.joins);
  if (s.merge_slices)
    parallel_for(tt.threads.size(), s.threads, [&](std::size_t t) { merge_slices(d, tt.threads[t], F); });
  return P;
}

//! @endcond

} // namespace daydream::io::detail

#endif
