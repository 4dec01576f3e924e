// The sensitivity command: a causal profile of one trace, one replay per layer (kernel family,
// kernel) made X times faster.
// SPDX-License-Identifier: MIT
#include "sensitivity_cmd.hpp"
#include "../step_annotation.hpp"

#include <CLI/CLI.hpp>

#include <daydream/config.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/sensitivity/sensitivity.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

namespace sensitivity_cmd {

void add_options(CLI::App& app, options& o) {
  app.add_option("trace", o.trace, "a Kineto trace (.json or .json.gz)")->required();
  app.add_option("--factor", o.factor, "each row's GPU work this many times faster (default 2)");
  app.add_option("--by", o.by, "what a row is: layer (default), class (kernel family) or kernel (kernel name)");
  app.add_option("--top", o.top, "rows: the groups with the most GPU time (default: every one; 30 with --by kernel)")
      ->each([&o](const std::string&) { o.top_given = true; });
  app.add_option("--iteration", o.iteration, "analyse this iteration only (default: every steady-state one)");
  program::add_step_annotation(app, o.step_annotation);
  app.add_flag("--json", o.json, "print one JSON object on stdout instead of the table");
}

namespace {

std::string ms(daydream::time_ns ns) { return fmt::format("{:.3f} ms", double(ns) / 1e6); }

} // namespace

int run(const options& o, std::FILE* out) {
  namespace ds = daydream::sensitivity;
  if (!(o.factor > 0) || !std::isfinite(o.factor))
    throw daydream::usage_error("daydream sensitivity: --factor must be a positive number");
  ds::options so;
  so.factor = o.factor;
  so.by = ds::parse_grouping(o.by);
  so.top = o.top_given ? o.top : so.by == ds::grouping::kernel ? 30 : 0;

  auto trace = daydream::io::load_kineto(o.trace, program::step_annotation_ingest("daydream sensitivity", o.step_annotation));
  if (trace.g.size() == 0)
    throw daydream::error(o.trace + ": the trace holds no CPU or GPU activity");
  std::vector<std::int32_t> its;
  std::string window;
  if (o.iteration >= 0) {
    bool found = false;
    std::string have;
    for (auto& it : trace.iterations) {
      found = found || it.number == o.iteration;
      have += (have.empty() ? "" : ", ") + std::to_string(it.number);
    }
    if (!found)
      throw daydream::usage_error(fmt::format("daydream sensitivity: {}: no iteration {} (the trace has: {})", o.trace,
                                              o.iteration, have.empty() ? "none" : have));
    its = {o.iteration};
    window = fmt::format("iteration {}", o.iteration);
  } else if (!trace.iterations.empty()) {
    its = trace.steady_state_iterations();
    window = fmt::format("{} steady-state iteration{} ({} to {}), the median step", its.size(),
                         its.size() == 1 ? "" : "s", its.front(), its.back());
  } else {
    window = "the whole trace (no step markers: record several steps with torch.profiler.schedule)";
  }
  const auto p = ds::profile_of(trace.g, its, so);

  if (o.json) {
    daydream::io::json_writer w(true);
    w.begin_object();
    w.field("trace", o.trace).field("baseline_us", double(p.baseline) / 1e3).field("factor", p.factor);
    w.field("by", std::string(ds::to_string(p.by)));
    w.key("iterations").begin_array();
    for (auto i : p.iterations) w.value(i);
    w.end_array();
    w.field("gpu_us", double(p.gpu_time) / 1e3).field("groups", p.groups);
    w.key("rows").begin_array();
    for (auto& r : p.rows) {
      w.begin_object();
      w.field("key", r.key).field("tasks", r.tasks).field("gpu_us", double(r.gpu_time) / 1e3);
      w.field("gpu_share", r.gpu_share).field("predicted_us", double(r.predicted) / 1e3);
      w.field("saved_us", double(r.saved) / 1e3);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::fputs((w.take() + "\n").c_str(), out);
    return 0;
  }

  const bool layer = p.by == ds::grouping::layer, family = p.by == ds::grouping::family;
  const std::string what = layer ? "layer" : family ? "kernel family" : "kernel";
  const std::string whats = layer ? "layers" : family ? "kernel families" : "kernels";
  fmt::print(out, "daydream sensitivity: {}\n", o.trace);
  fmt::print(out, "  baseline {} over {}\n", ms(p.baseline), window);
  fmt::print(out, "  each {} alone {:g}x faster: {} of {} {} (the most GPU time first), sorted by the step saved\n\n",
             what, p.factor, p.rows.size(), p.groups, whats);
  std::size_t width = 12;
  for (auto& r : p.rows) width = std::max(width, std::min<std::size_t>(r.key.size(), 60));
  fmt::print(out, "  {:<{}}  {:>9}  {:>12}  {:>20}\n", what, width, "GPU share", "predicted", "saved (of the step)");
  for (auto& r : p.rows) {
    auto key = r.key.size() > 60 ? r.key.substr(0, 57) + "..." : r.key;
    fmt::print(out, "  {:<{}}  {:>8.1f}%  {:>12}  {:>10} ({:>5.1f}%)\n", key, width, 100 * r.gpu_share, ms(r.predicted),
               ms(r.saved), p.baseline > 0 ? 100.0 * double(r.saved) / double(p.baseline) : 0.0);
  }
  fmt::print(out, "\n  saved is the end-to-end gain; a row whose GPU share is large but saves little runs off the "
                  "critical path (the CPU or another stream bounds the step there)\n");
  return 0;
}

} // namespace sensitivity_cmd
