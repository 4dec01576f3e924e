// Defines the CPU thread table of Kineto ingestion: threads with their events and slices, and lookups on them.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_THREADS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_THREADS_HPP

#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// Knobs of the graph builder (see io::ingest_options for their meaning).
struct build_settings {
  bool merge_slices = true;
  time_ns sync_tolerance = 50'000;
  time_ns launch_latency = 10'000;
  time_ns implicit_sync_min = 50'000;
  time_ns implicit_sync_window = 15'000;
  time_ns session_gap = 50'000;
  double join_coverage = 0.5;
  bool infer_event_waits = true;
  std::size_t max_warnings = 32;
  std::string step_annotation; ///< ingest_options::step_annotation
  unsigned threads = 1;        ///< threads for the per-thread and per-stream stages (the graph is the same whatever their number)
};

/// Warnings for people: the first `max` are kept, the rest counted.
struct warning_log {
  std::size_t max = 32;
  std::vector<std::string> kept;
  std::size_t dropped = 0;
  void add(std::string w) {
    if (kept.size() < max) kept.push_back(std::move(w));
    else ++dropped;
  }
};

/// A slice of a CPU thread's time, attributed to the innermost event running then.
/// (Members ordered by size: a trace has millions of slices, 48 bytes each.)
struct slice {
  time_ns start = 0, end = 0;
  time_ns wait_until = std::numeric_limits<time_ns>::min(); ///< latest trace end of what it waits for
  std::uint32_t ev = no_index;      ///< innermost cpu event; no_index for a marker
  std::int32_t iteration = -1;
  name_id layer = no_name;
  task_id task = no_task;
  std::uint8_t marker = 0;          ///< 0 none, 1 anchor / origin, 2 join, 3 memory
  bool cut_before = false;          ///< starts at a cut: never merged with the slice before
  bool no_merge = false;            ///< a join target
  bool anchored = false;            ///< first slice of a worker session (gap before it is 0)
  phase ph = phase::other;
};

enum : std::uint8_t { mk_none = 0, mk_anchor = 1, mk_join = 2, mk_memory = 3 };
enum : std::uint8_t { cut_anchor, cut_join, cut_memory, cut_launch };

/// A place where a thread's slices are cut (or an idle marker is put).
struct cut {
  time_ns t;
  std::uint8_t type;
  std::uint32_t ev = no_index; ///< cut_launch: the call that gets a zero-length launch piece
  friend bool operator<(const cut& a, const cut& b) { return a.t != b.t ? a.t < b.t : a.type < b.type; }
};

/// Per CPU event attributes, inherited top-down along the nesting (filled by flattening).
struct ev_attr {
  std::uint32_t parent = no_index;
  std::uint32_t op = no_index;      ///< innermost operator (cpu_op), itself included
  std::uint32_t top_op = no_index;  ///< outermost operator
  std::uint32_t module = no_index;  ///< innermost `nn.Module:` python_function
  std::uint32_t bwd = no_index;     ///< outermost backward root (evaluate_function / *Backward*)
  std::uint32_t accgrad = no_index; ///< innermost torch::autograd::AccumulateGrad
  std::uint8_t mark = 0;            ///< phase marker (1 + phase), innermost wins
  bool sliced = false;              ///< covered by at least one slice
};

/// One CPU thread: its events, then its slices as the stages cut and label them.
struct thread_rec {
  pidtid key;
  std::vector<std::uint32_t> events; ///< cpu events; in nesting order once flattened (build_graph releases them after the cuts)
  std::vector<slice> slices;
  std::vector<cut> cuts;
  bool ignored = false;              ///< python frames only
  bool is_main = false;
  bool backward = false;             ///< runs autograd backward
  std::uint32_t main = no_index;     ///< the main thread of its process
  resource_id res = no_resource;
};

/// Whether CPU event `e` is a runtime or driver call.
inline bool is_runtime(const decoded_trace& d, std::uint32_t e) noexcept {
  return d.cpu[e].cat == ecat::runtime || d.cpu[e].cat == ecat::driver;
}

/// The CPU threads of a trace with their events, and each thread's runtime calls by start.
struct thread_table {
  std::vector<thread_rec> threads;
  std::vector<std::vector<std::uint32_t>> runtime; ///< per thread: runtime calls sorted by start

