// Defines the what-if command: its options and what it runs (daydream whatif, daydream-whatif).
// SPDX-License-Identifier: MIT
//
//   trace.json(.gz), profile.sqlite --load_trace--> graph --replay--> baseline (vs measured), every steady-state iteration
//                                      |
//                                      +--copy--> pass chain --replay--> scenario, ...
#include "whatif.hpp"
#include "../step_annotation.hpp"
#include "internal.hpp"

#include "../dlc/scenario_dlc.hpp"
#include "../export/scenario_chakra.hpp"
#include "output.hpp"
#include "report.hpp"
#include "scenario.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/io/load.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace whatif_cmd {

/// "Passes (--pass NAME[:key=value,...], ...)" and one line per bundled pass.
inline std::string pass_help(const daydream::passes::registry<graph>& reg) {
  std::string s = "Passes (--pass NAME[:key=value,...], combine with '+', e.g. amp+fused_adam):\n";
  for (auto& e : reg.entries()) s += fmt::format("  {:<17} {}\n", e.name, e.help);
  return s;
}

/// Adds the what-if options to `app` (the `whatif` subcommand or daydream-whatif itself).
void add_options(CLI::App& app, options& o, const daydream::passes::registry<graph>& reg) {
  app.footer(pass_help(reg));
  app.add_option("trace", o.traces,
                 "Kineto trace (.json or .json.gz) or Nsight Systems SQLite export (nsys export --type sqlite), "
                 "told apart by content; default: the bundled ResNet-50 trace. Several traces, or a "
                 "directory of them, are the ranks of one distributed job (job mode, docs/jobs.md); Chakra "
                 "execution traces (one .et per NPU, or a directory of them) are read as a job too (docs/formats.md)");
  app.add_option("--rank", o.job.ranks, "job mode: the rank of each trace, in order, for traces without distributedInfo");
  app.add_option("--on-rank", o.job.on_ranks, "job mode: apply single-GPU passes to these ranks only (repeatable)");
  app.add_flag("--representative", o.job.representative,
               "job mode: also predict from one worker plus the collective model (dPRO's representative worker)");
  app.add_option("--transfer", o.job.transfer,
                 "job mode: a collective's transfer time from 'trace' (the last rank to arrive) or 'cluster' (--cluster)");
  app.add_option("--align", o.job.align,
                 "job mode: clock alignment, 'lp' (offsets per rank from a linear program over the matched "
                 "collectives, solved by GLPK; the default) or 'none' (clocks as recorded)");
  app.add_option("--comm", o.job.comm,
                 "job mode: collectives as one synchronizing operation ('coarse') or as their algorithm's chunk "
                 "transfers on the cluster's links, shared by concurrent collectives ('fine')");
  app.add_option("--cluster", o.job.cluster,
                 "job mode: the cluster, as the distributed passes' keys (machines=2,workers_per_machine=4,bandwidth=100Gbps); "
                 "with --comm fine also nic_per_gpu=true (a NIC per GPU, not per machine)");
  app.add_flag("--drop-missing-deps", o.job.drop_missing_deps,
               "Chakra execution traces: leave out dependencies on nodes a file does not have (a trace cut from "
               "a longer run) instead of refusing the file");
  app.add_option("--max-memory", o.job.max_memory,
                 "job mode: the memory it may use (20G; default 90% of what the system has available): a job "
                 "whose ranks' graphs do not fit beside the job graph is joined rank by rank without its "
                 "scenarios; one whose job graph does not fit is answered by the representative worker");
  app.add_option("--iteration", o.iteration,
                 "analyse only this iteration (ProfilerStep number); default: every steady-state one, "
                 "with the median shown");
  program::add_step_annotation(app, o.step_annotation);
  app.add_option("--nvtx-step", o.nvtx_step,
                 "an Nsight Systems export: a regular expression (ECMAScript, searched) naming the NVTX ranges that "
                 "are the steps (iterations), numbered 1, 2, ... in trace order");
  app.add_option("--pass", o.specs, "scenario to predict (repeatable); default: every applicable bundled pass");
  app.add_flag("--json", o.json, "print one JSON object on stdout instead of the table");
  app.add_option("--timeline", o.timeline, "write baseline and scenarios as Chrome-trace JSON (open in Perfetto)");
  app.add_flag("--critical-path", o.critical, "print the baseline's critical path by layer and phase");
  app.add_option("--report", o.report, "write a self-contained HTML report");
  app.add_option("--dlc", o.dlc, "write the SketchDLC traces (one file per worker and server, docs/dlc.md) of "
                                 "every parameter-server scenario (p3, tictac, tensor_partition) into DIR/SCENARIO/");
  app.add_option("--chakra", o.chakra, "write every scenario's predicted job as Chakra execution traces (one "
                                       "PREFIX.N.et per NPU: ddp:workers=64 writes 64) into DIR/SCENARIO/ "
                                       "(ASTRA-sim's input; docs/formats.md)");
  app.add_option("--batch", o.batch, "samples per worker and step, for samples/s of data-parallel scenarios")
      ->check(CLI::PositiveNumber);
  app.add_option("--vary", o.vary,
                 "sweep mode: predict every --pass at every value of KEY (repeatable: a grid), e.g. "
                 "--vary workers=8,16,64 --vary bandwidth=10Gbps,100Gbps; a value goes to each pass of a chain "
                 "that takes KEY, or where the chain says {KEY} (ddp:workers={n}); under mpirun the points are "
                 "spread over the ranks (docs/sweep.md)");
  app.add_option("--csv", o.csv, "sweep mode: also write the results as one CSV table to this file ('-': stdout)");
  app.add_option("--overlap-slowdown", o.replay.overlap_slowdown,
                 "GPU computation runs this many times slower while communication is active "
                 "on its node (Proteus' overlap factor); default 1: no slowdown")
      ->check(CLI::Range(1.0, 100.0));
}

