// dd.optimize: the best bucketing / partition / fusion plan for data-parallel training of one
// trace, or of a job's slowest rank (its plan applies to every rank), on a cluster
// (daydream::optimize), as `daydream optimize TRACE... --json` computes it.
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <optimize/input.hpp> // the program's input: one trace, or a job's slowest rank

#include <daydream/optimize/search.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/memory.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace daydream::python {

namespace {

namespace dopt = daydream::optimize;

/// A plan in one line, as `daydream optimize` describes its best plan (cli/optimize/optimize.cpp).
std::string describe_plan(const dopt::problem& p, const dopt::plan& x) {
  std::size_t pieces = 0;
  for (std::size_t k = 0; k < x.buckets(); ++k)
    pieces += dopt::pieces_of(dopt::bytes_of(p, x.starts[k], x.end_of(k, p.gs.grads.size())), x.piece[k]).size();
  std::string s = fmt::format("{}: {} bucket(s), {} piece(s)", dopt::to_string(x.how), x.buckets(), pieces);
  if (!x.fused.empty()) s += fmt::format(", {} op fusion group(s)", x.fused.size());
  if (!x.memory.empty()) s += ", " + x.memory;
  for (auto& e : x.edits) s += ", " + e.name;
  return s;
}

py::dict optimize_trace(const std::vector<std::string>& paths, const py::dict& cluster_keys,
                        const std::string& algorithm_name, const std::string& model_bytes_text,
                        const std::vector<std::string>& strategy_names, const std::string& time_budget,
                        const std::string& memory_budget, std::int32_t iteration_in) {
  auto strategies = dopt::bundled_strategies().select(strategy_names);
  dopt::search_options so;
  so.time_budget_s = pass_params::parse("optimize", "t=" + time_budget).get_time_ns("t", 30e9) / 1e9;
  if (!memory_budget.empty())
    so.memory_budget = std::int64_t(pass_params::parse("optimize", "m=" + memory_budget).get_bytes("m", 0));
  auto algorithm = parse_all_reduce_algorithm(algorithm_name);
  const double model_bytes =
      model_bytes_text.empty() ? 0 : pass_params::parse("optimize", "m=" + model_bytes_text).get_bytes("m", 0);
  std::string spec;
  for (auto [k, v] : cluster_keys)
    spec += (spec.empty() ? "" : ",") + py::str(k).cast<std::string>() + "=" + py::str(v).cast<std::string>();
  pass_params::parse("optimize", spec + (spec.empty() ? "" : ",") + "workers=2"); // the keys are valid
  if (paths.empty()) throw usage_error("daydream.optimize: give a trace, or every rank's trace of a job");
  for (auto& path : paths) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(2, "daydream.optimize: no such file: " + path, path).ptr());
      throw py::error_already_set();
    }
  }
  const bool explicit_workers = cluster_keys.contains("workers") || cluster_keys.contains("machines");
  py::gil_scoped_release nogil;
  auto in = optimize_cmd::load(paths);
  graph& g = in.g;
  const auto& path = in.what;
  const auto rec = passes::find_recorded_collectives(g);
  const std::int32_t default_workers = in.world > 1 ? in.world : std::int32_t(rec.group);
  if (!explicit_workers && default_workers <= 1)
    throw usage_error("daydream.optimize: " + path +
                      " is a single-GPU trace: give the cluster to optimize for with workers=N (N >= 2)");
  if (!explicit_workers) spec += (spec.empty() ? "" : ",") + std::string("workers=") + std::to_string(default_workers);
  auto params = pass_params::parse("optimize", spec);
  const auto c = cluster_from_params(params);
  params.finish();
  if (c.workers() <= 1)
    throw usage_error("daydream.optimize: one worker has nothing to synchronize: give workers=N (N >= 2)");
  const auto whole_replay = replay(g);
  const std::int32_t iteration =
      iteration_in >= 0 ? iteration_in : optimize_cmd::median_iteration(steady_steps(g, whole_replay, in.iterations));
  if (std::find(in.iterations.begin(), in.iterations.end(), iteration) == in.iterations.end() && iteration_in >= 0) {
    bool any = false;
    g.for_each_task([&](task_id id) { any = any || g.iteration(id) == iteration; });
    if (!any) throw usage_error(fmt::format("daydream.optimize: {}: no iteration {}", path, iteration));
  }
  if (!passes::has_gradient_sizes(g) && model_bytes <= 0)
    throw error("daydream.optimize: " + path +
                ": the trace carries no gradient sizes (profile with record_shapes=True, or give model_bytes=)");
  auto p = dopt::make_problem(g, iteration, c, path, {}, model_bytes);
  p.algorithm = algorithm;
  p.memory_initial = in.memory_initial;
  p.memory_modelled = in.memory_modelled;
  auto res = dopt::search(p, strategies, so);
  auto baselines = dopt::run_baselines(p);
  const time_ns whole = steady_steps(g, whole_replay, {iteration}).front().step();

  py::gil_scoped_acquire gil;
  const auto n = p.gs.grads.size();
  py::dict best;
  best["predicted_us"] = whatif_cmd::us(res.best_time);
  best["strategy"] = describe_plan(p, res.best);
  best["peak_memory_bytes"] = res.best_peak;
  best["from"] = res.best_from;
  std::vector<std::uint64_t> bucket_bytes, piece_bytes;
  for (std::size_t k = 0; k < res.best.buckets(); ++k) {
    bucket_bytes.push_back(dopt::bytes_of(p, res.best.starts[k], res.best.end_of(k, n)));
    piece_bytes.push_back(res.best.piece[k]);
  }
  best["bucket_bytes"] = bucket_bytes;
  best["piece_bytes"] = piece_bytes;
  best["memory"] = res.best.memory;
  std::vector<std::string> bname;
  std::vector<py::object> btime;
  for (auto& b : baselines) {
    bname.push_back(b.name);
    btime.push_back(b.time >= 0 ? py::object(py::float_(whatif_cmd::us(b.time))) : py::object(py::none()));
  }
  py::dict base_table;
  base_table["name"] = bname;
  base_table["predicted_us"] = btime;
  std::vector<std::int64_t> round;
  std::vector<std::string> strategy, theorem, what;
  std::vector<double> before_us, after_us;
  for (auto& d : res.log) {
    round.push_back(d.round);
    strategy.push_back(d.strategy);
    theorem.push_back(d.theorem);
    what.push_back(d.what);
    before_us.push_back(whatif_cmd::us(d.before));
    after_us.push_back(whatif_cmd::us(d.after));
  }
  py::dict log;
  log["round"] = round;
  log["strategy"] = strategy;
  log["theorem"] = theorem;
  log["what"] = what;
  log["before_us"] = before_us;
  log["after_us"] = after_us;
  py::dict out;
  out["baseline_us"] = whatif_cmd::us(res.start_time);
  out["trace_baseline_us"] = whatif_cmd::us(whole);
  out["best"] = best;
  out["baselines"] = base_table;
  out["log"] = log;
  out["evaluated"] = res.evaluated;
  out["rounds"] = res.rounds;
  out["budget_hit"] = res.budget_hit;
  out["iteration"] = iteration;
  out["workers"] = c.workers();
  out["cluster"] = c.describe();
  out["trace"] = in.what;
  out["world_size"] = in.world;
  out["rank"] = in.rank;
  out["notes"] = in.notes;
  return out;
}

} // namespace

void bind_optimize(py::module_& m) {
  m.def("_optimize", &optimize_trace, py::arg("traces"), py::arg("cluster"), py::arg("algorithm") = "ring",
        py::arg("model_bytes") = "", py::arg("strategies") = std::vector<std::string>{},
        py::arg("time_budget") = "30s", py::arg("memory_budget") = "", py::arg("iteration") = -1);
}

} // namespace daydream::python
