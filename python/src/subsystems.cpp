// dd.compare: a prediction next to a measured run (daydream::compare), as `daydream compare`
// computes it: both traces read as recorded, the chain applied to BEFORE.
// SPDX-License-Identifier: MIT
#include "chain.hpp"
#include "common.hpp"

#include <daydream/compare/compare.hpp>

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

} // namespace

void bind_subsystems(py::module_& m) {
  m.def("_compare", &compare_files, py::arg("before"), py::arg("after"), py::arg("passes") = "",
        py::arg("layers") = 30);
}

} // namespace daydream::python
