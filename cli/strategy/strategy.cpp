// Defines the strategy command (daydream strategy): hybrid parallel strategies of the model in one GPU's trace, on a described cluster.
// SPDX-License-Identifier: MIT
//
//   TRACE --load--> model profile (per layer) --compile + replay per strategy--> ranking
#include "strategy.hpp"

#include "../mpi.hpp"
#include "profile.hpp"
#include "timeline.hpp"

#include <daydream/config.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/replay.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compile.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/strategy/device_spans.hpp>
#include <daydream/strategy/grid.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>
#include <daydream/strategy/tree_json.hpp>
#include <daydream/strategy/validate.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace strategy_cmd {

namespace ds = daydream::strategy;
using daydream::passes::format_bytes;
using daydream::passes::format_time;

/// Adds the strategy options to `app`.
void add_options(CLI::App& app, options& o) {
  app.add_option("trace", o.trace, "Kineto trace of one GPU's training run")->required();
  std::string presets;
  for (auto& p : ds::cluster_spec::presets()) presets += (presets.empty() ? "" : ", ") + std::string(p.name);
  app.add_option("--cluster", o.cluster,
                 "the cluster: a preset (" + presets + ", each with an optional :nodes=N) or "
                 "NODESxDEVICES[:nvlink=..,pcie=..,nic=..,mem=..] (4x8:nvlink=300GB/s,nic=100Gbps,mem=32GiB)");
  app.add_option("--strategy", o.strategies,
                 "a strategy (repeatable): dp=..,tp=..,pp=..[,micro=..][,zero=0..3][,recompute=none|blocks]"
                 "[,schedule=1f1b|gpipe], or a strategy tree file FILE.json (docs/strategy.md)");
  app.add_flag("--show-tree", o.show_tree,
               "print the model's strategy tree (the node names a tree file sets; with --json as JSON) and "
               "stop; with a tree --strategy, each layer's resolved plan");
  app.add_flag("--grid", o.grid, "also every valid dp x tp x pp x micro for the device count");
  app.add_option("--devices", o.devices, "devices of the --grid strategies (default: the cluster's)");
  app.add_option("--zero", o.zero, "ZeRO stage of the --grid strategies (0-3)")->capture_default_str();
  app.add_option("--recompute", o.recompute, "re-computation of the --grid strategies (none, blocks)")
      ->capture_default_str();
  app.add_option("--schedule", o.schedule, "pipeline schedule of the --grid strategies (1f1b, gpipe)")
      ->capture_default_str();
  app.add_option("--global-batch", o.global_batch,
                 "samples per iteration over all replicas (default: dp x --batch: each replica runs the traced batch)");
  app.add_option("--batch", o.batch, "samples in the traced iteration (default 1: throughput in traced batches)");
  app.add_option("--model-bytes", o.model_bytes,
                 "parameter bytes (500MB), spread over the gradients when the trace records no gradient sizes");
  app.add_option("--iteration", o.iteration, "traced iteration to read (default: a steady-state one)");
  app.add_option("--overlap", o.overlap, "overlap factor: computation runs this much slower while its device "
                                         "communicates (Proteus; >= 1)")
      ->capture_default_str();
  app.add_option("--optimizer-bytes", o.optimizer_bytes,
                 "optimizer state bytes per parameter (Adam with fp32 master weights: 12)")
      ->capture_default_str();
  app.add_option("--timeline", o.timeline,
                 "write a Chrome trace (Perfetto) of each --strategy and of the best: one process per device, "
                 "its computation, feature and gradient queues as tracks");
  app.add_flag("--json", o.json, "print one JSON object on stdout");
}

/// Prints `t` (with the plan of each layer when `plans` is not empty) as an indented list.
inline void print_tree(std::FILE* out, const ds::strategy_tree& t, const ds::model_profile& m,
                       const std::vector<ds::resolved_layer>& plans) {
  auto walk = [&](auto&& self, std::uint32_t i, int depth) -> void {
    const auto& n = t.nodes()[i];
    std::string line(std::size_t(2 * depth), ' ');
    line += n.name;
    if (n.layer >= 0) {
      const auto& l = m.layers[std::size_t(n.layer)];
      line += fmt::format("  [layer {}: forward {}, backward {}, parameters {}{}]", n.layer,
                          format_time(l.forward()), format_time(l.backward()), format_bytes(double(l.param_bytes)),
                          l.splits() ? "" : ", no tensor-parallel work");
      if (!plans.empty()) {
        const auto& p = plans[std::size_t(n.layer)];
        std::string comm;
        auto add = [&](bool on, const char* what) { if (on) comm += std::string(comm.empty() ? "" : ", ") + what; };
        add(p.fwd_all_reduce, "fwd all-reduce");
        add(p.fwd_all_gather, "fwd all-gather");
        add(p.bwd_all_reduce, "bwd all-reduce");
        add(p.bwd_all_gather, "bwd all-gather");
        line += fmt::format(" -> {}{}{}{}", ds::to_string(p.part), comm.empty() ? "" : " (" + comm + ")",
                            p.recompute ? ", recompute" : "",
                            p.stage >= 0 ? ", stage " + std::to_string(p.stage) : "");
      }
    }
    auto& c = n.config;
    if (c.part) line += fmt::format("  partition={}", ds::to_string(*c.part));
    if (c.recompute) line += fmt::format("  recompute={}", *c.recompute);
    if (c.stage) line += fmt::format("  stage={}", *c.stage);
    fmt::print(out, "{}\n", line);
    for (auto ch : n.children) self(self, ch, depth + 1);
  };
  walk(walk, 0, 0);
}

