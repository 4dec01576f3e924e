// Defines what the `daydream dlc` subcommands compute, shared with Python's dd.dlc_*: the
// HTML page and JSON of an analysis, a replay of a DLC job under another cluster (its
// numbers and JSON, the files it writes) and the DLC files of a parameter-server what-if.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_DLC_COMMANDS_HPP
#define DAYDREAM_CLI_DLC_COMMANDS_HPP

#include "../whatif/report.hpp"
#include "dlc.hpp"
#include "scenario_dlc.hpp"

#include <daydream/io/dlc.hpp>
#include <daydream/io/dlc_analysis.hpp>
#include <daydream/io/dlc_graph.hpp>
#include <daydream/io/dlc_writer.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/replay.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace dlc_cmd {

//! Formatting helpers.
inline std::string us(double v) { return fmt::format("{:.1f}", v); }
inline std::string ratio(double r) { return r < 0 ? std::string("-") : fmt::format("{:.1f}%", 100 * r); }

/// The HTML page of an analysis: the job's files, the phases of every iteration as bars,
/// the overheads, per-key overheads, message sizes, data volume and the d_time check.
inline std::string html_report(const daydream::io::dlc_job& job, const daydream::io::dlc_analysis& a,
                               const std::string& title) {
  using whatif_cmd::html_escape;
  std::string h;
  auto out = std::back_inserter(h);
  fmt::format_to(out,
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>daydream dlc: {}</title>\n"
                 "<style>body{{font-family:sans-serif;margin:2em;color:#222;max-width:80em}}"
                 "table{{border-collapse:collapse}}td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}"
                 "td.l,th.l{{text-align:left}}.bar{{display:flex;height:16px;min-width:1px}}.bar span{{display:block;height:100%}}"
                 "td.chart{{width:30em;text-align:left}}.key span{{display:inline-block;width:.9em;height:.9em;"
                 "margin:0 .3em 0 1em;vertical-align:middle}}</style></head><body>\n"
                 "<h1>daydream dlc</h1>\n<p>{}: {} worker(s), {} server(s).</p>\n",
                 html_escape(title), html_escape(title), job.workers, job.servers);
  h += "<h2>Files</h2>\n<table><tr><th class=\"l\">node</th><th class=\"l\">file</th><th>records</th><th>usable</th>"
       "<th>set-up</th><th>unusable</th><th class=\"l\">reasons</th></tr>\n";
  for (auto& f : job.files) {
    std::string why;
    for (auto& [k, n] : f.report.unusable) why += fmt::format("{} x {}; ", n, k);
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                        "<td class=\"l\">{}</td></tr>\n",
                   html_escape(f.node_name()), html_escape(f.path), f.report.records, f.report.usable, f.report.setup,
                   f.report.unusable_total(), html_escape(why));
  }
  h += "</table>\n";
  // Phases: phase 1, then phase 3 split into the overlap (phase 2) and the rest.
  const char* c1 = "#4e79a7";
  const char* c2 = "#f28e2b";
  const char* c3 = "#59a14f";
  std::int64_t longest = 1;
  for (auto& it : a.iterations) longest = std::max(longest, std::max<std::int64_t>(0, it.phase1_us) + it.phase3_us);
  fmt::format_to(out, "<h2>Phases of every iteration</h2>\n<p class=\"key\"><span style=\"background:{}\"></span>phase 1 "
                      "(computation only)<span style=\"background:{}\"></span>phase 2 (overlap)"
                      "<span style=\"background:{}\"></span>rest of phase 3 (communication)</p>\n"
                      "<table><tr><th>rank</th><th>iteration</th><th>phase 1 (us)</th><th>phase 2</th><th>phase 3</th>"
                      "<th>overlap</th><th class=\"l\">timeline</th></tr>\n",
                 c1, c2, c3);
  for (auto& it : a.iterations) {
    auto pct = [&](std::int64_t v) { return 100.0 * double(std::max<std::int64_t>(0, v)) / double(longest); };
    fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"chart\">"
                        "<div class=\"bar\"><span style=\"width:{:.2f}%;background:{}\"></span><span style=\"width:{:.2f}%;"
                        "background:{}\"></span><span style=\"width:{:.2f}%;background:{}\"></span></div></td></tr>\n",
                   it.rank, it.iteration, it.phase1_us < 0 ? std::string("-") : std::to_string(it.phase1_us),
                   it.phase2_us, it.phase3_us, ratio(it.overlap_ratio), pct(it.phase1_us), c1, pct(it.phase2_us), c2,
                   pct(it.phase3_us - it.phase2_us), c3);
  }
  h += "</table>\n";
  fmt::format_to(out, "<p>Mean overlap ratio: {}.</p>\n", ratio(a.overlap_ratio_mean));
  // Overheads, with a bar from min to max and the mean marked.
  h += "<h2>Overheads</h2>\n<table><tr><th class=\"l\">overhead</th><th>samples</th><th>min (us)</th><th>mean</th>"
       "<th>max</th><th class=\"l\">range (scaled to the largest max)</th></tr>\n";
  std::int64_t top = 1;
  for (auto* s : {&a.computation, &a.search, &a.update, &a.sync, &a.wait}) top = std::max(top, s->max);
  auto orow = [&](const std::string& name, const daydream::io::dlc_stat& s) {
    if (!s.count) {
      fmt::format_to(out, "<tr><td class=\"l\">{}</td><td>0</td><td>-</td><td>-</td><td>-</td><td></td></tr>\n",
                     html_escape(name));
      return;
    }
    const double lo = 100.0 * double(s.min) / double(top), mid = 100.0 * s.mean / double(top),
                 hi = 100.0 * double(s.max) / double(top);
    fmt::format_to(out, "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"chart\">"
                        "<div class=\"bar\"><span style=\"width:{:.2f}%\"></span><span style=\"width:{:.2f}%;background:#bbb\">"
                        "</span><span style=\"width:2px;background:#000\"></span><span style=\"width:{:.2f}%;background:#bbb\">"
                        "</span></div></td></tr>\n",
                   html_escape(name), s.count, s.min, us(s.mean), s.max, lo, std::max(0.0, mid - lo),
                   std::max(0.0, hi - mid));
  };
  orow("computation", a.computation);
  orow("search", a.search);
  orow("update", a.update);
  orow("synchronization", a.sync);
  orow("wait", a.wait);
  h += "</table>\n";
  if (!a.search_by_key.empty() || !a.update_by_key.empty() || !a.sync_by_key.empty()) {
    h += "<h3>Per key (min / mean / max, and the distribution from min to max: darker bins hold more)</h3>\n"
         "<table><tr><th>key</th><th>search (us)</th><th>update</th>"
         "<th>synchronization</th></tr>\n";
    std::map<std::int64_t, int> keys;
    for (auto* m : {&a.search_by_key, &a.update_by_key, &a.sync_by_key})
      for (auto& [k, s] : *m) keys[k] = 1;
    auto cell = [&](const std::map<std::int64_t, daydream::io::dlc_stat>& m, std::int64_t k) {
      auto it = m.find(k);
      if (it == m.end()) return std::string("-");
      std::string bars;
      const auto h = it->second.histogram();
      const std::size_t most = h.empty() ? 1 : std::max<std::size_t>(1, *std::max_element(h.begin(), h.end()));
      for (auto n : h)
        bars += fmt::format("<span style=\"width:10%;background:#4e79a7;opacity:{:.2f}\"></span>",
                            0.1 + 0.9 * double(n) / double(most));
      return fmt::format("{} / {} / {} (p90 {})<div class=\"bar\" title=\"histogram, min to max\">{}</div>",
                         it->second.min, us(it->second.mean), it->second.max, it->second.percentile(0.9), bars);
    };
    for (auto& [k, unused] : keys)
      fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", k, cell(a.search_by_key, k),
                     cell(a.update_by_key, k), cell(a.sync_by_key, k));
    h += "</table>\n";
  }
  if (!a.message_sizes.empty()) {
    h += "<h2>Message sizes (bytes, training iterations, workers' view)</h2>\n<table><tr><th>key</th>"
         "<th>push_send</th><th>push_recv</th><th>pull_send</th><th>pull_recv</th></tr>\n";
    for (auto& m : a.message_sizes)
      fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", m.key, m.push_send,
                     m.push_recv, m.pull_send, m.pull_recv);
    h += "</table>\n";
  }
  h += "<h2>Data volume (bytes)</h2>\n<table><tr><th>rank</th><th>iteration</th><th>push</th><th>push_ack</th>"
       "<th>pull_request</th><th>pull_response</th><th>total</th></tr>\n";
  for (auto& v : a.volume)
    fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                   v.rank, v.iteration, v.push, v.push_ack, v.pull_request, v.pull_response, v.total());
  h += "</table>\n";
  fmt::format_to(out, "<h2>d_time check</h2>\n<p>{} one-to-one record(s), {} whose d_time is not its time minus its "
                      "dependency's.</p>\n</body></html>\n",
                 a.d_time_checked, a.d_time_mismatches.size());
  return h;
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  o << text;
  o.close();
  if (!o) throw daydream::error("daydream dlc: " + path + ": cannot write the file");
}

