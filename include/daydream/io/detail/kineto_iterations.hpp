// Defines the iteration stage of Kineto ingestion: iterations from ProfilerStep#N markers, a step annotation or optimizer steps.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_ITERATIONS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_ITERATIONS_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/io/kineto_types.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// One iteration found in the trace.
struct iteration_rec {
  std::int32_t number = -1;
  time_ns begin = 0, end = 0;
  std::string marker;
  time_ns work_end = 0; ///< latest trace end of its CPU slices and of the GPU work they launched
  time_ns cpu_end = 0;  ///< latest trace end of its marker and CPU slices
  /// Its GPU work (set_work_ends; -1: none): first start, when it began its own work
  /// (after the earlier GPU work it waited for), last end.
  time_ns device_first = -1, device_begin = -1, device_end = -1;
  time_ns backlog_end = 0; ///< when the earlier GPU work running at its start ended (at least begin)
};

/// The iterations of a trace, in trace order, and the events that mark them.
struct iteration_table {
  std::vector<iteration_rec> list;
  std::vector<std::uint32_t> marker_events; ///< cpu events of the markers used
  std::vector<time_ns> begins;              ///< list[k].begin
  iteration_source source = iteration_source::none;
  std::vector<std::uint32_t> marker_sorted; ///< marker_events of a step annotation, sorted: for is_marker

  /// Whether cpu event `e` is a step annotation's marker (iteration_source::annotations):
  /// it names no layer and sets no phase. Optimizer steps that mark iterations keep their
  /// phase (weight update), and ProfilerStep# is told by its name.
  bool is_marker(std::uint32_t e) const {
    return std::binary_search(marker_sorted.begin(), marker_sorted.end(), e);
  }

  /// The number of the iteration running at `t` (begin <= t < end), or -1; with the
  /// whole trace as one iteration, that one.
  std::int32_t at(time_ns t) const {
    if (source == iteration_source::whole_trace) return list.front().number;
    auto it = std::upper_bound(begins.begin(), begins.end(), t);
    if (it == begins.begin()) return -1;
    auto k = static_cast<std::size_t>(it - begins.begin()) - 1;
    return t < list[k].end ? list[k].number : -1;
  }
};

/// The iterations marked by the annotations (or operators) whose name `pattern` matches,
/// numbered 1, 2, ... in trace order; one that overlaps the previous one is skipped
/// (counted in one warning). Throws daydream::error for a bad pattern, and when nothing
/// matches, naming some of the trace's annotations.
inline void find_annotated_iterations(const decoded_trace& d, const std::string& pattern, iteration_table& out,
                                      warning_log& warnings) {
  std::regex rx;
  try {
    rx = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    throw error("daydream: step annotation '" + pattern + "' is not a regular expression: " + e.what());
  }
  struct mark { time_ns ts, end; std::uint32_t ev; };
  std::vector<mark> steps;
  std::vector<std::string_view> names; // a few annotations, for the error
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
    auto& e = d.cpu[i];
    if (e.cat != ecat::user_annotation && e.cat != ecat::cpu_op) continue;
    if (std::regex_search(e.name.begin(), e.name.end(), rx)) steps.push_back({e.ts, e.ts + e.dur, i});
    else if (e.cat == ecat::user_annotation && names.size() < 6 &&
             std::find(names.begin(), names.end(), e.name) == names.end())
      names.push_back(e.name);
  }
  if (steps.empty()) {
    std::string have;
    for (auto n : names) have += (have.empty() ? "" : ", ") + std::string(n);
    throw error("daydream: no annotation matches the step annotation '" + pattern + "' (the trace's annotations " +
                (have.empty() ? std::string(": none") : "include " + have) + ")");
  }
  std::sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
  std::size_t overlapping = 0;
  for (auto& m : steps) {
    if (!out.list.empty() && m.ts < out.list.back().end) { ++overlapping; continue; }
    const auto n = static_cast<std::int32_t>(out.list.size() + 1);
    out.list.push_back({n, m.ts, m.end, std::string(d.cpu[m.ev].name) + " #" + std::to_string(n)});
    out.marker_events.push_back(m.ev);
  }
  if (overlapping)
    warnings.add(std::to_string(overlapping) + " annotations matching the step annotation '" + pattern +
                 "' overlap the step before them; ignored as markers");
  out.source = iteration_source::annotations;
}

