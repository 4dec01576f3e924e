// dd.strategy: data x tensor x pipeline parallel strategies of one traced model on a described
// cluster (daydream::strategy), as `daydream strategy TRACE --cluster C --strategy S --json`
// computes them (uniform specs, strategy tree files and the grid), and the model's strategy
// tree as `--show-tree` shows it (a table of its nodes).
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <strategy/profile.hpp> // the program's profile options and model tree, header-only
#include <strategy/timeline.hpp> // the program's --timeline writer, header-only

#include <daydream/registry/params.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/grid.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>
#include <daydream/strategy/tree_json.hpp>
#include <daydream/strategy/validate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace daydream::python {

namespace {

namespace ds = daydream::strategy;

struct strategy_args {
  std::string cluster;
  std::vector<std::string> strategies;
  bool grid = false, show_tree = false;
  std::uint32_t devices = 0;
  std::string zero = "0", recompute = "none", schedule = "1f1b";
  double global_batch = 0, batch = 1, overlap = 1, optimizer_bytes = 12;
  std::string model_bytes;
  std::int32_t iteration = -1;
  std::string timeline; ///< Chrome-trace file of the strategies; empty: none
};

/// The nodes of `t` in the order `--show-tree` prints them (depth first), one column each:
/// what the node is, what the file set on it (None: unset), and with `plans` the resolved
/// plan of its layer.
py::dict tree_columns(const ds::strategy_tree& t, const ds::model_profile& m, const std::vector<ds::resolved_layer>& plans) {
  std::vector<std::uint32_t> node;
  std::vector<std::int32_t> parent, depth, layer;
  std::vector<std::string> name, path;
  std::vector<py::object> splits, fwd, bwd, params, part, recompute, stage;
  std::vector<py::object> p_part, p_split, p_far, p_fag, p_bar, p_bag, p_re, p_stage;
  auto opt = [](bool on, auto v) { return on ? py::cast(v) : py::object(py::none()); };
  auto walk = [&](auto&& self, std::uint32_t i, std::int32_t d) -> void {
    const auto& n = t.nodes()[i];
    node.push_back(i);
    parent.push_back(n.parent);
    depth.push_back(d);
    layer.push_back(n.layer);
    name.push_back(n.name);
    path.push_back(n.path);
    const bool is_layer = n.layer >= 0;
    const auto* l = is_layer ? &m.layers[std::size_t(n.layer)] : nullptr;
    splits.push_back(opt(is_layer, is_layer && l->splits()));
    fwd.push_back(opt(is_layer, is_layer ? double(l->forward()) / 1e3 : 0.0));
    bwd.push_back(opt(is_layer, is_layer ? double(l->backward()) / 1e3 : 0.0));
    params.push_back(opt(is_layer, is_layer ? l->param_bytes : std::uint64_t(0)));
    part.push_back(n.config.part ? py::cast(std::string(ds::to_string(*n.config.part))) : py::object(py::none()));
    recompute.push_back(n.config.recompute ? py::cast(*n.config.recompute) : py::object(py::none()));
    stage.push_back(n.config.stage ? py::cast(*n.config.stage) : py::object(py::none()));
    const bool planned = is_layer && !plans.empty();
    const ds::resolved_layer none;
    const auto& p = planned ? plans[std::size_t(n.layer)] : none;
    p_part.push_back(opt(planned, std::string(ds::to_string(p.part))));
    p_split.push_back(opt(planned, p.split));
    p_far.push_back(opt(planned, p.fwd_all_reduce));
    p_fag.push_back(opt(planned, p.fwd_all_gather));
    p_bar.push_back(opt(planned, p.bwd_all_reduce));
    p_bag.push_back(opt(planned, p.bwd_all_gather));
    p_re.push_back(opt(planned, p.recompute));
    p_stage.push_back(opt(planned, p.stage));
    for (auto ch : n.children) self(self, ch, d + 1);
  };
  walk(walk, 0, 0);
  py::dict c;
  c["node"] = node;
  c["name"] = name;
  c["path"] = path;
  c["parent"] = parent;
  c["depth"] = depth;
  c["layer"] = layer;
  c["splits"] = splits;
  c["forward_us"] = fwd;
  c["backward_us"] = bwd;
  c["param_bytes"] = params;
  c["partition"] = part;
  c["recompute"] = recompute;
  c["stage"] = stage;
  c["plan_partition"] = p_part;
  c["plan_split"] = p_split;
  c["plan_fwd_all_reduce"] = p_far;
  c["plan_fwd_all_gather"] = p_fag;
  c["plan_bwd_all_reduce"] = p_bar;
  c["plan_bwd_all_gather"] = p_bag;
  c["plan_recompute"] = p_re;
  c["plan_stage"] = p_stage;
  return c;
}

/// The evaluations as the table of `daydream strategy --json`'s strategies.
py::dict strategy_columns(const std::vector<ds::strategy_evaluation>& evals) {
  std::vector<std::string> name, bound;
  std::vector<double> predicted, sps, peak, dp, tp, pp, zero;
  std::vector<bool> oom;
  std::vector<std::uint32_t> devices;
  for (auto& e : evals) {
    name.push_back(e.name);
    predicted.push_back(double(e.predicted) / 1e3);
    sps.push_back(e.samples_per_s);
    peak.push_back(e.peak_memory);
    oom.push_back(e.oom);
    dp.push_back(e.comm.dp);
    tp.push_back(e.comm.tp);
    pp.push_back(e.comm.pp);
    zero.push_back(e.comm.zero);
    devices.push_back(std::uint32_t(e.strategy.devices()));
    bound.push_back(e.bound);
  }
  py::dict table;
  table["strategy"] = name;
  table["predicted_us"] = predicted;
  table["samples_per_s"] = sps;
  table["peak_memory_bytes"] = peak;
  table["oom"] = oom;
  table["comm_dp_bytes"] = dp;
  table["comm_tp_bytes"] = tp;
  table["comm_pp_bytes"] = pp;
  table["comm_zero_bytes"] = zero;
  table["devices"] = devices;
  table["bound"] = bound;
  return table;
}

void check_args(const strategy_args& o) {
  if (o.cluster.empty() && !o.show_tree) throw usage_error("daydream.strategy: give the cluster");
  if (o.strategies.empty() && !o.grid && !o.show_tree)
    throw usage_error("daydream.strategy: give strategies=[SPEC or TREE FILE, ...] or grid=True");
  if (!(o.overlap >= 1)) throw usage_error("daydream.strategy: overlap must be at least 1");
  if (!(o.batch > 0)) throw usage_error("daydream.strategy: batch must be positive");
  if (o.global_batch < 0) throw usage_error("daydream.strategy: global_batch must be positive");
  if (!(o.optimizer_bytes >= 0)) throw usage_error("daydream.strategy: optimizer_bytes must not be negative");
}

py::dict run_strategies(const std::string& path, const strategy_args& o) {
  check_args(o);
  auto cluster = ds::cluster_spec::parse(o.cluster.empty() ? "1x1" : o.cluster);
  std::vector<ds::strategy_spec> specs;
  for (auto& s : o.strategies)
    if (!strategy_cmd::is_tree_file(s)) specs.push_back(ds::strategy_spec::parse(s));
  ds::strategy_spec base;
  if (o.grid) {
    base = ds::strategy_spec::parse("zero=" + o.zero + ",recompute=" + o.recompute + ",schedule=" + o.schedule);
    if (o.devices > cluster.devices())
      throw usage_error(fmt::format("daydream.strategy: devices={} is more than the cluster '{}' has ({})", o.devices,
                                    cluster.name, cluster.devices()));
  }
  const double model_bytes = strategy_cmd::model_bytes_of(o.model_bytes);
  std::vector<std::string> files{path};
  for (auto& s : o.strategies)
    if (strategy_cmd::is_tree_file(s)) files.push_back(s);
  for (const std::string& f : files) {
    std::error_code ec;
    if (!std::filesystem::exists(f, ec)) {
      PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(2, "daydream.strategy: no such file: " + f, f).ptr());
      throw py::error_already_set();
    }
  }
  py::gil_scoped_release nogil;
  auto trace = io::load_kineto(path);
  const auto po = strategy_cmd::profile_options_of(trace, "daydream.strategy", path, o.iteration, model_bytes, o.batch);
  auto model = ds::profile_model(trace.g, po);
  // The strategies in the order given: specs as uniform plans, tree files configured.
  ds::strategy_tree shown_tree = strategy_cmd::model_tree(model, trace);
  std::vector<ds::resolved_layer> shown_plans;
  std::vector<ds::strategy_plan> plans;
  for (auto& s : o.strategies) {
    if (!strategy_cmd::is_tree_file(s)) {
      plans.push_back(ds::uniform_plan(ds::strategy_spec::parse(s), model));
      continue;
    }
    auto t = strategy_cmd::model_tree(model, trace);
    ds::load_tree_file(t, s);
    plans.push_back(t.plan(model, strategy_cmd::tree_plan_name(t, s)));
    shown_tree = t;
    shown_plans = plans.back().layers;
  }
  auto finish = [&](py::dict out) {
    out["iteration"] = po.iteration;
    out["layers"] = model.layers.size();
    out["modules"] = trace.modules.size();
    out["nodes"] = shown_tree.nodes().size();
    out["tree"] = tree_columns(shown_tree, model, shown_plans);
    return out;
  };
  if (o.show_tree) {
    py::gil_scoped_acquire gil;
    return finish(py::dict());
  }
  if (model.param_bytes() == 0)
    throw error("daydream.strategy: " + path +
                ": the trace carries no gradient sizes (profile with record_shapes=True), so parameter, gradient and "
                "optimizer memory and data-parallel traffic are unknown; give model_bytes=");
  const ds::simulate_options so{.optimizer_bytes_per_param = o.optimizer_bytes, .overlap_slowdown = o.overlap,
                                .global_batch = o.global_batch};
  if (o.grid) ds::add_grid(plans, specs, o.devices ? o.devices : cluster.devices(), model, base, so);
  if (plans.empty())
    throw usage_error(fmt::format("daydream.strategy: no valid strategy for {} devices",
                                  o.devices ? o.devices : cluster.devices()));
  for (auto& p : plans) ds::validate(p, cluster, model, so);
  std::vector<ds::strategy_evaluation> evals;
  for (auto& p : plans) evals.push_back(ds::simulate_strategy(p, cluster, model, so));
  std::stable_sort(evals.begin(), evals.end(), [](const auto& a, const auto& b) { return a.samples_per_s > b.samples_per_s; });
  auto best = std::find_if(evals.begin(), evals.end(), [](auto& e) { return !e.oom; });
  if (!o.timeline.empty())
    strategy_cmd::write_strategy_timeline(o.timeline, plans, o.strategies.size(),
                                          best == evals.end() ? std::string() : best->name, cluster, model, so,
                                          o.overlap);

