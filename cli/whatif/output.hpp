// Defines the outputs of the what-if program: the table, the JSON object, the critical path and the timeline.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_OUTPUT_HPP
#define DAYDREAM_CLI_WHATIF_OUTPUT_HPP

#include "scenario.hpp"

#include <daydream/whatif/bound.hpp>
#include <daydream/whatif/throughput.hpp>

#include <daydream/daydream.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace whatif_cmd {

/// A bundled pass the default run left out, and why.
struct skipped_pass {
  std::string name;
  std::string reason;
};

/// What the outputs read of a scenario's graph, kept when the run drops the graph:
/// `daydream whatif` holds one scenario's graph at a time unless an output writes the
/// graphs (--timeline, --dlc, --chakra).
struct scenario_facts {
  daydream::iteration_breakdown breakdown; ///< of the representative iteration (breakdown_of)
  std::string bound;                       ///< what bounds it (explain_bound)
  std::string backlog;                     ///< why its step exceeds its span (backlog_note)
};

/// Everything one run of the program computed.
struct analysis {
  const daydream::io::kineto_trace* trace = nullptr; ///< the trace read (its graph is moved into `base.g`)
  std::string trace_name;
  std::vector<std::int32_t> iterations; ///< the analysed iterations, in order
  std::int32_t iteration = -1;          ///< the one whose baseline time is the median: breakdowns use it
  bool whole_trace = false;             ///< no iterations in the trace: all of it is analysed as one
  std::vector<time_ns> measured;        ///< the trace's own time of each analysed iteration (-1: unknown)
  scenario base;
  std::vector<scenario> scenarios;
  /// Per scenario, in order, once the run has read them off its graph (see scenario_facts);
  /// empty: the outputs read the graphs.
  std::vector<scenario_facts> facts;
  std::vector<skipped_pass> not_applicable; ///< bundled passes left out of the default run
  memory_model memory;
  std::optional<std::int64_t> batch;    ///< samples per worker and step (--batch)
  /// Workers of the traced job: its world size (distributedInfo) or the largest group of its
  /// recorded collectives; 1 for a single-GPU trace.
  std::int32_t workers = 1;
  std::vector<std::string> warnings;    ///< shown first in every output
};

inline std::string ms(time_ns t) { return fmt::format("{:.3f} ms", double(t) / 1e6); }
inline double us(time_ns t) { return double(t) / 1e3; }
inline double share(time_ns part, time_ns whole) { return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0; }

inline std::string bytes_str(std::int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (std::abs(v) >= 1024 && u < 4) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.2f} {}", v, units[u]);
}

/// The trace's name for iteration `i`: "ProfilerStep#104", or "iteration 3 (Optimizer.step#SGD.step)".
inline std::string iteration_name(const analysis& a, std::int32_t i) {
  if (a.whole_trace) return "the whole trace";
  for (auto& it : a.trace->iterations)
    if (it.number == i) {
      if (it.marker.rfind("ProfilerStep#", 0) == 0 ||
          a.trace->info.iterations_from == daydream::io::iteration_source::annotations)
        return it.marker; // "ProfilerStep#3", "step[DECODE bs=16] #3"
      return it.marker.empty() ? fmt::format("iteration {}", i) : fmt::format("iteration {} ({})", i, it.marker);
    }
  return fmt::format("iteration {}", i);
}

/// One line saying which iterations were analysed, as the trace names them.
inline std::string iterations_line(const analysis& a) {
  const auto total = a.trace->iterations.size();
  if (a.whole_trace)
    return "no step markers (ProfilerStep#N) or optimizer steps in the trace: where one training step ends "
           "cannot be told, so the whole trace is analysed as one iteration";
  auto in_trace = fmt::format("{} iteration{} in the trace", total, total == 1 ? "" : "s");
  if (a.iterations.size() == 1) return fmt::format("{}, {}", iteration_name(a, a.iterations.front()), in_trace);
  return fmt::format("{} to {} ({} steady-state iterations; median {}), {}", iteration_name(a, a.iterations.front()),
                     iteration_name(a, a.iterations.back()), a.iterations.size(), iteration_name(a, a.iteration),
                     in_trace);
}

/// The note of one sweep point (`daydream whatif --vary` and Python's t.sweep): the error
/// that refused it, else why its passes changed nothing, then the varied keys its chain
/// takes no part of.
inline std::string sweep_point_note(const std::string& error, bool applied, const std::string& reason,
                                    const std::vector<std::string>& unused) {
  if (!error.empty()) return "refused: " + error;
  std::string note;
  if (!applied) note = "changed nothing: " + reason;
  if (!unused.empty()) {
    std::string keys;
    for (auto& u : unused) keys += (keys.empty() ? "" : ", ") + u;
    note += (note.empty() ? "" : "; ") + fmt::format("takes no {}", keys);
  }
  return note;
}

