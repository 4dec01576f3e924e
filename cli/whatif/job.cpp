// Defines the job mode of the what-if command: every rank of a distributed job replayed together, explained per rank, and job scenarios.
// SPDX-License-Identifier: MIT
//
//   rank0.json rank1.json ... | DIR --load_job--> job --match--> collectives --align--> offsets
//        --build_job_graph--> one graph --replay--> per rank: predicted vs measured, compute / transfer / wait,
//        straggler, critical path; scenarios: no_straggler, network:scale=S, collective:algorithm=A,
//        any single-GPU pass on all or --on-rank ranks; --representative: one worker + the collective model.
#include "chakra_source.hpp"
#include "internal.hpp"
#include "job_memory.hpp"
#include "job_output.hpp"
#include "output.hpp"
#include "report.hpp"
#include "scenario.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/job.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/whatif/job.hpp>
#if DAYDREAM_HAVE_ALIGN
#include <daydream/align/lp.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

namespace whatif_cmd {

bool have_lp_alignment() noexcept {
#if DAYDREAM_HAVE_ALIGN
  return true;
#else
  return false;
#endif
}

using daydream::whatif::job_scenario;

/// A job analysed: the baseline and the scenarios.
struct job_analysis : daydream::whatif::job_baseline {
  daydream::alignment_result unaligned;
  std::vector<job_scenario> scenarios;
  std::vector<std::string> warnings;
  std::int32_t representative_rank = -1;
  time_ns representative = -1;     ///< representative-worker prediction, -1 if not asked
};



/// The job's JSON: the contract `job: {world_size, ranks: [...], alignment: {...},
/// straggler: {...}}` plus scenarios with per-rank predicted_us.
inline std::string job_json(const job_analysis& a) {
  daydream::io::json_writer w(true);
  w.begin_object();
  w.key("traces").begin_array();
  for (auto& r : a.j.ranks) w.value(r.file);
  w.end_array();
  w.key("iterations").begin_array();
  for (auto i : a.base.iterations) w.value(i);
  w.end_array();
  w.field("iteration", a.base.iteration);
  w.key("warnings").begin_array();
  for (auto& s : a.warnings) w.value(s);
  w.end_array();
  time_ns meas = -1;
  for (auto& r : a.base.ranks) meas = std::max(meas, r.measured);
  w.key("measured_us");
  if (meas > 0) w.value(us(meas)); else w.null();
  w.field("baseline_us", us(a.base.predicted));
  w.key("job").begin_object();
  w.field("world_size", a.j.world_size);
  w.field("partial", a.j.partial());
  w.key("missing_ranks").begin_array();
  for (auto r : a.j.missing()) w.value(r);
  w.end_array();
  w.key("ranks").begin_array();
  for (std::size_t k = 0; k < a.j.ranks.size(); ++k) {
    auto& rr = a.base.ranks[k];
    w.begin_object();
    w.field("rank", rr.rank).field("file", a.j.ranks[k].file);
    w.key("measured_us");
    if (rr.measured > 0) w.value(us(rr.measured)); else w.null();
    w.field("baseline_us", us(rr.predicted));
    auto off = a.alignment.offset.find(rr.rank);
    w.field("clock_offset_us", us(off == a.alignment.offset.end() ? 0 : off->second));
    w.field("compute_us", us(rr.compute)).field("transfer_us", us(rr.transfer)).field("wait_us", us(rr.wait));
    w.field("other_us", us(rr.other));
    w.key("waited_for_us").begin_object();
    for (auto& [who, t] : rr.waited_for) w.field(std::to_string(who), us(t));
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.key("alignment").begin_object();
  w.field("method", a.alignment.method).field("aligned", a.alignment.aligned);
  w.field("residual_us", a.alignment.residual_ns / 1e3).field("violations", a.alignment.violations);
  w.field("unaligned_residual_us", a.unaligned.residual_ns / 1e3).field("unaligned_violations", a.unaligned.violations);
  w.end_object();
  w.key("straggler").begin_object();
  w.key("rank");
  if (a.base.straggler.rank >= 0) w.value(a.base.straggler.rank); else w.null();
  w.field("reason", a.base.straggler.reason);
  w.field("caused_wait_us", us(a.base.straggler.caused));
  w.key("operations").begin_array();
  for (auto& [n, t] : a.base.straggler.operations) w.begin_object().field("name", n).field("time_us", us(t)).end_object();
  w.end_array();
  w.end_object();
  w.key("collectives").begin_object();
  w.field("matched", a.m.collectives.size()).field("method", a.m.method);
  w.key("groups").begin_array();
  for (auto& g : a.m.groups) w.value(g);
  w.end_array();
  w.key("unmatched");
  if (a.m.unmatched.empty()) w.null(); else w.value(a.m.unmatched);
  w.field("transfer_from", a.model.transfer == daydream::job_model_options::transfer_source::trace
                               ? "trace (the last rank to arrive)" : "cluster model");
  std::size_t transfers = 0;
  for (auto& c : a.jg.collectives) transfers += c.transfers;
  w.field("communication", std::string(to_string(a.model.communication))).field("chunk_transfers", transfers);
  w.end_object();
  w.key("critical_path").begin_array();
  for (auto& c : a.base.critical) {
    w.begin_object();
    w.key("rank");
    if (c.rank >= 0) w.value(c.rank); else w.null();
    w.field("time_us", us(c.time)).field("tasks", c.tasks).end_object();
  }
  w.end_array();
  w.key("representative");
  if (a.representative >= 0)
    w.begin_object().field("rank", a.representative_rank).field("predicted_us", us(a.representative)).end_object();
  else
    w.null();
  w.key("notes").begin_array();
  for (auto& n : a.j.notes) w.value(n);
  w.end_array();
  w.end_object();
  w.key("scenarios").begin_array();
  for (auto& s : a.scenarios) {
    const bool ok = s.error.empty();
    w.begin_object();
    w.field("name", s.name);
    w.field("applied", ok && s.applied);
    w.key("reason");
    if (!ok) w.value(s.error);
    else if (!s.applied) w.value(s.reason);
    else w.null();
    w.key("notes").begin_array();
    for (auto& n : s.notes) w.value(n);
    w.end_array();
    w.key("predicted_us");
    if (ok) w.value(us(s.res.predicted)); else w.null();
    w.key("speedup");
    if (ok && s.res.predicted > 0) w.value(double(a.base.predicted) / double(s.res.predicted)); else w.null();
    w.key("ranks").begin_array();
    if (ok)
      for (auto& rr : s.res.ranks) {
        w.begin_object().field("rank", rr.rank).field("predicted_us", us(rr.predicted));
        w.field("compute_us", us(rr.compute)).field("transfer_us", us(rr.transfer)).field("wait_us", us(rr.wait));
        w.field("other_us", us(rr.other));
        w.end_object();
      }
    w.end_array();
    w.key("straggler");
    if (ok && s.res.straggler.rank >= 0) w.value(s.res.straggler.rank); else w.null();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

/// The job as a table.
inline void print_job_table(std::FILE* out, const job_analysis& a) {
  for (auto& s : a.warnings) fmt::print(out, "warning: {}\n", s);
  fmt::print(out, "job of {} rank(s), {} traced; iteration {}; {} collective(s) matched ({})\n", a.j.world_size,
             a.j.ranks.size(), a.base.iteration, a.m.collectives.size(),
             a.m.unmatched.empty() ? a.m.method : std::string("not joined"));
  fmt::print(out, "clock alignment: {}; completion spread {:.1f} us, {} causality violation(s)", a.alignment.method,
             a.alignment.residual_ns / 1e3, a.alignment.violations);
  if (a.alignment.aligned)
    fmt::print(out, " (recorded clocks: {:.1f} us, {})", a.unaligned.residual_ns / 1e3, a.unaligned.violations);
  fmt::print(out, "\n\n");
  if (a.model.communication == daydream::communication_level::fine) {
    std::size_t transfers = 0;
    for (auto& c : a.jg.collectives) transfers += c.transfers;
    fmt::print(out, "communication: fine, {} chunk transfer(s) on the links of {}\n\n", transfers, a.model.cluster.describe());
  }
  fmt::print(out, "{:>5} {:>12} {:>12} {:>8} {:>11} {:>11} {:>11} {:>11}  {}\n", "rank", "measured", "predicted", "error",
             "compute", "transfer", "wait", "other", "waited for");
  for (std::size_t k = 0; k < a.base.ranks.size(); ++k) {
    auto& rr = a.base.ranks[k];
    std::string whom;
    for (auto& [r, t] : rr.waited_for) whom += fmt::format("{}rank {} {:.2f} ms", whom.empty() ? "" : ", ", r, t / 1e6);
    fmt::print(out, "{:>5} {:>12} {:>12} {:>7.2f}% {:>11} {:>11} {:>11} {:>11}  {}\n", rr.rank,
               rr.measured > 0 ? ms(rr.measured) : std::string("n/a"), ms(rr.predicted),
               rr.measured > 0 ? 100.0 * double(rr.predicted - rr.measured) / double(rr.measured) : 0.0, ms(rr.compute),
               ms(rr.transfer), ms(rr.wait), ms(rr.other), whom);
  }
  fmt::print(out, "\njob iteration (slowest rank): {}\n", ms(a.base.predicted));
  fmt::print(out, "straggler: {}\n", a.base.straggler.reason);
  std::string path;
  for (auto& c : a.base.critical)
    path += fmt::format("{}{} {:.2f} ms", path.empty() ? "" : " -> ", c.rank >= 0 ? "rank " + std::to_string(c.rank) : "sync",
                        c.time / 1e6);
  fmt::print(out, "critical path: {}\n", path);
  if (a.representative >= 0)
    fmt::print(out, "representative worker (rank {} + collective model): {}\n", a.representative_rank, ms(a.representative));
  if (!a.scenarios.empty()) {
    fmt::print(out, "\n{:<32} {:>12} {:>8}  {}\n", "scenario", "iteration", "speedup", "per rank / notes");
    for (auto& s : a.scenarios) {
      if (!s.error.empty()) { fmt::print(out, "{:<32} {:>12} {:>8}  refused: {}\n", s.name, "-", "-", s.error); continue; }
      std::string per;
      for (auto& rr : s.res.ranks) per += fmt::format("{}{}:{:.2f}", per.empty() ? "" : " ", rr.rank, rr.predicted / 1e6);
      std::string notes;
      for (auto& n : s.notes) notes += "; " + n;
      if (!s.applied) notes += "; not applied: " + s.reason;
      fmt::print(out, "{:<32} {:>12} {:>7.2f}x  ms {}{}\n", s.name, ms(s.res.predicted),
                 double(a.base.predicted) / double(std::max<time_ns>(1, s.res.predicted)), per, notes);
    }
  }
}

/// The memory the job mode may use: --max-memory ("20G", "512M", bytes), else 90% of what
/// the system says is available (0: no limit known).
double memory_budget(const std::string& spec) {
  if (spec.empty()) return 0.9 * double(available_memory());
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(spec, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = spec.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(char(std::toupper(unit[0]))) != std::string::npos)
    scale = double(1ull << (10 * (units.find(char(std::toupper(unit[0]))) + 1)));
  else if (!unit.empty())
    used = 0;
  if (used == 0 || !(v > 0))
    throw daydream::usage_error("daydream whatif: --max-memory must be a positive size (20G, 512M, bytes), not '" +
                                spec + "'");
  return v * scale;
}

/// The collective model of the job mode: --transfer, --comm and the cluster (one GPU per
/// machine unless --cluster says otherwise; workers = the world).
void setup_model(job_analysis& a, const job_cli& cli, std::int32_t world) {
  std::string cspec = cli.cluster;
  if (cspec.find("workers") == std::string::npos && cspec.find("machines") == std::string::npos)
    cspec = "workers=" + std::to_string(world) + (cspec.empty() ? "" : "," + cspec);
  {
    auto p = daydream::pass_params::parse("cluster", cspec);
    a.model.cluster = daydream::cluster_from_params(p);
    a.model.cluster.nic_per_gpu = p.get_bool("nic_per_gpu", false); // the fine level's NICs
    p.finish();
  }
  a.model.transfer = cli.transfer == "cluster" ? daydream::job_model_options::transfer_source::cluster
                                               : daydream::job_model_options::transfer_source::trace;
  a.model.communication = cli.comm == "fine" ? daydream::communication_level::fine : daydream::communication_level::coarse;
}

/// A job too large to join answered by the representative worker: rank `t` alone, each of
/// its collectives as recorded or, with --transfer cluster, taking the cluster model's
/// time (representative_graph of one trace), in `iteration` or the steady-state iteration
/// of median replayed time.
int answer_alone(job_analysis& a, daydream::io::kineto_trace& t, bool json, std::int32_t iteration,
                 const daydream::replay_options& ro, std::FILE* out) {
  const std::int32_t world = std::max(t.info.world_size, std::int32_t(1));
  auto steady = t.steady_state_iterations();
  if (t.iterations.empty()) {
    t.g.for_each_task([&](daydream::task_id x) { t.g.set_iteration(x, 0); });
    steady = {0};
  }
  if (iteration >= 0) {
    bool have = false;
    for (auto& it : t.iterations) have = have || it.number == iteration;
    if (!have) throw daydream::usage_error(fmt::format("daydream whatif: {} has no iteration {}", t.info.path, iteration));
    steady = {iteration};
  }
  // Collectives timed by the cluster model (--transfer cluster), else as recorded: the
  // kernel's transfer and its wait for the other ranks, as this rank saw them.
  const bool cluster = a.model.transfer == daydream::job_model_options::transfer_source::cluster;
  auto g = cluster ? daydream::representative_graph(std::move(t.g), std::uint32_t(world), a.model) : std::move(t.g);
  auto r = daydream::replay(g, daydream::trace_order_policy{}, ro);
  std::vector<std::pair<time_ns, std::int32_t>> v;
  for (auto i : steady) v.emplace_back(daydream::iteration_time(g, r, i), i);
  std::sort(v.begin(), v.end());
  const auto [predicted, it] = v[(v.size() - 1) / 2];
  const time_ns measured = t.iterations.empty() ? t.info.end - t.info.begin : t.measured(it);
  const std::int32_t rank = std::max(t.info.rank, std::int32_t(0));
  const std::string how =
      "representative worker: rank " + std::to_string(rank) + " alone, " +
      (cluster ? "each collective timed by the cluster model (" + a.model.cluster.describe() + "), no waiting"
               : std::string("each collective as long as its kernel was recorded (its transfer and its wait for the "
                             "other ranks; --transfer cluster to time them by the cluster model)"));
  if (json) {
    daydream::io::json_writer w(true);
    w.begin_object();
    w.key("traces").begin_array().value(t.info.path).end_array();
    w.key("iterations").begin_array().value(it).end_array();
    w.field("iteration", it);
    w.key("warnings").begin_array();
    for (auto& s : a.warnings) w.value(s);
    w.end_array();
    w.field("measured_us", us(measured)).field("baseline_us", us(predicted));
    w.field("answered_by", how);
    w.key("job").begin_object().field("world_size", world).field("partial", false);
    w.key("missing_ranks").begin_array().end_array();
    w.key("ranks").begin_array().end_array();
    w.key("representative").begin_object().field("rank", rank).field("predicted_us", us(predicted)).end_object();
    w.key("notes").begin_array().value(how).end_array();
    w.end_object();
    w.key("scenarios").begin_array().end_array();
    w.end_object();
    std::fputs((w.take() + "\n").c_str(), out);
    return 0;
  }
  for (auto& s : a.warnings) fmt::print(out, "warning: {}\n", s);
  fmt::print(out, "job of {} rank(s); answered by the {}\n\n", world, how);
  fmt::print(out, "representative worker (rank {}{}): {} in iteration {} (rank {} measured {})\n", rank,
             cluster ? " + collective model" : " as recorded", ms(predicted), it, rank, ms(measured));
  return 0;
}

/// Whether the trace arguments make a job: several files, a directory, or a Chakra ET.
bool is_job(const std::vector<std::string>& traces) {
  return traces.size() > 1 ||
         (traces.size() == 1 && (std::filesystem::is_directory(traces.front()) || is_chakra_source(traces)));
}

/// Runs the what-if analysis of a job. `specs` as for one trace; empty: the job scenarios
/// no_straggler, network:scale=2 and collective:algorithm=tree.
int run_job(const job_cli& cli, const std::vector<std::string>& specs_in, bool json, const std::string& timeline,
            const std::string& report, std::int32_t iteration, const daydream::replay_options& ro, bool progress,
            std::FILE* out, std::FILE* err, const daydream::passes::registry<graph>& reg) {
  if (cli.transfer != "trace" && cli.transfer != "cluster")
    throw daydream::usage_error("daydream whatif: --transfer must be trace or cluster, not '" + cli.transfer + "'");
  const std::string align = cli.align.empty() ? (have_lp_alignment() ? "lp" : "none") : cli.align;
  if (align != "lp" && align != "none")
    throw daydream::usage_error("daydream whatif: --align must be lp or none, not '" + cli.align + "'");
  if (align == "lp" && !have_lp_alignment())
    throw daydream::usage_error("daydream whatif: --align lp needs GLPK, which this program was built without "
                                "(install libglpk-dev and rebuild, or use --align none)");
  if (cli.comm != "coarse" && cli.comm != "fine")
    throw daydream::usage_error("daydream whatif: --comm must be coarse or fine, not '" + cli.comm + "'");
  std::vector<std::filesystem::path> paths(cli.traces.begin(), cli.traces.end());
  daydream::io::job_options jo;
  jo.ranks = cli.ranks;
  auto specs = specs_in;
  if (specs.empty()) specs = {"no_straggler", "network:scale=2", "collective:algorithm=tree"};
  const double budget = memory_budget(cli.max_memory);
  if (progress) { fmt::print(err, "reading {} trace path(s)...", paths.size()); std::fflush(err); }
  job_analysis a;
  graph_size first_size;
  double json_total = 0;
  std::optional<daydream::io::kineto_trace> alone; // the first rank, when the job cannot be joined
  if (is_chakra_source(cli.traces)) {
    a.j = load_job_source(paths, jo, cli.drop_missing_deps, a.warnings);
  } else {
    if (cli.drop_missing_deps)
      throw daydream::usage_error("daydream whatif: --drop-missing-deps is for Chakra execution traces");
    // Ranks streamed: the first alone, to size the job, then the others a few at a time.
    const auto files = daydream::io::job_files(paths);
    double json_max = 0;
    for (auto& f : files) {
      const auto b = double(json_bytes(f));
      json_total += b;
      json_max = std::max(json_max, b);
    }
    auto traces = daydream::io::load_job_traces(std::span(files).first(1), jo);
    first_size += traces.front().g;
    const double scale = json_total / std::max(1.0, double(json_bytes(files.front())));
    const graph_size all{first_size.tasks * scale, first_size.edges * scale};
    const double loads = double(std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), files.size()));
    const double joined = std::max(all.graph_bytes() + loads * 1.5 * json_max, 1.1 * all.graph_bytes() + all.replay_bytes());
    if (budget > 0 && joined > budget) {
      a.warnings.push_back(fmt::format(
          "the job's {} trace(s) ({} of JSON) make a job graph of about {:.1f} M tasks, which with its replay needs "
          "about {}, more than the {} available ({}): answered by the representative worker (one rank alone); "
          "the per-rank table and the straggler need the whole job",
          files.size(), gib(json_total), all.tasks / 1e6, gib(joined), gib(budget),
          cli.max_memory.empty() ? "the system's available memory; --max-memory to set it" : "--max-memory"));
      alone.emplace(std::move(traces.front()));
    } else {
      auto rest = daydream::io::load_job_traces(std::span(files).subspan(1), jo);
      for (auto& t : rest) traces.push_back(std::move(t));
      rest.clear();
      a.j = daydream::io::make_job(std::move(traces), jo);
    }
  }
  if (progress) fmt::print(err, "\r\x1b[K");
  setup_model(a, cli, alone ? std::max(alone->info.world_size, std::int32_t(1)) : a.j.world_size);
  if (alone) return answer_alone(a, *alone, json, iteration, ro, out);
  for (auto& n : a.j.notes) a.warnings.push_back(n);
  a.m = daydream::match_collectives_or_none(a.j);
  if (!a.m.unmatched.empty())
    a.warnings.push_back("the ranks are replayed side by side, not joined: " + a.m.unmatched);
  auto in = daydream::make_alignment_input(a.j, a.m);
  a.unaligned = daydream::no_alignment(in);
  a.alignment = a.unaligned;
#if DAYDREAM_HAVE_ALIGN
  if (align == "lp") a.alignment = daydream::glpk_alignment(in);
#endif
  std::vector<std::int32_t> its;
  if (iteration >= 0) {
    auto common = a.j.common_iterations();
    if (std::find(common.begin(), common.end(), iteration) == common.end())
      throw daydream::usage_error(fmt::format("daydream whatif: not every rank traced iteration {}", iteration));
    its = {iteration};
  }
  // Keep every rank's graph for the scenarios (and the representative worker) when they fit
  // beside the job graph; else free each as it is joined, and say what is not run.
  graph_size total;
  for (auto& r : a.j.ranks) total += r.g;
  const double full = 2 * total.graph_bytes() + total.replay_bytes() +
                      (specs.empty() ? 0.0 : 2 * total.graph_bytes() + total.replay_bytes()) +
                      (timeline.empty() && report.empty() ? 0.0 : double(specs.size()) * total.graph_bytes());
  const bool keep = budget <= 0 || full <= budget;
  std::string dropped;
  if (keep) {
    a.jg = daydream::build_job_graph(a.j, a.m, a.alignment, a.model);
  } else {
    a.jg = daydream::build_job_graph_releasing(a.j, a.m, a.alignment, a.model);
    return_freed_memory();
    dropped = fmt::format("not run: they rebuild the job from every rank's graph ({} of graphs beside the "
                          "job graph; about {} in all), more than the {} available ({}); each rank's graph was freed "
                          "as it was joined",
                          gib(total.graph_bytes()), gib(full), gib(budget),
                          cli.max_memory.empty() ? "the system's available memory; --max-memory to set it" : "--max-memory");
    a.warnings.push_back(std::string(cli.representative ? "the scenarios and the representative worker are " : "the scenarios are ") + dropped);
  }
  a.base = daydream::analyse_job(a.j, a.jg, its, ro);
  if (a.base.predicted <= 0)
    throw daydream::error(
        "daydream whatif: the job's replay has no task in the analysed iterations" +
        std::string(a.model.transfer == daydream::job_model_options::transfer_source::trace && is_chakra_source(cli.traces)
                        ? " (the execution traces record no durations: give --transfer cluster to time their "
                          "collectives on the cluster, --cluster to describe it)"
                        : ""));
  if (cli.representative && keep)
    std::tie(a.representative_rank, a.representative) = representative_worker(a, ro);
  for (auto& s : specs) {
    if (!keep) {
      job_scenario x;
      x.name = s;
      x.error = dropped;
      a.scenarios.push_back(std::move(x));
      continue;
    }
    if (progress) { fmt::print(err, "\r\x1b[Kpredicting {}...", s); std::fflush(err); }
    a.scenarios.push_back(daydream::whatif::run_job_scenario(a, s, cli.on_ranks, reg, ro));
    // Only the timeline and the report draw a scenario's graph.
    if (timeline.empty() && report.empty()) a.scenarios.back().jg = {};
  }
  if (progress) fmt::print(err, "\r\x1b[K");
  if (json) std::fputs(job_json(a).c_str(), out);
  else print_job_table(out, a);
  if (!timeline.empty()) write_job_timeline(timeline, a, a.scenarios);
  if (!report.empty()) write_job_report(report, "daydream whatif", a, a.scenarios, a.warnings);
  if (json)
    for (auto& s : a.scenarios)
      if (!s.error.empty()) fmt::print(err, "daydream whatif: scenario '{}' refused: {}\n", s.name, s.error);
  return 0;
}

} // namespace whatif_cmd
