// dd.load of several traces or a directory: a distributed job (daydream::io::load_job), its
// collectives matched and clocks aligned, replayed as one graph; the per-rank table and job
// scenarios, as `daydream whatif RANK0 RANK1 ... --json` computes them (cli/whatif/job.cpp).
// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <whatif/job_output.hpp> // the program's job report, timeline and representative worker

#include <daydream/io/job.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/whatif/job.hpp>
#if DAYDREAM_HAVE_ALIGN
#  include <daydream/align/lp.hpp>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace daydream::python {

namespace {

/// A job analysed as traced (the baseline every job scenario is compared with).
struct py_job : whatif::job_baseline {
  alignment_result unaligned;
  std::vector<std::string> warnings;
  replay_options ro;
};

struct job_args {
  std::vector<std::string> paths;
  std::vector<std::int32_t> ranks;
  std::string align, comm = "coarse", transfer = "trace", cluster;
  std::int32_t iteration = -1;
};

std::shared_ptr<py_job> load_job_paths(const job_args& o) {
#if DAYDREAM_HAVE_ALIGN
  const bool have_lp = true;
#else
  const bool have_lp = false;
#endif
  const std::string align = o.align.empty() ? (have_lp ? "lp" : "none") : o.align;
  if (align != "lp" && align != "none") throw usage_error("daydream.load: align must be lp or none, not '" + o.align + "'");
  if (align == "lp" && !have_lp) throw usage_error("daydream.load: align='lp' needs GLPK, which this module was built without");
  if (o.comm != "coarse" && o.comm != "fine") throw usage_error("daydream.load: comm must be coarse or fine, not '" + o.comm + "'");
  if (o.transfer != "trace" && o.transfer != "cluster")
    throw usage_error("daydream.load: transfer must be trace or cluster, not '" + o.transfer + "'");
  std::vector<std::filesystem::path> paths;
  for (auto& p : o.paths) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
      PyErr_SetObject(PyExc_FileNotFoundError, py::make_tuple(2, "daydream.load: no such file: " + p, p).ptr());
      throw py::error_already_set();
    }
    paths.emplace_back(p);
  }
  auto a = std::make_shared<py_job>();
  py::gil_scoped_release nogil;
  io::job_options jo;
  jo.ranks = o.ranks;
  a->j = io::load_job(paths, jo);
  for (auto& n : a->j.notes) a->warnings.push_back(n);
  a->m = match_collectives_or_none(a->j);
  if (!a->m.unmatched.empty()) a->warnings.push_back("the ranks are replayed side by side, not joined: " + a->m.unmatched);
  auto in = make_alignment_input(a->j, a->m);
  a->unaligned = no_alignment(in);
  a->alignment = a->unaligned;
#if DAYDREAM_HAVE_ALIGN
  if (align == "lp") a->alignment = glpk_alignment(in);
#endif
  std::string cspec = o.cluster;
  if (cspec.find("workers") == std::string::npos && cspec.find("machines") == std::string::npos)
    cspec = "workers=" + std::to_string(a->j.world_size) + (cspec.empty() ? "" : "," + cspec);
  auto p = pass_params::parse("cluster", cspec);
  a->model.cluster = cluster_from_params(p);
  a->model.cluster.nic_per_gpu = p.get_bool("nic_per_gpu", false);
  p.finish();
  a->model.transfer = o.transfer == "cluster" ? job_model_options::transfer_source::cluster
                                              : job_model_options::transfer_source::trace;
  a->model.communication = o.comm == "fine" ? communication_level::fine : communication_level::coarse;
  std::vector<std::int32_t> its;
  if (o.iteration >= 0) {
    auto common = a->j.common_iterations();
    if (std::find(common.begin(), common.end(), o.iteration) == common.end())
      throw usage_error(fmt::format("daydream.load: not every rank traced iteration {}", o.iteration));
    its = {o.iteration};
  }
  a->jg = build_job_graph(a->j, a->m, a->alignment, a->model);
  a->base = analyse_job(a->j, a->jg, its, a->ro);
  if (a->base.predicted <= 0) throw error("daydream.load: the job's replay has no task in the analysed iterations");
  return a;
}