/// (max - min) / median of the analysed iterations, in percent; 0 for one iteration.
inline double spread(const std::vector<time_ns>& v) {
  auto [lo, hi] = extremes(v);
  auto m = median(v);
  return m > 0 ? 100.0 * double(hi - lo) / double(m) : 0.0;
}

/// Workers of the traced job (its world size; 1 for a single-GPU trace).
inline std::int32_t trace_workers(const analysis& a) { return std::max<std::int32_t>(1, a.workers); }

using daydream::whatif::throughput;

/// The throughput of an iteration of `predicted` ns on `scenario_workers` data-parallel
/// workers (0: as many as the traced job), relative to the analysis' baseline.
inline throughput throughput_of(const analysis& a, time_ns predicted, std::int32_t scenario_workers) {
  return daydream::whatif::throughput_of({a.base.predicted, trace_workers(a), a.batch}, predicted, scenario_workers);
}

inline throughput throughput_of(const analysis& a, const scenario& s) {
  return throughput_of(a, s.predicted, s.workers());
}

/// The speedup shown for a scenario: training throughput relative to the baseline (for a
/// one-GPU scenario simply baseline time / predicted time).
inline double speedup(const analysis& a, const scenario& s) { return throughput_of(a, s).vs_baseline; }

using daydream::whatif::explain_bound;

/// The facts kept of `s`, one of `a.scenarios`, or nullptr (the baseline; facts not kept).
inline const scenario_facts* facts_of(const analysis& a, const scenario& s) {
  if (a.facts.empty() || a.scenarios.empty()) return nullptr;
  const std::less<const scenario*> before;
  const scenario* first = a.scenarios.data();
  if (before(&s, first) || !before(&s, first + a.scenarios.size())) return nullptr;
  const auto k = std::size_t(&s - first);
  return k < a.facts.size() ? &a.facts[k] : nullptr;
}

/// The breakdown of the representative iteration in scenario `s`.
inline daydream::iteration_breakdown breakdown_of(const analysis& a, const scenario& s) {
  if (auto* f = facts_of(a, s)) return f->breakdown;
  return daydream::breakdown(s.g, s.r, a.iteration);
}

/// What bounds the representative iteration in scenario `s` (explain_bound).
inline std::string bound_of(const analysis& a, const scenario& s) {
  if (auto* f = facts_of(a, s)) return f->bound;
  return explain_bound(s.g, breakdown_of(a, s));
}

/// Why `s`'s step exceeds its span, or "" (backlog_note).
inline std::string backlog_of(const analysis& a, const scenario& s) {
  if (auto* f = facts_of(a, s)) return f->backlog;
  return daydream::whatif::backlog_note(s);
}

/// Reads the facts the outputs need off scenario `s`'s graph (an empty one for a
/// scenario that failed).
inline scenario_facts facts_for(const analysis& a, const scenario& s) {
  scenario_facts f;
  if (!s.error.empty()) return f;
  f.breakdown = daydream::breakdown(s.g, s.r, a.iteration);
  f.bound = explain_bound(s.g, f.breakdown);
  f.backlog = daydream::whatif::backlog_note(s);
  return f;
}

/// What a scenario's row says instead of a speedup when it has none: empty if it has one.
inline std::string no_result(const scenario& s) { return s.no_result(); }

/// Per-iteration speedups vary by more than 10% of their median: the warning, or "".
inline std::string iteration_warning(const analysis& a, const scenario& s) {
  if (a.iterations.size() < 2 || !s.error.empty()) return "";
  std::vector<double> sp;
  for (std::size_t k = 0; k < a.iterations.size(); ++k)
    if (a.base.per_iteration[k] > 0 && s.per_iteration[k] > 0)
      sp.push_back(double(a.base.per_iteration[k]) / double(s.per_iteration[k]));
  if (sp.size() < 2) return "";
  auto [lo, hi] = std::minmax_element(sp.begin(), sp.end());
  auto sorted = sp;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted[(sorted.size() - 1) / 2];
  if (med <= 0 || (*hi - *lo) / med <= 0.10) return "";
  return fmt::format("{}: the speedup differs between iterations, from {:.2f}x ({}) to {:.2f}x ({}); the median "
                     "is shown",
                     s.name, *lo, iteration_name(a, a.iterations[std::size_t(lo - sp.begin())]), *hi,
                     iteration_name(a, a.iterations[std::size_t(hi - sp.begin())]));
}

