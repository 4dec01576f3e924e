// Defines the sweep mode of the what-if program: a grid of pass chains x parameter values, one row each, as a table, JSON or CSV; under mpirun the points are spread over the ranks.
// SPDX-License-Identifier: MIT
//
//   daydream whatif TRACE --pass ddp --pass amp+ddp --vary workers=8,16,64 --vary bandwidth=10Gbps,100Gbps --csv out.csv
//
//   trace --prepare--> baseline --expand_sweep--> points --rank r predicts points r, r+R, ...--> rows on rank 0
#ifndef DAYDREAM_CLI_WHATIF_SWEEP_HPP
#define DAYDREAM_CLI_WHATIF_SWEEP_HPP

#include "../mpi.hpp"
#include "output.hpp"
#include "scenario.hpp"

#include <daydream/io/json_writer.hpp>
#include <daydream/registry/sweep.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace whatif_cmd {

/// What the sweep predicted for one distinct spec.
struct sweep_row {
  time_ns predicted = -1;                  ///< median iteration, ns (-1: no prediction)
  std::optional<std::int64_t> peak_memory; ///< bytes, when memory is modelled
  std::int32_t workers = 0;                ///< data-parallel workers of the scenario (0: the traced job's)
  bool applied = true;                     ///< whether some pass changed the graph
  std::string reason;                      ///< why passes changed nothing
  std::string error;                       ///< why the point could not be predicted
  std::string bound;                       ///< what bounds the predicted step (explain_bound), when predicted
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

// Rows travel between MPI ranks as bytes: fixed-size numbers, then length-prefixed strings.
template <class T> void put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
template <class T> T take(const std::string& in, std::size_t& at) {
  T v{};
  if (at + sizeof v > in.size()) throw daydream::error("daydream whatif: a sweep result from another rank is truncated");
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}
inline void put_string(std::string& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out += s;
}
inline std::string take_string(const std::string& in, std::size_t& at) {
  auto n = take<std::uint64_t>(in, at);
  if (n > in.size() - at) throw daydream::error("daydream whatif: a sweep result from another rank is truncated");
  auto s = in.substr(at, std::size_t(n));
  at += std::size_t(n);
  return s;
}

inline void encode(std::string& out, std::uint64_t index, const sweep_row& r) {
  put(out, index);
  put(out, r.predicted);
  put<std::uint8_t>(out, r.peak_memory.has_value());
  put<std::int64_t>(out, r.peak_memory.value_or(0));
  put(out, r.workers);
  put<std::uint8_t>(out, r.applied);
  put_string(out, r.reason);
  put_string(out, r.error);
  put_string(out, r.bound);
}

inline sweep_row decode(const std::string& in, std::size_t& at, std::uint64_t& index) {
  sweep_row r;
  index = take<std::uint64_t>(in, at);
  r.predicted = take<time_ns>(in, at);
  bool has_memory = take<std::uint8_t>(in, at) != 0;
  auto memory = take<std::int64_t>(in, at);
  if (has_memory) r.peak_memory = memory;
  r.workers = take<std::int32_t>(in, at);
  r.applied = take<std::uint8_t>(in, at) != 0;
  r.reason = take_string(in, at);
  r.error = take_string(in, at);
  r.bound = take_string(in, at);
  return r;
}

/// One CSV field, quoted when it must be (RFC 4180).
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

} // namespace detail
//! @endcond

/// Predicts `spec` on the trace of `a` (a copy of the traced graph).
inline sweep_row predict_point(const analysis& a, const std::string& spec,
                               const daydream::passes::registry<graph>& reg, const daydream::replay_options& ro) {
  auto s = run_scenario(a.base.g, reg.make_chain(spec), spec, a.iterations, a.memory, ro);
  sweep_row r;
  r.error = s.error;
  if (!s.error.empty()) return r;
  r.predicted = s.predicted;
  r.peak_memory = s.peak_memory;
  r.workers = s.workers();
  r.applied = s.applied();
  r.reason = s.reason();
  r.bound = explain_bound(s.g, breakdown_of(a, s));
  return r;
}

/// The head of a row's bound ("GPU-bound", "CPU-bound", ...), as the table shows it.
inline std::string bound_head(const sweep_row& r) {
  auto colon = r.bound.find(':');
  return colon == std::string::npos ? r.bound : r.bound.substr(0, colon);
}

/// The whole sweep: the grid and one row per point (points with the same spec share it).
struct sweep_result {
  daydream::passes::sweep_grid grid;
  std::vector<sweep_row> rows;   ///< by point; a repeated spec's row is a copy of its first
  double seconds = 0;            ///< wall time of the predictions, on rank 0
  int ranks = 1;                 ///< MPI ranks that shared the points
};