/// The ingest options of `o`: the steps from --step-annotation or --nvtx-step (one of
/// them). A bad expression, or both options, is a usage error raised before any trace is read.
daydream::io::ingest_options ingest_of(const options& o) {
  if (o.nvtx_step.empty()) return program::step_annotation_ingest("daydream whatif", o.step_annotation);
  if (!o.step_annotation.empty())
    throw daydream::usage_error("daydream whatif: --nvtx-step and --step-annotation both name the steps; give one");
  daydream::io::ingest_options io;
  try {
    std::regex check(o.nvtx_step, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw daydream::usage_error("daydream whatif: --nvtx-step '" + o.nvtx_step +
                                "' is not a regular expression: " + e.what());
  }
  io.step_annotation = o.nvtx_step;
  return io;
}

/// Loads the trace of `o` into `trace` and fills what every analysis of it needs: the
/// iterations, their measured times, the memory model and the baseline replay.
void prepare(const options& o, daydream::io::kineto_trace& trace, analysis& a, std::FILE* err) {
  auto t0 = std::chrono::steady_clock::now();
  if (o.progress) {
    std::error_code ec;
    auto size = std::filesystem::file_size(o.trace, ec);
    fmt::print(err, "reading {} ({:.1f} MB)...", o.trace, ec ? 0.0 : double(size) / 1e6);
    std::fflush(err);
  }
  const auto format = daydream::io::detect_trace_format(o.trace);
  if (!o.nvtx_step.empty() && format != daydream::io::trace_format::nsys_sqlite)
    throw daydream::usage_error("daydream whatif: --nvtx-step is for Nsight Systems exports (" + o.trace +
                                " is not one); name a Kineto trace's step annotations with --step-annotation");
  trace = daydream::io::load_trace(o.trace, ingest_of(o));
  if (o.progress) {
    auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(err, "\r\x1b[Kread {} in {:.2f} s: {} tasks\n", o.trace, s, trace.g.size());
  }

  a.trace = &trace;
  a.trace_name = o.trace;
  if (o.batch > 0) a.batch = o.batch;
  a.workers = std::max<std::int32_t>(
      {1, trace.info.world_size, std::int32_t(daydream::passes::find_recorded_collectives(trace.g).group)});
  // What the trace lacks: nothing modelled is an error, the rest (no GPU activity) warnings.
  auto problems = trace.problems();
  if (trace.g.size() == 0)
    throw daydream::error(problems.empty() ? o.trace + ": the trace holds no CPU or GPU activity" : problems.front());
  for (auto& p : problems) a.warnings.push_back(p);

  // Which iterations: one the user names, else every steady-state one.
  if (o.iteration >= 0) {
    bool found = false;
    for (auto& it : trace.iterations) found = found || it.number == o.iteration;
    if (!found) {
      std::string have;
      for (auto& it : trace.iterations) have += (have.empty() ? "" : ", ") + std::to_string(it.number);
      throw daydream::usage_error(fmt::format("daydream whatif: {}: no iteration {} (the trace has: {})", o.trace,
                                              o.iteration, have.empty() ? "none" : have));
    }
    a.iterations = {o.iteration};
  } else if (trace.iterations.empty()) {
    a.whole_trace = true;
    a.iterations = {0};
    trace.g.for_each_task([&](daydream::task_id t) { trace.g.set_iteration(t, 0); });
  } else {
    a.iterations = trace.steady_state_iterations();
  }
  a.whole_trace = a.whole_trace || trace.info.iterations_from == daydream::io::iteration_source::whole_trace;
  if (a.whole_trace)
    a.warnings.push_back(o.trace + ": " + iterations_line(a) +
                         (format == daydream::io::trace_format::nsys_sqlite
                              ? "; name the NVTX ranges that are the steps with --nvtx-step REGEX to analyse one"
                              : "; record several steps with torch.profiler.schedule and prof.step() to analyse one"));
  for (auto i : a.iterations) {
    a.measured.push_back(trace.iterations.empty() ? trace.info.end - trace.info.begin : trace.measured(i));
    if (auto n = trace.measurement_note(i); !n.empty()) a.warnings.push_back("measured: " + n);
  }
  if (auto n = daydream::passes::neighbours_note(trace.g); !n.empty()) a.warnings.push_back(n);

  // Memory: the trace's [memory] events from the level allocated before the first one,
  // else the tensor-size estimate of activations.
  if (auto initial = trace.initial_allocated_bytes()) {
    a.memory.from = memory_model::source::trace;
    a.memory.initial = *initial;
  } else {
    daydream::passes::estimate_activation_memory(trace.g);
    if (daydream::passes::has_memory_accounting(trace.g)) a.memory.from = memory_model::source::estimate;
  }

  // The baseline keeps the trace's graph (held once, not copied): from here on the
  // trace's graph is `a.base.g`.
  a.base = baseline(std::move(trace.g), a.iterations, a.memory, o.replay);
  // A replay that does not reproduce the trace says why (the kind of event it left out):
  // the first iteration that misses by more than 2%, and how many others do.
  std::vector<std::string> misses;
  for (auto& st : a.base.steps)
    for (std::size_t k = 0; k < a.iterations.size(); ++k)
      if (a.iterations[k] == st.iteration)
        if (auto n = daydream::replay_error_note(a.base.g, st.iteration, st.span, a.measured[k]); !n.empty())
          misses.push_back(std::move(n));
  if (!misses.empty())
    a.warnings.push_back("replay: " + misses.front() +
                         (misses.size() > 1 ? fmt::format(" ({} more of the analysed iterations differ by over 2%)",
                                                          misses.size() - 1)
                                            : std::string()));
  // The iteration whose baseline time is the median: breakdowns and the critical path use it.
  a.iteration = a.iterations.front();
  for (std::size_t k = 0; k < a.iterations.size(); ++k)
    if (a.base.per_iteration[k] == a.base.predicted) { a.iteration = a.iterations[k]; break; }
  if (a.base.predicted <= 0)
    throw daydream::error(o.trace + ": the replay of the trace has no task in the analysed iterations");
}

/// Runs the what-if analysis with the passes of `reg` and prints it on `out`. Throws
/// daydream::usage_error for what the user asked wrongly (exit status 2) and
/// daydream::error for bad input (1).
int run(const options& opts, std::FILE* out, std::FILE* err, const daydream::passes::registry<graph>& reg) {
  if (is_job(opts.traces)) {
    if (!opts.dlc.empty()) throw daydream::usage_error("daydream whatif: --dlc takes one trace, not a job");
    if (!opts.chakra.empty())
      throw daydream::usage_error("daydream whatif: --chakra takes one trace, not a job (daydream export --chakra "
                                  "writes a job's traces)");
    if (!opts.step_annotation.empty())
      throw daydream::usage_error("daydream whatif: --step-annotation takes one trace, not a job");
    if (!opts.nvtx_step.empty())
      throw daydream::usage_error("daydream whatif: --nvtx-step takes one trace, not a job");
    if (!opts.vary.empty() || !opts.csv.empty())
      throw daydream::usage_error("daydream whatif: a sweep (--vary, --csv) reads one trace; for a job, sweep one "
                                  "rank's trace or run the job once per point");
    auto cli = opts.job;
    cli.traces = opts.traces;
    return run_job(cli, opts.specs, opts.json, opts.timeline, opts.report, opts.iteration, opts.replay, opts.progress,
                   out, err, reg);
  }
  options o = opts;
  if (o.traces.size() == 1) o.trace = o.traces.front();
  (void)ingest_of(o); // before the trace is read
  if (!o.job.ranks.empty() || !o.job.on_ranks.empty() || o.job.representative || !o.job.cluster.empty() ||
      o.job.transfer != "trace" || !o.job.align.empty() || o.job.comm != "coarse" || o.job.drop_missing_deps ||
      !o.job.max_memory.empty())
    throw daydream::usage_error("daydream whatif: --rank, --on-rank, --representative, --transfer, --align, --comm, "
                                "--cluster, --drop-missing-deps and --max-memory are for a job (several traces, a directory or "
                                "Chakra execution traces)");
  if (!o.chakra.empty() && !export_cmd::have_chakra) throw export_cmd::no_chakra("daydream whatif");
  if (!o.chakra.empty() && !o.vary.empty())
    throw daydream::usage_error("daydream whatif: --chakra writes the scenarios of one run, not of a sweep");
  if (!o.vary.empty()) return run_sweep_mode(o, out, err, reg);
  if (!o.csv.empty()) throw daydream::usage_error("daydream whatif: --csv is for a sweep (give --vary KEY=V1,V2,...)");
  // Every spec is checked before anything runs: a typo must not cost a trace load and
  // half the scenarios. Building a pass reads only its parameters, so any failure here
  // is the user's to fix.
  std::vector<std::vector<daydream::passes::erased_pass<graph>>> chains;
  for (auto& spec : o.specs) {
    try {
      chains.push_back(reg.make_chain(spec));
    } catch (const daydream::usage_error&) {
      throw;
    } catch (const std::exception& e) {
      throw daydream::usage_error(e.what());
    }
  }

  daydream::io::kineto_trace trace;
  analysis a;
  prepare(o, trace, a, err);

  std::vector<std::string> specs = o.specs;
  if (specs.empty()) {
    for (auto& e : reg.entries()) {
      if (!e.default_scenario) continue;
      if (!e.applicable(a.base.g)) {
        a.not_applicable.push_back({std::string(e.name), not_applicable_reason(e, a.base.g)});
        continue;
      }
      specs.push_back(e.scenario_params.empty() ? std::string(e.name)
                                                : std::string(e.name) + ":" + std::string(e.scenario_params));
      chains.push_back(reg.make_chain(specs.back()));
    }
  }
  // The outputs read a scenario's breakdown, bound and backlog off its graph: read when it
  // is made, after which the graph goes unless an output writes the graphs. So the run
  // holds the trace's graph and one scenario's, not one per scenario.
  const bool keep_graphs = !o.timeline.empty() || !o.dlc.empty() || !o.chakra.empty();
  for (std::size_t k = 0; k < specs.size(); ++k) {
    if (o.progress) { fmt::print(err, "\r\x1b[Kpredicting {}...", specs[k]); std::fflush(err); }
    a.scenarios.push_back(run_scenario(a.base.g, chains[k], specs[k], a.iterations, a.memory, o.replay));
    auto& s = a.scenarios.back();
    a.facts.push_back(facts_for(a, s));
    if (!keep_graphs) s.g = graph{};
  }
  if (o.progress) fmt::print(err, "\r\x1b[K");
  for (auto& w : spread_warnings(a)) a.warnings.push_back(w);

  if (o.json) std::fputs(to_json(a).c_str(), out);
  else print_table(out, a);
  if (o.critical) print_critical_path(o.json ? err : out, a);
  if (!o.timeline.empty()) write_timeline(o.timeline, a);
  if (!o.report.empty()) {
    std::ofstream f(o.report, std::ios::binary);
    f << html_report(a);
    if (!f) throw daydream::error("daydream whatif: cannot write report to '" + o.report + "'");
  }
  if (!o.dlc.empty())
    for (auto& s : a.scenarios)
      if (s.error.empty())
        if (auto w = dlc_cmd::write_scenario_dlc(std::filesystem::path(o.dlc) / dlc_cmd::scenario_dir_name(s.name),
                                                 s.name, s.g, s.r);
            w.messages)
          fmt::print(err, "daydream whatif: scenario '{}': {} DLC files in {}\n", s.name, w.files.size(),
                     w.files.front().parent_path().string());
  if (!o.chakra.empty())
    for (auto& s : a.scenarios) {
      if (!s.error.empty()) continue;
      auto dir = std::filesystem::path(o.chakra) / dlc_cmd::scenario_dir_name(s.name);
      auto w = export_cmd::write_graph_chakra(dir, s.g, 0, "daydream", "daydream whatif");
      fmt::print(err, "daydream whatif: scenario '{}': {} Chakra ET file(s) ({} NPU(s){}) in {}\n", s.name,
                 w.files.size(), w.npus, w.copies ? ", copies of its one worker" : "", dir.string());
    }
  if (o.json)
    for (auto& s : a.scenarios)
      if (!s.error.empty()) fmt::print(err, "daydream whatif: scenario '{}' refused: {}\n", s.name, s.error);
  return 0;
}

int run(const options& o, std::FILE* out, std::FILE* err) { return run(o, out, err, daydream::passes::bundled()); }

void add_options(CLI::App& app, options& o) { add_options(app, o, daydream::passes::bundled()); }

} // namespace whatif_cmd
