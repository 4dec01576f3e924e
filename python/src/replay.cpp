// t.replay(): a replay of the trace's graph (the baseline, or after a chain of passes, Python
// ones included) with its iteration times, critical path by layer and phase, and busy time
// per resource.
// SPDX-License-Identifier: MIT
#include "chain.hpp"
#include "common.hpp"
#include "tables.hpp"

#include <daydream/whatif/bound.hpp>

#include <fmt/format.h>

namespace daydream::python {

namespace {

std::int32_t iteration_or(const py_replay& r, const py::object& it) {
  return it.is_none() ? r.t->a.iteration : it.cast<std::int32_t>();
}

iteration_breakdown breakdown_at(const py_replay& r, std::int32_t it) {
  py::gil_scoped_release nogil;
  return breakdown(r.s->g, r.s->r, it);
}

double iteration_time_us(const py_replay& r, std::int32_t it) {
  auto t = iteration_time(r.s->g, r.s->r, it);
  if (t < 0) throw usage_error(fmt::format("daydream: Replay.iteration_time: no task of iteration {} in the replay", it));
  return whatif_cmd::us(t);
}

/// The critical path by kind of layer and phase, then the path's CPU gaps and idle time:
/// the shares add up to 100.
py::dict critical_columns(const py_replay& r, const py::object& iteration) {
  auto b = breakdown_at(r, iteration_or(r, iteration));
  std::vector<std::string> layer, ph;
  std::vector<std::int64_t> instances;
  std::vector<double> time_us, share;
  auto add = [&](std::string l, std::string p, std::int64_t n, time_ns t) {
    layer.push_back(std::move(l));
    ph.push_back(std::move(p));
    instances.push_back(n);
    time_us.push_back(whatif_cmd::us(t));
    share.push_back(whatif_cmd::share(t, b.duration));
  };
  for (auto& gr : whatif::critical_groups(b))
    add(gr.layer, std::string(to_string(gr.ph)), std::int64_t(gr.instances), gr.time);
  if (b.critical_cpu_gaps) add("(CPU between traced operators)", "", 0, b.critical_cpu_gaps);
  if (b.critical[4]) add("(idle between tasks)", "", 0, b.critical[4]);
  py::dict d;
  d["layer"] = layer;
  d["phase"] = ph;
  d["instances"] = instances;
  d["time_us"] = time_us;
  d["share"] = share;
  return d;
}

py::dict busy_columns(const py_replay& r, const py::object& iteration) {
  auto b = breakdown_at(r, iteration_or(r, iteration));
  std::vector<std::string> res, kind;
  std::vector<double> busy_us, share;
  for (auto& [id, t] : b.busy) {
    res.push_back(r.s->g.resource_at(id).name);
    kind.emplace_back(to_string(r.s->g.resource_at(id).kind));
    busy_us.push_back(whatif_cmd::us(t));
    share.push_back(whatif_cmd::share(t, b.duration));
  }
  py::dict d;
  d["resource"] = res;
  d["kind"] = kind;
  d["busy_us"] = busy_us;
  d["share"] = share;
  return d;
}

py::dict replay_task_columns(const py_replay& r) {
  auto d = task_columns(r.s->g);
  auto ids = d["id"].cast<py::array_t<std::uint32_t>>();
  auto start = new_array<std::int64_t>(std::size_t(ids.size())), end = new_array<std::int64_t>(std::size_t(ids.size()));
  for (py::ssize_t i = 0; i < ids.size(); ++i) {
    auto t = ids.data()[i];
    start.mutable_data()[i] = r.s->r.start[t];
    end.mutable_data()[i] = r.s->r.end[t];
  }
  d["replay_start"] = start;
  d["replay_end"] = end;
  return d;
}

std::string replay_html(const py_replay& r) {
  using whatif_cmd::html_escape;
  auto& s = *r.s;
  std::string h = "<table><caption style=\"text-align:left\"><b>daydream replay</b> " + html_escape(s.name) +
                  " of " + html_escape(r.t->a.trace_name) + "</caption>";
  auto row = [&](std::string_view k, const std::string& v) {
    h += "<tr><th style=\"text-align:left\">" + std::string(k) + "</th><td style=\"text-align:left\">" +
         html_escape(v) + "</td></tr>";
  };
  row("iteration (median)", whatif_cmd::ms(s.predicted));
  row("vs baseline", fmt::format("{:.2f}x", s.predicted > 0 ? double(r.t->a.base.predicted) / double(s.predicted) : 0.0));
  row("bound", whatif::explain_bound(s.g, breakdown(s.g, s.r, r.t->a.iteration)));
  if (s.peak_memory) row("peak memory", whatif_cmd::bytes_str(*s.peak_memory));
  return h + "</table>";
}

} // namespace

void bind_replay(py::module_& m) {
  py::class_<py_replay>(m, "Replay")
      .def_property_readonly("name", [](const py_replay& r) { return r.s->name; })
      .def_property_readonly("predicted_us", [](const py_replay& r) { return whatif_cmd::us(r.s->predicted); })
      .def_property_readonly("per_iteration_us", [](const py_replay& r) {
        std::vector<double> out;
        for (auto t : r.s->per_iteration) out.push_back(t >= 0 ? whatif_cmd::us(t) : -1.0);
        return out;
      })
      .def_property_readonly("iterations", [](const py_replay& r) { return r.t->a.iterations; })
      .def_property_readonly("makespan_us", [](const py_replay& r) { return whatif_cmd::us(r.s->r.makespan); })
      .def_property_readonly("peak_memory_bytes", [](const py_replay& r) -> py::object {
        if (r.s->peak_memory) return py::int_(*r.s->peak_memory);
        return py::none();
      })
      .def_property_readonly("bound", [](const py_replay& r) {
        return whatif::explain_bound(r.s->g, breakdown_at(r, r.t->a.iteration));
      })
      .def_property_readonly("reports", [](const py_replay& r) {
        py::list out;
        for (auto& rep : r.s->reports) {
          py::dict d;
          d["pass"] = rep.pass;
          d["applied"] = rep.applied;
          d["reason"] = rep.applied ? py::object(py::none()) : py::object(py::str(rep.reason));
          d["items"] = items_of(rep);
          d["notes"] = rep.notes;
          out.append(d);
        }
        return out;
      })
      .def("iteration_time", &iteration_time_us, py::arg("iteration"))
      .def("_critical_columns", &critical_columns, py::arg("iteration") = py::none())
      .def("_busy_columns", &busy_columns, py::arg("iteration") = py::none())
      .def("_task_columns", &replay_task_columns)
      .def("_start_end", [](const py_replay& r) { return py::make_tuple(to_array(r.s->r.start), to_array(r.s->r.end)); })
      .def("_repr_html_", &replay_html)
      .def("__repr__", [](const py_replay& r) {
        return fmt::format("<daydream.Replay {}: {}>", r.s->name, whatif_cmd::ms(r.s->predicted));
      });

  m.def("_replay", [](std::shared_ptr<py_trace> t, const py::object& passes, const py::object& slowdown) {
    py_replay out;
    out.t = t;
    replay_options ro = t->ro;
    if (!slowdown.is_none()) ro.overlap_slowdown = slowdown.cast<double>();
    if (passes.is_none() && ro.overlap_slowdown == t->ro.overlap_slowdown) {
      out.s = std::shared_ptr<const whatif::scenario>(t, &t->a.base);
      return out;
    }
    if (passes.is_none()) {
      auto s = std::make_shared<whatif::scenario>();
      {
        py::gil_scoped_release nogil;
        *s = whatif::baseline(t->trace.g, t->a.iterations, t->a.memory, ro);
      }
      out.s = s;
      return out;
    }
    std::string name;
    auto chain = make_chain(passes, name);
    out.s = run_chain_scenario(*t, chain, name, true, ro);
    return out;
  }, py::arg("trace"), py::arg("passes") = py::none(), py::arg("overlap_slowdown") = py::none());
}

} // namespace daydream::python
