// t.whatif(...), t.sweep(...), t.timeline(...), t.report(...): what-if scenarios as the
// library predicts them (daydream::whatif), one record per scenario with the fields of
// `daydream whatif --json`; grids of specs (registry/sweep.hpp); the Chrome-trace timeline
// and the what-if program's HTML report.
// SPDX-License-Identifier: MIT
#include "chain.hpp"
#include "common.hpp"

#include <dlc/scenario_dlc.hpp> // the DLC files of parameter-server scenarios (daydream whatif --dlc)

#include <daydream/io/chrome_trace.hpp>
#include <daydream/registry/sweep.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace daydream::python {

namespace {

using whatif_cmd::us;

py::object opt_float(bool ok, double v) { return ok ? py::object(py::float_(v)) : py::object(py::none()); }
template <class T> py::object opt(const std::optional<T>& v) { return v ? py::cast(*v) : py::object(py::none()); }

py::list reports_of(const whatif::scenario& s) {
  py::list out;
  for (auto& rep : s.reports) {
    py::dict d;
    d["pass"] = rep.pass;
    d["applied"] = rep.applied;
    d["reason"] = rep.applied ? py::object(py::none()) : py::object(py::str(rep.reason));
    d["workers"] = rep.workers;
    d["items"] = items_of(rep);
    d["notes"] = rep.notes;
    out.append(d);
  }
  return out;
}

/// One scenario as `daydream whatif --json` writes it (output.hpp, to_json).
py::dict scenario_record(const whatif_cmd::analysis& a, const whatif::scenario& s) {
  const bool ok = s.error.empty();
  py::dict d;
  d["name"] = s.name;
  d["passes"] = s.passes;
  d["applied"] = ok && s.applied();
  d["reason"] = !ok ? py::object(py::str(s.error)) : !s.applied() ? py::object(py::str(s.reason())) : py::none();
  d["predicted_us"] = opt_float(ok, us(s.predicted));
  d["speedup"] = opt_float(ok, ok ? whatif_cmd::speedup(a, s) : 0.0);
  d["iteration_speedup"] = opt_float(ok, ok ? double(a.base.predicted) / double(s.predicted) : 0.0);
  std::vector<py::object> per;
  for (auto t : s.per_iteration) per.push_back(opt_float(ok && t >= 0, us(t)));
  d["per_iteration_us"] = per;
  auto t = whatif_cmd::throughput_of(a, s);
  d["workers"] = t.workers;
  d["steps_per_s"] = opt_float(ok, t.steps_per_s);
  d["samples_per_s"] = ok ? opt(t.samples_per_s) : py::none();
  d["vs_one_gpu"] = ok ? opt(t.vs_one_gpu) : py::none();
  d["scaling_efficiency"] = ok ? opt(t.scaling_efficiency) : py::none();
  d["bound"] = ok ? py::object(py::str(whatif_cmd::explain_bound(s.g, whatif_cmd::breakdown_of(a, s)))) : py::none();
  auto bl = ok ? whatif::backlog_note(s) : std::string();
  d["backlog"] = bl.empty() ? py::object(py::none()) : py::object(py::str(bl));
  d["peak_memory_bytes"] = ok && s.peak_memory ? py::object(py::int_(*s.peak_memory)) : py::none();
  d["error"] = ok ? py::object(py::none()) : py::object(py::str(s.error));
  d["reports"] = reports_of(s);
  return d;
}

/// The scenarios of `scenarios` (None: every applicable bundled pass at its default
/// scenario, as `daydream whatif` without --pass) predicted on `pt`, in a copy of its analysis.
whatif_cmd::analysis run_scenarios(const py_trace& pt, const py::object& scenarios) {
  whatif_cmd::analysis a = pt.a;
  std::vector<std::pair<std::string, std::vector<passes::erased_pass<graph>>>> chains;
  const auto& reg = bundled_registry();
  if (scenarios.is_none()) {
    for (auto& e : reg.entries()) {
      if (!e.default_scenario) continue;
      if (!e.applicable(pt.trace.g)) {
        a.not_applicable.push_back({std::string(e.name), not_applicable_reason(e, pt.trace.g)});
        continue;
      }
      auto spec = e.scenario_params.empty() ? std::string(e.name)
                                            : std::string(e.name) + ":" + std::string(e.scenario_params);
      chains.emplace_back(spec, reg.make_chain(spec));
    }
  } else {
    auto one = [&](const py::handle& sc) {
      std::string name;
      auto chain = make_chain(sc, name);
      chains.emplace_back(name, std::move(chain));
    };
    if (py::isinstance<py::list>(scenarios) || py::isinstance<py::tuple>(scenarios))
      for (auto sc : scenarios) one(sc);
    else
      one(scenarios);
  }
  {
    py::gil_scoped_release nogil;
    for (auto& [name, chain] : chains)
      a.scenarios.push_back(whatif::run_scenario(pt.trace.g, chain, name, a.iterations, a.memory, pt.ro));
    for (auto& w : whatif_cmd::spread_warnings(a)) a.warnings.push_back(w);
  }
  return a;
}

/// `daydream whatif --dlc DIR`: the DLC files of each predicted scenario with
/// parameter-server push and pull, in DIR/<scenario>/; {scenario: [files]}.
py::dict write_dlc(const whatif_cmd::analysis& a, const std::string& dir) {
  std::vector<std::pair<std::string, std::vector<std::string>>> written;
  {
    py::gil_scoped_release nogil;
    for (auto& s : a.scenarios)
      if (s.error.empty())
        if (auto w = dlc_cmd::write_scenario_dlc(std::filesystem::path(dir) / dlc_cmd::scenario_dir_name(s.name), s.name,
                                                 s.g, s.r);
            w.messages) {
          std::vector<std::string> files;
          for (auto& f : w.files) files.push_back(f.string());
          written.emplace_back(s.name, std::move(files));
        }
  }
  py::dict d;
  for (auto& [name, files] : written) d[py::str(name)] = files;
  return d;
}

py::dict whatif_records(const py_trace& pt, const py::object& scenarios, const std::string& dlc) {
  auto a = run_scenarios(pt, scenarios);
  py::list rows;
  for (auto& s : a.scenarios) rows.append(scenario_record(a, s));
  py::dict na;
  for (auto& n : a.not_applicable) na[py::str(n.name)] = n.reason;
  py::dict d;
  d["scenarios"] = rows;
  d["not_applicable"] = na;
  d["warnings"] = a.warnings;
  d["baseline_us"] = us(a.base.predicted);
  if (!dlc.empty()) d["dlc"] = write_dlc(a, dlc);
  return d;
}

std::string sweep_note(const passes::sweep_point& p, const whatif::scenario& s) {
  return whatif_cmd::sweep_point_note(s.error, s.applied(), s.error.empty() && !s.applied() ? s.reason() : std::string(),
                                      p.unused);
}

/// The axes of `vary` ({"workers": [8, 64]}), read as `--vary workers=8,64` is.
std::vector<passes::sweep_axis> axes_of(const py::dict& vary) {
  std::vector<passes::sweep_axis> axes;
  for (auto [k, v] : vary) {
    std::string text = py::str(k).cast<std::string>() + "=";
    auto obj = py::reinterpret_borrow<py::object>(v);
    py::list values = py::isinstance<py::str>(obj) || !py::hasattr(obj, "__iter__") ? py::list(py::make_tuple(obj))
                                                                                   : py::list(obj);
    if (values.size() == 0) throw usage_error("daydream: sweep: " + py::str(k).cast<std::string>() + " has no value");
    bool first = true;
    for (auto x : values) {
      text += (first ? "" : ",") + py::str(x).cast<std::string>();
      first = false;
    }
    axes.push_back(passes::sweep_axis::parse(text));
  }
  return axes;
}

py::dict sweep_records(const py_trace& pt, const py::object& chains_o, const py::dict& vary) {
  const auto& reg = bundled_registry();
  auto axes = axes_of(vary);
  std::vector<std::string> chains;
  if (!chains_o.is_none()) {
    chains = py::isinstance<py::str>(chains_o) ? std::vector<std::string>{chains_o.cast<std::string>()}
                                                : chains_o.cast<std::vector<std::string>>();
  } else {
    std::vector<std::string> left_out;
    for (auto& e : reg.entries()) {
      auto spec = e.scenario_params.empty() ? std::string(e.name) : std::string(e.name) + ":" + std::string(e.scenario_params);
      auto keys = reg.parameters(spec);
      bool takes = false;
      for (auto& ax : axes) takes = takes || std::find(keys.begin(), keys.end(), ax.key) != keys.end();
      if (!takes) continue;
      if (e.applicable(pt.trace.g)) chains.push_back(spec);
      else left_out.push_back(fmt::format("{} ({})", e.name, not_applicable_reason(e, pt.trace.g)));
    }
    if (chains.empty()) {
      std::string keys, why;
      for (auto& ax : axes) keys += (keys.empty() ? "" : ", ") + ax.key;
      for (auto& l : left_out) why += (why.empty() ? "" : "; ") + l;
      throw usage_error("daydream: sweep: no bundled pass that applies to " + pt.a.trace_name + " takes " + keys +
                        (why.empty() ? std::string() : "; those that take it do not apply: " + why) +
                        "; name the chains with passes=");
    }
  }
  auto grid = passes::expand_sweep(reg, chains, axes);
  std::vector<std::vector<passes::erased_pass<graph>>> built(grid.points.size());
  for (std::size_t k = 0; k < grid.points.size(); ++k) {
    if (grid.points[k].same_as != k) continue;
    try {
      built[k] = reg.make_chain(grid.points[k].spec);
    } catch (const usage_error&) {
      throw;
    } catch (const std::exception& e) {
      throw usage_error(e.what());
    }
  }
  std::vector<whatif::scenario> results(grid.points.size());
  {
    py::gil_scoped_release nogil;
    for (std::size_t k = 0; k < grid.points.size(); ++k)
      if (grid.points[k].same_as == k)
        results[k] = whatif::run_scenario(pt.trace.g, built[k], grid.points[k].spec, pt.a.iterations, pt.a.memory, pt.ro);
  }
  py::list rows;
  for (std::size_t k = 0; k < grid.points.size(); ++k) {
    auto& p = grid.points[k];
    auto& s = results[p.same_as];
    const bool ok = s.error.empty() && s.predicted > 0;
    py::dict d;
    d["scenario"] = grid.chains[p.chain];
    for (std::size_t x = 0; x < grid.axes.size(); ++x) d[py::str("params." + grid.axes[x].key)] = grid.value(p, x);
    d["spec"] = p.spec;
    d["predicted_us"] = opt_float(ok, us(s.predicted));
    auto t = whatif_cmd::throughput_of(pt.a, ok ? s.predicted : -1, ok ? s.workers() : 0);
    d["iteration_speedup"] = opt_float(ok, ok ? double(pt.a.base.predicted) / double(s.predicted) : 0.0);
    d["speedup"] = opt_float(ok, t.vs_baseline);
    d["workers"] = t.workers;
    d["steps_per_s"] = opt_float(ok, t.steps_per_s);
    d["samples_per_s"] = ok ? opt(t.samples_per_s) : py::none();
    d["peak_memory_bytes"] = ok && s.peak_memory ? py::object(py::int_(*s.peak_memory)) : py::none();
    d["applied"] = ok && s.applied();
    d["bound"] = ok ? py::object(py::str(whatif::explain_bound(s.g, breakdown(s.g, s.r, pt.a.iteration)))) : py::none();
    auto note = sweep_note(p, s);
    d["note"] = note.empty() ? py::object(py::none()) : py::object(py::str(note));
    d["error"] = s.error.empty() ? py::object(py::none()) : py::object(py::str(s.error));
    rows.append(d);
  }
  py::dict out;
  out["rows"] = rows;
  std::vector<std::string> keys;
  for (auto& ax : grid.axes) keys.push_back("params." + ax.key);
  out["axes"] = keys;
  out["points"] = grid.points.size();
  out["evaluated"] = grid.distinct();
  return out;
}

void write_timeline(const py_trace& pt, const std::string& path, const py::object& scenarios) {
  auto a = scenarios.is_none() ? whatif_cmd::analysis(pt.a) : run_scenarios(pt, scenarios);
  py::gil_scoped_release nogil;
  whatif_cmd::write_timeline(path, a);
}

void write_report(const py_trace& pt, const std::string& path, const py::object& scenarios) {
  auto a = run_scenarios(pt, scenarios);
  py::gil_scoped_release nogil;
  std::ofstream f(path, std::ios::binary);
  f << whatif_cmd::html_report(a);
  if (!f) throw error("daydream: cannot write the report to '" + path + "'");
}

} // namespace

void bind_whatif(py::module_& m) {
  m.def("_whatif", &whatif_records, py::arg("trace"), py::arg("scenarios") = py::none(), py::arg("dlc") = "");
  m.def("_sweep", &sweep_records, py::arg("trace"), py::arg("passes"), py::arg("vary"));
  m.def("_timeline", &write_timeline, py::arg("trace"), py::arg("path"), py::arg("scenarios") = py::none());
  m.def("_report", &write_report, py::arg("trace"), py::arg("path"), py::arg("scenarios") = py::none());
  m.def("_passes", [] {
    py::list out;
    for (auto& e : bundled_registry().entries()) {
      py::dict d;
      d["name"] = std::string(e.name);
      d["help"] = std::string(e.help);
      d["scenario_params"] = std::string(e.scenario_params);
      d["default_scenario"] = e.default_scenario;
      out.append(d);
    }
    return out;
  });
}

} // namespace daydream::python
