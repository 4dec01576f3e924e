// Defines the `daydream dlc` command: analyse, replay and export SketchDLC communication traces.
// SPDX-License-Identifier: MIT
//
//   daydream dlc analyze FILES... [--json] [--report FILE]
//   daydream dlc replay FILES... [--bandwidth-scale X] [--bandwidth BW] [--workers N] [--servers N] [--out DIR]
//   daydream dlc export TRACE --pass SPEC [--out DIR]
#include "dlc.hpp"

#include "../program.hpp"
#include "../whatif/report.hpp"
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

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dlc_cmd {

/// Adds `dlc` and its three subcommands to `app`.
commands add_commands(CLI::App& app, options& o) {
  commands c;
  c.dlc = app.add_subcommand("dlc", "SketchDLC communication traces of parameter-server jobs (one file per node): "
                                    "analyse them, replay them under another cluster, write them from a what-if");
  c.dlc->require_subcommand(1);
  c.analyze = c.dlc->add_subcommand("analyze", "phases, overlap ratio, overheads, message sizes and data volume "
                                               "of a DLC job (SketchDLC 3.2.4, 5.3)");
  c.analyze->add_option("files", o.files, "the job's DLC files, one per worker and server")->required();
  c.analyze->add_flag("--json", o.json, "print the analysis as JSON (docs/dlc.md)");
  c.analyze->add_option("--report,--html", o.report, "write an HTML report to this file");
  c.analyze->add_option("--rows", o.max_rows, "iterations shown per worker in the table (JSON has all)");

  c.replay = c.dlc->add_subcommand("replay", "replay a DLC job as a task graph, and under another network, "
                                             "worker count or server count");
  c.replay->add_option("files", o.files, "the job's DLC files, one per worker and server")->required();
  c.replay->add_option("--bandwidth-scale", o.bandwidth_scale, "both NICs' bandwidth times this (default 1)")
      ->check(CLI::PositiveNumber);
  c.replay->add_option("--bandwidth", o.bandwidth, "a worker's NIC bandwidth (25Gbps, 3GB/s; a plain number is Gbit/s)");
  c.replay->add_option("--ps-bandwidth", o.ps_bandwidth, "a server's NIC bandwidth (default: --bandwidth)");
  c.replay->add_option("--recorded-bandwidth", o.recorded_bandwidth,
                       "the traced network's bandwidth (default: estimated from the fastest transfer)");
  c.replay->add_option("--workers", o.workers, "workers of the what-if (default: the job's)")->check(CLI::PositiveNumber);
  c.replay->add_option("--servers", o.servers, "servers of the what-if (default: the job's)")->check(CLI::PositiveNumber);
  c.replay->add_option("--out", o.out, "write the what-if's DLC files into this directory");
  c.replay->add_flag("--json", o.json, "print the result as JSON");
  c.replay->add_option("--report,--html", o.report, "write an HTML report of the what-if's analysis");

  c.export_ = c.dlc->add_subcommand("export", "write the DLC files of a parameter-server what-if (P3, TicTac, "
                                              "tensor partition) of a Kineto trace");
  c.export_->add_option("trace", o.trace, "a PyTorch profiler (Kineto) trace")->required();
  c.export_->add_option("--pass", o.pass, "the scenario, as for `daydream whatif` (p3:workers=4,ps=2)")->required();
  c.export_->add_option("--out", o.out, "directory for the files (one per worker and server)")->required();
  c.export_->add_flag("--json", o.json, "print what was written as JSON");
  return c;
}

//! Formatting helpers.
inline std::string us(double v) { return fmt::format("{:.1f}", v); }
inline std::string ratio(double r) { return r < 0 ? std::string("-") : fmt::format("{:.1f}%", 100 * r); }

inline void print_job(std::FILE* out, const daydream::io::dlc_job& job) {
  fmt::print(out, "DLC job: {} worker(s), {} server(s); {} file(s)\n", job.workers, job.servers, job.files.size());
  for (auto& f : job.files) {
    fmt::print(out, "  {:<10} {}: {} records: {} usable, {} set-up, {} unusable", f.node_name(), f.path,
               f.report.records, f.report.usable, f.report.setup, f.report.unusable_total());
    if (f.report.duplicate_ids) fmt::print(out, ", {} duplicate ids", f.report.duplicate_ids);
    if (f.report.out_of_order) fmt::print(out, ", {} out of time order", f.report.out_of_order);
    fmt::print(out, "\n");
    for (auto& [why, n] : f.report.unusable) fmt::print(out, "    unusable: {} x {}\n", n, why);
    for (auto& p : f.report.problems) fmt::print(out, "    {}\n", p);
  }
}

inline void print_analysis(std::FILE* out, const daydream::io::dlc_analysis& a, std::size_t max_rows) {
  using daydream::io::dlc_stat;
  if (!a.iterations.empty()) {
    fmt::print(out, "\nIterations (us; SketchDLC 3.2.4: phase 1 computation only, 2 overlap, 3 communication):\n");
    fmt::print(out, "  {:>4} {:>9} {:>10} {:>10} {:>10} {:>8} {:>12} {:>10}\n", "rank", "iteration", "phase1", "phase2",
               "phase3", "overlap", "computation", "wait");
    std::map<std::int32_t, std::size_t> shown, hidden;
    for (auto& it : a.iterations) {
      if (shown[it.rank] >= max_rows) { ++hidden[it.rank]; continue; }
      ++shown[it.rank];
      fmt::print(out, "  {:>4} {:>9} {:>10} {:>10} {:>10} {:>8} {:>12} {:>10}\n", it.rank, it.iteration,
                 it.phase1_us < 0 ? std::string("-") : std::to_string(it.phase1_us), it.phase2_us, it.phase3_us,
                 ratio(it.overlap_ratio), it.computation_us < 0 ? std::string("-") : std::to_string(it.computation_us),
                 it.wait_us);
    }
    for (auto& [rank, n] : hidden) fmt::print(out, "  ... {} more iteration(s) of rank {} (--json has all)\n", n, rank);
    fmt::print(out, "  mean overlap ratio: {}\n", ratio(a.overlap_ratio_mean));
  }
  fmt::print(out, "\nOverheads (us):   {:>10} {:>10} {:>10} {:>8}\n", "min", "mean", "max", "samples");
  auto row = [&](const char* name, const dlc_stat& s) {
    if (!s.count) fmt::print(out, "  {:<15} {:>10} {:>10} {:>10} {:>8}\n", name, "-", "-", "-", 0);
    else fmt::print(out, "  {:<15} {:>10} {:>10} {:>10} {:>8}\n", name, s.min, us(s.mean), s.max, s.count);
  };
  row("computation", a.computation);
  row("search", a.search);
  row("update", a.update);
  row("synchronization", a.sync);
  row("wait", a.wait);
  if (!a.message_sizes.empty()) {
    fmt::print(out, "\nMessage sizes of the training iterations (bytes, workers' view):\n");
    fmt::print(out, "  {:>6} {:>12} {:>12} {:>12} {:>12}\n", "key", "push_send", "push_recv", "pull_send", "pull_recv");
    for (auto& m : a.message_sizes)
      fmt::print(out, "  {:>6} {:>12} {:>12} {:>12} {:>12}{}\n", m.key, m.push_send, m.push_recv, m.pull_send,
                 m.pull_recv, m.varies ? "  (varies: the largest)" : "");
  }
  fmt::print(out, "\nd_time check: {} one-to-one record(s), {} mismatch(es)\n", a.d_time_checked,
             a.d_time_mismatches.size());
  for (std::size_t i = 0; i < a.d_time_mismatches.size() && i < 10; ++i) {
    auto& m = a.d_time_mismatches[i];
    fmt::print(out, "  {}:{}: d_time {} us, but the record is {} us after its dependency\n", m.file, m.line,
               m.d_time_us, m.actual_us);
  }
}

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

inline int run_analyze(const options& o, std::FILE* out) {
  auto job = daydream::io::load_dlc_job(paths_of(o.files));
  auto a = daydream::io::analyze_dlc(job);
  if (!o.report.empty()) write_text(o.report, html_report(job, a, o.files.size() == 1 ? o.files[0] : "DLC job"));
  if (o.json) {
    daydream::io::json_writer w(true);
    daydream::io::write_dlc_analysis_json(w, job, a);
    std::fputs((w.take() + "\n").c_str(), out);
    return program::ok;
  }
  print_job(out, job);
  print_analysis(out, a, o.max_rows);
  if (!o.report.empty()) fmt::print(out, "\nreport: {}\n", o.report);
  return program::ok;
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

inline int run_replay(const options& o, std::FILE* out) {
  namespace io = daydream::io;
  auto job = io::load_dlc_job(paths_of(o.files));
  io::dlc_graph_options gopt;
  gopt.recorded_bandwidth = bandwidth_of(o.recorded_bandwidth, "--recorded-bandwidth");
  auto base = io::build_dlc_graph(job, gopt);
  auto r0 = daydream::replay(base.g);
  std::size_t deviating = 0;
  for (std::size_t f = 0; f < job.files.size(); ++f)
    for (std::size_t i = 0; i < job.files[f].records.size(); ++i)
      deviating += base.replayed_us(r0, f, i) != job.files[f].records[i].time_us;
  io::dlc_what_if w;
  w.bandwidth_scale = o.bandwidth_scale;
  w.worker_bandwidth = bandwidth_of(o.bandwidth, "--bandwidth");
  w.server_bandwidth = o.ps_bandwidth.empty() ? w.worker_bandwidth : bandwidth_of(o.ps_bandwidth, "--ps-bandwidth");
  w.workers = o.workers;
  w.servers = o.servers;
  auto d = base;
  io::apply_dlc_what_if(d, w);
  auto r1 = daydream::replay(d.g);
  auto job1 = io::retime_dlc_job(job, d, r1);
  auto a0 = io::analyze_dlc(job), a1 = io::analyze_dlc(job1);
  const double p1 = io::dlc_per_byte_ns(base, w);
  std::vector<std::filesystem::path> written;
  if (!o.out.empty()) {
    auto msgs = io::dlc_messages(job1, base.origin_us);
    for (auto& m : msgs)
      if (m.sent < 0 || m.received < 0)
        throw daydream::error("daydream dlc replay: --out needs both ends of every message, and the job lacks a file "
                              "(worker " + std::to_string(m.worker) + " or server " + std::to_string(m.server) + ")");
    written = io::write_dlc_files(o.out, io::write_dlc(msgs, {.workers = job.workers, .servers = job.servers,
                                                              .epoch_us = base.origin_us}));
  }
  if (!o.report.empty()) write_text(o.report, html_report(job1, a1, "what-if replay"));
  auto iteration_mean = [](const io::dlc_analysis& a) {
    double s = 0;
    std::size_t n = 0;
    for (auto& it : a.iterations)
      if (it.phase1_us >= 0) { s += double(it.phase1_us + it.phase3_us); ++n; }
    return n ? s / double(n) : -1.0;
  };
  if (o.json) {
    daydream::io::json_writer j(true);
    j.begin_object();
    j.field("records", [&] { std::size_t n = 0; for (auto& f : job.files) n += f.records.size(); return n; }());
    j.field("tasks", base.g.size()).field("transfers", base.transfers.size());
    j.field("replay_deviations", deviating).field("clock_skewed", base.clock_skewed);
    j.field("recorded_per_byte_ns", base.recorded_per_byte_ns).field("what_if_per_byte_ns", p1);
    j.key("recorded").begin_object().field("makespan_us", double(r0.makespan) / 1e3)
        .field("iteration_us", iteration_mean(a0)).field("phase3_us", a0.phase3.mean)
        .field("overlap_ratio", a0.overlap_ratio_mean).end_object();
    j.key("what_if").begin_object().field("makespan_us", double(r1.makespan) / 1e3)
        .field("iteration_us", iteration_mean(a1)).field("phase3_us", a1.phase3.mean)
        .field("overlap_ratio", a1.overlap_ratio_mean).end_object();
    j.key("written").begin_array();
    for (auto& p : written) j.value(p.string());
    j.end_array().end_object();
    std::fputs((j.take() + "\n").c_str(), out);
    return program::ok;
  }
  print_job(out, job);
  fmt::print(out, "\nGraph: {} tasks ({} transfers); replaying it gives {} of the records another time than "
                  "recorded{}.\n",
             base.g.size(), base.transfers.size(), deviating,
             base.clock_skewed ? fmt::format(" ({} transfers received before sent: clocks differ by up to {} us)",
                                             base.clock_skewed, base.skew_ns / 1000)
                               : std::string());
  fmt::print(out, "Transfer model: {:.4g} ns per byte recorded, {:.4g} ns per byte in the what-if.\n\n",
             base.recorded_per_byte_ns, p1);
  fmt::print(out, "  {:<10} {:>14} {:>16} {:>14} {:>10}\n", "", "makespan (us)", "iteration (us)", "phase 3 (us)",
             "overlap");
  auto line = [&](const char* name, const daydream::replay_result& r, const io::dlc_analysis& a) {
    const double it = iteration_mean(a);
    fmt::print(out, "  {:<10} {:>14} {:>16} {:>14} {:>10}\n", name, us(double(r.makespan) / 1e3),
               it < 0 ? std::string("-") : us(it), us(a.phase3.mean), ratio(a.overlap_ratio_mean));
  };
  line("recorded", r0, a0);
  line("what-if", r1, a1);
  for (auto& p : written) fmt::print(out, "wrote {}\n", p.string());
  return program::ok;
}

inline int run_export(const options& o, std::FILE* out) {
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
  if (o.json) {
    daydream::io::json_writer j(true);
    j.begin_object().field("trace", o.trace).field("pass", o.pass).field("workers", w.workers)
        .field("servers", w.servers).field("messages", w.messages).key("files").begin_array();
    for (auto& p : w.files) j.value(p.string());
    j.end_array().end_object();
    std::fputs((j.take() + "\n").c_str(), out);
    return program::ok;
  }
  fmt::print(out, "{} with {}: {} messages of {} worker(s) and {} server(s)\n", o.trace, o.pass, w.messages,
             w.workers, w.servers);
  for (auto& p : w.files) fmt::print(out, "wrote {}\n", p.string());
  return program::ok;
}

/// Runs the parsed subcommand.
int run(const commands& c, const options& o, std::FILE* out) {
  if (c.analyze->parsed()) return run_analyze(o, out);
  if (c.replay->parsed()) return run_replay(o, out);
  if (c.export_->parsed()) return run_export(o, out);
  return program::usage;
}

} // namespace dlc_cmd

