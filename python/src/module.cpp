// The extension module `daydream._daydream`: the library's errors as Python exceptions, the
// small conversions every topic uses, and each topic's bindings (one translation unit each).
// SPDX-License-Identifier: MIT
#include "chain.hpp"
#include "common.hpp"

namespace daydream::python {

std::vector<task_id> task_ids(const py::handle& ids) {
  std::vector<task_id> out;
  if (py::isinstance<py::int_>(ids)) {
    auto v = ids.cast<std::int64_t>();
    if (v < 0) throw usage_error("daydream: task id " + std::to_string(v) + " is negative");
    out.push_back(task_id(v));
    return out;
  }
  auto arr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(ids);
  if (!arr || arr.ndim() != 1) throw usage_error("daydream: task ids are an int or a sequence of ints");
  out.reserve(std::size_t(arr.size()));
  for (py::ssize_t i = 0; i < arr.size(); ++i) {
    auto v = arr.data()[i];
    if (v < 0) throw usage_error("daydream: task id " + std::to_string(v) + " is negative");
    out.push_back(task_id(v));
  }
  return out;
}

phase phase_from(const std::string& s) {
  for (int p = 0; p < 4; ++p)
    if (to_string(phase(p)) == s) return phase(p);
  throw usage_error("daydream: unknown phase '" + s + "' (forward, backward, weight_update, other)");
}

} // namespace daydream::python

PYBIND11_MODULE(_daydream, m) {
  namespace py = pybind11;
  using namespace daydream::python;
  m.doc() = "daydream's C++ core; import daydream for the Python API";
  // Bad input and usage errors are ValueError with the library's message; a Python pass's
  // own exception comes back as it was raised.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const python_pass_error& e) {
      e.py_error->restore();
    } catch (const daydream::error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  bind_trace(m);
  bind_tables(m);
  bind_replay(m);
  bind_whatif(m);
  bind_graph_view(m);
  bind_subsystems(m);
  bind_optimize(m);
  bind_strategy(m);
  bind_job(m);
  bind_sensitivity(m);
  bind_dlc(m);
}