/// Stage 3: the iterations of `d`. With a step annotation (`step_annotation`, see
/// find_annotated_iterations), the annotations it matches. Else ProfilerStep#N markers (a duplicate number is skipped,
/// one overlapping the previous step is ignored with a warning); without them, optimizer
/// steps end iterations: iteration k starts with the first event of the optimizer's
/// thread after optimizer step k-1 ended (iteration 1: its first event) and lasts until
/// iteration k+1 starts; the last one until its optimizer step ends. Without either,
/// a trace with CPU or GPU events is one iteration, numbered 0, whose bounds the
/// builder sets to the span of the graph (iteration_source::whole_trace).
inline iteration_table find_iterations(const decoded_trace& d, warning_log& warnings,
                                       const std::string& step_annotation = {}) {
  iteration_table out;
  auto& list = out.list;
  auto finish = [&] {
    for (auto& it : list) out.begins.push_back(it.begin);
    if (out.source == iteration_source::annotations) {
      out.marker_sorted = out.marker_events;
      std::sort(out.marker_sorted.begin(), out.marker_sorted.end());
    }
    return out;
  };
  if (!step_annotation.empty()) {
    find_annotated_iterations(d, step_annotation, out, warnings);
    return finish();
  }
  struct mark { time_ns ts, end; std::int32_t n; std::uint32_t ev; };
  std::vector<mark> steps;
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
    auto& e = d.cpu[i];
    if (e.cat != ecat::user_annotation && e.cat != ecat::cpu_op) continue;
    std::int32_t n;
    if (profiler_step_number(e.name, n)) steps.push_back({e.ts, e.ts + e.dur, n, i});
  }
  if (!steps.empty()) {
    std::sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
    for (auto& m : steps) {
      if (!list.empty() && list.back().number == m.n) continue; // duplicate marker
      if (!list.empty() && m.ts < list.back().end) {
        warnings.add("ProfilerStep#" + std::to_string(m.n) + " overlaps the previous step; ignored as a marker");
        continue;
      }
      list.push_back({m.n, m.ts, m.end, std::string(d.cpu[m.ev].name)});
      out.marker_events.push_back(m.ev);
    }
    out.source = iteration_source::profiler_steps;
  } else {
    std::vector<mark> opt;
    for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
      auto& e = d.cpu[i];
      if ((e.cat == ecat::user_annotation || e.cat == ecat::cpu_op) && starts_with(e.name, "Optimizer.step"))
        opt.push_back({e.ts, e.ts + e.dur, 0, i});
    }
    if (opt.empty()) {
      if (!d.cpu.empty() || !d.gpu.empty()) {
        list.push_back({0, 0, 0, "whole trace (no step markers)"});
        out.source = iteration_source::whole_trace;
        out.begins.push_back(0);
      }
      return out;
    }
    out.source = iteration_source::optimizer_steps;
    std::sort(opt.begin(), opt.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
    const auto thread = d.cpu[opt.front().ev].thread;
    std::vector<time_ns> starts;
    for (auto& e : d.cpu) if (e.thread == thread) starts.push_back(e.ts);
    std::sort(starts.begin(), starts.end());
    auto first_at_or_after = [&](time_ns t) {
      auto it = std::lower_bound(starts.begin(), starts.end(), t);
      return it == starts.end() ? t : *it;
    };
    time_ns prev_end = starts.front();
    std::int32_t n = 0;
    for (auto& m : opt) {
      if (m.end <= prev_end && n > 0) continue; // nested duplicate
      ++n;
      const time_ns begin = n == 1 ? prev_end : first_at_or_after(prev_end);
      if (n > 1) list.back().end = begin;
      list.push_back({n, begin, m.end, std::string(d.cpu[m.ev].name)});
      out.marker_events.push_back(m.ev);
      prev_end = m.end;
    }
  }
  return finish();
}

//! @endcond

} // namespace daydream::io::detail

#endif
