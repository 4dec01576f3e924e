// dd.dlc_analyze, dd.dlc_replay, dd.dlc_export: SketchDLC communication traces of
// parameter-server jobs, as `daydream dlc analyze|replay|export --json` computes them
// (cli/dlc/commands.hpp): each returns the program's JSON text, which the package parses.
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <dlc/commands.hpp> // the program's dlc subcommands, header-only

#include <filesystem>

namespace daydream::python {

namespace {

void must_exist(const std::string& what, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(2, what + ": no such file: " + path, path).ptr());
    throw py::error_already_set();
  }
}

std::string analyze(const std::vector<std::string>& files, const std::string& report) {
  if (files.empty()) throw usage_error("daydream.dlc_analyze: give the job's DLC files");
  for (auto& f : files) must_exist("daydream.dlc_analyze", f);
  py::gil_scoped_release nogil;
  auto job = io::load_dlc_job(dlc_cmd::paths_of(files));
  auto a = io::analyze_dlc(job);
  if (!report.empty())
    dlc_cmd::write_text(report, dlc_cmd::html_report(job, a, files.size() == 1 ? files[0] : "DLC job"));
  return dlc_cmd::analysis_json(job, a);
}

std::string replay_files(const std::vector<std::string>& files, const py::dict& kw) {
  if (files.empty()) throw usage_error("daydream.dlc_replay: give the job's DLC files");
  for (auto& f : files) must_exist("daydream.dlc_replay", f);
  dlc_cmd::options o;
  o.files = files;
  auto get = [&](const char* k, auto& v) {
    if (kw.contains(k) && !kw[k].is_none()) v = kw[k].cast<std::remove_reference_t<decltype(v)>>();
  };
  get("bandwidth_scale", o.bandwidth_scale);
  get("bandwidth", o.bandwidth);
  get("ps_bandwidth", o.ps_bandwidth);
  get("recorded_bandwidth", o.recorded_bandwidth);
  get("workers", o.workers);
  get("servers", o.servers);
  get("out", o.out);
  get("report", o.report);
  if (!(o.bandwidth_scale > 0)) throw usage_error("daydream.dlc_replay: bandwidth_scale must be positive");
  py::gil_scoped_release nogil;
  return dlc_cmd::replay_json(dlc_cmd::replay_job(o));
}

std::string export_trace(const std::string& trace, const std::string& spec, const std::string& out) {
  must_exist("daydream.dlc_export", trace);
  if (out.empty()) throw usage_error("daydream.dlc_export: give the directory for the files (out=)");
  dlc_cmd::options o;
  o.trace = trace;
  o.pass = spec;
  o.out = out;
  py::gil_scoped_release nogil;
  return dlc_cmd::export_json(o, dlc_cmd::export_scenario(o));
}

} // namespace

void bind_dlc(py::module_& m) {
  m.def("_dlc_analyze", &analyze, py::arg("files"), py::arg("report") = "");
  m.def("_dlc_replay", &replay_files, py::arg("files"), py::arg("options"));
  m.def("_dlc_export", &export_trace, py::arg("trace"), py::arg("passes"), py::arg("out"));
}

} // namespace daydream::python
