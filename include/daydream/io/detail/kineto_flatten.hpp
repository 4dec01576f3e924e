// Defines the thread-flattening stage of Kineto ingestion: each CPU thread's nested events become a sequence of slices.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_FLATTEN_HPP
#define DAYDREAM_IO_DETAIL_KINETO_FLATTEN_HPP

#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_parallel.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// What flattening finds out about every CPU event.
struct flat_events {
  std::vector<ev_attr> attr;              ///< per cpu event
  std::vector<std::uint32_t> top_ordinal; ///< per top-level operator: k of "name#k" in its thread and iteration
  std::size_t clamped = 0;                ///< events that ended after their parent, clamped to it
  /// Per cpu event: its end after clamping into its parent. A table of its own, not an
  /// attribute: the stages after the tasks read the ends only, and the other attributes
  /// go before them without a copy of the ends made when memory peaks.
  std::vector<time_ns> ends;

  /// The end of CPU event `e` after clamping.
  time_ns end_of(std::uint32_t e) const { return ends[e]; }
  /// Keeps only the ends of the events (what the stages after the tasks read), giving
  /// back the memory of the other attributes.
  void keep_ends_only() {
    std::vector<ev_attr>().swap(attr);
    std::vector<std::uint32_t>().swap(top_ordinal);
  }

  /// The innermost event of thread `th` containing `ts` (start <= ts < end, or a
  /// zero-length one at ts), searching the nesting from the last event starting <= ts;
  /// with `starting_exactly`, the deepest event starting at `ts`.
  std::uint32_t event_at(const decoded_trace& d, const thread_rec& th, time_ns ts, bool starting_exactly) const {
    auto& ev = th.events;
    auto it = std::upper_bound(ev.begin(), ev.end(), ts, [&](time_ns v, std::uint32_t e) { return v < d.cpu[e].ts; });
    if (it == ev.begin()) return no_index;
    std::uint32_t e = *(it - 1);
    if (starting_exactly) return d.cpu[e].ts == ts ? e : no_index;
    for (std::uint32_t c = e; c != no_index; c = attr[c].parent)
      if (ts < ends[c] || (ends[c] == d.cpu[c].ts && ts == d.cpu[c].ts)) return c;
    return no_index;
  }
};

namespace flatten_detail {
inline int cat_rank(ecat c) {
  switch (c) {
  case ecat::python_function: return 0;
  case ecat::user_annotation: return 1;
  case ecat::cpu_op: return 2;
  default: return 3;
  }
}
/// Whether a zero-length event must still appear (it launches or waits for GPU work).
inline bool needed_zero(const decoded_trace& d, const gpu_links& L, std::uint32_t e) {
  if (!is_runtime(d, e)) return false;
  if (L.launches(e)) return true;
  auto sem = L.sem[e];
  return sem != call_semantics::plain && sem != call_semantics::launch && sem != call_semantics::async_copy;
}
struct top_key {
  std::uint32_t thread;
  std::int32_t iteration;
  std::string_view name;
  friend bool operator==(const top_key&, const top_key&) = default;
};
struct top_key_hash {
  std::size_t operator()(const top_key& k) const noexcept {
    return std::hash<std::string_view>{}(k.name) ^ (std::size_t(k.thread) << 20) ^ std::size_t(std::uint32_t(k.iteration));
  }
};

/// Flattens threads into `F` (see flatten_threads), numbering top-level operators by name
/// within each thread and iteration. It writes the attributes of the events of the
/// threads it flattens only, so that each thread can have a flattener of its own, on a
/// thread of its own; `clamped` counts its own clamped events.
class thread_flattener {
public:
  thread_flattener(const decoded_trace& d, const gpu_links& L, const iteration_table& its, flat_events& F)
      : d_(d), L_(L), its_(its), F_(F) {}

  /// Flattens thread `th`: its events in nesting order, their attributes, its slices.
  void flatten(thread_rec& th) {
    sort_nesting(th.events);
    cut_slices(th);
    // The autograd engine's thread: evaluate_function wrappers (PyTorch >= 1.9), or, in
    // older traces without them, *Backward operators (the main thread is excluded later).
    for (auto e : th.events)
      if (is_backward_root(d_.cpu[e].name, d_.cpu[e].cat == ecat::cpu_op)) { th.backward = true; break; }
  }

private:
  /// Sorts a thread's events into nesting order: by start, longer first, outer
  /// categories first, then file order.
  void sort_nesting(std::vector<std::uint32_t>& ev) const {
    // Sorted on compact keys rather than through the event table.
    struct key { time_ns ts, neg_dur; std::uint32_t rank_and_index[2]; };
    std::vector<key> keys(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) {
      auto& x = d_.cpu[ev[i]];
      keys[i] = {x.ts, -x.dur, {static_cast<std::uint32_t>(cat_rank(x.cat)), ev[i]}};
    }
    std::sort(keys.begin(), keys.end(), [](const key& a, const key& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.neg_dur != b.neg_dur) return a.neg_dur < b.neg_dur;
      if (a.rank_and_index[0] != b.rank_and_index[0]) return a.rank_and_index[0] < b.rank_and_index[0];
      return a.rank_and_index[1] < b.rank_and_index[1];
    });
    for (std::size_t i = 0; i < ev.size(); ++i) ev[i] = keys[i].rank_and_index[1];
  }

