// dd.compare: a prediction next to a measured run (daydream::compare), as `daydream compare`
// computes it: both traces read as recorded, the chain applied to BEFORE. dd.ps: asynchronous
// parameter-server throughput for W workers (daydream::ps), as `daydream ps` computes it.
// SPDX-License-Identifier: MIT
#include "chain.hpp"
#include "common.hpp"

#include <ps/outputs.hpp> // daydream ps --timeline and --dlc

#include <daydream/compare/compare.hpp>
#include <daydream/ps/model.hpp>
#include <daydream/ps/simulate.hpp>
#include <daydream/ps/sweep.hpp>
#include <daydream/registry/params.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace daydream::python {

namespace {

io::kineto_trace load_raw(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(2, "daydream.compare: no such file: " + path, path).ptr());
    throw py::error_already_set();
  }
  io::kineto_trace t;
  {
    py::gil_scoped_release nogil;
    t = io::load_kineto(path);
  }
  if (t.g.size() == 0) {
    auto problems = t.problems();
    throw error(problems.empty() ? path + ": the trace holds no CPU or GPU activity" : problems.front());
  }
  return t;
}

py::dict matches(const match_counts& m) {
  py::dict d;
  d["matched"] = m.matched;
  d["renamed"] = m.renamed;
  d["only_predicted"] = m.only_predicted;
  d["only_measured"] = m.only_measured;
  return d;
}