inline std::vector<std::filesystem::path> paths_of(const std::vector<std::string>& files) {
  return {files.begin(), files.end()};
}


/// `daydream dlc analyze --json`: the analysis as one JSON object.
inline std::string analysis_json(const daydream::io::dlc_job& job, const daydream::io::dlc_analysis& a) {
  daydream::io::json_writer w(true);
  daydream::io::write_dlc_analysis_json(w, job, a);
  return w.take();
}

inline double bandwidth_of(const std::string& spec, const char* what) {
  if (spec.empty()) return 0;
  double b = 0;
  try {
    auto p = daydream::pass_params::parse("dlc", std::string("b=") + spec);
    b = p.get_bandwidth("b", 0);
  } catch (const daydream::error&) {
    throw daydream::usage_error(std::string("daydream dlc replay: ") + what + " " + spec +
                                ": not a bandwidth (25Gbps, 3GB/s; a plain number is Gbit/s)");
  }
  if (!(b > 0)) throw daydream::usage_error(std::string("daydream dlc replay: ") + what + " must be positive");
  return b;
}

/// A DLC job replayed as recorded and under the what-if of the options (dlc replay).
struct replay_outcome {
  daydream::io::dlc_job job, what_if_job;
  daydream::io::dlc_graph base;
  daydream::replay_result r0, r1;         ///< the recorded graph's replay, the what-if's
  daydream::io::dlc_analysis a0, a1;      ///< analyses of the recorded job and of the what-if's
  std::size_t deviating = 0;              ///< records the replay puts at another time than recorded
  double what_if_per_byte_ns = 0;
  std::vector<std::filesystem::path> written; ///< the what-if's DLC files (--out)
};

