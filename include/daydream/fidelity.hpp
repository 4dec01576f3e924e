// Defines where a graph departs from the trace it was built from: the waits a replay cannot reproduce, by kind, along the trace's critical path.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_FIDELITY_HPP
#define DAYDREAM_FIDELITY_HPP

#include <daydream/dependency.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace daydream {

/// A kind of event the replay does not reproduce. The first four make the replay of an
/// iteration longer than the trace (the trace ran a task earlier than its dependencies
/// allow), the last four shorter (the trace waited for something the graph does not
/// have).
enum class divergence : std::uint8_t {
  stream_overlap,   ///< GPU work starts before the previous work on its stream ends
  thread_overlap,   ///< a CPU call starts before the previous call on its thread ends
  early_launch,     ///< GPU work starts before the CPU call that launches it returns
  early_dependency, ///< a task starts before another dependency of it ends
  launch_latency,   ///< GPU work starts a little after its launch returns, on an idle stream
  gpu_wait,         ///< GPU work starts later than its launch, stream and dependencies allow
  cpu_wait,         ///< a CPU call starts later than its thread and dependencies allow
  other_wait,       ///< a task on another resource (a link) starts later than allowed
};
/// Number of divergence values.
inline constexpr int divergence_count = 8;

/// The name of a divergence ("stream_overlap"), as JSON keys spell it.
inline constexpr std::string_view to_string(divergence d) noexcept {
  constexpr std::string_view names[] = {"stream_overlap", "thread_overlap", "early_launch", "early_dependency",
                                        "launch_latency", "gpu_wait",       "cpu_wait",     "other_wait"};
  auto i = static_cast<unsigned>(d);
  return i < divergence_count ? names[i] : std::string_view("?");
}

/// Whether a divergence makes the replay longer than the trace (+1) or shorter (-1).
inline constexpr int divergence_sign(divergence d) noexcept { return d <= divergence::early_dependency ? 1 : -1; }

/// One kind of divergence along an iteration's critical path in the trace.
struct divergence_cause {
  divergence kind = divergence::gpu_wait;
  time_ns time = 0;          ///< summed over the path's tasks
  std::size_t tasks = 0;     ///< tasks of the path that show it
  task_id largest = no_task; ///< the task that shows the most of it
  time_ns largest_time = 0;  ///< how much of it
  dep_kind edge = dep_kind::control; ///< for early_dependency: the edge kind of `largest`
};

/// Options of trace_divergence.
struct divergence_options {
  /// A task counts only when it starts more than this before or after what its
  /// dependencies allow (Kineto's microsecond timestamps).
  time_ns tolerance = 1'000;
  /// GPU work that starts at most this long after its launch returns on an idle stream
  /// is launch latency, which a replay from a trace leaves out (io::kineto_options
  /// launch_latency); later starts are waits the graph does not have.
  time_ns launch_latency = 10'000;
};

