// dd.load and the Trace object: the ingest (without the GIL), the analysis `daydream whatif`
// makes of a trace before its scenarios, and the trace's summary (iterations, GPU, ingest report).
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <daydream/fidelity.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/semantics/data_parallel.hpp>
#include <daydream/semantics/memory.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace daydream::python {

const passes::registry<graph>& bundled_registry() {
  static const auto reg = passes::bundled();
  return reg;
}

// The same steps, in the same order, as whatif_cmd::prepare (cli/whatif/whatif.cpp): the
// numbers of the module and of `daydream whatif` come from one trace state.
void prepare(py_trace& pt, const std::string& name, std::int32_t iteration, std::int64_t batch,
             const replay_options& ro) {
  auto& trace = pt.trace;
  auto& a = pt.a;
  a.trace = &trace;
  a.trace_name = name;
  if (batch > 0) a.batch = batch;
  a.workers = std::max<std::int32_t>(
      {1, trace.info.world_size, std::int32_t(passes::find_recorded_collectives(trace.g).group)});
  auto problems = trace.problems();
  if (trace.g.size() == 0)
    throw error(problems.empty() ? name + ": the trace holds no CPU or GPU activity" : problems.front());
  for (auto& p : problems) a.warnings.push_back(p);

  if (iteration >= 0) {
    bool found = false;
    for (auto& it : trace.iterations) found = found || it.number == iteration;
    if (!found) {
      std::string have;
      for (auto& it : trace.iterations) have += (have.empty() ? "" : ", ") + std::to_string(it.number);
      throw usage_error(fmt::format("daydream.load: {}: no iteration {} (the trace has: {})", name, iteration,
                                    have.empty() ? "none" : have));
    }
    a.iterations = {iteration};
  } else if (trace.iterations.empty()) {
    a.whole_trace = true;
    a.iterations = {0};
    trace.g.for_each_task([&](task_id t) { trace.g.set_iteration(t, 0); });
  } else {
    a.iterations = trace.steady_state_iterations();
  }
  a.whole_trace = a.whole_trace || trace.info.iterations_from == io::iteration_source::whole_trace;
  if (a.whole_trace)
    a.warnings.push_back(name + ": " + whatif_cmd::iterations_line(a) +
                         "; record several steps with torch.profiler.schedule and prof.step() to analyse one");
  for (auto i : a.iterations) {
    a.measured.push_back(trace.iterations.empty() ? trace.info.end - trace.info.begin : trace.measured(i));
    if (auto n = trace.measurement_note(i); !n.empty()) a.warnings.push_back("measured: " + n);
  }
  if (auto n = passes::neighbours_note(trace.g); !n.empty()) a.warnings.push_back(n);

  if (auto initial = trace.initial_allocated_bytes()) {
    a.memory.from = whatif::memory_model::source::trace;
    a.memory.initial = *initial;
  } else {
    passes::estimate_activation_memory(trace.g);
    if (passes::has_memory_accounting(trace.g)) a.memory.from = whatif::memory_model::source::estimate;
  }

  a.base = whatif::baseline(trace.g, a.iterations, a.memory, ro);
  std::vector<std::string> misses;
  for (auto& st : a.base.steps)
    for (std::size_t k = 0; k < a.iterations.size(); ++k)
      if (a.iterations[k] == st.iteration)
        if (auto n = replay_error_note(trace.g, st.iteration, st.span, a.measured[k]); !n.empty())
          misses.push_back(std::move(n));
  if (!misses.empty())
    a.warnings.push_back("replay: " + misses.front() +
                         (misses.size() > 1
                              ? fmt::format(" ({} more of the analysed iterations differ by over 2%)", misses.size() - 1)
                              : std::string()));
  a.iteration = a.iterations.front();
  for (std::size_t k = 0; k < a.iterations.size(); ++k)
    if (a.base.per_iteration[k] == a.base.predicted) { a.iteration = a.iterations[k]; break; }
  if (a.base.predicted <= 0)
    throw error(name + ": the replay of the trace has no task in the analysed iterations");
}