/// The mean iteration (phase 1 + phase 3) of an analysis, us; -1 if none is complete.
inline double iteration_mean(const daydream::io::dlc_analysis& a) {
  double s = 0;
  std::size_t n = 0;
  for (auto& it : a.iterations)
    if (it.phase1_us >= 0) { s += double(it.phase1_us + it.phase3_us); ++n; }
  return n ? s / double(n) : -1.0;
}

/// `daydream dlc replay`: reads the files, replays them as recorded and under the what-if
/// (bandwidths, workers, servers), writes the what-if's files (`out`) and report (`report`).
inline replay_outcome replay_job(const options& o) {
  namespace io = daydream::io;
  replay_outcome x;
  x.job = io::load_dlc_job(paths_of(o.files));
  io::dlc_graph_options gopt;
  gopt.recorded_bandwidth = bandwidth_of(o.recorded_bandwidth, "--recorded-bandwidth");
  x.base = io::build_dlc_graph(x.job, gopt);
  x.r0 = daydream::replay(x.base.g);
  for (std::size_t f = 0; f < x.job.files.size(); ++f)
    for (std::size_t i = 0; i < x.job.files[f].records.size(); ++i)
      x.deviating += x.base.replayed_us(x.r0, f, i) != x.job.files[f].records[i].time_us;
  io::dlc_what_if w;
  w.bandwidth_scale = o.bandwidth_scale;
  w.worker_bandwidth = bandwidth_of(o.bandwidth, "--bandwidth");
  w.server_bandwidth = o.ps_bandwidth.empty() ? w.worker_bandwidth : bandwidth_of(o.ps_bandwidth, "--ps-bandwidth");
  w.workers = o.workers;
  w.servers = o.servers;
  auto d = x.base;
  io::apply_dlc_what_if(d, w);
  x.r1 = daydream::replay(d.g);
  x.what_if_job = io::retime_dlc_job(x.job, d, x.r1);
  x.a0 = io::analyze_dlc(x.job);
  x.a1 = io::analyze_dlc(x.what_if_job);
  x.what_if_per_byte_ns = io::dlc_per_byte_ns(x.base, w);
  if (!o.out.empty()) {
    auto msgs = io::dlc_messages(x.what_if_job, x.base.origin_us);
    for (auto& m : msgs)
      if (m.sent < 0 || m.received < 0)
        throw daydream::error("daydream dlc replay: --out needs both ends of every message, and the job lacks a file "
                              "(worker " + std::to_string(m.worker) + " or server " + std::to_string(m.server) + ")");
    x.written = io::write_dlc_files(o.out, io::write_dlc(msgs, {.workers = x.job.workers, .servers = x.job.servers,
                                                                .epoch_us = x.base.origin_us}));
  }
  if (!o.report.empty()) write_text(o.report, html_report(x.what_if_job, x.a1, "what-if replay"));
  return x;
}