py::dict rank_columns(const py_job& a, const job_result& res, bool with_files) {
  std::vector<std::int32_t> rank;
  std::vector<std::string> file;
  std::vector<py::object> measured;
  std::vector<double> predicted, offset, compute, transfer, wait, other;
  for (std::size_t k = 0; k < res.ranks.size(); ++k) {
    auto& rr = res.ranks[k];
    rank.push_back(rr.rank);
    if (with_files) file.push_back(a.j.ranks[k].file);
    measured.push_back(rr.measured > 0 ? py::object(py::float_(whatif_cmd::us(rr.measured))) : py::object(py::none()));
    predicted.push_back(whatif_cmd::us(rr.predicted));
    auto off = a.alignment.offset.find(rr.rank);
    offset.push_back(whatif_cmd::us(off == a.alignment.offset.end() ? 0 : off->second));
    compute.push_back(whatif_cmd::us(rr.compute));
    transfer.push_back(whatif_cmd::us(rr.transfer));
    wait.push_back(whatif_cmd::us(rr.wait));
    other.push_back(whatif_cmd::us(rr.other));
  }
  py::dict d;
  d["rank"] = rank;
  if (with_files) {
    d["file"] = file;
    d["measured_us"] = measured;
  }
  d["predicted_us"] = predicted;
  if (with_files) d["clock_offset_us"] = offset;
  d["compute_us"] = compute;
  d["transfer_us"] = transfer;
  d["wait_us"] = wait;
  d["other_us"] = other;
  return d;
}

/// The job scenarios of `specs_in` (empty: the program's default three) on the ranks `on`
/// (empty: every rank), predicted without the GIL.
std::vector<whatif::job_scenario> run_job_scenarios(const py_job& a, const std::vector<std::string>& specs_in,
                                                    const std::vector<std::int32_t>& on) {
  auto specs = specs_in;
  if (specs.empty()) specs = {"no_straggler", "network:scale=2", "collective:algorithm=tree"};
  std::vector<whatif::job_scenario> out;
  py::gil_scoped_release nogil;
  for (auto& s : specs) out.push_back(whatif::run_job_scenario(a, s, on, bundled_registry(), a.ro));
  return out;
}

/// `daydream whatif RANKS... --timeline PATH`: the baseline and each scenario (`specs`, as
/// for _whatif; `baseline_only`: none), a process per rank and scenario.
void job_timeline(const py_job& a, const std::string& path, const std::vector<std::string>& specs,
                  const std::vector<std::int32_t>& on, bool baseline_only) {
  auto scenarios = baseline_only ? std::vector<whatif::job_scenario>{} : run_job_scenarios(a, specs, on);
  py::gil_scoped_release nogil;
  whatif_cmd::write_job_timeline(path, a, scenarios);
}

/// `daydream whatif RANKS... --report PATH`: the job's HTML page, byte for byte.
void job_report(const py_job& a, const std::string& path, const std::vector<std::string>& specs,
                const std::vector<std::int32_t>& on) {
  auto scenarios = run_job_scenarios(a, specs, on);
  py::gil_scoped_release nogil;
  whatif_cmd::write_job_report(path, "daydream", a, scenarios, a.warnings);
}