/// Where the trace of iteration `iteration` departs from what the graph `g` (as built from
/// that trace: every task's trace_start, duration and gap) lets a replay reproduce.
///
/// Every task of the iteration gets the start its dependencies allow in trace times: the
/// latest trace end of a predecessor, plus the gap after the previous task of its
/// resource. A CPU call that waits (for GPU work, or a thread it joins) is taken to
/// start when what it waits for ended, as the graph models it. The trace's critical path
/// of the iteration is followed back from its last task through the predecessor that
/// allowed each start; along it, every task that starts earlier than allowed (the trace
/// overlapped what the replay serializes: the replay is longer) or later (the trace
/// waited for something the graph does not have: the replay is shorter) is counted by
/// kind. Along that path the trace's duration is the path's durations and gaps plus the
/// waits minus the overlaps, so the causes say why a replay that follows the same path
/// comes out longer or shorter. Returns the causes, largest time first; none for an
/// iteration without tasks or a graph without trace times.
///
///     for (auto& c : daydream::trace_divergence(trace.g, 3))
///       std::cout << daydream::describe(trace.g, c) << '\n';
template <class Graph>
std::vector<divergence_cause> trace_divergence(const Graph& g, std::int32_t iteration, const divergence_options& o = {}) {
  constexpr time_ns lowest = std::numeric_limits<time_ns>::min();
  auto waits = [](dep_kind k) { return k == dep_kind::sync || k == dep_kind::control; };
  // The start a task has in the graph's model of the trace (a waiting CPU call starts when
  // what it waits for ended), and its end.
  auto start_of = [&](task_id t) {
    time_ns s = g.trace_start(t);
    if (g.kind_resource(t) != resource_kind::cpu_thread) return s;
    for (auto d : g.predecessors(t))
      if (waits(d.kind)) s = std::max(s, g.trace_start(d.from) + g.duration(d.from));
    return s;
  };
  auto end_of = [&](task_id t) { return start_of(t) + g.duration(t); };
  struct allowed {
    time_ns at = lowest;
    task_id by = no_task;
    dep_kind edge = dep_kind::control;
  };
  auto allowed_start = [&](task_id t) {
    allowed a;
    for (auto d : g.predecessors(t)) {
      time_ns e = end_of(d.from);
      const bool order = d.kind == dep_kind::cpu_order || d.kind == dep_kind::stream_order;
      if (order && g.resource_of(d.from) == g.resource_of(t)) e += g.gap(d.from);
      if (a.by == no_task || e > a.at) a = {e, d.from, d.kind};
    }
    return a;
  };

  task_id last = no_task;
  time_ns first = std::numeric_limits<time_ns>::max(), last_end = lowest;
  g.for_each_task([&](task_id t) {
    if (g.iteration(t) != iteration) return;
    first = std::min(first, start_of(t));
    if (auto e = end_of(t); e > last_end) { last_end = e; last = t; }
  });
  if (last == no_task) return {};

  std::array<divergence_cause, divergence_count> by{};
  for (int k = 0; k < divergence_count; ++k) by[k].kind = divergence(k);
  auto count = [&](divergence k, task_id t, time_ns amount, dep_kind edge) {
    auto& c = by[static_cast<int>(k)];
    c.time += amount;
    ++c.tasks;
    if (amount > c.largest_time) { c.largest_time = amount; c.largest = t; c.edge = edge; }
  };
  // Follow the path back; a bound on its length guards against a cycle in a bad graph.
  std::size_t steps = 0;
  for (task_id t = last; t != no_task && start_of(t) > first && steps++ <= g.id_bound();) {
    const auto a = allowed_start(t);
    if (a.by == no_task) break;
    const time_ns d = start_of(t) - a.at;
    const auto rk = g.kind_resource(t);
    const bool gpu = rk == resource_kind::gpu_stream || rk == resource_kind::copy_engine;
    if (d < -o.tolerance) {
      divergence k = divergence::early_dependency;
      if (a.edge == dep_kind::stream_order && gpu) k = divergence::stream_overlap;
      else if (a.edge == dep_kind::cpu_order && rk == resource_kind::cpu_thread) k = divergence::thread_overlap;
      else if (a.edge == dep_kind::launch) k = divergence::early_launch;
      count(k, t, -d, a.edge);
    } else if (d > o.tolerance) {
      divergence k = gpu ? divergence::gpu_wait : rk == resource_kind::cpu_thread ? divergence::cpu_wait : divergence::other_wait;
      if (k == divergence::gpu_wait && a.edge == dep_kind::launch && d <= o.launch_latency)
        k = divergence::launch_latency;
      count(k, t, d, a.edge);
    }
    t = a.by;
  }
  std::vector<divergence_cause> out;
  for (auto& c : by)
    if (c.tasks) out.push_back(c);
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.time > b.time; });
  return out;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline std::string fidelity_ms(time_ns t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, t >= 10'000'000 ? "%.1f ms" : "%.3f ms", double(t) / 1e6);
  return buf;
}
} // namespace detail
//! @endcond