/// `daydream dlc replay --json`: the replay as one JSON object.
inline std::string replay_json(const replay_outcome& x) {
  daydream::io::json_writer j(true);
  j.begin_object();
  std::size_t records = 0;
  for (auto& f : x.job.files) records += f.records.size();
  j.field("records", records);
  j.field("tasks", x.base.g.size()).field("transfers", x.base.transfers.size());
  j.field("replay_deviations", x.deviating).field("clock_skewed", x.base.clock_skewed);
  j.field("recorded_per_byte_ns", x.base.recorded_per_byte_ns).field("what_if_per_byte_ns", x.what_if_per_byte_ns);
  j.key("recorded").begin_object().field("makespan_us", double(x.r0.makespan) / 1e3)
      .field("iteration_us", iteration_mean(x.a0)).field("phase3_us", x.a0.phase3.mean)
      .field("overlap_ratio", x.a0.overlap_ratio_mean).end_object();
  j.key("what_if").begin_object().field("makespan_us", double(x.r1.makespan) / 1e3)
      .field("iteration_us", iteration_mean(x.a1)).field("phase3_us", x.a1.phase3.mean)
      .field("overlap_ratio", x.a1.overlap_ratio_mean).end_object();
  j.key("written").begin_array();
  for (auto& p : x.written) j.value(p.string());
  j.end_array().end_object();
  return j.take();
}

/// `daydream dlc export`: the DLC files of the parameter-server scenario `o.pass` of the
/// Kineto trace `o.trace`, written into `o.out`. A usage error if the scenario has no push
/// and pull.
inline scenario_files export_scenario(const options& o) {
  namespace io = daydream::io;
  auto reg = daydream::passes::bundled();
  auto chain = reg.make_chain(o.pass);
  (void)cluster_of_spec(o.pass); // a usage error before the trace is read
  auto t = io::load_kineto(o.trace);
  auto run = daydream::passes::run_chain(t.g, chain);
  auto w = write_scenario_dlc(o.out, o.pass, t.g, run.first);
  if (!w.messages)
    throw daydream::usage_error("daydream dlc export: the scenario '" + o.pass +
                                "' has no parameter-server push and pull (p3, tictac and tensor_partition have)");
  return w;
}

/// `daydream dlc export --json`: what was written, as one JSON object.
inline std::string export_json(const options& o, const scenario_files& w) {
  daydream::io::json_writer j(true);
  j.begin_object().field("trace", o.trace).field("pass", o.pass).field("workers", w.workers)
      .field("servers", w.servers).field("messages", w.messages).key("files").begin_array();
  for (auto& p : w.files) j.value(p.string());
  j.end_array().end_object();
  return j.take();
}

} // namespace dlc_cmd

#endif