py::list job_scenarios(const py_job& a, const std::vector<std::string>& specs_in, const std::vector<std::int32_t>& on) {
  auto out = run_job_scenarios(a, specs_in, on);
  py::list rows;
  for (auto& s : out) {
    const bool ok = s.error.empty();
    py::dict d;
    d["name"] = s.name;
    d["applied"] = ok && s.applied;
    d["reason"] = !ok ? py::object(py::str(s.error)) : !s.applied ? py::object(py::str(s.reason)) : py::none();
    d["notes"] = s.notes;
    d["predicted_us"] = ok ? py::object(py::float_(whatif_cmd::us(s.res.predicted))) : py::none();
    d["speedup"] = ok && s.res.predicted > 0 ? py::object(py::float_(double(a.base.predicted) / double(s.res.predicted)))
                                             : py::none();
    d["straggler"] = ok && s.res.straggler.rank >= 0 ? py::object(py::int_(s.res.straggler.rank)) : py::none();
    d["ranks"] = ok ? py::object(rank_columns(a, s.res, false)) : py::object(py::none());
    rows.append(d);
  }
  return rows;
}

} // namespace

void bind_job(py::module_& m) {
  py::class_<py_job, std::shared_ptr<py_job>>(m, "Job")
      .def_property_readonly("world_size", [](const py_job& a) { return a.j.world_size; })
      .def_property_readonly("files", [](const py_job& a) {
        std::vector<std::string> out;
        for (auto& r : a.j.ranks) out.push_back(r.file);
        return out;
      })
      .def_property_readonly("iterations", [](const py_job& a) { return a.base.iterations; })
      .def_property_readonly("iteration", [](const py_job& a) { return a.base.iteration; })
      .def_property_readonly("baseline_us", [](const py_job& a) { return whatif_cmd::us(a.base.predicted); })
      .def_property_readonly("measured_us", [](const py_job& a) -> py::object {
        time_ns meas = -1;
        for (auto& r : a.base.ranks) meas = std::max(meas, r.measured);
        return meas > 0 ? py::object(py::float_(whatif_cmd::us(meas))) : py::none();
      })
      .def_property_readonly("warnings", [](const py_job& a) { return a.warnings; })
      .def_property_readonly("straggler", [](const py_job& a) {
        py::dict d;
        d["rank"] = a.base.straggler.rank >= 0 ? py::object(py::int_(a.base.straggler.rank)) : py::none();
        d["reason"] = a.base.straggler.reason;
        d["caused_wait_us"] = whatif_cmd::us(a.base.straggler.caused);
        py::list ops;
        for (auto& [n, t] : a.base.straggler.operations) ops.append(py::make_tuple(n, whatif_cmd::us(t)));
        d["operations"] = ops;
        return d;
      })
      .def_property_readonly("alignment", [](const py_job& a) {
        py::dict d;
        d["method"] = a.alignment.method;
        d["aligned"] = a.alignment.aligned;
        d["residual_us"] = a.alignment.residual_ns / 1e3;
        d["violations"] = a.alignment.violations;
        return d;
      })
      .def("_rank_columns", [](const py_job& a) { return rank_columns(a, a.base, true); })
      .def("_whatif", &job_scenarios, py::arg("specs"), py::arg("on_ranks"))
      .def("_timeline", &job_timeline, py::arg("path"), py::arg("specs"), py::arg("on_ranks"), py::arg("baseline_only"))
      .def("_report", &job_report, py::arg("path"), py::arg("specs"), py::arg("on_ranks"))
      .def_property_readonly("representative", [](const py_job& a) {
        std::pair<std::int32_t, time_ns> rep;
        {
          py::gil_scoped_release nogil;
          rep = whatif_cmd::representative_worker(a, a.ro);
        }
        py::dict d;
        d["rank"] = rep.first;
        d["predicted_us"] = whatif_cmd::us(rep.second);
        return d;
      })
      .def("__repr__", [](const py_job& a) {
        return fmt::format("<daydream.Job {} ranks: baseline {}>", a.j.world_size, whatif_cmd::ms(a.base.predicted));
      });
  m.def("_load_job", [](const std::vector<std::string>& paths, const std::vector<std::int32_t>& ranks,
                        const std::string& align, const std::string& comm, const std::string& transfer,
                        const std::string& cluster, std::int32_t iteration) {
    job_args a{paths, ranks, align, comm, transfer, cluster, iteration};
    return load_job_paths(a);
  });
}

} // namespace daydream::python
