// Defines the optimize command (daydream optimize): options, the search on a trace or a job, and the plan as text or JSON.
// SPDX-License-Identifier: MIT
//
//   TRACE... --load--> one iteration of one rank --search (Algorithm 1, all MPI ranks)--> plan
//                                               \--baselines (ddp, horovod, byteps, fuse_all)
#include "optimize.hpp"

#include "input.hpp"
#include "mpi.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/job.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/optimize/evaluator.hpp>
#include <daydream/optimize/plan.hpp>
#include <daydream/optimize/search.hpp>
#include <daydream/optimize/strategies.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/memory.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace optimize_cmd {

using daydream::graph;
using daydream::time_ns;
namespace opt = daydream::optimize;

/// Adds the optimize options to `app`.
void add_options(CLI::App& app, options& o) {
  app.add_option("trace", o.traces, "Kineto trace(s): one trace, or every rank's trace of one job (files or a folder)")
      ->required();
  app.add_option("--memory-budget", o.memory_budget, "device memory the plan must fit in (16GiB); default: none");
  app.add_option("--time-budget", o.time_budget, "wall-clock budget of the search (30s, 500ms)")->capture_default_str();
  app.add_option("--workers", o.workers, "data-parallel workers (default: the job's world size)");
  app.add_option("--machines", o.machines, "machines (default: workers / workers-per-machine)");
  app.add_option("--workers-per-machine", o.workers_per_machine, "GPUs per machine (default 1)");
  app.add_option("--bandwidth", o.bandwidth, "NIC bandwidth (25Gbps, 12.5GB/s; a plain number is Gbit/s; default 25Gbps)");
  app.add_option("--latency", o.latency, "NIC latency per message (5us; a plain number is us; default 5us)");
  app.add_option("--nvlink", o.nvlink, "NVLink bandwidth inside a machine (default: none)");
  app.add_option("--pcie", o.pcie, "PCIe bandwidth inside a machine (default 12GB/s)");
  app.add_option("--ps", o.ps, "parameter servers (default: one per machine)");
  app.add_option("--algorithm", o.algorithm, "all-reduce algorithm: ring, tree, halving_doubling")->capture_default_str();
  app.add_option("--model-bytes", o.model_bytes, "total gradient bytes, spread over the gradients when the trace has no sizes");
  app.add_option("--strategy", o.strategies,
                 "strategy to search (repeatable): tensor_fusion, tensor_partition, op_fusion; default: all");
  app.add_option("--iteration", o.iteration, "iteration to optimize (ProfilerStep number); default: the median steady-state one");
  app.add_option("--batch", o.batch, "samples per worker and step, for samples/s");
  app.add_flag("--json", o.json, "print one JSON object on stdout");
}

/// The cluster the options describe, as the distributed passes read it (cluster_from_params).
inline daydream::cluster cluster_of(const options& o, std::int32_t default_workers) {
  std::string spec;
  auto add = [&](const char* key, const std::string& v) {
    if (!v.empty()) spec += (spec.empty() ? "" : ",") + std::string(key) + "=" + v;
  };
  std::string workers = o.workers;
  if (workers.empty() && o.machines.empty() && default_workers > 1) workers = std::to_string(default_workers);
  add("workers", workers);
  add("machines", o.machines);
  add("workers_per_machine", o.workers_per_machine);
  add("bandwidth", o.bandwidth);
  add("latency", o.latency);
  add("nvlink", o.nvlink);
  add("pcie", o.pcie);
  add("ps", o.ps);
  auto p = daydream::pass_params::parse("optimize", spec);
  auto c = daydream::cluster_from_params(p);
  p.finish();
  return c;
}

/// DDP's bucket_cap_mb (and first bucket bytes) that reproduce the plan's buckets, when
/// some pair does: {cap, first}; {0, 0} if none.
inline std::pair<std::uint64_t, std::uint64_t> equivalent_ddp_cap(const opt::problem& p, const opt::plan& x) {
  if (x.how != opt::transport::all_reduce) return {0, 0};
  for (auto k : x.piece)
    if (k) return {0, 0};
  const auto n = p.gs.grads.size();
  const auto first = opt::bytes_of(p, 0, x.end_of(0, n));
  std::vector<std::uint64_t> caps;
  for (std::size_t k = 1; k < x.buckets(); ++k) caps.push_back(opt::bytes_of(p, x.starts[k], x.end_of(k, n)));
  if (caps.empty()) caps.push_back(first);
  std::sort(caps.begin(), caps.end());
  for (auto cap : caps)
    if (opt::ddp_plan(p, cap, first).starts == x.starts) return {cap, first};
  return {0, 0};
}