namespace {

/// Loads one trace file into a prepared py_trace. `path` must exist (checked by the caller).
std::shared_ptr<py_trace> load_one(const std::string& path, std::int32_t iteration, std::int64_t batch,
                                   const std::string& step_annotation, double overlap_slowdown) {
  auto pt = std::make_shared<py_trace>();
  io::ingest_options opt;
  opt.step_annotation = step_annotation;
  pt->ro.overlap_slowdown = overlap_slowdown;
  {
    py::gil_scoped_release nogil;
    pt->trace = io::load_kineto(path, opt);
    prepare(*pt, path, iteration, batch, pt->ro);
  }
  return pt;
}

py::dict ingest_report_of(const py_trace& pt) {
  auto& rep = pt.trace.report;
  py::dict d;
  d["events"] = rep.events;
  d["in_graph"] = rep.in_graph;
  py::dict ignored;
  for (auto& [k, v] : rep.ignored) ignored[py::str(k)] = v;
  d["ignored"] = ignored;
  d["unlinked_gpu_ops"] = rep.unlinked_gpu_ops;
  d["warnings"] = rep.warnings;
  return d;
}

py::list iterations_of(const py_trace& pt) {
  auto& a = pt.a;
  py::list out;
  for (std::size_t k = 0; k < a.iterations.size(); ++k) {
    py::dict d;
    d["iteration"] = a.iterations[k];
    d["name"] = whatif_cmd::iteration_name(a, a.iterations[k]);
    d["measured_us"] = a.measured[k] > 0 ? py::object(py::float_(whatif_cmd::us(a.measured[k]))) : py::none();
    d["baseline_us"] = a.base.per_iteration[k] >= 0 ? py::object(py::float_(whatif_cmd::us(a.base.per_iteration[k])))
                                                     : py::none();
    out.append(d);
  }
  return out;
}

std::string summary_html(const py_trace& pt) {
  using whatif_cmd::html_escape;
  auto& a = pt.a;
  auto& t = pt.trace;
  std::string h = "<table><caption style=\"text-align:left\"><b>daydream trace</b> " + html_escape(a.trace_name) +
                  "</caption>";
  auto row = [&](std::string_view k, const std::string& v) {
    h += "<tr><th style=\"text-align:left\">" + std::string(k) + "</th><td style=\"text-align:left\">" +
         html_escape(v) + "</td></tr>";
  };
  row("GPU", t.info.gpus.empty() ? std::string("(none recorded)") : t.info.gpus.front());
  row("iterations", whatif_cmd::iterations_line(a));
  row("tasks", fmt::format("{} tasks, {} dependencies", t.g.size(), t.g.dependency_count()));
  row("events", fmt::format("{} of {} in the graph, the rest accounted for by reason", t.report.in_graph,
                            t.report.events));
  auto mm = whatif_cmd::median(a.measured);
  if (mm > 0) row("measured", whatif_cmd::ms(mm));
  row("baseline (replay)", whatif_cmd::ms(a.base.predicted));
  row("bound", whatif_cmd::explain_bound(a.base.g, whatif_cmd::breakdown_of(a, a.base)));
  for (auto& w : a.warnings) row("warning", w);
  return h + "</table>";
}

} // namespace

std::shared_ptr<py_trace> load_path(const std::string& path, std::int32_t iteration, std::int64_t batch,
                                     const std::string& step_annotation, double overlap_slowdown) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    PyErr_SetObject(PyExc_FileNotFoundError,
                    py::make_tuple(2, "daydream.load: no such file: " + path, path).ptr());
    throw py::error_already_set();
  }
  if (std::filesystem::is_directory(path, ec))
    throw usage_error("daydream.load: " + path + " is a directory; dd.load_job reads a job's traces");
  return load_one(path, iteration, batch, step_annotation, overlap_slowdown);
}

void bind_trace(py::module_& m) {
  py::class_<py_trace, std::shared_ptr<py_trace>>(m, "Trace")
      .def_property_readonly("path", [](const py_trace& t) { return t.a.trace_name; })
      .def_property_readonly("iterations", &iterations_of)
      .def_property_readonly("iteration", [](const py_trace& t) { return t.a.iteration; })
      .def_property_readonly("iterations_in_trace", [](const py_trace& t) { return t.trace.iterations.size(); })
      .def_property_readonly("gpu", [](const py_trace& t) -> py::object {
        if (t.trace.info.gpus.empty()) return py::none();
        return py::str(t.trace.info.gpus.front());
      })
      .def_property_readonly("gpus", [](const py_trace& t) { return t.trace.info.gpus; })
      .def_property_readonly("rank", [](const py_trace& t) { return t.trace.info.rank; })
      .def_property_readonly("world_size", [](const py_trace& t) { return t.trace.info.world_size; })
      .def_property_readonly("workers", [](const py_trace& t) { return whatif_cmd::trace_workers(t.a); })
      .def_property_readonly("ingest_report", &ingest_report_of)
      .def_property_readonly("warnings", [](const py_trace& t) {
        // What `daydream whatif` warns about the trace itself (a what-if run adds its scenarios').
        auto w = t.a.warnings;
        for (auto& s : whatif_cmd::spread_warnings(t.a)) w.push_back(s);
        return w;
      })
      .def_property_readonly("measured_us", [](const py_trace& t) -> py::object {
        auto mm = whatif_cmd::median(t.a.measured);
        return mm > 0 ? py::object(py::float_(whatif_cmd::us(mm))) : py::none();
      })
      .def_property_readonly("baseline_us", [](const py_trace& t) { return whatif_cmd::us(t.a.base.predicted); })
      .def_property_readonly("bound", [](const py_trace& t) {
        return whatif_cmd::explain_bound(t.a.base.g, whatif_cmd::breakdown_of(t.a, t.a.base));
      })
      .def_property_readonly("memory_model", [](const py_trace& t) { return whatif_cmd::memory_label(t.a); })
      .def_property_readonly("baseline_peak_memory_bytes", [](const py_trace& t) -> py::object {
        if (t.a.base.peak_memory) return py::int_(*t.a.base.peak_memory);
        return py::none();
      })
      .def_property_readonly("task_count", [](const py_trace& t) { return t.trace.g.size(); })
      .def_property_readonly("dependency_count", [](const py_trace& t) { return t.trace.g.dependency_count(); })
      .def("_repr_html_", &summary_html)
      .def("__repr__", [](const py_trace& t) {
        return fmt::format("<daydream.Trace {}: {} tasks, baseline {}>", t.a.trace_name, t.trace.g.size(),
                           whatif_cmd::ms(t.a.base.predicted));
      });

  m.def("_load", &load_path, py::arg("path"), py::arg("iteration") = -1, py::arg("batch") = 0,
        py::arg("step_annotation") = "", py::arg("overlap_slowdown") = 1.0);
}

} // namespace daydream::python