  /// Walks a thread's events in nesting order with a stack of the open ones: gives each
  /// its parent, clamped end and attributes, and cuts the thread's time into slices,
  /// each attributed to the innermost event running then.
  void cut_slices(thread_rec& th) {
    auto& ev = th.events;
    struct open { std::uint32_t ev; time_ns end; };
    std::vector<open> stack;
    auto& sl = th.slices;
    sl.reserve(ev.size() * 2);
    time_ns cursor = std::numeric_limits<time_ns>::min();
    auto emit = [&](time_ns a, time_ns b, std::uint32_t e) {
      slice s;
      s.start = a; s.end = b; s.ev = e;
      sl.push_back(s);
      F_.attr[e].sliced = true;
    };
    for (auto e : ev) {
      auto& x = d_.cpu[e];
      while (!stack.empty() && stack.back().end <= x.ts) {
        auto top = stack.back();
        if (cursor < top.end) emit(cursor, top.end, top.ev);
        cursor = top.end;
        stack.pop_back();
      }
      if (!stack.empty() && cursor < x.ts) emit(cursor, x.ts, stack.back().ev);
      cursor = x.ts;
      // A record_function range (`Optimizer.step#...`, a user's annotation) starts inside
      // the Python call that opens it (`_record_function_enter_new`) and outlives it: it
      // is not that call's child. The Python calls it outlives end where it starts, so
      // what runs inside the range inherits the range's phase.
      if (x.cat == ecat::user_annotation)
        while (!stack.empty() && d_.cpu[stack.back().ev].cat == ecat::python_function &&
               x.ts + x.dur > stack.back().end)
          stack.pop_back();
      auto& a = F_.attr[e];
      time_ns end = x.ts + x.dur;
      if (!stack.empty()) {
        a.parent = stack.back().ev;
        if (end > stack.back().end) { end = stack.back().end; ++clamped; }
      }
      F_.ends[e] = end;
      inherit(e);
      if (end == x.ts) {
        if (needed_zero(d_, L_, e)) emit(x.ts, x.ts, e);
        continue;
      }
      stack.push_back({e, end});
    }
    while (!stack.empty()) {
      auto top = stack.back();
      if (cursor < top.end) emit(cursor, top.end, top.ev);
      cursor = std::max(cursor, top.end);
      stack.pop_back();
    }
  }

  /// Gives event `e` the attributes it inherits from its parent (operator, module,
  /// backward root, phase mark, AccumulateGrad), then those it sets itself.
  void inherit(std::uint32_t e) {
    auto& a = F_.attr[e];
    auto& x = d_.cpu[e];
    const bool is_op = x.cat == ecat::cpu_op;
    if (a.parent != no_index) {
      auto& p = F_.attr[a.parent];
      a.op = p.op; a.top_op = p.top_op; a.module = p.module; a.bwd = p.bwd; a.mark = p.mark;
      a.accgrad = p.accgrad;
    }
    if (is_op && x.name == "torch::autograd::AccumulateGrad") a.accgrad = e;
    if (is_op) {
      a.op = e;
      // A step marker recorded as an operator (legacy traces) names no layer: the
      // operators inside it are the top-level ones.
      if (a.top_op == no_index && !starts_with(x.name, "ProfilerStep#") && !its_.is_marker(e)) {
        a.top_op = e;
        // Layers named after top-level operators: name#k, k-th such op of the iteration.
        F_.top_ordinal[e] = top_count_[top_key{x.thread, its_.at(x.ts), x.name}]++;
      }
    }
    if (x.cat == ecat::python_function && starts_with(x.name, "nn.Module:")) a.module = e;
    if (a.bwd == no_index && is_backward_root(x.name, is_op)) a.bwd = e;
    auto m = its_.is_marker(e) ? std::uint8_t(0)
                               : phase_mark(x.name, is_op, x.cat == ecat::python_function,
                                            x.cat == ecat::user_annotation);
    // Annotations as layers (decoded_trace::annotation_layers): not a step's or a phase's.
    if (d_.annotation_layers && x.cat == ecat::user_annotation && !m && !its_.is_marker(e) &&
        !starts_with(x.name, "ProfilerStep#"))
      a.module = e;
    if (m) a.mark = m;
  }

public:
  std::size_t clamped = 0;

private:
  const decoded_trace& d_;
  const gpu_links& L_;
  const iteration_table& its_;
  flat_events& F_;
  std::unordered_map<top_key, std::uint32_t, top_key_hash> top_count_;
};

} // namespace flatten_detail

/// Stage 4: flattens every thread that is not ignored. Sorts its events into nesting
/// order (by start, longer first, outer categories first, then file order), clamps a
/// child that ends after its parent, gives each event the attributes it inherits
/// (operator, module, backward root, phase mark) and cuts the thread's time into slices,
/// each attributed to the innermost event running then. A zero-length event gets a
/// zero-length slice only when it launches or waits for GPU work. A thread running
/// `autograd::engine::evaluate_function` is marked as a backward thread. Threads are
/// flattened on up to `workers` threads at once (each reads and writes its own events
/// only: the result is the same whatever their number).
inline flat_events flatten_threads(const decoded_trace& d, thread_table& tt, const gpu_links& L,
                                   const iteration_table& its, unsigned workers = 1) {
  flat_events F;
  F.attr.resize(d.cpu.size());
  F.ends.resize(d.cpu.size());
  F.top_ordinal.assign(d.cpu.size(), 0);
  auto& threads = tt.threads;
  const auto order = largest_first(threads.size(), [&](std::size_t t) { return threads[t].events.size(); });
  std::vector<std::size_t> clamped(threads.size(), 0);
  parallel_for(order.size(), workers, [&](std::size_t k) {
    auto& th = threads[order[k]];
    if (th.ignored) return;
    flatten_detail::thread_flattener flattener(d, L, its, F);
    flattener.flatten(th);
    clamped[order[k]] = flattener.clamped;
  });
  for (auto c : clamped) F.clamped += c;
  return F;
}

//! @endcond

} // namespace daydream::io::detail

#endif
