// Defines the ps command (daydream ps): asynchronous parameter-server throughput for W workers from one worker's trace.
// SPDX-License-Identifier: MIT
//
//   TRACE --load--> graph --extract_steps--> steps (downlink, worker, uplink, PS)
//         --sweep (simulate per W, coarse models)--> table, chart, JSON, Perfetto timeline
#include "ps.hpp"
#include "outputs.hpp"

#include <daydream/io/dlc_writer.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/semantics/layers.hpp>
#include <daydream/ps/config.hpp>
#include <daydream/ps/links.hpp>
#include <daydream/ps/model.hpp>
#include <daydream/ps/simulate.hpp>
#include <daydream/ps/steps.hpp>
#include <daydream/ps/sweep.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ps_cmd {

namespace ps = daydream::ps;

/// Adds the ps options to `app`.
void add_options(CLI::App& app, options& o) {
  app.add_option("trace", o.trace, "Kineto trace of one worker")->required();
  app.add_option("--workers", o.workers, "numbers of workers to predict: 1-16, 1,2,4,8 or 1,2,4-8")->capture_default_str();
  app.add_option("--servers", o.servers, "parameter servers")->capture_default_str();
  app.add_option("--bandwidth", o.bandwidth, "bandwidth of every link, each direction (10Gbps, 1.25GB/s; a plain number is Gbit/s)")
      ->capture_default_str();
  app.add_option("--window", o.window, "HTTP/2 flow-control window WIN: a stream's first service sends at most this")
      ->capture_default_str();
  app.add_flag("--no-flow-control", o.no_flow_control, "HTTP/2 flow control off: whole streams one after another in --order");
  app.add_option("--order", o.order, "stream order: trace, tictac, reverse, random")->capture_default_str();
  app.add_option("--sharing", o.sharing,
                 "bandwidth sharing: max_min (server and worker links, any number of servers) or server_links "
                 "(1/n of a server's link, Li et al. Section 3.1)")
      ->capture_default_str();
  app.add_option("--alpha", o.alpha, "transfer overhead per MB (1e6 bytes), moved to the receiving computation (e.g. 0.5ms)")
      ->capture_default_str();
  app.add_option("--beta", o.beta, "transfer overhead per tensor (e.g. 50us; a plain number is us)")->capture_default_str();
  app.add_option("--update-scale", o.update_scale, "multiplies the server's update time (the trace's weight-update time)")
      ->capture_default_str();
  app.add_option("--compute-scale", o.compute_scale,
                 "multiplies the worker's computation: a what-if for a k times larger batch (give --batch accordingly)")
      ->capture_default_str();
  app.add_option("--model-bytes", o.model_bytes, "model size (100MB), spread over the gradients when the trace has no sizes");
  app.add_option("--server-map", o.server_map, "REGEX=K: tensors of layers matching REGEX on server K (repeatable); the rest greedy");
  app.add_option("--steps", o.steps, "steps per worker")->capture_default_str();
  app.add_option("--warmup", o.warmup, "steps per worker left out of the average")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the step sampling and the random order")->capture_default_str();
  app.add_option("--batch", o.batch, "samples per worker and step, for samples/s (the graph keeps no input shapes)");
  app.add_option("--timeline", o.timeline, "write the largest worker count's first steps as a Perfetto (Chrome JSON) timeline");
  app.add_option("--timeline-steps", o.timeline_steps, "steps per worker in the timeline and the DLC traces")
      ->capture_default_str();
  app.add_option("--dlc", o.dlc, "write the largest worker count's first steps as SketchDLC traces (one file per "
                                 "worker and server, docs/dlc.md) into this directory");
  app.add_flag("--stagger", o.stagger,
               "start worker w at w/W of a free-network step instead of all at once (workers with equal steps "
               "that start together stay in lockstep)");
  app.add_flag("--json", o.json, "print one JSON object on stdout");
}

/// Parses "1-16", "1,2,4,8" or "1,2,4-8" into ascending distinct numbers; throws
/// daydream::usage_error naming the bad part.
std::vector<std::uint32_t> parse_workers(const std::string& spec) {
  std::vector<std::uint32_t> out;
  auto number = [&](std::string_view s) {
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
      throw daydream::usage_error("daydream ps: --workers: '" + std::string(s) + "' is not a number of workers");
    if (v == 0) throw daydream::usage_error("daydream ps: --workers: the number of workers must be at least 1");
    if (v > 4096) throw daydream::usage_error("daydream ps: --workers: at most 4096 workers");
    return v;
  };
  std::string_view rest(spec);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto part = rest.substr(0, comma);
    rest = comma == rest.npos ? std::string_view() : rest.substr(comma + 1);
    auto dash = part.find('-');
    if (dash == part.npos) out.push_back(number(part));
    else {
      auto a = number(part.substr(0, dash)), b = number(part.substr(dash + 1));
      if (b < a) throw daydream::usage_error("daydream ps: --workers: empty range '" + std::string(part) + "'");
      for (auto w = a; w <= b; ++w) out.push_back(w);
    }
  }
  if (out.empty()) throw daydream::usage_error("daydream ps: --workers: give at least one number of workers");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// What the command computed, for the text and JSON outputs.
