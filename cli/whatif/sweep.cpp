// Defines the what-if command's sweep mode (daydream whatif --vary): a grid of pass chains x
// parameter values, one row each, as a table, JSON or CSV; under mpirun the points are
// spread over the ranks (sweep.hpp).
// SPDX-License-Identifier: MIT
#include "internal.hpp"
#include "sweep.hpp"

#include <daydream/io/kineto.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace whatif_cmd {

/// The sweep mode of run(): every chain of `o.specs` (default: the applicable bundled passes
/// that take one of the varied keys) at every point of the grid of `o.vary`.
int run_sweep_mode(const options& o, std::FILE* out, std::FILE* err,
                   const daydream::passes::registry<graph>& reg) {
  if (o.json && o.csv == "-")
    throw daydream::usage_error("daydream whatif: --json and --csv - would both write to stdout; give --csv a file");
  if (!o.timeline.empty() || !o.report.empty() || o.critical || !o.dlc.empty())
    throw daydream::usage_error("daydream whatif: --timeline, --report, --critical-path and --dlc describe one run; a "
                                "sweep (--vary) gives a table");
  std::vector<daydream::passes::sweep_axis> axes;
  for (auto& v : o.vary) axes.push_back(daydream::passes::sweep_axis::parse(v));
  // The grid is expanded and every point built before the trace is read: a typo in a
  // pass, a key or a value costs nothing.
  auto check = [&](const daydream::passes::sweep_grid& grid) {
    for (auto& p : grid.points) {
      if (p.same_as != std::size_t(&p - grid.points.data())) continue;
      try {
        (void)reg.make_chain(p.spec);
      } catch (const daydream::usage_error&) {
        throw;
      } catch (const std::exception& e) {
        throw daydream::usage_error(e.what());
      }
    }
  };
  std::optional<daydream::passes::sweep_grid> grid;
  if (!o.specs.empty()) {
    grid = daydream::passes::expand_sweep(reg, o.specs, axes);
    check(*grid);
  }

  program::mpi_world world;
  daydream::io::kineto_trace trace;
  analysis a;
  options quiet = o;
  quiet.progress = o.progress && world.rank() == 0;
  prepare(quiet, trace, a, err);
  if (!grid) {
    // The applicable bundled passes, at their default scenario, that take a varied key.
    std::vector<std::string> chains, left_out;
    for (auto& e : reg.entries()) {
      auto spec = e.scenario_params.empty() ? std::string(e.name)
                                            : std::string(e.name) + ":" + std::string(e.scenario_params);
      auto keys = reg.parameters(spec);
      bool takes = false;
      for (auto& ax : axes) takes = takes || std::find(keys.begin(), keys.end(), ax.key) != keys.end();
      if (!takes) continue;
      if (e.applicable(a.base.g)) chains.push_back(spec);
      else left_out.push_back(fmt::format("{} ({})", e.name, not_applicable_reason(e, a.base.g)));
    }
    if (chains.empty()) {
      std::string keys, why;
      for (auto& ax : axes) keys += (keys.empty() ? "" : ", ") + ax.key;
      for (auto& l : left_out) why += (why.empty() ? "" : "; ") + l;
      throw daydream::usage_error(
          "daydream whatif: no bundled pass that applies to " + o.trace + " takes " + keys +
          (why.empty() ? std::string() : "; those that take it do not apply: " + why) + "; name the chains with --pass");
    }
    grid = daydream::passes::expand_sweep(reg, chains, axes);
    check(*grid);
  }
  auto res = run_sweep_points(a, std::move(*grid), reg, o.replay, world, err, quiet.progress);
  if (world.rank() != 0) return 0;
  if (o.json) std::fputs(sweep_json(a, res).c_str(), out);
  else print_sweep(out, a, res);
  if (!o.csv.empty()) {
    auto text = sweep_csv(a, res);
    if (o.csv == "-") {
      std::fputs(text.c_str(), out);
    } else {
      std::ofstream f(o.csv, std::ios::binary);
      f << text;
      if (!f) throw daydream::error("daydream whatif: cannot write the CSV table to '" + o.csv + "'");
    }
  }
  return 0;
}

} // namespace whatif_cmd