/// Predicts every distinct point of `grid`, point i of the distinct ones on rank i % size,
/// and gathers the rows on rank 0 (the others get no rows). The rows are the same
/// whatever the number of ranks: every prediction is deterministic.
inline sweep_result run_sweep_points(const analysis& a, daydream::passes::sweep_grid grid,
                                     const daydream::passes::registry<graph>& reg, const daydream::replay_options& ro,
                                     const program::mpi_world& world, std::FILE* err, bool progress) {
  sweep_result res;
  res.ranks = world.size();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::size_t> distinct;
  for (std::size_t k = 0; k < grid.points.size(); ++k)
    if (grid.points[k].same_as == k) distinct.push_back(k);
  std::string mine;
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    if (int(i % std::size_t(world.size())) != world.rank()) continue;
    auto& p = grid.points[distinct[i]];
    if (progress) {
      fmt::print(err, "\r\x1b[K[{}/{}] {}...", i + 1, distinct.size(), p.spec);
      std::fflush(err);
    }
    detail::encode(mine, distinct[i], predict_point(a, p.spec, reg, ro));
  }
  if (progress) fmt::print(err, "\r\x1b[K");
  auto all = world.gather(mine);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (world.rank() == 0) {
    res.rows.resize(grid.points.size());
    std::vector<bool> have(grid.points.size(), false);
    for (auto& chunk : all) {
      std::size_t at = 0;
      while (at < chunk.size()) {
        std::uint64_t index = 0;
        auto row = detail::decode(chunk, at, index);
        if (index >= res.rows.size()) throw daydream::error("daydream whatif: a sweep result names no point");
        res.rows[std::size_t(index)] = std::move(row);
        have[std::size_t(index)] = true;
      }
    }
    for (std::size_t k = 0; k < grid.points.size(); ++k) {
      auto first = grid.points[k].same_as;
      if (!have[first]) throw daydream::error("daydream whatif: no rank predicted '" + grid.points[k].spec + "'");
      if (first != k) res.rows[k] = res.rows[first];
    }
  }
  res.grid = std::move(grid);
  return res;
}

/// The note of a row: the error, why nothing changed, or the axes the chain ignores.
inline std::string sweep_note(const sweep_result& res, std::size_t k) {
  auto& r = res.rows[k];
  return sweep_point_note(r.error, r.applied, r.reason, res.grid.points[k].unused);
}

