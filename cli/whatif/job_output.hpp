// Defines what `daydream whatif RANK0 RANK1 ...` writes of a job besides its table, shared
// with Python's Job: the HTML report (--report), the Chrome-trace timeline of every rank
// (--timeline) and the representative-worker prediction (--representative).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_JOB_OUTPUT_HPP
#define DAYDREAM_CLI_WHATIF_JOB_OUTPUT_HPP

#include "output.hpp"
#include "report.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/whatif/job.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace whatif_cmd {

/// The job's HTML report: per-rank chart of compute / transfer / wait / other, and the scenarios.
inline std::string job_html(const daydream::whatif::job_baseline& a,
                            const std::vector<daydream::whatif::job_scenario>& scenarios,
                            const std::vector<std::string>& warnings) {
  std::string h;
  auto out = std::back_inserter(h);
  fmt::format_to(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>daydream job what-if</title>"
                      "<style>body{{font-family:sans-serif;margin:2em;color:#222;max-width:80em}}table{{border-collapse:collapse}}"
                      "td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}td.l,th.l{{text-align:left}}"
                      ".bar{{display:flex;height:18px;width:32em}}.bar span{{display:block;height:100%}}"
                      ".key span{{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em}}"
                      ".warn{{background:#fff3cd;border:1px solid #e0b400;padding:.6em 1em;margin:.5em 0}}</style></head><body>\n"
                      "<h1>daydream what-if: job of {} ranks</h1>\n",
                 a.j.world_size);
  for (auto& w : warnings) fmt::format_to(out, "<div class=\"warn\"><b>Warning:</b> {}</div>\n", html_escape(w));
  fmt::format_to(out, "<p>Straggler: {}</p>\n", html_escape(a.base.straggler.reason));
  fmt::format_to(out, "<h2>Per rank (iteration {})</h2>\n<p class=\"key\"><span style=\"background:#4878d0\"></span>compute"
                      "<span style=\"background:#ee854a\"></span>transfer<span style=\"background:#d65f5f\"></span>"
                      "waiting for others<span style=\"background:#ccc\"></span>other</p>\n<table><tr><th>rank</th>"
                      "<th>measured</th><th>predicted</th><th class=\"l\">compute / transfer / wait / other</th></tr>\n",
                 a.base.iteration);
  time_ns longest = 1;
  for (auto& rr : a.base.ranks) longest = std::max(longest, rr.predicted);
  for (auto& rr : a.base.ranks) {
    auto pct = [&](time_ns t) { return 100.0 * double(t) / double(longest); };
    fmt::format_to(out,
                   "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"l\"><div class=\"bar\">"
                   "<span style=\"width:{:.2f}%;background:#4878d0\" title=\"compute {}\"></span>"
                   "<span style=\"width:{:.2f}%;background:#ee854a\" title=\"transfer {}\"></span>"
                   "<span style=\"width:{:.2f}%;background:#d65f5f\" title=\"wait {}\"></span>"
                   "<span style=\"width:{:.2f}%;background:#ccc\" title=\"other {}\"></span></div></td></tr>\n",
                   rr.rank, rr.measured > 0 ? ms(rr.measured) : std::string("n/a"), ms(rr.predicted), pct(rr.compute),
                   ms(rr.compute), pct(rr.transfer), ms(rr.transfer), pct(rr.wait), ms(rr.wait), pct(rr.other), ms(rr.other));
  }
  fmt::format_to(out, "</table>\n<h2>Scenarios</h2>\n<table><tr><th class=\"l\">scenario</th><th>job iteration</th>"
                      "<th>speedup</th><th class=\"l\">notes</th></tr>\n<tr><td class=\"l\">baseline</td><td>{}</td><td>1.00x</td><td></td></tr>\n",
                 ms(a.base.predicted));
  for (auto& s : scenarios) {
    std::string notes;
    for (auto& n : s.notes) notes += (notes.empty() ? "" : "; ") + n;
    if (!s.error.empty()) notes = "refused: " + s.error;
    else if (!s.applied) notes += "; not applied: " + s.reason;
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>\n",
                   html_escape(s.name), s.error.empty() ? ms(s.res.predicted) : std::string("-"),
                   s.error.empty() ? fmt::format("{:.2f}x", double(a.base.predicted) / double(std::max<time_ns>(1, s.res.predicted)))
                                   : std::string("-"),
                   html_escape(notes));
  }
  fmt::format_to(out, "</table>\n</body></html>\n");
  return h;
}

/// Writes the job's HTML report to `path`; throws daydream::error naming `program` if it
/// cannot be written.
inline void write_job_report(const std::string& path, const std::string& program,
                             const daydream::whatif::job_baseline& a,
                             const std::vector<daydream::whatif::job_scenario>& scenarios,
                             const std::vector<std::string>& warnings) {
  std::ofstream f(path, std::ios::binary);
  f << job_html(a, scenarios, warnings);
  if (!f) throw daydream::error(program + ": cannot write report to '" + path + "'");
}

/// Writes the replays of the job (the baseline, then each scenario predicted) as one
/// Chrome trace: a process per rank and scenario.
inline void write_job_timeline(const std::string& path, const daydream::whatif::job_baseline& a,
                               const std::vector<daydream::whatif::job_scenario>& scenarios) {
  daydream::io::chrome_trace ct;
  ct.add_ranks("baseline", a.jg.g, a.base.r);
  for (auto& s : scenarios)
    if (s.error.empty()) ct.add_ranks(s.name, s.jg.g, s.res.r);
  ct.save(path);
}

/// The representative-worker prediction: the rank whose predicted iteration is the median,
/// replayed alone with the collective model (daydream::representative_graph). Returns
/// {its rank, its predicted iteration (ns)}.
inline std::pair<std::int32_t, time_ns> representative_worker(const daydream::whatif::job_baseline& a,
                                                             const daydream::replay_options& ro) {
  std::vector<std::pair<time_ns, std::size_t>> v;
  for (std::size_t k = 0; k < a.base.ranks.size(); ++k) v.emplace_back(a.base.ranks[k].predicted, k);
  std::sort(v.begin(), v.end());
  const auto k = v[(v.size() - 1) / 2].second;
  auto g = daydream::representative_graph(a.j, a.m, a.alignment, a.model, k);
  auto r = daydream::replay(g, daydream::trace_order_policy{}, ro);
  return {a.j.ranks[k].rank, daydream::iteration_time(g, r, a.base.iteration)};
}

} // namespace whatif_cmd

#endif