using daydream::whatif::backlog_note;

/// Warnings about the iterations: measured or replayed times that differ by more than 10%,
/// scenarios whose speedup does, and a baseline whose step a falling-behind resource decides.
inline std::vector<std::string> spread_warnings(const analysis& a) {
  std::vector<std::string> out;
  if (a.iterations.size() < 2) return out;
  auto line = [&](const std::vector<time_ns>& v) {
    auto [lo, hi] = extremes(v);
    return fmt::format("{:.0f}% ({} to {})", spread(v), ms(lo), ms(hi));
  };
  const bool measured = spread(a.measured) > 10.0, replayed = spread(a.base.per_iteration) > 10.0;
  if (measured || replayed)
    out.push_back(fmt::format("the {} analysed iterations differ by more than 10%:{}{}; medians are shown, and "
                              "--iteration N analyses one",
                              a.iterations.size(), measured ? " measured " + line(a.measured) : std::string(),
                              replayed ? std::string(measured ? "," : "") + " replayed " + line(a.base.per_iteration)
                                       : std::string()));
  for (auto& s : a.scenarios)
    if (auto w = iteration_warning(a, s); !w.empty()) out.push_back(w);
  for (auto* s : {&a.base}) // the scenarios say it in their own rows' notes (backlog_note)
    if (auto w = backlog_note(*s); !w.empty()) out.push_back("baseline: " + w);
  return out;
}

inline std::string memory_label(const analysis& a) {
  switch (a.memory.from) {
  case memory_model::source::trace:
    return fmt::format("the trace's [memory] events, starting from the {} allocated before the first one "
                       "(weights, optimizer state)",
                       bytes_str(a.memory.initial));
  case memory_model::source::estimate:
    return "an estimate from recorded tensor shapes: activations only (the trace has no [memory] events; "
           "weights, gradients and optimizer state are not included)";
  case memory_model::source::none: break;
  }
  return "not predicted: the trace has no [memory] events (record with profile_memory=True) and no tensor "
         "shapes (record_shapes=True)";
}

inline std::string_view memory_source_key(const analysis& a) {
  switch (a.memory.from) {
  case memory_model::source::trace: return "trace";
  case memory_model::source::estimate: return "estimate";
  case memory_model::source::none: break;
  }
  return "none";
}

inline void write_throughput(daydream::io::json_writer& w, const analysis& a, const scenario& s) {
  auto t = throughput_of(a, s);
  w.key("throughput").begin_object();
  w.field("workers", t.workers).field("steps_per_s", t.steps_per_s);
  w.key("samples_per_s");
  if (t.samples_per_s) w.value(*t.samples_per_s); else w.null();
  w.key("vs_one_gpu");
  if (t.vs_one_gpu) w.value(*t.vs_one_gpu); else w.null();
  w.key("scaling_efficiency");
  if (t.scaling_efficiency) w.value(*t.scaling_efficiency); else w.null();
  w.end_object();
}

inline void write_times(daydream::io::json_writer& w, const analysis& a, const scenario& s) {
  w.key("per_iteration_us").begin_array();
  for (auto t : s.per_iteration)
    if (t >= 0) w.value(us(t)); else w.null();
  w.end_array();
  auto [lo, hi] = extremes(s.per_iteration);
  w.key("spread_us").begin_object().field("min", us(lo)).field("max", us(hi)).end_object();
  (void)a;
}