py::dict compare_files(const std::string& before_file, const std::string& after_file, const std::string& spec,
                       std::size_t layers) {
  std::vector<passes::erased_pass<graph>> chain;
  if (!spec.empty()) {
    try {
      chain = bundled_registry().make_chain(spec);
    } catch (const usage_error&) {
      throw;
    } catch (const std::exception& e) {
      throw usage_error(e.what());
    }
  }
  auto before = load_raw(before_file);
  auto after = load_raw(after_file);
  compare_options o;
  o.max_layers = layers;
  comparison c;
  {
    py::gil_scoped_release nogil;
    c = spec.empty() ? compare(before, after, o) : compare(before, after, predict(before, chain, spec), o);
  }
  py::dict d;
  d["before"] = c.before;
  d["after"] = c.after;
  d["pass"] = c.spec;
  d["predicted_us"] = double(c.predicted) / 1e3;
  d["measured_us"] = double(c.measured) / 1e3;
  d["before_us"] = double(c.before_measured) / 1e3;
  d["error"] = std::isfinite(c.error) ? py::object(py::float_(c.error)) : py::none();
  d["predicted_spread_us"] = py::make_tuple(double(c.predicted_spread.first) / 1e3, double(c.predicted_spread.second) / 1e3);
  d["measured_spread_us"] = py::make_tuple(double(c.measured_spread.first) / 1e3, double(c.measured_spread.second) / 1e3);
  d["predicted_iterations"] = c.predicted_iterations;
  d["measured_iterations"] = c.measured_iterations;
  std::vector<std::string> key, kind;
  std::vector<double> before_us, predicted_us, measured_us, delta_us;
  for (auto& r : c.rows) {
    key.push_back(r.key);
    kind.push_back(r.kind);
    before_us.push_back(r.before_us);
    predicted_us.push_back(r.predicted_us);
    measured_us.push_back(r.measured_us);
    delta_us.push_back(r.delta_us());
  }
  py::dict rows;
  rows["key"] = key;
  rows["kind"] = kind;
  rows["before_us"] = before_us;
  rows["predicted_us"] = predicted_us;
  rows["measured_us"] = measured_us;
  rows["delta_us"] = delta_us;
  d["rows"] = rows;
  d["explanations"] = c.explanations;
  d["kernels"] = matches(c.kernels);
  d["operators"] = matches(c.operators);
  py::dict counts;
  counts["predicted_kernels"] = c.predicted_kernels;
  counts["measured_kernels"] = c.measured_kernels;
  counts["predicted_launches"] = c.predicted_launches;
  counts["measured_launches"] = c.measured_launches;
  d["counts"] = counts;
  if (c.predicted_memory && c.measured_memory) {
    py::dict mem;
    mem["predicted_bytes"] = *c.predicted_memory;
    mem["measured_bytes"] = *c.measured_memory;
    d["peak_memory"] = mem;
  } else {
    d["peak_memory"] = py::none();
  }
  d["warnings"] = c.warnings;
  return d;
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

/// `daydream ps TRACE --workers ... --json [--timeline FILE] [--dlc DIR]` (cli/ps/ps.cpp, run).
py::dict ps_sweep(const std::string& path, std::vector<std::uint32_t> workers, std::uint32_t servers,
                  const std::string& bandwidth, const std::string& window, bool flow_control, const std::string& order,
                  const std::string& sharing, const std::string& model_bytes, double compute_scale,
                  std::uint32_t steps, std::uint32_t warmup, std::uint64_t seed, bool stagger,
                  const std::string& timeline, const std::string& dlc, std::uint32_t timeline_steps) {
  if (workers.empty()) throw usage_error("daydream.ps: give at least one number of workers");
  for (auto w : workers)
    if (w == 0 || w > 4096) throw usage_error("daydream.ps: a number of workers is from 1 to 4096");
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  ps::config c;
  c.servers = servers;
  if (c.servers == 0) throw usage_error("daydream.ps: servers must be at least 1");
  auto p = pass_params::parse("ps", "bandwidth=" + bandwidth + ",window=" + window +
                                        (model_bytes.empty() ? "" : ",model=" + model_bytes));
  c.bandwidth = p.get_bandwidth("bandwidth", 0);
  if (!(c.bandwidth > 0)) throw usage_error("daydream.ps: bandwidth must be positive, not '" + bandwidth + "'");
  c.window = p.get_bytes("window", 28e6);
  c.flow_control = flow_control;
  if (c.flow_control && !(c.window > 0)) throw usage_error("daydream.ps: window must be positive");
  c.order = ps::parse_stream_order(order);
  c.share = ps::parse_bandwidth_sharing(sharing);
  c.steps = steps;
  c.warmup = warmup;
  c.seed = seed;
  if (c.steps <= c.warmup) throw usage_error("daydream.ps: steps must exceed warmup");
  ps::model_options mo;
  mo.compute_scale = compute_scale;
  mo.model_bytes = p.get_bytes("model", 0);
  if (!(mo.compute_scale > 0)) throw usage_error("daydream.ps: compute_scale must be positive");
  auto t = load_raw(path);
  py::gil_scoped_release nogil;
  auto iterations = t.steady_state_iterations();
  std::vector<std::string> fallback;
  if (iterations.empty()) {
    iterations = {0};
    t.g.for_each_task([&](task_id id) { t.g.set_iteration(id, 0); });
    fallback.push_back("the trace has no iterations: the whole trace is the one step every worker repeats");
  } else if (iterations.size() == 1) {
    fallback.push_back("the trace has one steady-state step: every sampled step is that one");
  }
  ps::model m;
  try {
    m = ps::extract_steps(t.g, iterations, mo);
  } catch (const usage_error&) {
    throw;
  } catch (const error& e) {
    std::string msg = e.what();
    if (msg.find("no gradients") != msg.npos) msg += "; give the model size with model_bytes=";
    throw error(path + ": " + msg);
  }
  m.notes.insert(m.notes.begin(), fallback.begin(), fallback.end());
  if (mo.compute_scale != 1) m.notes.push_back(fmt::format("the worker's computation is scaled by {} (--compute-scale)", mo.compute_scale));
  c.timeline_steps = 0;
  c.server_of = ps::assign_servers(m.tensors, c.servers, std::vector<std::uint32_t>(m.tensors.size(), std::uint32_t(-1)));
  auto free = c;
  free.workers = 1;
  free.bandwidth = 1e30;
  free.steps = std::min<std::uint32_t>(c.steps, 200);
  free.warmup = std::min<std::uint32_t>(c.warmup, free.steps / 4);
  const double free_step_ns = ps::simulate_training(m.steps, m.tensors, free).mean_step_ns;
  auto s = ps::sweep(m, c, workers, {}, stagger ? free_step_ns : 0);
  if (!timeline.empty() || !dlc.empty())
    ps_cmd::write_outputs(timeline, dlc, timeline_steps, m, c, workers.back(), stagger ? free_step_ns : 0);
  py::gil_scoped_acquire gil;
  std::vector<std::uint32_t> w;
  std::vector<double> sps, up, down, mean_us, queueing, cynthia;
  for (auto& pt : s.points) {
    w.push_back(pt.workers);
    sps.push_back(pt.sim.steps_per_s);
    up.push_back(max_of(pt.sim.uplink_util));
    down.push_back(max_of(pt.sim.downlink_util));
    mean_us.push_back(pt.sim.mean_step_ns / 1e3);
    queueing.push_back(pt.queueing);
    cynthia.push_back(pt.cynthia);
  }
  py::dict table;
  table["workers"] = w;
  table["steps_per_s"] = sps;
  table["mean_step_us"] = mean_us;
  table["uplink_util"] = up;
  table["downlink_util"] = down;
  table["queueing_steps_per_s"] = queueing;
  table["cynthia_steps_per_s"] = cynthia;
  py::dict d;
  d["throughput"] = table;
  d["saturation_workers"] = s.saturation ? py::object(py::int_(*s.saturation)) : py::none();
  d["model_bytes"] = m.bytes;
  d["tensors"] = m.tensors.size();
  d["gradient_source"] = std::string(passes::to_string(m.source));
  d["iterations"] = iterations;
  d["compute_us"] = m.compute_ns / 1e3;
  d["update_us"] = m.update_ns / 1e3;
  d["trace_step_us"] = m.trace_step_ns / 1e3;
  d["free_network_step_us"] = free_step_ns / 1e3;
  d["server_bytes"] = s.server_bytes;
  d["notes"] = m.notes;
  return d;
}

} // namespace

void bind_subsystems(py::module_& m) {
  m.def("_ps", &ps_sweep, py::arg("trace"), py::arg("workers"), py::arg("servers") = 1, py::arg("bandwidth") = "10Gbps",
        py::arg("window") = "28MB", py::arg("flow_control") = true, py::arg("order") = "trace",
        py::arg("sharing") = "max_min", py::arg("model_bytes") = "", py::arg("compute_scale") = 1.0,
        py::arg("steps") = 1000, py::arg("warmup") = 50, py::arg("seed") = 1, py::arg("stagger") = false,
        py::arg("timeline") = "", py::arg("dlc") = "", py::arg("timeline_steps") = 5);
  m.def("_compare", &compare_files, py::arg("before"), py::arg("after"), py::arg("passes") = "",
        py::arg("layers") = 30);
}

} // namespace daydream::python