/// The sweep as one JSON object.
inline std::string sweep_json(const analysis& a, const sweep_result& res) {
  daydream::io::json_writer w(true);
  w.begin_object();
  w.field("trace", a.trace_name);
  w.key("measured_us");
  if (median(a.measured) > 0) w.value(us(median(a.measured))); else w.null();
  w.field("baseline_us", us(a.base.predicted));
  w.key("baseline_peak_memory_bytes");
  if (a.base.peak_memory) w.value(*a.base.peak_memory); else w.null();
  w.key("warnings").begin_array();
  for (auto& m : a.warnings) w.value(m);
  w.end_array();
  w.key("sweep").begin_object();
  w.key("chains").begin_array();
  for (auto& c : res.grid.chains) w.value(c);
  w.end_array();
  w.key("axes").begin_array();
  for (auto& ax : res.grid.axes) {
    w.begin_object().field("key", ax.key).key("values").begin_array();
    for (auto& v : ax.values) w.value(v);
    w.end_array().end_object();
  }
  w.end_array();
  w.field("points", std::uint64_t(res.grid.points.size()));
  w.field("evaluated", std::uint64_t(res.grid.distinct()));
  w.field("seconds", res.seconds);
  w.field("ranks", res.ranks);
  w.end_object();
  w.key("results").begin_array();
  for (std::size_t k = 0; k < res.grid.points.size(); ++k) {
    auto& p = res.grid.points[k];
    auto& r = res.rows[k];
    const bool ok = r.error.empty() && r.predicted > 0;
    w.begin_object();
    w.field("scenario", res.grid.chains[p.chain]);
    w.key("params").begin_object();
    for (std::size_t x = 0; x < res.grid.axes.size(); ++x) w.field(res.grid.axes[x].key, res.grid.value(p, x));
    w.end_object();
    w.field("spec", p.spec);
    w.key("predicted_us");
    if (ok) w.value(us(r.predicted)); else w.null();
    auto t = throughput_of(a, r.predicted, r.workers);
    w.key("iteration_speedup");
    if (ok) w.value(double(a.base.predicted) / double(r.predicted)); else w.null();
    w.key("speedup");
    if (ok) w.value(t.vs_baseline); else w.null();
    w.field("workers", t.workers);
    w.key("steps_per_s");
    if (ok) w.value(t.steps_per_s); else w.null();
    w.key("samples_per_s");
    if (ok && t.samples_per_s) w.value(*t.samples_per_s); else w.null();
    w.key("peak_memory_bytes");
    if (ok && r.peak_memory) w.value(*r.peak_memory); else w.null();
    w.field("applied", ok && r.applied);
    w.key("bound");
    if (ok && !r.bound.empty()) w.value(r.bound); else w.null();
    w.key("note");
    if (auto n = sweep_note(res, k); !n.empty()) w.value(n); else w.null();
    w.key("error");
    if (!r.error.empty()) w.value(r.error); else w.null();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

/// The sweep as one CSV table (a header line, then a line per point).
inline std::string sweep_csv(const analysis& a, const sweep_result& res) {
  std::string out = "scenario";
  for (auto& ax : res.grid.axes) out += "," + detail::csv_field("params." + ax.key);
  out += ",spec,predicted_us,baseline_us,iteration_speedup,speedup,workers,steps_per_s,samples_per_s,"
         "peak_memory_bytes,applied,note,bound\n";
  for (std::size_t k = 0; k < res.grid.points.size(); ++k) {
    auto& p = res.grid.points[k];
    auto& r = res.rows[k];
    const bool ok = r.error.empty() && r.predicted > 0;
    auto t = throughput_of(a, r.predicted, r.workers);
    out += detail::csv_field(res.grid.chains[p.chain]);
    for (std::size_t x = 0; x < res.grid.axes.size(); ++x) out += "," + detail::csv_field(res.grid.value(p, x));
    out += "," + detail::csv_field(p.spec);
    out += ok ? fmt::format(",{:.3f},{:.3f},{:.6f},{:.6f},{},{:.6f}", us(r.predicted), us(a.base.predicted),
                            double(a.base.predicted) / double(r.predicted), t.vs_baseline, t.workers, t.steps_per_s)
              : fmt::format(",,{:.3f},,,{},", us(a.base.predicted), t.workers);
    out += ok && t.samples_per_s ? fmt::format(",{:.3f}", *t.samples_per_s) : std::string(",");
    out += ok && r.peak_memory ? fmt::format(",{}", *r.peak_memory) : std::string(",");
    out += ok && r.applied ? ",true" : ",false";
    out += "," + detail::csv_field(sweep_note(res, k));
    out += "," + detail::csv_field(ok ? bound_head(r) : std::string()) + "\n";
  }
  return out;
}

/// The sweep as a table for people.
inline void print_sweep(std::FILE* out, const analysis& a, const sweep_result& res) {
  fmt::print(out, "daydream whatif (sweep): {}\n", a.trace_name);
  for (auto& m : a.warnings) fmt::print(out, "  WARNING: {}\n", m);
  fmt::print(out, "  {}\n", iterations_line(a));
  fmt::print(out, "  baseline (replay): {}", ms(a.base.predicted));
  if (median(a.measured) > 0) fmt::print(out, "; measured: {}", ms(median(a.measured)));
  fmt::print(out, "\n  {} points ({} chain{} x", res.grid.points.size(), res.grid.chains.size(),
             res.grid.chains.size() == 1 ? "" : "s");
  for (std::size_t x = 0; x < res.grid.axes.size(); ++x)
    fmt::print(out, "{} {} {}", x ? " x" : "", res.grid.axes[x].values.size(), res.grid.axes[x].key);
  fmt::print(out, "), {} predicted in {:.2f} s on {} rank{}\n\n", res.grid.distinct(), res.seconds, res.ranks,
             res.ranks == 1 ? "" : "s");

  std::size_t wc = 8;
  for (auto& c : res.grid.chains) wc = std::max(wc, c.size());
  std::vector<std::size_t> wa;
  for (auto& ax : res.grid.axes) {
    std::size_t w = ax.key.size();
    for (auto& v : ax.values) w = std::max(w, v.size());
    wa.push_back(w);
  }
  fmt::print(out, "  {:<{}}", "scenario", wc);
  for (std::size_t x = 0; x < res.grid.axes.size(); ++x) fmt::print(out, " {:>{}}", res.grid.axes[x].key, wa[x]);
  std::size_t wb = 5;
  for (auto& r : res.rows) wb = std::max(wb, bound_head(r).size());
  fmt::print(out, " {:>14} {:>9} {:>13}  {:<{}}  {}\n", "iteration", "speedup", "peak memory", "bound", wb, "note");
  for (std::size_t k = 0; k < res.grid.points.size(); ++k) {
    auto& p = res.grid.points[k];
    auto& r = res.rows[k];
    const bool ok = r.error.empty() && r.predicted > 0;
    fmt::print(out, "  {:<{}}", res.grid.chains[p.chain], wc);
    for (std::size_t x = 0; x < res.grid.axes.size(); ++x) fmt::print(out, " {:>{}}", res.grid.value(p, x), wa[x]);
    auto mem = ok && r.peak_memory ? bytes_str(*r.peak_memory) : std::string("n/a");
    if (ok)
      fmt::print(out, " {:>14} {:>8.2f}x {:>13}  {:<{}}  {}\n", ms(r.predicted),
                 throughput_of(a, r.predicted, r.workers).vs_baseline, mem, bound_head(r), wb, sweep_note(res, k));
    else
      fmt::print(out, " {:>14} {:>9} {:>13}  {:<{}}  {}\n", "-", "-", "-", "-", wb, sweep_note(res, k));
  }
  fmt::print(out, "  speedup: throughput against the baseline's (workers x steps/s)\n");
}

} // namespace whatif_cmd

#endif