/// The JSON object of `--json` (schema in docs/getting-started.md).
inline std::string to_json(const analysis& a) {
  daydream::io::json_writer w(true);
  const auto& tr = *a.trace;
  w.begin_object();
  w.field("trace", a.trace_name);
  w.field("iteration", a.iteration);
  w.field("iteration_name", iteration_name(a, a.iteration));
  w.field("iterations_in_trace", tr.iterations.size());
  w.key("iterations").begin_array();
  for (std::size_t k = 0; k < a.iterations.size(); ++k) {
    w.begin_object().field("iteration", a.iterations[k]).field("name", iteration_name(a, a.iterations[k]));
    w.key("measured_us");
    if (a.measured[k] > 0) w.value(us(a.measured[k])); else w.null();
    w.key("baseline_us");
    if (a.base.per_iteration[k] >= 0) w.value(us(a.base.per_iteration[k])); else w.null();
    w.end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (auto& s : a.warnings) w.value(s);
  w.end_array();
  w.key("measured_us");
  auto mm = median(a.measured);
  if (mm > 0) w.value(us(mm)); else w.null();
  w.field("baseline_us", us(a.base.predicted));
  write_times(w, a, a.base);
  auto bb = breakdown_of(a, a.base);
  w.field("bound", explain_bound(a.base.g, bb));
  w.field("memory_model", memory_label(a));
  w.key("memory").begin_object();
  w.field("source", memory_source_key(a));
  w.key("initial_allocated_bytes");
  if (a.memory.from == memory_model::source::trace) w.value(a.memory.initial); else w.null();
  w.key("trace_peak_bytes");
  if (tr.info.memory_peak >= 0) w.value(tr.info.memory_peak); else w.null();
  w.end_object();
  w.key("baseline_peak_memory_bytes");
  if (a.base.peak_memory) w.value(*a.base.peak_memory); else w.null();
  w.key("batch");
  if (a.batch) w.value(*a.batch); else w.null();
  w.field("workers", trace_workers(a));
  w.key("not_applicable").begin_array();
  for (auto& n : a.not_applicable) w.value(n.name);
  w.end_array();
  w.key("not_applicable_reasons").begin_object();
  for (auto& n : a.not_applicable) w.field(n.name, n.reason);
  w.end_object();
  w.key("scenarios").begin_array();
  for (auto& s : a.scenarios) {
    const bool ok = s.error.empty();
    w.begin_object();
    w.field("name", s.name);
    w.key("passes").begin_array();
    for (auto& p : s.passes) w.value(p);
    w.end_array();
    w.field("applied", ok && s.applied());
    w.key("reason");
    if (!ok) w.value(s.error);
    else if (!s.applied()) w.value(s.reason());
    else w.null();
    w.key("predicted_us");
    if (ok) w.value(us(s.predicted)); else w.null();
    w.key("speedup");
    if (ok) w.value(speedup(a, s)); else w.null();
    w.key("iteration_speedup");
    if (ok) w.value(double(a.base.predicted) / double(s.predicted)); else w.null();
    if (ok) {
      write_times(w, a, s);
      write_throughput(w, a, s);
      w.field("bound", bound_of(a, s));
      if (auto bl = backlog_of(a, s); !bl.empty()) w.field("backlog", bl);
    }
    w.key("peak_memory_bytes");
    if (s.peak_memory && ok) w.value(*s.peak_memory); else w.null();
    if (!ok) w.field("error", s.error);
    if (!s.reports.empty()) {
      w.key("reports").begin_array();
      for (auto& rep : s.reports) {
        w.begin_object().field("pass", rep.pass).field("applied", rep.applied);
        w.key("reason");
        if (rep.applied) w.null(); else w.value(rep.reason);
        w.field("workers", rep.workers);
        w.key("items").begin_object();
        for (auto& [k, v] : rep.items) w.field(k, v);
        w.end_object();
        w.key("notes").begin_array();
        for (auto& n : rep.notes) w.value(n);
        w.end_array().end_object();
      }
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
  auto& rep = tr.report;
  w.key("ingest").begin_object();
  w.field("events", rep.events).field("in_graph", rep.in_graph);
  w.key("ignored").begin_object();
  for (auto& [k, v] : rep.ignored) w.field(k, v);
  w.end_object();
  w.field("unlinked_gpu_ops", rep.unlinked_gpu_ops);
  w.end_object();
  w.end_object();
  return w.take() + "\n";
}

/// The throughput line of a data-parallel scenario ("16 workers: ..."), or "".
inline std::string throughput_line(const analysis& a, const scenario& s) {
  if (s.workers() == 0 || !s.error.empty() || s.predicted <= 0) return "";
  auto t = throughput_of(a, s);
  std::string line = fmt::format("{} workers: {:.2f} steps/s", t.workers, t.steps_per_s);
  if (t.samples_per_s) line += fmt::format(", {:.1f} samples/s (batch {} per worker)", *t.samples_per_s, *a.batch);
  else line += " (give --batch N for samples/s)";
  if (t.vs_one_gpu)
    line += fmt::format("; {:.2f}x the throughput of one GPU, scaling efficiency {:.0f}%", *t.vs_one_gpu,
                        100.0 * *t.scaling_efficiency);
  else
    line += fmt::format("; {:.2f}x the traced job's throughput ({} workers; no one-GPU time to compare with)",
                        t.vs_baseline, trace_workers(a));
  return line;
}

/// The human-readable answer.
inline void print_table(std::FILE* out, const analysis& a) {
  const auto& t = *a.trace;
  fmt::print(out, "daydream whatif: {}\n", a.trace_name);
  for (auto& wmsg : a.warnings) fmt::print(out, "  WARNING: {}\n", wmsg);
  if (!t.info.gpus.empty()) fmt::print(out, "  GPU: {}", t.info.gpus.front());
  if (t.info.world_size > 0) fmt::print(out, "  rank {} of {}", t.info.rank, t.info.world_size);
  fmt::print(out, "\n  {}\n  {} tasks, {} dependencies; {} of {} events in the graph, the rest accounted for by reason\n\n",
             iterations_line(a), a.base.g.size(), a.base.g.dependency_count(), t.report.in_graph, t.report.events);

  std::size_t w = 20;
  for (auto& s : a.scenarios) w = std::max(w, s.name.size());
  const bool many = a.iterations.size() > 1;
  fmt::print(out, "  {:<{}} {:>14} {:>8} {:>9} {:>13}\n", "scenario", w, many ? "iteration*" : "iteration",
             many ? "spread" : "", "speedup", "peak memory");
  auto spread_str = [&](const std::vector<time_ns>& v) { return many ? fmt::format("{:.1f}%", spread(v)) : ""; };
  if (median(a.measured) > 0)
    fmt::print(out, "  {:<{}} {:>14} {:>8}\n", "measured (trace)", w, ms(median(a.measured)), spread_str(a.measured));
  auto mem = [](const scenario& s) { return s.peak_memory ? bytes_str(*s.peak_memory) : std::string("n/a"); };
  fmt::print(out, "  {:<{}} {:>14} {:>8} {:>9} {:>13}\n", "baseline (replay)", w, ms(a.base.predicted),
             spread_str(a.base.per_iteration), "1.00x", mem(a.base));
  fmt::print(out, "  {:<{}}   {}\n", "", w, explain_bound(a.base.g, breakdown_of(a, a.base)));
  for (auto& s : a.scenarios) {
    auto nr = no_result(s);
    if (!s.error.empty()) { fmt::print(out, "  {:<{}} {}\n", s.name, w, nr); continue; }
    if (!nr.empty()) {
      fmt::print(out, "  {:<{}} {:>14} {:>8} {:>9} {:>13}\n", s.name, w, ms(s.predicted), spread_str(s.per_iteration),
                 "-", mem(s));
      fmt::print(out, "  {:<{}}   {}\n", "", w, nr);
      continue;
    }
    fmt::print(out, "  {:<{}} {:>14} {:>8} {:>8.2f}x {:>13}\n", s.name, w, ms(s.predicted),
               spread_str(s.per_iteration), speedup(a, s), mem(s));
    if (auto tl = throughput_line(a, s); !tl.empty()) fmt::print(out, "  {:<{}}   {}\n", "", w, tl);
    fmt::print(out, "  {:<{}}   {}\n", "", w, bound_of(a, s));
    if (auto bl = backlog_of(a, s); !bl.empty()) fmt::print(out, "  {:<{}}   steady state: {}\n", "", w, bl);
  }
  if (many)
    fmt::print(out, "  * the median of the {} analysed iterations; spread: (slowest - fastest) / median\n",
               a.iterations.size());
  if (!a.not_applicable.empty()) {
    fmt::print(out, "  not applicable to this trace:\n");
    for (auto& n : a.not_applicable) fmt::print(out, "    {}: {}\n", n.name, n.reason);
  }
  fmt::print(out, "  peak memory: {}\n", memory_label(a));
  if (t.info.memory_peak >= 0) fmt::print(out, "    the trace's own peak: {}\n", bytes_str(t.info.memory_peak));
  if (median(a.measured) > 0) {
    std::vector<time_ns> spans; // the replay itself, before the steady-state bound
    for (auto& st : a.base.steps) spans.push_back(st.span);
    fmt::print(out, "\n  replay error vs measured: {:+.2f}%", share(median(spans) - median(a.measured), median(a.measured)));
    if (many) fmt::print(out, " (medians)");
    fmt::print(out, "\n");
  }

  auto b = breakdown_of(a, a.base);
  fmt::print(out, "\n  baseline breakdown of {} ({}): busy time per phase\n", iteration_name(a, a.iteration), ms(b.duration));
  fmt::print(out, "    {:<14} {:>12} {:>12} {:>14}\n", "phase", "CPU", "GPU", "communication");
  for (int p = 0; p < 4; ++p)
    if (b.cpu_by_phase[p] || b.gpu_by_phase[p] || b.comm_by_phase[p])
      fmt::print(out, "    {:<14} {:>12} {:>12} {:>14}\n", daydream::to_string(daydream::phase(p)),
                 ms(b.cpu_by_phase[p]), ms(b.gpu_by_phase[p]), ms(b.comm_by_phase[p]));
  const char* kinds[] = {"CPU", "GPU kernels", "communication", "memory copies", "idle"};
  fmt::print(out, "    critical path:");
  for (int k = 0; k < 5; ++k)
    if (b.critical[k]) fmt::print(out, " {} {:.1f}%", kinds[k], share(b.critical[k], b.duration));
  fmt::print(out, "\n    busiest resources:");
  for (std::size_t i = 0; i < b.busy.size() && i < 4; ++i)
    fmt::print(out, " {} {:.0f}%{}", a.base.g.resource_at(b.busy[i].first).name, share(b.busy[i].second, b.duration),
               i + 1 < std::min<std::size_t>(4, b.busy.size()) ? "," : "");
  fmt::print(out, "\n");

  for (auto& s : a.scenarios)
    for (auto& rep : s.reports) {
      if (rep.items.empty() && rep.notes.empty()) continue;
      fmt::print(out, "\n  {} ({}):\n", rep.pass, s.name);
      for (auto& [k, v] : rep.items) fmt::print(out, "    {}: {}\n", k, v);
      for (auto& n : rep.notes) fmt::print(out, "    note: {}\n", n);
    }
}

using daydream::whatif::critical_group;
using daydream::whatif::critical_groups;

/// `--critical-path`: the baseline's critical path of the representative iteration, by
/// kind of work, then by layer kind and phase (top `rows`, the rest summed).
inline void print_critical_path(std::FILE* out, const analysis& a, std::size_t rows = 15) {
  auto b = breakdown_of(a, a.base);
  fmt::print(out, "\ncritical path of {} in the baseline ({}, {} tasks)\n", iteration_name(a, a.iteration),
             ms(b.duration), b.critical_tasks);
  const char* kinds[] = {"CPU", "GPU kernels", "communication", "memory copies", "idle between tasks"};
  fmt::print(out, "  by kind of work:");
  for (int k = 0; k < 5; ++k)
    if (b.critical[k]) fmt::print(out, " {} {:.1f}%", kinds[k], share(b.critical[k], b.duration));
  fmt::print(out, "\n  by layer and phase (the instances of a layer together), share of the iteration:\n");
  fmt::print(out, "    {:<40} {:<14} {:>9} {:>12} {:>7}\n", "layer", "phase", "instances", "time", "share");
  auto groups = critical_groups(b);
  time_ns rest = 0;
  std::size_t rest_n = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (i >= rows) { rest += groups[i].time; ++rest_n; continue; }
    auto& gr = groups[i];
    fmt::print(out, "    {:<40} {:<14} {:>9} {:>12} {:>6.1f}%\n", gr.layer, daydream::to_string(gr.ph), gr.instances,
               ms(gr.time), share(gr.time, b.duration));
  }
  if (rest_n) fmt::print(out, "    {:<40} {:<14} {:>9} {:>12} {:>6.1f}%\n", fmt::format("({} more layer/phase groups)", rest_n),
                         "", "", ms(rest), share(rest, b.duration));
  if (b.critical_cpu_gaps)
    fmt::print(out, "    {:<40} {:<14} {:>9} {:>12} {:>6.1f}%\n", "(CPU between traced operators)", "", "",
               ms(b.critical_cpu_gaps), share(b.critical_cpu_gaps, b.duration));
  if (b.critical[4])
    fmt::print(out, "    {:<40} {:<14} {:>9} {:>12} {:>6.1f}%\n", "(idle between tasks)", "", "", ms(b.critical[4]),
               share(b.critical[4], b.duration));
  fmt::print(out, "    {:<40} {:<14} {:>9} {:>12} {:>6.1f}%\n", "total", "", "", ms(b.duration), 100.0);
}

/// `--timeline FILE`: baseline and every scenario side by side.
inline void write_timeline(const std::string& path, const analysis& a) {
  daydream::io::chrome_trace ct;
  ct.add("baseline", a.base.g, a.base.r);
  for (auto& s : a.scenarios)
    if (s.error.empty()) ct.add(s.name, s.g, s.r);
  ct.save(path);
}

} // namespace whatif_cmd

#endif