/// A one-line description of a plan (the JSON's best.strategy).
inline std::string describe(const opt::problem& p, const opt::plan& x) {
  std::size_t pieces = 0;
  for (std::size_t k = 0; k < x.buckets(); ++k)
    pieces += opt::pieces_of(opt::bytes_of(p, x.starts[k], x.end_of(k, p.gs.grads.size())), x.piece[k]).size();
  std::string s = fmt::format("{}: {} bucket(s), {} piece(s)", opt::to_string(x.how), x.buckets(), pieces);
  if (!x.fused.empty()) s += fmt::format(", {} op fusion group(s)", x.fused.size());
  if (!x.memory.empty()) s += ", " + x.memory;
  for (auto& e : x.edits) s += ", " + e.name;
  return s;
}

inline double us(time_ns t) { return double(t) / 1e3; }

/// A kernel name short enough for a line: at most 60 characters.
inline std::string short_name(std::string_view n) {
  return n.size() > 60 ? std::string(n.substr(0, 57)) + "..." : std::string(n);
}

/// Runs the command: prints the plan (text or JSON) on `out` on rank 0. Returns the exit status.
int run(const options& o, std::FILE* out, const opt::evaluator& ev) {
  // Everything the user typed is checked before a trace is read.
  auto strategies = opt::bundled_strategies().select(o.strategies);
  auto budget = daydream::pass_params::parse("optimize", "t=" + o.time_budget).get_time_ns("t", 30e9);
  opt::search_options so;
  so.time_budget_s = budget / 1e9;
  if (!o.memory_budget.empty())
    so.memory_budget = std::int64_t(daydream::pass_params::parse("optimize", "m=" + o.memory_budget).get_bytes("m", 0));
  auto algorithm = daydream::parse_all_reduce_algorithm(o.algorithm);
  double model_bytes = o.model_bytes.empty() ? 0
      : daydream::pass_params::parse("optimize", "m=" + o.model_bytes).get_bytes("m", 0);
  cluster_of(o, 2); // the cluster keys are valid

  auto in = load(o.traces);
  auto rec = daydream::passes::find_recorded_collectives(in.g);
  const std::int32_t default_workers = in.world > 1 ? in.world : std::int32_t(rec.group);
  if (o.workers.empty() && o.machines.empty() && default_workers <= 1)
    throw daydream::usage_error("daydream optimize: " + in.what +
                                " is a single-GPU trace: give the cluster to optimize for with --workers N (N >= 2)");
  const auto c = cluster_of(o, default_workers);
  if (c.workers() <= 1)
    throw daydream::usage_error("daydream optimize: one worker has nothing to synchronize: give --workers N (N >= 2)");
  // The whole trace replayed once: the median iteration, and the baseline every command
  // gives for the one optimized (its steady-state step).
  const auto whole_replay = daydream::replay(in.g);
  const std::int32_t iteration =
      o.iteration >= 0 ? o.iteration : median_iteration(daydream::steady_steps(in.g, whole_replay, in.iterations));
  if (std::find(in.iterations.begin(), in.iterations.end(), iteration) == in.iterations.end() && o.iteration >= 0) {
    bool any = false;
    in.g.for_each_task([&](daydream::task_id t) { any = any || in.g.iteration(t) == iteration; });
    if (!any) throw daydream::usage_error(fmt::format("daydream optimize: {}: no iteration {}", in.what, iteration));
  }
  if (!daydream::passes::has_gradient_sizes(in.g) && model_bytes <= 0)
    throw daydream::error("daydream optimize: " + in.what +
                          ": the trace carries no gradient sizes (profile with record_shapes=True, or give --model-bytes)");
  auto p = opt::make_problem(in.g, iteration, c, in.what, {}, model_bytes);
  p.algorithm = algorithm;
  p.memory_initial = in.memory_initial;
  p.memory_modelled = in.memory_modelled;

  auto res = opt::search(p, strategies, so, ev);
  auto baselines = opt::run_baselines(p);
  if (ev.rank != 0) return 0;
  // The baseline every command gives for this iteration: its steady-state step in the
  // whole trace. The search replays the iteration alone (the plans change only it), which
  // leaves out the GPU backlog the previous step left; the two differ by that much.
  const time_ns whole = daydream::steady_steps(in.g, whole_replay, {iteration}).front().step();
  std::string whole_note;
  if (whole > 0 && res.start_time > 0 && whole != res.start_time)
    whole_note = fmt::format("the whole trace replays iteration {} in {} ({:+.2f}%): the search replays it alone, "
                             "without the GPU work the step before it left queued, and compares every plan with that",
                             iteration, daydream::passes::format_time(whole),
                             100.0 * double(whole - res.start_time) / double(res.start_time));

  const auto n = p.gs.grads.size();
  auto rate = [&](time_ns t) {
    if (t <= 0) return std::string("-");
    const double its = 1e9 / double(t);
    if (o.batch > 0) return fmt::format("{:.1f} samples/s", its * double(o.batch) * c.workers());
    return fmt::format("{:.2f} it/s", its);
  };
  if (o.json) {
    daydream::io::json_writer w(true);
    w.begin_object();
    w.field("baseline_us", us(res.start_time)).field("trace_baseline_us", us(whole));
    if (!whole_note.empty()) w.field("baseline_note", whole_note);
    w.key("best").begin_object();
    w.field("predicted_us", us(res.best_time)).field("strategy", describe(p, res.best));
    w.field("peak_memory_bytes", res.best_peak).field("from", res.best_from);
    w.key("buckets").begin_array();
    for (std::size_t k = 0; k < res.best.buckets(); ++k) {
      w.begin_object();
      w.field("bytes", opt::bytes_of(p, res.best.starts[k], res.best.end_of(k, n)));
      w.field("piece_bytes", res.best.piece[k]);
      w.key("gradients").begin_array();
      for (auto i = res.best.starts[k]; i < res.best.end_of(k, n); ++i) w.value(p.gs.grads[i].layer);
      w.end_array().end_object();
    }
    w.end_array();
    auto cap = equivalent_ddp_cap(p, res.best);
    if (cap.first) w.field("bucket_cap_mb", double(cap.first) / (1 << 20)).field("first_bucket_bytes", cap.second);
    w.key("op_fusion").begin_array();
    for (auto& f : res.best.fused) {
      w.begin_array();
      for (auto t : f.ops) w.value(p.g.name(t));
      w.end_array();
    }
    w.end_array();
    w.field("memory", res.best.memory);
    w.end_object();
    w.key("baselines").begin_array();
    for (auto& b : baselines) {
      w.begin_object().field("name", b.name);
      if (b.time >= 0) w.field("predicted_us", us(b.time));
      else w.key("predicted_us").null();
      if (!b.error.empty()) w.field("error", b.error);
      w.end_object();
    }
    w.end_array();
    w.key("search").begin_object();
    w.field("evaluated", res.evaluated).field("seconds", res.seconds).field("ranks", ev.ranks);
    w.field("rounds", res.rounds).field("budget_hit", res.budget_hit);
    w.key("log").begin_array();
    for (auto& d : res.log)
      w.begin_object().field("round", d.round).field("strategy", d.strategy).field("theorem", d.theorem)
          .field("what", d.what).field("before_us", us(d.before)).field("after_us", us(d.after)).end_object();
    w.end_array().end_object();
    w.field("iteration", iteration).field("workers", c.workers()).field("cluster", c.describe());
    w.end_object();
    std::fputs((w.take() + "\n").c_str(), out);
    return 0;
  }
  using daydream::passes::format_bytes;
  using daydream::passes::format_time;
  fmt::print(out, "daydream optimize: {}, iteration {}\n", in.what, iteration);
  for (auto& note : in.notes) fmt::print(out, "  note: {}\n", note);
  fmt::print(out, "cluster: {}\n", c.describe());
  fmt::print(out, "gradients: {} tensors, {} ({})\n", n, format_bytes(double(opt::bytes_of(p, 0, n))),
             daydream::passes::to_string(p.gs.source));
  fmt::print(out, "as traced: {}\n", format_time(res.start_time));
  if (!whole_note.empty()) fmt::print(out, "  note: {}\n", whole_note);
  fmt::print(out, "\n");
  fmt::print(out, "{:<22} {:>12} {:>16} {:>8}\n", "plan", "iteration", "throughput", "vs plan");
  fmt::print(out, "{:<22} {:>12} {:>16} {:>8}\n", "optimized", format_time(res.best_time), rate(res.best_time), "1.00x");
  for (auto& b : baselines) {
    if (b.time < 0) { fmt::print(out, "{:<22} {:>12}   ({})\n", b.name, "-", b.error); continue; }
    fmt::print(out, "{:<22} {:>12} {:>16} {:>7.2f}x\n", b.name, format_time(b.time), rate(b.time),
               double(b.time) / double(res.best_time));
  }
  fmt::print(out, "\nthe plan ({}):\n", describe(p, res.best));
  auto cap = equivalent_ddp_cap(p, res.best);
  if (res.best.how == opt::transport::all_reduce) {
    if (cap.first)
      fmt::print(out, "  PyTorch DDP: bucket_cap_mb={:.3f} (first bucket {} bytes) gives these buckets\n",
                 double(cap.first) / (1 << 20), cap.second);
    else
      fmt::print(out, "  PyTorch DDP: no single bucket_cap_mb gives these buckets; group the parameters as listed "
                      "(e.g. a comm hook or parameter order)\n");
  }
  for (std::size_t k = 0; k < res.best.buckets(); ++k) {
    const auto a = res.best.starts[k], b = res.best.end_of(k, n);
    std::string names;
    for (auto i = a; i < b; ++i) {
      if (i - a == 6 && b - a > 8) { names += fmt::format(", ... ({} more)", b - i - 1); i = b - 1; }
      names += (names.empty() ? "" : ", ") + (p.gs.grads[i].layer.empty() ? "gradient " + std::to_string(i) : p.gs.grads[i].layer);
    }
    fmt::print(out, "  bucket {:>3}: {:>9}, {} tensor(s){}: {}\n", k, format_bytes(double(opt::bytes_of(p, a, b))), b - a,
               res.best.piece[k] && res.best.piece[k] < opt::bytes_of(p, a, b)
                   ? " in pieces of " + format_bytes(double(res.best.piece[k]))
                   : std::string(),
               names);
  }
  {
    // Fusion groups by the names of their kernels (identical blocks fuse alike).
    std::vector<std::pair<std::string, std::size_t>> groups;
    for (auto& f : res.best.fused) {
      std::string names;
      for (auto t : f.ops) names += (names.empty() ? "" : " + ") + short_name(p.g.name(t));
      auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == names; });
      if (it == groups.end()) groups.push_back({names, 1});
      else ++it->second;
    }
    for (auto& [names, count] : groups) fmt::print(out, "  fuse ({}x): {}\n", count, names);
  }
  if (!res.memory_note.empty()) fmt::print(out, "  memory: {}\n", res.memory_note);
  fmt::print(out, "\nsearch log:\n");
  for (auto& d : res.log)
    fmt::print(out, "  round {:>3} {:<17} {:<20} {} -> {} ({:+.2f}%): {}\n", d.round, d.strategy, d.theorem,
               format_time(d.before), format_time(d.after),
               d.before ? 100.0 * (double(d.after) - double(d.before)) / double(d.before) : 0.0, d.what);
  fmt::print(out, "\n{} candidates replayed in {:.2f} s ({:.0f}/s) on {} rank(s){}\n", res.evaluated, res.seconds,
             res.seconds > 0 ? double(res.evaluated) / res.seconds : 0.0, ev.ranks,
             res.budget_hit ? ", stopped by the time budget" : "");
  return 0;
}

int run(const options& o, std::FILE* out) {
  mpi_session mpi;
  return run(o, out, mpi.evaluator());
}

} // namespace optimize_cmd