struct outcome {
  std::string trace;
  ps::model m;
  ps::config c;
  ps::sweep_result s;
  std::vector<std::int32_t> iterations;
  std::optional<std::int64_t> batch;
  double free_step_ns = 0; ///< one worker with a free network
  bool stagger = false;
  double compute_scale = 1;
};

inline std::optional<double> samples(const outcome& x, double steps_per_s) {
  if (!x.batch) return std::nullopt;
  return steps_per_s * double(*x.batch);
}

inline double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

inline void print_json(std::FILE* out, const outcome& x) {
  daydream::io::json_writer w(true);
  w.begin_object();
  w.field("trace", x.trace).field("servers", x.c.servers).field("bandwidth_bytes_per_s", x.c.bandwidth);
  w.field("flow_control", x.c.flow_control);
  if (x.c.flow_control) w.field("window_bytes", x.c.window);
  else w.field("order", x.c.order == ps::stream_order::trace ? "trace" : x.c.order == ps::stream_order::tictac ? "tictac"
                        : x.c.order == ps::stream_order::reverse ? "reverse" : "random");
  w.field("sharing", x.c.share == ps::bandwidth_sharing::max_min ? "max_min" : "server_links").field("stagger", x.stagger);
  w.field("steps", x.c.steps).field("warmup", x.c.warmup).field("seed", x.c.seed);
  w.key("batch");
  if (x.batch) w.value(*x.batch); else w.null();
  w.field("model_bytes", x.m.bytes).field("tensors", x.m.tensors.size());
  w.field("gradient_source", daydream::passes::to_string(x.m.source));
  w.key("iterations").begin_array();
  for (auto i : x.iterations) w.value(i);
  w.end_array();
  w.field("compute_scale", x.compute_scale).field("compute_us", x.m.compute_ns / 1e3).field("update_us", x.m.update_ns / 1e3);
  w.field("trace_step_us", x.m.trace_step_ns / 1e3).field("free_network_step_us", x.free_step_ns / 1e3);
  w.key("server_bytes").begin_array();
  for (auto b : x.s.server_bytes) w.value(b);
  w.end_array();
  w.key("throughput").begin_array();
  for (auto& p : x.s.points) {
    w.begin_object().field("workers", p.workers).field("steps_per_s", p.sim.steps_per_s);
    w.key("samples_per_s");
    if (auto v = samples(x, p.sim.steps_per_s)) w.value(*v); else w.null();
    w.field("uplink_util", max_of(p.sim.uplink_util)).field("downlink_util", max_of(p.sim.downlink_util));
    w.key("uplink_util_per_server").begin_array();
    for (auto u : p.sim.uplink_util) w.value(u);
    w.end_array().key("downlink_util_per_server").begin_array();
    for (auto u : p.sim.downlink_util) w.value(u);
    w.end_array();
    w.field("mean_step_us", p.sim.mean_step_ns / 1e3).field("measured_steps", p.sim.measured_steps);
    w.end_object();
  }
  w.end_array();
  w.key("saturation_workers");
  if (x.s.saturation) w.value(*x.s.saturation); else w.null();
  w.key("baselines").begin_object();
  for (bool q : {true, false}) {
    w.key(q ? "queueing" : "cynthia").begin_array();
    for (auto& p : x.s.points) {
      const double v = q ? p.queueing : p.cynthia;
      w.begin_object().field("workers", p.workers).field("steps_per_s", v).key("samples_per_s");
      if (auto sv = samples(x, v)) w.value(*sv); else w.null();
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
  w.key("notes").begin_array();
  for (auto& n : x.m.notes) w.value(n);
  w.end_array();
  w.end_object();
  std::fputs((w.take() + "\n").c_str(), out);
}

inline void print_text(std::FILE* out, const outcome& x) {
  auto& c = x.c;
  fmt::print(out, "daydream ps: {} (iterations", x.trace);
  for (auto i : x.iterations) fmt::print(out, " {}", i);
  fmt::print(out, ")\n");
  fmt::print(out, "model: {} tensors, {:.1f} MB ({}); per step: computation {:.2f} ms, update {:.2f} ms (trace step {:.2f} ms)\n",
             x.m.tensors.size(), x.m.bytes / 1e6, daydream::passes::to_string(x.m.source), x.m.compute_ns / 1e6,
             x.m.update_ns / 1e6, x.m.trace_step_ns / 1e6);
  fmt::print(out, "cluster: {} server(s) holding", c.servers);
  for (auto b : x.s.server_bytes) fmt::print(out, " {:.1f} MB", b / 1e6);
  fmt::print(out, ", {:.3g} Gbit/s links, {}, {} sharing; {} steps per worker, {} warm-up, seed {}\n", c.bandwidth * 8 / 1e9,
             c.flow_control ? fmt::format("HTTP/2 flow control (window {:.3g} MB)", c.window / 1e6)
                            : fmt::format("flow control off ({} order)", c.order == ps::stream_order::trace ? "trace"
                                                                         : c.order == ps::stream_order::tictac ? "tictac"
                                                                         : c.order == ps::stream_order::reverse ? "reverse" : "random"),
             c.share == ps::bandwidth_sharing::max_min ? "max-min" : "server-link", c.steps, c.warmup, c.seed);
  fmt::print(out, "workers start {}\n", x.stagger ? "staggered by 1/W of a free-network step" : "together (as in Li et al.)");
  fmt::print(out, "one worker, free network: {:.2f} ms per step\n\n", x.free_step_ns / 1e6);
  const bool smp = x.batch.has_value();
  const char* unit = smp ? "samples/s" : "steps/s";
  auto val = [&](double steps_per_s) { return smp ? steps_per_s * double(*x.batch) : steps_per_s; };
  fmt::print(out, "{:>7} {:>12} {:>8} {:>7} {:>7} {:>12} {:>12}\n", "workers", unit, "speedup", "up", "down", "queueing",
             "cynthia");
  double top = 0;
  for (auto& p : x.s.points) top = std::max({top, p.sim.steps_per_s, p.queueing, p.cynthia});
  const double first = x.s.points.front().sim.steps_per_s / double(x.s.points.front().workers);
  for (auto& p : x.s.points) {
    fmt::print(out, "{:>7} {:>12.1f} {:>7.2f}x {:>6.0f}% {:>6.0f}% {:>12.1f} {:>12.1f}  ", p.workers, val(p.sim.steps_per_s),
               first > 0 ? p.sim.steps_per_s / first : 0.0, 100 * max_of(p.sim.uplink_util),
               100 * max_of(p.sim.downlink_util), val(p.queueing), val(p.cynthia));
    const int bar = top > 0 ? int(40 * p.sim.steps_per_s / top + 0.5) : 0;
    fmt::print(out, "{}\n", std::string(std::size_t(bar), '#'));
  }
  fmt::print(out, "\n(up/down: the busiest server link's use of its capacity; speedup against {} worker(s) scaled; "
                  "bars: predicted throughput)\n",
             x.s.points.front().workers);
  if (x.s.saturation)
    fmt::print(out, "saturation: {} workers (the next count gains less than 5%)\n", *x.s.saturation);
  else
    fmt::print(out, "saturation: not reached (every count in the list gains 5% or more)\n");
  if (!smp) fmt::print(out, "give --batch N for samples/s\n");
  for (auto& n : x.m.notes) fmt::print(out, "note: {}\n", n);
}

/// Runs the command; returns the exit status.
int run(const options& o, std::FILE* out) {
  const auto workers = parse_workers(o.workers);
  ps::config c;
  c.servers = o.servers;
  if (c.servers == 0) throw daydream::usage_error("daydream ps: --servers must be at least 1");
  auto p = daydream::pass_params::parse("ps", "bandwidth=" + o.bandwidth + ",window=" + o.window + ",alpha=" + o.alpha +
                                                  ",beta=" + o.beta + ",scale=" + o.update_scale + ",compute=" + o.compute_scale +
                                                  (o.model_bytes.empty() ? "" : ",model=" + o.model_bytes));
  c.bandwidth = p.get_bandwidth("bandwidth", 0);
  if (!(c.bandwidth > 0)) throw daydream::usage_error("daydream ps: --bandwidth must be positive, not '" + o.bandwidth + "'");
  c.window = p.get_bytes("window", 28e6);
  c.flow_control = !o.no_flow_control;
  if (c.flow_control && !(c.window > 0))
    throw daydream::usage_error("daydream ps: --window must be positive (or give --no-flow-control), not '" + o.window + "'");
  c.order = ps::parse_stream_order(o.order);
  c.share = ps::parse_bandwidth_sharing(o.sharing);
  c.steps = o.steps;
  c.warmup = o.warmup;
  c.seed = o.seed;
  if (c.steps <= c.warmup)
    throw daydream::usage_error(fmt::format("daydream ps: --steps ({}) must exceed --warmup ({})", c.steps, c.warmup));
  ps::model_options mo;
  mo.alpha = p.get_time_ns("alpha", 0) / 1e6;
  mo.beta = p.get_time_ns("beta", 0);
  mo.update_scale = p.get_double("scale", 1);
  mo.compute_scale = p.get_double("compute", 1);
  mo.model_bytes = p.get_bytes("model", 0);
  if (mo.alpha < 0 || mo.beta < 0 || mo.update_scale < 0)
    throw daydream::usage_error("daydream ps: --alpha, --beta and --update-scale must not be negative");
  if (!(mo.compute_scale > 0)) throw daydream::usage_error("daydream ps: --compute-scale must be positive");
  std::vector<std::pair<daydream::passes::layer_filter, std::uint32_t>> map;
  for (auto& m : o.server_map) {
    auto eq = m.rfind('=');
    std::uint32_t k = 0;
    if (eq == m.npos || std::from_chars(m.data() + eq + 1, m.data() + m.size(), k).ec != std::errc() || eq + 1 == m.size())
      throw daydream::usage_error("daydream ps: --server-map '" + m + "': expected REGEX=SERVER");
    if (k >= c.servers)
      throw daydream::usage_error(fmt::format("daydream ps: --server-map '{}': server {} of {}", m, k, c.servers));
    map.emplace_back(daydream::passes::layer_filter(m.substr(0, eq)), k);
  }

  auto t = daydream::io::load_kineto(o.trace);
  outcome x;
  x.trace = o.trace;
  x.iterations = t.steady_state_iterations();
  std::vector<std::string> fallback;
  if (x.iterations.empty()) {
    // No iteration found: the whole trace is one step.
    x.iterations = {0};
    t.g.for_each_task([&](daydream::task_id id) { t.g.set_iteration(id, 0); });
    fallback.push_back("the trace has no iterations: the whole trace is the one step every worker repeats");
  } else if (x.iterations.size() == 1) {
    fallback.push_back("the trace has one steady-state step: every sampled step is that one");
  }
  try {
    x.m = ps::extract_steps(t.g, x.iterations, mo);
  } catch (const daydream::usage_error&) {
    throw;
  } catch (const daydream::error& e) {
    std::string msg = e.what();
    if (msg.find("no gradients") != msg.npos) msg += "; give the model size with --model-bytes";
    throw daydream::error(o.trace + ": " + msg);
  }
  x.m.notes.insert(x.m.notes.begin(), fallback.begin(), fallback.end());
  x.compute_scale = mo.compute_scale;
  if (mo.compute_scale != 1)
    x.m.notes.push_back(fmt::format("the worker's computation is scaled by {} (--compute-scale)", mo.compute_scale));
  if (o.batch > 0) x.batch = o.batch;
  std::vector<std::uint32_t> pinned(x.m.tensors.size(), std::uint32_t(-1));
  for (std::size_t i = 0; i < x.m.tensors.size(); ++i)
    for (auto& [f, k] : map)
      if (f(x.m.tensors[i].name)) { pinned[i] = k; break; }
  c.timeline_steps = 0;
  c.server_of = ps::assign_servers(x.m.tensors, c.servers, pinned);
  x.c = c;
  // One worker with a free network: the worker's computation alone (and the updates).
  {
    auto free = x.c;
    free.workers = 1;
    free.bandwidth = 1e30;
    free.steps = std::min<std::uint32_t>(c.steps, 200);
    free.warmup = std::min<std::uint32_t>(c.warmup, free.steps / 4);
    x.free_step_ns = ps::simulate_training(x.m.steps, x.m.tensors, free).mean_step_ns;
  }
  x.stagger = o.stagger;
  x.s = ps::sweep(x.m, x.c, workers, {}, o.stagger ? x.free_step_ns : 0);
  if (!o.timeline.empty() || !o.dlc.empty())
    write_outputs(o.timeline, o.dlc, o.timeline_steps, x.m, x.c, workers.back(), o.stagger ? x.free_step_ns : 0);
  if (o.json) print_json(out, x);
  else print_text(out, x);
  return 0;
}

} // namespace ps_cmd

