// Trace.sensitivity(): the causal profile of `daydream sensitivity` (one replay per layer,
// kernel family or kernel made faster), as columns.
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <daydream/sensitivity/sensitivity.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace daydream::python {
namespace {

py::dict sensitivity_records(const py_trace& pt, double factor, const std::string& by, const py::object& top) {
  namespace ds = daydream::sensitivity;
  if (!(factor > 0) || !std::isfinite(factor))
    throw usage_error("daydream: sensitivity: factor must be a positive number");
  ds::options o;
  o.factor = factor;
  o.by = ds::parse_grouping(by);
  // As the program: every group, or the 30 longest kernels when a row is one kernel.
  o.top = top.is_none() ? (o.by == ds::grouping::kernel ? 30 : 0) : top.cast<std::size_t>();
  o.replay = pt.ro;
  const std::vector<std::int32_t> its = pt.a.whole_trace ? std::vector<std::int32_t>{} : pt.a.iterations;
  ds::profile p;
  {
    py::gil_scoped_release nogil;
    graph g = pt.trace.g; // the profile edits durations while it runs; the trace stays shared
    p = ds::profile_of(g, its, o);
  }
  std::vector<std::string> key;
  std::vector<std::uint64_t> tasks;
  std::vector<double> gpu, share, predicted, saved;
  for (auto& r : p.rows) {
    key.push_back(r.key);
    tasks.push_back(r.tasks);
    gpu.push_back(double(r.gpu_time) / 1e3);
    share.push_back(r.gpu_share);
    predicted.push_back(double(r.predicted) / 1e3);
    saved.push_back(double(r.saved) / 1e3);
  }
  py::dict rows;
  rows["key"] = key;
  rows["tasks"] = to_array(tasks);
  rows["gpu_us"] = to_array(gpu);
  rows["gpu_share"] = to_array(share);
  rows["predicted_us"] = to_array(predicted);
  rows["saved_us"] = to_array(saved);
  py::dict out;
  out["rows"] = rows;
  out["baseline_us"] = double(p.baseline) / 1e3;
  out["factor"] = p.factor;
  out["by"] = std::string(ds::to_string(p.by));
  out["iterations"] = p.iterations;
  out["gpu_us"] = double(p.gpu_time) / 1e3;
  out["groups"] = p.groups;
  return out;
}

} // namespace

void bind_sensitivity(py::module_& m) {
  m.def("_sensitivity", &sensitivity_records, py::arg("trace"), py::arg("factor"), py::arg("by"),
        py::arg("top") = py::none());
}

} // namespace daydream::python