  py::gil_scoped_acquire gil;
  py::dict out;
  out["strategies"] = strategy_columns(evals);
  out["best"] = best == evals.end() ? py::object(py::none()) : py::object(py::str(best->name));
  out["cluster"] = cluster.describe();
  out["single_gpu_us"] = double(model.iteration) / 1e3;
  out["notes"] = model.notes;
  if (!o.timeline.empty()) out["timeline"] = o.timeline;
  return finish(out);
}

} // namespace

void bind_strategy(py::module_& m) {
  m.def("_strategy", [](const std::string& path, const py::dict& kw) {
    strategy_args a;
    auto get = [&](const char* k, auto& v) {
      if (kw.contains(k) && !kw[k].is_none()) v = kw[k].cast<std::remove_reference_t<decltype(v)>>();
    };
    get("cluster", a.cluster);
    get("strategies", a.strategies);
    get("grid", a.grid);
    get("show_tree", a.show_tree);
    get("devices", a.devices);
    get("zero", a.zero);
    get("recompute", a.recompute);
    get("schedule", a.schedule);
    get("global_batch", a.global_batch);
    get("batch", a.batch);
    get("overlap", a.overlap);
    get("optimizer_bytes", a.optimizer_bytes);
    get("model_bytes", a.model_bytes);
    get("iteration", a.iteration);
    get("timeline", a.timeline);
    return run_strategies(path, a);
  });
}

} // namespace daydream::python