/// One sentence on a divergence: what the trace did, how much of it lies on the path,
/// the task that shows the most of it, and what the replay does instead.
///
///     "12 GPU operations start before the previous one on its stream ends (3.104 ms of
///      overlap; the most, 0.512 ms, at `fused_gemm`): the replay runs a stream's work one
///      at a time (kernels of several streams recorded as one, or a CUDA graph's parallel
///      branches)"
template <class Graph>
std::string describe(const Graph& g, const divergence_cause& c) {
  const bool one = c.tasks == 1;
  // "3 GPU operations start" / "1 GPU operation starts"
  auto subject = [&](std::string_view noun) {
    return std::to_string(c.tasks) + " " + std::string(noun) + (one ? " starts" : "s start");
  };
  std::string at;
  if (c.largest != no_task) {
    auto name = g.name(c.largest);
    auto shown = name.size() > 60 ? std::string(name.substr(0, 57)) + "..." : std::string(name);
    at = (one ? std::string() : "; the most, " + detail::fidelity_ms(c.largest_time)) + ", at `" + shown + "`";
  }
  const auto amount = detail::fidelity_ms(c.time);
  switch (c.kind) {
  case divergence::stream_overlap:
    return subject("GPU operation") + " before the previous one on its stream ends (" + amount + " of overlap" + at +
           "): the replay runs a stream's work one at a time (kernels of several streams recorded as one, or a "
           "CUDA graph's parallel branches)";
  case divergence::thread_overlap:
    return subject("CPU call") + " before the previous call on its thread ends (" + amount + " of overlap" + at +
           "): the replay runs a thread's calls one at a time (events of several threads recorded under one "
           "thread id)";
  case divergence::early_launch:
    return subject("GPU operation") + " before the call that launches it returns (" + amount + at +
           "): the replay starts it when the call returns";
  case divergence::early_dependency:
    return subject("task") + " before a dependency of it ends (" + amount + at + ", a " +
           std::string(to_string(c.edge)) + " dependency): the replay waits for it";
  case divergence::launch_latency:
    return subject("GPU operation") + " a few microseconds after its launch returns, on an idle stream (" + amount +
           " in all" + at + "): launch latency, which the replay leaves out";
  case divergence::gpu_wait:
    return subject("GPU operation") + " later than its launch, stream and dependencies allow (" + amount + at +
           "): a wait the trace does not record (another process or an untraced thread using the GPU, an event "
           "between streams)";
  case divergence::cpu_wait:
    return subject("CPU call") + " later than its thread and dependencies allow (" + amount + at +
           "): a wait the trace does not record";
  case divergence::other_wait:
    return subject("task") + " later than its dependencies allow (" + amount + at +
           "): a wait the trace does not record";
  }
  return {};
}

/// Why the replay of `iteration` differs from the trace, when it does by more than
/// `tolerance` (a share of `measured`); empty otherwise. `replayed` and `measured` are the
/// iteration's replayed and measured step. Names the causes of trace_divergence that
/// push the replay the way it went, largest first (at most two), and says when they
/// cover less than half of the difference or when there are none.
///
///     auto note = daydream::replay_error_note(t.g, 3, span, t.measured(3));
///     if (!note.empty()) std::cerr << "warning: " << note << '\n';
template <class Graph>
std::string replay_error_note(const Graph& g, std::int32_t iteration, time_ns replayed, time_ns measured,
                              double tolerance = 0.02, const divergence_options& o = {}) {
  if (measured <= 0 || replayed < 0) return {};
  const time_ns diff = replayed - measured;
  const double err = double(diff) / double(measured);
  if (err <= tolerance && err >= -tolerance) return {};
  char head[160];
  std::snprintf(head, sizeof head, "the replay of iteration %d differs from the trace by %+.2f%% (replayed %s, measured %s)",
                int(iteration), 100 * err, detail::fidelity_ms(replayed).c_str(), detail::fidelity_ms(measured).c_str());
  std::string out = head;
  const int sign = diff > 0 ? 1 : -1;
  time_ns covered = 0;
  int named = 0;
  for (auto& c : trace_divergence(g, iteration, o)) {
    if (divergence_sign(c.kind) != sign || named == 2) continue;
    out += named++ ? "; " : ": along the trace's critical path, ";
    out += describe(g, c);
    covered += c.time;
  }
  if (!named)
    return out + ": no task on the trace's critical path starts earlier or later than the graph allows, so the "
                 "difference lies in where the step is measured (the step marker against the work it holds)";
  if (2 * covered < (diff > 0 ? diff : -diff)) out += "; these explain less than half of the difference";
  return out;
}

} // namespace daydream

#endif
