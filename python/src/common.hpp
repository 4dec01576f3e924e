// The Python module's shared pieces: a loaded trace with its analysis (what `daydream
// whatif` computes before its first scenario), the errors Python sees, and the helpers the
// binding's translation units share.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PYTHON_COMMON_HPP
#define DAYDREAM_PYTHON_COMMON_HPP

#include <whatif/output.hpp> // whatif_cmd::analysis: the what-if program's state, header-only
#include <whatif/report.hpp> // its HTML report (and html_escape)

#include <daydream/daydream.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/registry/registry.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace daydream::python {

namespace py = pybind11;

/// A loaded trace: the graph, the ingest report and the analysis the what-if program makes
/// of it (analysed iterations, measured times, memory model, the baseline replay). Held by
/// shared_ptr: results that refer to its graph keep it alive. `a.trace` points at `trace`,
/// so a py_trace never moves.
struct py_trace {
  io::kineto_trace trace;
  whatif_cmd::analysis a;
  replay_options ro; ///< how every replay of this trace runs (overlap slowdown)
  py_trace() = default;
  py_trace(const py_trace&) = delete;
  py_trace& operator=(const py_trace&) = delete;
};

/// One replay of a graph (the baseline, or a scenario), with the trace it came from.
struct py_replay {
  std::shared_ptr<const py_trace> t;
  std::shared_ptr<const whatif::scenario> s; ///< a.base of `t`, or a scenario of its own
};

/// Fills `pt.a` from `pt.trace` as `daydream whatif` does before it predicts anything:
/// iterations (`iteration` >= 0: that one; else the steady-state ones), measured times,
/// warnings, the memory model and the baseline replay (trace.cpp). Runs without the GIL.
void prepare(py_trace& pt, const std::string& name, std::int32_t iteration, std::int64_t batch,
             const replay_options& ro);

/// Why a default what-if run leaves out the pass of `e` on `g`, in the words of `daydream
/// whatif` (cli/whatif/internal.hpp).
template <class Entry> std::string not_applicable_reason(const Entry& e, const graph& g) {
  auto why = e.not_applicable_reason ? e.not_applicable_reason(g) : std::string();
  if (!why.empty()) return why;
  return "the trace lacks what it needs (run it with --pass " + std::string(e.name) + " for details)";
}

/// The bundled passes' registry (built once).
const passes::registry<graph>& bundled_registry();

/// A numpy array of `n` values of T, filled by the caller (one allocation, no per-row object).
template <class T> py::array_t<T> new_array(std::size_t n) { return py::array_t<T>(py::ssize_t(n)); }

/// A numpy array holding a copy of `v` (one memcpy).
template <class T, class A> py::array_t<T> to_array(const std::vector<T, A>& v) {
  auto out = new_array<T>(v.size());
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(T));
  return out;
}

/// A pass report's items as the programs' JSON has them: {key: text}, in order.
inline py::dict items_of(const pass_report& rep) {
  py::dict d;
  for (auto& [k, v] : rep.items) d[py::str(k)] = v;
  return d;
}

/// Task ids given from Python: one int, or a sequence / numpy array of ints.
std::vector<task_id> task_ids(const py::handle& ids);

/// The phase named `s` ("forward", "backward", "weight_update", "other"); ValueError otherwise.
phase phase_from(const std::string& s);

// Registration of each topic (one translation unit each).
void bind_trace(py::module_& m);
void bind_tables(py::module_& m);
void bind_replay(py::module_& m);
void bind_whatif(py::module_& m);
void bind_graph_view(py::module_& m);
void bind_subsystems(py::module_& m);
void bind_optimize(py::module_& m);
void bind_strategy(py::module_& m);
void bind_job(py::module_& m);
void bind_sensitivity(py::module_& m);
void bind_dlc(py::module_& m);

} // namespace daydream::python

#endif
