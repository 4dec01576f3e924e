// Defines the outputs of daydream-whatif: the table, the JSON object, the critical path and the HTML report.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_EXAMPLES_WHATIF_OUTPUT_HPP
#define DAYDREAM_EXAMPLES_WHATIF_OUTPUT_HPP

#include "scenario.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace whatif {

/// Everything one run of the program computed.
struct analysis {
  const daydream::io::kineto_trace* trace = nullptr;
  std::string trace_name;
  std::int32_t iteration = -1;
  time_ns measured = -1;
  scenario base;
  std::vector<scenario> scenarios;
  std::vector<std::string> not_applicable; ///< bundled passes left out of the default run
  std::string memory_model;                ///< where peak memory comes from
};

inline std::string ms(time_ns t) { return fmt::format("{:.3f} ms", double(t) / 1e6); }
inline double us(time_ns t) { return double(t) / 1e3; }

inline std::string bytes_str(std::int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (std::abs(v) >= 1024 && u < 4) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.2f} {}", v, units[u]);
}

inline double speedup(const analysis& a, const scenario& s) {
  return s.predicted > 0 ? double(a.base.predicted) / double(s.predicted) : 0.0;
}

/// The JSON object of `--json` (schema in docs/getting-started.md).
inline std::string to_json(const analysis& a) {
  daydream::io::json_writer w(true);
  w.begin_object();
  w.field("trace", a.trace_name);
  w.field("iteration", a.iteration);
  w.key("measured_us");
  if (a.measured > 0) w.value(us(a.measured)); else w.null();
  w.field("baseline_us", us(a.base.predicted));
  w.field("memory_model", a.memory_model);
  w.key("baseline_peak_memory_bytes");
  if (a.base.peak_memory) w.value(*a.base.peak_memory); else w.null();
  w.key("not_applicable").begin_array();
  for (auto& n : a.not_applicable) w.value(n);
  w.end_array();
  w.key("scenarios").begin_array();
  for (auto& s : a.scenarios) {
    w.begin_object();
    w.field("name", s.name);
    w.key("passes").begin_array();
    for (auto& p : s.passes) w.value(p);
    w.end_array();
    w.key("predicted_us");
    if (s.error.empty()) w.value(us(s.predicted)); else w.null();
    w.key("speedup");
    if (s.error.empty()) w.value(speedup(a, s)); else w.null();
    w.key("peak_memory_bytes");
    if (s.peak_memory && s.error.empty()) w.value(*s.peak_memory); else w.null();
    if (!s.error.empty()) w.field("error", s.error);
    if (!s.reports.empty()) {
      w.key("reports").begin_array();
      for (auto& rep : s.reports) {
        w.begin_object().field("pass", rep.pass);
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
  auto& rep = a.trace->report;
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

/// The human-readable answer.
inline void print_table(std::FILE* out, const analysis& a) {
  const auto& t = *a.trace;
  fmt::print(out, "daydream-whatif: {}\n", a.trace_name);
  if (!t.info.gpus.empty()) fmt::print(out, "  GPU: {}", t.info.gpus.front());
  if (t.info.world_size > 0) fmt::print(out, "  rank {} of {}", t.info.rank, t.info.world_size);
  fmt::print(out, "\n  iteration {} of {}; {} tasks, {} dependencies; {} of {} events in the graph, the rest accounted for by reason\n\n",
             a.iteration, t.iterations.size(), t.g.size(), t.g.dependency_count(), t.report.in_graph, t.report.events);

  std::size_t w = 20;
  for (auto& s : a.scenarios) w = std::max(w, s.name.size());
  fmt::print(out, "  {:<{}} {:>14} {:>9} {:>13}\n", "scenario", w, "iteration", "speedup", "peak memory");
  if (a.measured > 0) fmt::print(out, "  {:<{}} {:>14}\n", "measured (trace)", w, ms(a.measured));
  auto mem = [](const scenario& s) { return s.peak_memory ? bytes_str(*s.peak_memory) : std::string("n/a"); };
  fmt::print(out, "  {:<{}} {:>14} {:>9} {:>13}\n", "baseline (replay)", w, ms(a.base.predicted), "1.00x", mem(a.base));
  for (auto& s : a.scenarios) {
    if (!s.error.empty()) { fmt::print(out, "  {:<{}} refused: {}\n", s.name, w, s.error); continue; }
    fmt::print(out, "  {:<{}} {:>14} {:>8.2f}x {:>13}\n", s.name, w, ms(s.predicted), speedup(a, s), mem(s));
  }
  if (!a.not_applicable.empty()) {
    std::string names;
    for (auto& n : a.not_applicable) names += (names.empty() ? "" : ", ") + n;
    fmt::print(out, "  not applicable to this trace: {}\n"
                    "    (e.g. no backward pass, no recorded tensor shapes; run one with --pass NAME to see why,\n"
                    "     or give the distributed passes a model size: --pass 'ddp:workers=16,model_bytes=100MB')\n",
               names);
  }
  fmt::print(out, "  peak memory from: {}\n", a.memory_model);
  if (a.measured > 0)
    fmt::print(out, "\n  replay error vs measured: {:+.2f}%\n",
               100.0 * double(a.base.predicted - a.measured) / double(a.measured));

  auto b = daydream::breakdown(a.base.g, a.base.r, a.iteration);
  fmt::print(out, "\n  baseline breakdown of iteration {}:\n", a.iteration);
  fmt::print(out, "    {:<14} {:>12} {:>12}\n", "phase", "CPU", "GPU");
  for (int p = 0; p < 4; ++p)
    if (b.cpu_by_phase[p] || b.gpu_by_phase[p])
      fmt::print(out, "    {:<14} {:>12} {:>12}\n", daydream::to_string(daydream::phase(p)),
                 ms(b.cpu_by_phase[p]), ms(b.gpu_by_phase[p]));
  time_ns cp = 0;
  for (auto x : b.critical) cp += x;
  const char* kinds[] = {"CPU", "GPU kernels", "communication", "memory copies", "idle"};
  fmt::print(out, "    bound by: {}  (critical path:", daydream::to_string(b.bound));
  for (int k = 0; k < 5; ++k)
    if (b.critical[k]) fmt::print(out, " {} {:.0f}%", kinds[k], cp ? 100.0 * double(b.critical[k]) / double(cp) : 0.0);
  fmt::print(out, ")\n    busiest resources:");
  for (std::size_t i = 0; i < b.busy.size() && i < 4; ++i)
    fmt::print(out, " {} {:.0f}%{}", a.base.g.resource_at(b.busy[i].first).name,
               b.duration > 0 ? 100.0 * double(b.busy[i].second) / double(b.duration) : 0.0,
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

/// `--critical-path`: the baseline's critical path of the iteration, by layer and phase.
inline void print_critical_path(std::FILE* out, const analysis& a, std::size_t rows = 20) {
  auto b = daydream::breakdown(a.base.g, a.base.r, a.iteration);
  auto path = daydream::iteration_critical_path(a.base.g, a.base.r, a.iteration);
  time_ns total = 0;
  for (auto& [k, d] : b.critical_by_layer) total += d;
  fmt::print(out, "\ncritical path of iteration {} ({} tasks, {} of work), by layer and phase:\n",
             a.iteration, path.size(), ms(total));
  fmt::print(out, "  {:<48} {:<14} {:>12} {:>7}\n", "layer", "phase", "time", "share");
  for (std::size_t i = 0; i < b.critical_by_layer.size() && i < rows; ++i) {
    auto& [k, d] = b.critical_by_layer[i];
    auto layer = k.first.empty() ? std::string("(no layer)") : k.first;
    if (layer.size() > 47) layer = layer.substr(0, 44) + "...";
    fmt::print(out, "  {:<48} {:<14} {:>12} {:>6.1f}%\n", layer, daydream::to_string(k.second), ms(d),
               total ? 100.0 * double(d) / double(total) : 0.0);
  }
  if (b.critical_by_layer.size() > rows)
    fmt::print(out, "  ... {} more layer/phase pairs\n", b.critical_by_layer.size() - rows);
  std::size_t edges[daydream::dep_kind_count] = {};
  std::size_t waits = 0;
  for (auto& st : path) {
    if (st.why == daydream::binding::dependency) ++edges[static_cast<int>(st.edge)];
    if (st.why == daydream::binding::resource) ++waits;
  }
  fmt::print(out, "  steps:");
  for (int k = 0; k < daydream::dep_kind_count; ++k)
    if (edges[k]) fmt::print(out, " {} {}", edges[k], daydream::to_string(daydream::dep_kind(k)));
  fmt::print(out, " {} resource-wait\n", waits);
}

/// `--timeline FILE`: baseline and every scenario side by side.
inline void write_timeline(const std::string& path, const analysis& a) {
  daydream::io::chrome_trace ct;
  ct.add("baseline", a.base.g, a.base.r);
  for (auto& s : a.scenarios)
    if (s.error.empty()) ct.add(s.name, s.g, s.r);
  ct.save(path);
}

inline std::string html_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '&': o += "&amp;"; break;
    case '"': o += "&quot;"; break;
    default: o.push_back(c);
    }
  }
  return o;
}

/// `--report FILE`: one self-contained HTML page (inline SVG, no scripts, no network).
inline std::string html_report(const analysis& a) {
  std::string h;
  auto out = std::back_inserter(h);
  fmt::format_to(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      "<title>daydream what-if: {}</title>\n<style>"
                      "body{{font-family:sans-serif;margin:2em;color:#222}}table{{border-collapse:collapse}}"
                      "td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}"
                      "td:first-child,th:first-child{{text-align:left}}.bad{{color:#a00}}"
                      "</style></head><body>\n<h1>daydream what-if</h1>\n<p>Trace <code>{}</code>, iteration {}.</p>\n",
                 html_escape(a.trace_name), html_escape(a.trace_name), a.iteration);
  // Scenario table.
  fmt::format_to(out, "<h2>Scenarios</h2>\n<table><tr><th>scenario</th><th>iteration time</th>"
                      "<th>speedup</th><th>peak memory</th></tr>\n");
  auto row = [&](std::string_view name, time_ns t, std::string sp, std::string mem) {
    fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", html_escape(name), ms(t), sp, mem);
  };
  auto mem = [](const scenario& s) { return s.peak_memory ? bytes_str(*s.peak_memory) : std::string("n/a"); };
  if (a.measured > 0) row("measured (trace)", a.measured, "", "");
  row("baseline (replay)", a.base.predicted, "1.00x", mem(a.base));
  for (auto& s : a.scenarios) {
    if (!s.error.empty())
      fmt::format_to(out, "<tr><td>{}</td><td class=\"bad\" colspan=\"3\">refused: {}</td></tr>\n",
                     html_escape(s.name), html_escape(s.error));
    else row(s.name, s.predicted, fmt::format("{:.2f}x", speedup(a, s)), mem(s));
  }
  fmt::format_to(out, "</table>\n");

  // Bar chart of predicted iteration times.
  std::vector<std::pair<std::string, time_ns>> bars;
  if (a.measured > 0) bars.push_back({"measured", a.measured});
  bars.push_back({"baseline", a.base.predicted});
  for (auto& s : a.scenarios)
    if (s.error.empty()) bars.push_back({s.name, s.predicted});
  time_ns mx = 1;
  for (auto& [n, t] : bars) mx = std::max(mx, t);
  const int bar_h = 22, label_w = 240, chart_w = 460;
  fmt::format_to(out, "<h2>Predicted iteration time</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{}\" height=\"{}\" role=\"img\">\n", label_w + chart_w + 120, int(bars.size()) * (bar_h + 6) + 10);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    int y = 5 + int(i) * (bar_h + 6);
    int w = int(double(chart_w) * double(bars[i].second) / double(mx));
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\">{}</text>"
                        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>"
                        "<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>\n",
                   label_w - 8, y + 15, html_escape(bars[i].first), label_w, y, std::max(w, 1), bar_h,
                   i == 0 ? "#888" : "#3a7bd5", label_w + w + 6, y + 15, ms(bars[i].second));
  }
  fmt::format_to(out, "</svg>\n");

  // Per-phase breakdown: stacked bars of GPU time per phase, per scenario.
  const char* colors[] = {"#4caf50", "#ff9800", "#9c27b0", "#9e9e9e"};
  std::vector<std::pair<std::string, daydream::iteration_breakdown>> bds;
  bds.push_back({"baseline", daydream::breakdown(a.base.g, a.base.r, a.iteration)});
  for (auto& s : a.scenarios)
    if (s.error.empty()) bds.push_back({s.name, daydream::breakdown(s.g, s.r, a.iteration)});
  time_ns mx2 = 1;
  for (auto& [n, b] : bds) {
    time_ns sum = 0;
    for (auto x : b.gpu_by_phase) sum += x;
    mx2 = std::max(mx2, sum);
  }
  fmt::format_to(out, "<h2>GPU time per phase</h2>\n<p>");
  for (int p = 0; p < 4; ++p)
    fmt::format_to(out, "<span style=\"color:{}\">&#9632;</span> {} &nbsp; ", colors[p], daydream::to_string(daydream::phase(p)));
  fmt::format_to(out, "</p>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                 label_w + chart_w + 120, int(bds.size()) * (bar_h + 6) + 10);
  for (std::size_t i = 0; i < bds.size(); ++i) {
    int y = 5 + int(i) * (bar_h + 6), x = label_w;
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\">{}</text>", label_w - 8, y + 15,
                   html_escape(bds[i].first));
    time_ns sum = 0;
    for (int p = 0; p < 4; ++p) {
      auto v = bds[i].second.gpu_by_phase[p];
      sum += v;
      int w = int(double(chart_w) * double(v) / double(mx2));
      if (w > 0)
        fmt::format_to(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>",
                       x, y, w, bar_h, colors[p], daydream::to_string(daydream::phase(p)), ms(v));
      x += w;
    }
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>\n", x + 6, y + 15, ms(sum));
  }
  fmt::format_to(out, "</svg>\n");
  auto b = daydream::breakdown(a.base.g, a.base.r, a.iteration);
  fmt::format_to(out, "<p>The baseline iteration is bound by <b>{}</b>.</p>\n</body></html>\n",
                 daydream::to_string(b.bound));
  return h;
}

} // namespace whatif

#endif
