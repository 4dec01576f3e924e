// Defines the `daydream dlc` command: analyse, replay and export SketchDLC communication traces.
// SPDX-License-Identifier: MIT
//
//   daydream dlc analyze FILES... [--json] [--report FILE]
//   daydream dlc replay FILES... [--bandwidth-scale X] [--bandwidth BW] [--workers N] [--servers N] [--out DIR]
//   daydream dlc export TRACE --pass SPEC [--out DIR]
#include "dlc.hpp"

#include "../program.hpp"
#include "commands.hpp"

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

inline int run_analyze(const options& o, std::FILE* out) {
  auto job = daydream::io::load_dlc_job(paths_of(o.files));
  auto a = daydream::io::analyze_dlc(job);
  if (!o.report.empty()) write_text(o.report, html_report(job, a, o.files.size() == 1 ? o.files[0] : "DLC job"));
  if (o.json) {
    std::fputs((analysis_json(job, a) + "\n").c_str(), out);
    return program::ok;
  }
  print_job(out, job);
  print_analysis(out, a, o.max_rows);
  if (!o.report.empty()) fmt::print(out, "\nreport: {}\n", o.report);
  return program::ok;
}

inline int run_replay(const options& o, std::FILE* out) {
  namespace io = daydream::io;
  const auto x = replay_job(o);
  if (o.json) {
    std::fputs((replay_json(x) + "\n").c_str(), out);
    return program::ok;
  }
  print_job(out, x.job);
  fmt::print(out, "\nGraph: {} tasks ({} transfers); replaying it gives {} of the records another time than "
                  "recorded{}.\n",
             x.base.g.size(), x.base.transfers.size(), x.deviating,
             x.base.clock_skewed ? fmt::format(" ({} transfers received before sent: clocks differ by up to {} us)",
                                               x.base.clock_skewed, x.base.skew_ns / 1000)
                                 : std::string());
  fmt::print(out, "Transfer model: {:.4g} ns per byte recorded, {:.4g} ns per byte in the what-if.\n\n",
             x.base.recorded_per_byte_ns, x.what_if_per_byte_ns);
  fmt::print(out, "  {:<10} {:>14} {:>16} {:>14} {:>10}\n", "", "makespan (us)", "iteration (us)", "phase 3 (us)",
             "overlap");
  auto line = [&](const char* name, const daydream::replay_result& r, const io::dlc_analysis& a) {
    const double it = iteration_mean(a);
    fmt::print(out, "  {:<10} {:>14} {:>16} {:>14} {:>10}\n", name, us(double(r.makespan) / 1e3),
               it < 0 ? std::string("-") : us(it), us(a.phase3.mean), ratio(a.overlap_ratio_mean));
  };
  line("recorded", x.r0, x.a0);
  line("what-if", x.r1, x.a1);
  for (auto& p : x.written) fmt::print(out, "wrote {}\n", p.string());
  return program::ok;
}

inline int run_export(const options& o, std::FILE* out) {
  const auto w = export_scenario(o);
  if (o.json) {
    std::fputs((export_json(o, w) + "\n").c_str(), out);
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

