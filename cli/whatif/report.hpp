// Defines the HTML report of the what-if program (--report FILE).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_REPORT_HPP
#define DAYDREAM_CLI_WHATIF_REPORT_HPP

#include "output.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace whatif_cmd {

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

/// One self-contained HTML page (no scripts, no network). Charts are HTML tables with
/// CSS bars: labels wrap instead of being cut off, whatever their length.
inline std::string html_report(const analysis& a) {
  std::string h;
  auto out = std::back_inserter(h);
  fmt::format_to(out,
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<title>daydream what-if: {}</title>\n<style>"
                 "body{{font-family:sans-serif;margin:2em;color:#222;max-width:80em}}"
                 "table{{border-collapse:collapse}}"
                 "td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}}"
                 "td.l,th.l{{text-align:left;word-break:break-word;max-width:28em}}"
                 ".bad{{color:#a00}}.note{{color:#555;font-size:90%;text-align:left}}"
                 ".warn{{background:#fff3cd;border:1px solid #e0b400;padding:.6em 1em;margin:.5em 0}}"
                 ".bar{{display:flex;height:18px;min-width:1px}}.bar span{{display:block;height:100%}}"
                 "td.chart{{width:32em;text-align:left}}"
                 ".key span{{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}}"
                 "</style></head><body>\n<h1>daydream what-if</h1>\n<p>Trace <code>{}</code>: {}.</p>\n",
                 html_escape(a.trace_name), html_escape(a.trace_name), html_escape(iterations_line(a)));
  for (auto& w : a.warnings) fmt::format_to(out, "<div class=\"warn\"><b>Warning:</b> {}</div>\n", html_escape(w));

  // Scenario table.
  const bool many = a.iterations.size() > 1;
  fmt::format_to(out, "<h2>Scenarios</h2>\n<table><tr><th class=\"l\">scenario</th><th>iteration time{}</th>{}"
                      "<th>speedup</th><th>peak memory</th><th class=\"l\">what bounds it / notes</th></tr>\n",
                 many ? " (median)" : "", many ? "<th>spread</th>" : "");
  auto mem = [](const scenario& s) { return s.peak_memory ? bytes_str(*s.peak_memory) : std::string("n/a"); };
  auto spread_cell = [&](const std::vector<time_ns>& v) {
    return many ? fmt::format("<td>{:.1f}%</td>", spread(v)) : std::string();
  };
  if (median(a.measured) > 0)
    fmt::format_to(out, "<tr><td class=\"l\">measured (trace)</td><td>{}</td>{}<td></td><td></td><td></td></tr>\n",
                   ms(median(a.measured)), spread_cell(a.measured));
  fmt::format_to(out, "<tr><td class=\"l\">baseline (replay)</td><td>{}</td>{}<td>1.00x</td><td>{}</td>"
                      "<td class=\"note\">{}</td></tr>\n",
                 ms(a.base.predicted), spread_cell(a.base.per_iteration), mem(a.base),
                 html_escape(explain_bound(a.base.g, breakdown_of(a, a.base))));
  for (auto& s : a.scenarios) {
    if (!s.error.empty()) {
      fmt::format_to(out, "<tr><td class=\"l\">{}</td><td class=\"bad l\" colspan=\"{}\">refused: {}</td></tr>\n",
                     html_escape(s.name), many ? 5 : 4, html_escape(s.error));
      continue;
    }
    std::string notes;
    std::string sp = fmt::format("{:.2f}x", speedup(a, s));
    if (!s.applied()) {
      sp = "&ndash;";
      notes = "<b>no change:</b> " + html_escape(s.reason());
    } else {
      if (auto tl = throughput_line(a, s); !tl.empty()) notes = html_escape(tl) + "<br>";
      notes += html_escape(bound_of(a, s));
    }
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td class=\"note\">{}</td></tr>\n",
                   html_escape(s.name), ms(s.predicted), spread_cell(s.per_iteration), sp, mem(s), notes);
  }
  fmt::format_to(out, "</table>\n<p class=\"note\">Speedup: training throughput relative to the baseline "
                      "(for data-parallel scenarios across all workers).{} Peak memory: {}.</p>\n",
                 many ? " Spread: (slowest &minus; fastest iteration) / median." : "", html_escape(memory_label(a)));
  if (!a.not_applicable.empty()) {
    fmt::format_to(out, "<p>Not applicable to this trace:</p><ul>\n");
    for (auto& n : a.not_applicable)
      fmt::format_to(out, "<li><code>{}</code>: {}</li>\n", html_escape(n.name), html_escape(n.reason));
    fmt::format_to(out, "</ul>\n");
  }

  // Bar chart of predicted iteration times.
  std::vector<std::pair<std::string, time_ns>> bars;
  if (median(a.measured) > 0) bars.push_back({"measured", median(a.measured)});
  bars.push_back({"baseline", a.base.predicted});
  for (auto& s : a.scenarios)
    if (s.error.empty()) bars.push_back({s.name, s.predicted});
  time_ns mx = 1;
  for (auto& [n, t] : bars) mx = std::max(mx, t);
  fmt::format_to(out, "<h2>Predicted iteration time</h2>\n<table>\n");
  for (std::size_t i = 0; i < bars.size(); ++i)
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td class=\"chart\"><div class=\"bar\"><span "
                        "style=\"width:{:.2f}%;background:{}\"></span></div></td><td>{}</td></tr>\n",
                   html_escape(bars[i].first), 100.0 * double(bars[i].second) / double(mx),
                   i == 0 ? "#888" : "#3a7bd5", ms(bars[i].second));
  fmt::format_to(out, "</table>\n");

  // Where the iteration goes, on the GPUs: compute per phase, communication alone, idle.
  // Each bar adds up to the iteration time; communication overlapped with compute is
  // inside the compute segments and stated beside the bar.
  const char* colors[] = {"#4caf50", "#ff9800", "#9c27b0", "#9e9e9e", "#e53935", "#e0e0e0"};
  const char* labels[] = {"forward", "backward", "weight update", "other", "communication only", "GPU idle"};
  std::vector<std::pair<std::string, daydream::iteration_breakdown>> bds;
  bds.push_back({"baseline", breakdown_of(a, a.base)});
  for (auto& s : a.scenarios)
    if (s.error.empty()) bds.push_back({s.name, breakdown_of(a, s)});
  time_ns mx2 = 1;
  for (auto& [n, b] : bds) mx2 = std::max(mx2, b.duration);
  fmt::format_to(out, "<h2>Where {} goes on the GPUs</h2>\n<p class=\"key\">", html_escape(iteration_name(a, a.iteration)));
  for (int p = 0; p < 6; ++p) fmt::format_to(out, "<span style=\"background:{}\"></span>{}", colors[p], labels[p]);
  fmt::format_to(out, "</p>\n<p class=\"note\">GPU kernels and copies by phase, then the time only communication "
                      "runs, then the time the GPUs do nothing: each bar is the iteration. Communication is "
                      "never counted as GPU computation.</p>\n<table>\n"
                      "<tr><th class=\"l\">scenario</th><th class=\"l\">iteration</th><th>time</th>"
                      "<th>communication</th></tr>\n");
  for (auto& [name, b] : bds) {
    const time_ns comm_only = b.comm_busy - b.comm_overlapped;
    const time_ns idle = std::max<time_ns>(0, b.duration - b.gpu_busy - comm_only);
    time_ns parts[6] = {b.gpu_busy_by_phase[0], b.gpu_busy_by_phase[1], b.gpu_busy_by_phase[2],
                        b.gpu_busy_by_phase[3], comm_only, idle};
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td class=\"chart\"><div class=\"bar\" style=\"width:{:.2f}%\">",
                   html_escape(name), 100.0 * double(b.duration) / double(mx2));
    for (int p = 0; p < 6; ++p)
      if (parts[p] > 0)
        fmt::format_to(out, "<span style=\"width:{:.3f}%;background:{}\" title=\"{}: {} ({:.1f}%)\"></span>",
                       share(parts[p], b.duration), colors[p], labels[p], ms(parts[p]), share(parts[p], b.duration));
    fmt::format_to(out, "</div></td><td>{}</td><td>{}</td></tr>\n", ms(b.duration),
                   b.comm_busy > 0 ? fmt::format("{} busy, {:.0f}% overlapped", ms(b.comm_busy),
                                                 share(b.comm_overlapped, b.comm_busy))
                                   : std::string("none"));
  }
  fmt::format_to(out, "</table>\n");

  // The baseline's critical path, summarized.
  auto b = breakdown_of(a, a.base);
  fmt::format_to(out, "<h2>Critical path of {} (baseline)</h2>\n<p>{}.</p>\n<table><tr><th class=\"l\">layer</th>"
                      "<th class=\"l\">phase</th><th>instances</th><th>time</th><th>share of the iteration</th></tr>\n",
                 html_escape(iteration_name(a, a.iteration)), html_escape(explain_bound(a.base.g, b)));
  auto groups = critical_groups(b);
  time_ns rest = 0;
  std::size_t rest_n = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (i >= 15) { rest += groups[i].time; ++rest_n; continue; }
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n",
                   html_escape(groups[i].layer), daydream::to_string(groups[i].ph), groups[i].instances,
                   ms(groups[i].time), share(groups[i].time, b.duration));
  }
  if (rest_n)
    fmt::format_to(out, "<tr><td class=\"l\">({} more layer/phase groups)</td><td></td><td></td><td>{}</td><td>{:.1f}%</td></tr>\n",
                   rest_n, ms(rest), share(rest, b.duration));
  if (b.critical_cpu_gaps)
    fmt::format_to(out, "<tr><td class=\"l\">(CPU between traced operators)</td><td></td><td></td><td>{}</td>"
                        "<td>{:.1f}%</td></tr>\n",
                   ms(b.critical_cpu_gaps), share(b.critical_cpu_gaps, b.duration));
  if (b.critical[4])
    fmt::format_to(out, "<tr><td class=\"l\">(idle between tasks)</td><td></td><td></td><td>{}</td><td>{:.1f}%</td></tr>\n",
                   ms(b.critical[4]), share(b.critical[4], b.duration));
  fmt::format_to(out, "<tr><th class=\"l\">total</th><th></th><th></th><th>{}</th><th>100.0%</th></tr>\n</table>\n"
                      "</body></html>\n",
                 ms(b.duration));
  return h;
}

} // namespace whatif_cmd

#endif
