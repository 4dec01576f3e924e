// daydream-whatif: predicts what optimizations would do to a traced training iteration.
// SPDX-License-Identifier: MIT
//
//   trace.json(.gz) --load_kineto--> graph --replay--> baseline (vs measured)
//                                      |
//                                      +--copy--> pass chain --replay--> scenario, ...
#include "output.hpp"
#include "scenario.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/passes/memory.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#ifndef DAYDREAM_DEFAULT_TRACE
#  define DAYDREAM_DEFAULT_TRACE "examples/traces/resnet50_v100.json.gz"
#endif

namespace {

std::string pass_help(const daydream::passes::registry<daydream::graph>& reg) {
  std::string s = "Passes (--pass NAME[:key=value,...], combine with '+', e.g. amp+fused_adam):\n";
  for (auto& e : reg.entries()) s += fmt::format("  {:<17} {}\n", e.name, e.help);
  return s;
}

int run(int argc, char** argv) {
  auto reg = daydream::passes::bundled();
  CLI::App app{"daydream-whatif: predict the iteration time and memory of a training run under "
               "optimizations, from one PyTorch profiler (Kineto) trace."};
  app.footer(pass_help(reg));
  std::string trace_path = DAYDREAM_DEFAULT_TRACE;
  std::int32_t iteration = -1;
  std::vector<std::string> specs;
  bool json = false, critical = false;
  std::string timeline, report;
  daydream::replay_options replay_opts;
  app.add_option("trace", trace_path, "Kineto trace (.json or .json.gz); default: the bundled ResNet-50 trace");
  app.add_option("--iteration", iteration, "iteration to analyse (ProfilerStep number); default: a steady-state one");
  app.add_option("--pass", specs, "scenario to predict (repeatable); default: every applicable bundled pass");
  app.add_flag("--json", json, "print one JSON object on stdout instead of the table");
  app.add_option("--timeline", timeline, "write baseline and scenarios as Chrome-trace JSON (open in Perfetto)");
  app.add_flag("--critical-path", critical, "print the baseline's critical path by layer and phase");
  app.add_option("--report", report, "write a self-contained HTML report");
  app.add_option("--overlap-slowdown", replay_opts.overlap_slowdown,
                 "GPU computation runs this many times slower while communication is active "
                 "on its node (Proteus' overlap factor); default 1: no slowdown")
      ->check(CLI::Range(1.0, 100.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  const bool progress = !json && ::isatty(STDERR_FILENO);
  auto t0 = std::chrono::steady_clock::now();
  if (progress) {
    std::error_code ec;
    auto size = std::filesystem::file_size(trace_path, ec);
    fmt::print(stderr, "reading {} ({:.1f} MB)...", trace_path, ec ? 0.0 : double(size) / 1e6);
    std::fflush(stderr);
  }
  auto trace = daydream::io::load_kineto(trace_path);
  if (progress) {
    auto s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "\r\x1b[Kread {} in {:.2f} s: {} tasks\n", trace_path, s, trace.g.size());
  }
  // Without [memory] events, peak memory comes from the recorded tensor sizes.
  if (!daydream::passes::has_memory_accounting(trace.g))
    daydream::passes::estimate_activation_memory(trace.g);

  whatif::analysis a;
  a.trace = &trace;
  a.trace_name = trace_path;
  a.iteration = iteration >= 0 ? iteration : trace.default_iteration();
  if (a.iteration < 0) {
    // No iteration markers: treat the whole trace as one iteration.
    a.iteration = 0;
    trace.g.for_each_task([&](daydream::task_id t) { trace.g.set_iteration(t, 0); });
  } else {
    bool found = false;
    for (auto& it : trace.iterations) found = found || it.number == a.iteration;
    if (!found) {
      std::string have;
      for (auto& it : trace.iterations) have += (have.empty() ? "" : ", ") + std::to_string(it.number);
      throw daydream::error(fmt::format("daydream-whatif: {}: no iteration {} (the trace has: {})",
                                        trace_path, a.iteration, have));
    }
  }
  // Without [memory] events, peak memory comes from the tensor-size model (a documented
  // estimate of activation memory; see passes/daydream/passes/memory.hpp).
  if (!daydream::passes::has_memory_accounting(trace.g)) {
    daydream::passes::estimate_activation_memory(trace.g);
    a.memory_model = daydream::passes::has_memory_accounting(trace.g) ? "tensor sizes (activation estimate)" : "none";
  } else {
    a.memory_model = "trace [memory] events";
  }
  a.measured = trace.measured(a.iteration);
  a.base = whatif::baseline(trace.g, a.iteration, replay_opts);

  if (specs.empty()) {
    for (auto& e : reg.entries()) {
      if (!e.applicable(trace.g)) {
        a.not_applicable.emplace_back(e.name);
        continue;
      }
      specs.push_back(e.scenario_params.empty() ? std::string(e.name)
                                                : std::string(e.name) + ":" + std::string(e.scenario_params));
    }
  }
  for (auto& spec : specs) {
    if (progress) { fmt::print(stderr, "\r\x1b[Kpredicting {}...", spec); std::fflush(stderr); }
    a.scenarios.push_back(whatif::run_scenario(trace.g, reg, spec, a.iteration, replay_opts));
  }
  if (progress) fmt::print(stderr, "\r\x1b[K");

  if (json) std::fputs(whatif::to_json(a).c_str(), stdout);
  else whatif::print_table(stdout, a);
  if (critical) whatif::print_critical_path(json ? stderr : stdout, a);
  if (!timeline.empty()) whatif::write_timeline(timeline, a);
  if (!report.empty()) {
    std::ofstream f(report, std::ios::binary);
    f << whatif::html_report(a);
    if (!f) throw daydream::error("daydream-whatif: cannot write report to '" + report + "'");
  }
  bool any_refused = false;
  for (auto& s : a.scenarios) any_refused = any_refused || !s.error.empty();
  if (any_refused && json)
    for (auto& s : a.scenarios)
      if (!s.error.empty()) fmt::print(stderr, "daydream-whatif: scenario '{}' refused: {}\n", s.name, s.error);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