  /// The thread of `k`, or no_index.
  std::uint32_t find(pidtid k) const {
    auto it = by_key_.find(k);
    return it == by_key_.end() ? no_index : it->second;
  }
  /// The runtime call on thread `k` starting at `ts` (a launch flow's start), or no_index.
  std::uint32_t runtime_at(const decoded_trace& d, pidtid k, time_ns ts) const {
    auto t = find(k);
    if (t == no_index) return no_index;
    auto& idx = runtime[t];
    auto it = std::lower_bound(idx.begin(), idx.end(), ts, [&](std::uint32_t e, time_ns v) { return d.cpu[e].ts < v; });
    if (it != idx.end() && d.cpu[*it].ts == ts) return *it;
    return no_index;
  }
  /// Whether CPU event `e` is on a thread that holds Python frames only.
  bool on_ignored(const decoded_trace& d, std::uint32_t e) const { return threads[d.cpu[e].thread].ignored; }

  std::unordered_map<pidtid, std::uint32_t, pidtid_hash> by_key_; ///< first thread of each key
};

/// Stage 1: the CPU threads of `d`, their events (file order) and runtime calls; a thread
/// of Python frames only is ignored.
inline thread_table group_threads(const decoded_trace& d) {
  thread_table tt;
  auto& threads = tt.threads;
  threads.resize(d.threads.size());
  for (std::uint32_t t = 0; t < d.threads.size(); ++t) {
    threads[t].key = d.threads[t];
    tt.by_key_.try_emplace(d.threads[t], t);
  }
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) threads[d.cpu[i].thread].events.push_back(i);
  for (auto& th : threads) {
    bool only_python = !th.events.empty();
    for (auto e : th.events)
      if (d.cpu[e].cat != ecat::python_function) { only_python = false; break; }
    th.ignored = only_python;
  }
  tt.runtime.resize(threads.size());
  for (std::uint32_t t = 0; t < threads.size(); ++t) {
    auto& v = tt.runtime[t];
    for (auto e : threads[t].events) if (is_runtime(d, e)) v.push_back(e);
    std::stable_sort(v.begin(), v.end(), [&](auto a, auto b) { return d.cpu[a].ts < d.cpu[b].ts; });
  }
  return tt;
}

// ------------------------------------------------------------------ slice lookups
inline constexpr std::size_t no_pos = std::numeric_limits<std::size_t>::max();

/// The slice with start <= t < end (the last such when zero-length ones share t).
inline std::size_t slice_containing(const thread_rec& th, time_ns t) {
  auto& sl = th.slices;
  auto it = std::upper_bound(sl.begin(), sl.end(), t, [](time_ns v, const slice& s) { return v < s.start; });
  while (it != sl.begin()) {
    --it;
    if (it->start <= t && t < it->end) return static_cast<std::size_t>(it - sl.begin());
    if (it->end <= t) break;
  }
  return no_pos;
}
/// The last slice ending exactly at t.
inline std::size_t slice_ending_at(const thread_rec& th, time_ns t) {
  auto& sl = th.slices;
  auto it = std::upper_bound(sl.begin(), sl.end(), t, [](time_ns v, const slice& s) { return v < s.start; });
  while (it != sl.begin()) {
    --it;
    if (it->end == t) return static_cast<std::size_t>(it - sl.begin());
    if (it->end < t) break;
  }
  return no_pos;
}
/// The last slice ending at or before t.
inline std::size_t slice_ending_by(const thread_rec& th, time_ns t) {
  auto& sl = th.slices;
  auto it = std::upper_bound(sl.begin(), sl.end(), t, [](time_ns v, const slice& s) { return v < s.start; });
  while (it != sl.begin()) {
    --it;
    if (it->end <= t) return static_cast<std::size_t>(it - sl.begin());
  }
  return no_pos;
}
/// The first slice starting exactly at t (a marker at t comes first).
inline std::size_t slice_starting_at(const thread_rec& th, time_ns t, std::uint8_t marker = 255) {
  auto& sl = th.slices;
  auto it = std::lower_bound(sl.begin(), sl.end(), t, [](const slice& s, time_ns v) { return s.start < v; });
  for (; it != sl.end() && it->start == t; ++it)
    if (marker == 255 || it->marker == marker) return static_cast<std::size_t>(it - sl.begin());
  return no_pos;
}

//! @endcond

} // namespace daydream::io::detail

#endif
