// dd.strategy: data x tensor x pipeline parallel strategies of one traced model on a described
// cluster (daydream::strategy), as `daydream strategy TRACE --cluster C --strategy S --json`
// computes them (uniform specs and the grid; strategy tree files are the program's).
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <daydream/registry/params.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/grid.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/strategy_spec.hpp>
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
  bool grid = false;
  std::uint32_t devices = 0;
  std::string zero = "0", recompute = "none", schedule = "1f1b";
  double global_batch = 0, batch = 1, overlap = 1, optimizer_bytes = 12;
  std::string model_bytes;
  std::int32_t iteration = -1;
};

py::dict run_strategies(const std::string& path, const strategy_args& o) {
  auto cluster = ds::cluster_spec::parse(o.cluster);
  if (o.strategies.empty() && !o.grid) throw usage_error("daydream.strategy: give strategies=[SPEC, ...] or grid=True");
  if (!(o.overlap >= 1)) throw usage_error("daydream.strategy: overlap must be at least 1");
  if (!(o.batch > 0)) throw usage_error("daydream.strategy: batch must be positive");
  if (o.global_batch < 0) throw usage_error("daydream.strategy: global_batch must be positive");
  if (!(o.optimizer_bytes >= 0)) throw usage_error("daydream.strategy: optimizer_bytes must not be negative");
  std::vector<ds::strategy_spec> specs;
  for (auto& s : o.strategies) specs.push_back(ds::strategy_spec::parse(s));
  ds::strategy_spec base;
  if (o.grid) {
    base = ds::strategy_spec::parse("zero=" + o.zero + ",recompute=" + o.recompute + ",schedule=" + o.schedule);
    if (o.devices > cluster.devices())
      throw usage_error(fmt::format("daydream.strategy: devices={} is more than the cluster '{}' has ({})", o.devices,
                                    cluster.name, cluster.devices()));
  }
  double model_bytes = 0;
  if (!o.model_bytes.empty())
    model_bytes = pass_params::parse("strategy", "model_bytes=" + o.model_bytes).get_bytes("model_bytes", 0);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(2, "daydream.strategy: no such file: " + path, path).ptr());
    throw py::error_already_set();
  }
  py::gil_scoped_release nogil;
  auto trace = io::load_kineto(path);
  if (o.iteration >= 0 && std::none_of(trace.iterations.begin(), trace.iterations.end(),
                                       [&](const auto& it) { return it.number == o.iteration; }))
    throw usage_error(fmt::format("daydream.strategy: {}: no iteration {} (the trace has {})", path, o.iteration,
                                  trace.iterations.size()));
  ds::profile_options po;
  po.iteration = o.iteration >= 0 ? o.iteration : std::max(0, trace.default_iteration());
  po.model_bytes = model_bytes;
  po.batch = o.batch;
  if (trace.info.memory_peak >= 0) po.recorded_peak = double(trace.info.memory_peak);
  auto model = ds::profile_model(trace.g, po);
  if (model.param_bytes() == 0)
    throw error("daydream.strategy: " + path +
                ": the trace carries no gradient sizes (profile with record_shapes=True), so parameter, gradient and "
                "optimizer memory and data-parallel traffic are unknown; give model_bytes=");
  std::vector<ds::strategy_plan> plans;
  for (auto& s : specs) plans.push_back(ds::uniform_plan(s, model));
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

  py::gil_scoped_acquire gil;
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
  py::dict out;
  out["strategies"] = table;
  auto best = std::find_if(evals.begin(), evals.end(), [](auto& e) { return !e.oom; });
  out["best"] = best == evals.end() ? py::object(py::none()) : py::object(py::str(best->name));
  out["iteration"] = po.iteration;
  out["cluster"] = cluster.describe();
  out["layers"] = model.layers.size();
  out["single_gpu_us"] = double(model.iteration) / 1e3;
  out["notes"] = model.notes;
  return out;
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
    return run_strategies(path, a);
  });
}

} // namespace daydream::python