/// Writes `t` as JSON: nested nodes with name, path, layer and children.
inline void write_tree(daydream::io::json_writer& w, const ds::strategy_tree& t, const ds::model_profile& m,
                       const std::vector<ds::resolved_layer>& plans) {
  auto walk = [&](auto&& self, std::uint32_t i) -> void {
    const auto& n = t.nodes()[i];
    w.begin_object();
    w.field("name", n.name).field("path", n.path);
    if (n.layer >= 0) {
      w.field("layer", n.layer).field("splits", m.layers[std::size_t(n.layer)].splits());
      if (!plans.empty()) {
        const auto& p = plans[std::size_t(n.layer)];
        w.key("plan").begin_object();
        w.field("partition", ds::to_string(p.part)).field("split", p.split);
        w.field("fwd_all_reduce", p.fwd_all_reduce).field("fwd_all_gather", p.fwd_all_gather);
        w.field("bwd_all_reduce", p.bwd_all_reduce).field("bwd_all_gather", p.bwd_all_gather);
        w.field("recompute", p.recompute).field("stage", p.stage);
        w.end_object();
      }
    }
    w.key("children").begin_array();
    for (auto ch : n.children) self(self, ch);
    w.end_array();
    w.end_object();
  };
  walk(walk, 0);
}

/// Runs the command: prints the ranking as text or JSON on `out`. Returns the exit status.
int run(const options& o, std::FILE* out) {
  if (o.cluster.empty() && !o.show_tree) throw daydream::usage_error("daydream strategy: --cluster is required");
  auto cluster = ds::cluster_spec::parse(o.cluster.empty() ? "1x1" : o.cluster);
  if (o.strategies.empty() && !o.grid && !o.show_tree)
    throw daydream::usage_error("daydream strategy: give --strategy SPEC (repeatable) or --grid");
  if (!(o.overlap >= 1)) throw daydream::usage_error("daydream strategy: --overlap must be at least 1");
  if (!(o.batch > 0)) throw daydream::usage_error("daydream strategy: --batch must be positive");
  if (o.global_batch < 0) throw daydream::usage_error("daydream strategy: --global-batch must be positive");
  if (!(o.optimizer_bytes >= 0)) throw daydream::usage_error("daydream strategy: --optimizer-bytes must not be negative");
  std::vector<ds::strategy_spec> specs;
  for (auto& s : o.strategies)
    if (!is_tree_file(s)) specs.push_back(ds::strategy_spec::parse(s));
  ds::strategy_spec base;
  if (o.grid) {
    base = ds::strategy_spec::parse("zero=" + o.zero + ",recompute=" + o.recompute + ",schedule=" + o.schedule);
    if (o.devices > cluster.devices())
      throw daydream::usage_error(fmt::format("daydream strategy: --devices {} is more than the cluster '{}' has ({})",
                                              o.devices, cluster.name, cluster.devices()));
  }
  const double model_bytes = model_bytes_of(o.model_bytes);

  auto trace = daydream::io::load_kineto(o.trace);
  const auto po = profile_options_of(trace, "daydream strategy", o.trace, o.iteration, model_bytes, o.batch);
  auto model = ds::profile_model(trace.g, po);
  // The strategies in command-line order: specs as uniform plans, tree files configured.
  ds::strategy_tree shown_tree = model_tree(model, trace);
  std::vector<ds::strategy_plan> plans;
  for (auto& s : o.strategies) {
    if (!is_tree_file(s)) {
      plans.push_back(ds::uniform_plan(ds::strategy_spec::parse(s), model));
      continue;
    }
    auto t = model_tree(model, trace);
    ds::load_tree_file(t, s);
    plans.push_back(t.plan(model, tree_plan_name(t, s)));
    shown_tree = t;
  }
  if (o.show_tree) {
    std::vector<ds::resolved_layer> shown_plans;
    for (std::size_t i = 0; i < plans.size(); ++i)
      if (is_tree_file(o.strategies[i])) shown_plans = plans[i].layers;
    if (o.json) {
      daydream::io::json_writer w(true);
      w.begin_object();
      w.field("trace", o.trace).field("iteration", po.iteration).field("layers", model.layers.size());
      w.field("modules", trace.modules.size()).field("nodes", shown_tree.nodes().size());
      w.key("tree");
      write_tree(w, shown_tree, model, shown_plans);
      w.end_object();
      std::fputs((w.take() + "\n").c_str(), out);
      return 0;
    }
    fmt::print(out, "daydream strategy: {}, iteration {}: {} layers under {} modules ({})\n", o.trace, po.iteration,
               model.layers.size(), trace.modules.size(),
               trace.modules.empty() ? "the trace records no nn.Module events: a flat tree"
                                     : "nodes named as the trace's nn.Module events");
    print_tree(out, shown_tree, model, shown_plans);
    return 0;
  }
  if (model.param_bytes() == 0)
    throw daydream::error("daydream strategy: " + o.trace +
                          ": the trace carries no gradient sizes (profile with record_shapes=True), so parameter, "
                          "gradient and optimizer memory and data-parallel traffic are unknown; give --model-bytes");
  const ds::simulate_options so{.optimizer_bytes_per_param = o.optimizer_bytes, .overlap_slowdown = o.overlap,
                                .global_batch = o.global_batch};
  if (o.grid) ds::add_grid(plans, specs, o.devices ? o.devices : cluster.devices(), model, base, so);
  if (plans.empty())
    throw daydream::usage_error(fmt::format("daydream strategy: no valid strategy for {} devices",
                                            o.devices ? o.devices : cluster.devices()));

  for (auto& p : plans) ds::validate(p, cluster, model, so); // on every rank, before any is left waiting

  // Under mpirun, rank r simulates strategies r, r + size, ...; rank 0 gathers the figures
  // (written exactly: shortest round-trip decimals) and re-simulates the best to explain it.
  program::mpi_world world;
  std::vector<ds::strategy_evaluation> evals(plans.size());
  std::string mine;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (int(i % std::size_t(world.size())) != world.rank()) continue;
    evals[i] = ds::simulate_strategy(plans[i], cluster, model, so);
    const auto& e = evals[i];
    mine += fmt::format("{} {} {} {} {} {} {} {} {} {}\n", i, e.predicted, e.samples_per_s, e.peak_memory,
                        int(e.oom), e.comm.dp, e.comm.tp, e.comm.pp, e.comm.zero, e.bound);
  }
  auto all = world.gather(mine);
  if (world.rank() != 0) return 0;
  for (std::size_t r = 1; r < all.size(); ++r) {
    std::istringstream in(all[r]);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::size_t i = 0;
      int oom = 0;
      std::string dp, tp, pp, zero, sps, peak;
      ds::strategy_evaluation e;
      f >> i >> e.predicted >> sps >> peak >> oom >> dp >> tp >> pp >> zero;
      std::getline(f >> std::ws, e.bound);
      if (!f.eof() && f.fail()) throw daydream::error("daydream strategy: a rank sent a malformed result: " + line);
      e.strategy = plans.at(i).spec;
      e.name = plans.at(i).name;
      e.samples_per_s = std::strtod(sps.c_str(), nullptr);
      e.peak_memory = std::strtod(peak.c_str(), nullptr);
      e.oom = oom != 0;
      e.comm = {std::strtod(dp.c_str(), nullptr), std::strtod(tp.c_str(), nullptr), std::strtod(pp.c_str(), nullptr),
                std::strtod(zero.c_str(), nullptr)};
      evals[i] = e;
    }
  }
  std::stable_sort(evals.begin(), evals.end(), [](const ds::strategy_evaluation& a, const ds::strategy_evaluation& b) {
    return a.samples_per_s > b.samples_per_s;
  });
  const ds::strategy_evaluation* best = nullptr;
  for (auto& e : evals)
    if (!e.oom) { best = &e; break; }
  auto plan_named = [&](const std::string& name) -> const ds::strategy_plan& {
    for (auto& p : plans)
      if (p.name == name) return p;
    throw daydream::error("daydream strategy: no strategy named " + name);
  };
  ds::strategy_evaluation explained;
  if (best && best->memory.empty()) {
    explained = ds::simulate_strategy(plan_named(best->name), cluster, model, so);
    best = &explained;
  }
  const double single = double(model.iteration);
  if (!o.timeline.empty())
    write_strategy_timeline(o.timeline, plans, o.strategies.size(), best ? best->name : std::string(), cluster, model,
                            so, o.overlap);

  if (o.json) {
    daydream::io::json_writer w(true);
    w.begin_object();
    w.field("trace", o.trace).field("iteration", po.iteration).field("cluster", cluster.describe());
    w.field("layers", model.layers.size()).field("single_gpu_us", single / 1e3).field("ranks", world.size());
    if (model.recorded_peak > 0) w.field("recorded_peak_memory_bytes", model.recorded_peak);
    w.key("strategies").begin_array();
    for (auto& e : evals) {
      w.begin_object();
      w.field("strategy", e.name).field("predicted_us", double(e.predicted) / 1e3);
      w.field("samples_per_s", e.samples_per_s).field("peak_memory_bytes", e.peak_memory).field("oom", e.oom);
      w.key("comm_bytes").begin_object();
      w.field("dp", e.comm.dp).field("tp", e.comm.tp).field("pp", e.comm.pp).field("zero", e.comm.zero);
      w.end_object();
      w.field("devices", e.strategy.devices()).field("bound", e.bound);
      w.end_object();
    }
    w.end_array();
    if (best) w.field("best", best->name);
    else w.key("best").null();
    w.key("notes").begin_array();
    for (auto& n : model.notes) w.value(n);
    w.end_array();
    w.end_object();
    std::fputs((w.take() + "\n").c_str(), out);
    return 0;
  }

  fmt::print(out, "daydream strategy: {}, iteration {}: {} layers, {} per iteration on one GPU, parameters {} ({})\n",
             o.trace, po.iteration, model.layers.size(), format_time(model.iteration),
             format_bytes(double(model.param_bytes())), model.gradient_source);
  fmt::print(out, "cluster: {}\n\n", cluster.describe());
  std::size_t width = 40;
  for (auto& e : evals) width = std::max(width, e.name.size());
  fmt::print(out, "{:>4}  {:<{}} {:>12} {:>12} {:>12} {:>4}  {:>10} {:>10} {:>10} {:>10}\n", "rank", "strategy", width,
             "iteration", "samples/s", "peak memory", "OOM", "dp bytes", "tp bytes", "pp bytes", "zero bytes");
  int rank = 0;
  for (auto& e : evals)
    fmt::print(out, "{:>4}  {:<{}} {:>12} {:>12.1f} {:>12} {:>4}  {:>10} {:>10} {:>10} {:>10}\n", ++rank,
               e.name, width, format_time(e.predicted), e.samples_per_s, format_bytes(e.peak_memory),
               e.oom ? "yes" : "no", format_bytes(e.comm.dp), format_bytes(e.comm.tp), format_bytes(e.comm.pp),
               format_bytes(e.comm.zero));
  fmt::print(out, "\n");
  if (!best) {
    fmt::print(out, "no strategy fits the device memory ({})\n", format_bytes(cluster.memory_bytes));
  } else {
    const auto& e = *best;
    fmt::print(out, "best that fits: {} on {} devices, {:.1f} samples/s ({:.2f}x one GPU's)\n", e.name,
               e.strategy.devices(), e.samples_per_s,
               e.samples_per_s / (model.batch / (single / 1e9)));
    fmt::print(out, "  bound by: {}\n", e.bound);
    fmt::print(out, "  busiest device {} (stage {}): compute {}, tensor-parallel all-reduces {}, pipeline bubble {}, "
                    "gradient sync not hidden {}, weight update {}, outside the layers {}\n",
               e.busiest_device, e.busiest_device / (e.strategy.dp * e.strategy.tp), format_time(e.compute),
               format_time(e.tp_comm), format_time(e.bubble), format_time(e.dp_exposed),
               format_time(e.update), format_time(e.other));
    fmt::print(out, "  links: dp {}, tp {}, pp {}\n", e.dp_link.describe(), e.tp_link.describe(),
               e.pp_link.describe());
    auto peak = std::max_element(e.memory.begin(), e.memory.end(),
                                 [](auto& a, auto& b) { return a.total() < b.total(); });
    fmt::print(out, "  memory per device (largest, stage {}): {} (parameters {}, gradients {}, optimizer {}, "
                    "activations of {} micro-batches {}{})\n",
               peak - e.memory.begin(), format_bytes(e.peak_memory), format_bytes(peak->params),
               format_bytes(peak->gradients), format_bytes(peak->optimizer), peak->in_flight,
               format_bytes(peak->activations),
               model.recorded_peak > 0
                   ? fmt::format(", {} {} to match the trace's recorded peak of {} on one GPU",
                                 peak->recorded_rest >= 0 ? "plus" : "less", format_bytes(std::abs(peak->recorded_rest)),
                                 format_bytes(model.recorded_peak))
                   : std::string());
  }
  for (auto& n : model.notes) fmt::print(out, "note: {}\n", n);
  if (!o.timeline.empty()) fmt::print(out, "timeline: {}\n", o.timeline);
  return 0;
}

} // namespace strategy_cmd

