// Defines the prediction-law checker: laws every prediction must obey (steady state under backlog, monotonicity, neutral parameters are identities), checked on one trace for every bundled pass.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_LAWS_PREDICTION_LAWS_HPP
#define DAYDREAM_LAWS_PREDICTION_LAWS_HPP

#include <daydream/analysis.hpp>
#include <daydream/fidelity.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/semantics/format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace daydream::laws {

/// The laws the checker knows.
enum class law : std::uint8_t {
  steady_state, ///< a step is never shorter than the work of its busiest resource
  monotone,     ///< faster kernels, faster links, more workers never predict a slower step
  neutral,      ///< a pass at neutral parameters predicts the baseline, or says it changes nothing
  replay_error, ///< the baseline replays a checked iteration within 2% of the trace
};

/// The name of a law ("steady_state").
inline constexpr std::string_view to_string(law l) noexcept {
  switch (l) {
  case law::steady_state: return "steady_state";
  case law::monotone: return "monotone";
  case law::neutral: return "neutral";
  case law::replay_error: return "replay_error";
  }
  return "?";
}

/// One checked case: a law on a trace under a scenario, and whether it held.
struct law_case {
  law which = law::steady_state;
  std::string scenario; ///< the pass chain ("amp:compute=2"), or a series ("ddp:bandwidth=1,10,100Gbps")
  bool held = true;
  std::string detail;   ///< what was measured; for a violation, what broke
};

/// What the checker found on one trace.
struct law_report {
  std::string trace;
  std::vector<law_case> cases;
  std::size_t violations() const {
    return std::size_t(std::count_if(cases.begin(), cases.end(), [](auto& c) { return !c.held; }));
  }
};

/// One predicted scenario: the step time of each analysed iteration, and the work of
/// the busiest resource in it.
struct scenario_times {
  std::string spec;
  bool applied = true;               ///< whether a pass of the chain changed the graph
  std::vector<time_ns> steps;        ///< per analysed iteration: the steady-state step (-1: none)
  std::vector<time_ns> spans;        ///< per analysed iteration: the replayed span (-1: none)
  std::vector<time_ns> busiest;      ///< per analysed iteration: the largest work of one resource
  std::vector<std::string> busiest_name; ///< that resource
  time_ns median() const { return median_of(steps); }
};

/// The work of resource `res` in iteration `i` of a replay: the union of the replayed
/// intervals of the iteration's own tasks on it. A CPU thread's gaps (untraced time
/// between its slices) do not count: the bound holds for the slices alone.
inline std::map<resource_id, time_ns> iteration_work(const graph& g, const replay_result& r, std::int32_t i) {
  std::map<resource_id, std::vector<std::pair<time_ns, time_ns>>> iv;
  g.for_each_task([&](task_id t) {
    if (g.iteration(t) != i || t >= r.start.size() || r.start[t] < 0) return;
    const auto res = g.resource_of(t);
    if (res == no_resource || r.end[t] <= r.start[t]) return;
    iv[res].push_back({r.start[t], r.end[t]});
  });
  std::map<resource_id, time_ns> out;
  for (auto& [res, v] : iv) {
    time_ns lo = v.front().first, hi = v.front().second;
    for (auto& [b, e] : v) {
      lo = std::min(lo, b);
      hi = std::max(hi, e);
    }
    out[res] = union_length(v, lo, hi);
  }
  return out;
}

/// Applies `spec` (a chain of the bundled registry) to a copy of `g`, replays it and
/// measures iterations `its`.
inline scenario_times run_scenario(const graph& g, const std::vector<std::int32_t>& its, const std::string& spec) {
  scenario_times s;
  s.spec = spec;
  graph h = g;
  replay_result r;
  if (spec.empty()) {
    r = replay(h);
  } else {
    auto chain = passes::bundled().make_chain(spec);
    auto [rr, reports] = passes::run_chain_in_place(h, chain); // h is dropped if a pass fails
    r = std::move(rr);
    s.applied = std::any_of(reports.begin(), reports.end(), [](auto& rep) { return rep.applied; });
  }
  // What the programs report: the steady-state step (the replayed span, or the work of a
  // resource that falls behind). The law below recomputes the work independently.
  const auto steps = steady_steps(h, r, its);
  for (std::size_t k = 0; k < its.size(); ++k) {
    const auto i = its[k];
    s.steps.push_back(steps[k].step());
    s.spans.push_back(steps[k].span);
    time_ns most = 0;
    std::string name;
    for (auto& [res, w] : iteration_work(h, r, i))
      if (w > most) {
        most = w;
        name = h.resource_at(res).name;
      }
    s.busiest.push_back(most);
    s.busiest_name.push_back(name);
  }
  return s;
}

/// How strict the checker is.
struct law_options {
  double steady_tolerance = 0.01;   ///< a step may be this much shorter than its busiest resource's work
  double monotone_tolerance = 0.02; ///< a faster setting may predict this much slower (list scheduling)
  double replay_tolerance = 0.02;   ///< the baseline's error against the trace
};

//! @cond Doxygen_Suppress
namespace detail {
inline bool any_gpu_kernel(const graph& g) {
  auto kernels = tasks<gpu_kernel>(g);
  return kernels.begin() != kernels.end();
}
/// The catalogue name of the GPU the trace recorded, "" when it records none the
/// bundled catalogue describes.
inline std::string recorded_gpu(const graph& g) {
  if (g.devices().empty() || !any_gpu_kernel(g)) return {};
  auto* d = io::bundled_device_catalogue().find_kineto(g.devices().front().name);
  return d ? d->name : std::string();
}
} // namespace detail
//! @endcond

/// A series of specs ordered from slowest to fastest setting: each must predict a step no
/// slower than the one before it (within the tolerance).
struct series {
  std::string name;               ///< shown in the report ("amp compute/memory 1 -> 20")
  std::vector<std::string> specs; ///< slowest setting first
};

/// The series and neutral settings the checker runs on a trace: every bundled pass
/// applicable to `g`, at its default scenario, at extreme parameters (in the series)
/// and at neutral ones.
inline std::vector<series> default_series(const graph& g) {
  std::vector<series> out;
  // amp runs on every trace with kernels, also where it refuses (reduced precision already).
  if (detail::any_gpu_kernel(g))
    out.push_back({"amp: compute/memory speedup 0.05 -> 1 -> 1.01 -> 3 -> 20 (kernels only)",
                   {"amp:compute=0.05,tf32=0.05,memory=0.05,casts=false,scaler=false",
                    "amp:compute=1,tf32=1,memory=1,activations=1,casts=false,scaler=false",
                    "amp:compute=1.01,tf32=1.01,memory=1.01,casts=false,scaler=false", "amp:casts=false,scaler=false",
                    "amp:compute=20,tf32=20,memory=20,casts=false,scaler=false"}});
  if (detail::any_gpu_kernel(g))
    out.push_back({"speedup: every GPU task 0.5 -> 4x faster", {"speedup:factor=0.5", "speedup:factor=4"}});
  if (passes::precision::applicable(g))
    out.push_back({"precision:to=fp8: GEMM speedup 1 -> 2 -> 8", {"precision:gemm=1", "precision", "precision:gemm=8"}});
  // gpu: a GPU faster in every figure (A100 80GB -> H100 SXM) never predicts a slower step.
  if (const auto rec = detail::recorded_gpu(g); !rec.empty())
    out.push_back({"gpu: target A100 80GB -> H100 SXM", {"gpu:target=A100-SXM4-80GB", "gpu:target=H100-SXM"}});
  if (passes::dataloader::applicable(g))
    out.push_back({"dataloader: workers 1 -> 2 -> 4 -> 16",
                   {"dataloader:workers=1", "dataloader:workers=2", "dataloader:workers=4", "dataloader:workers=16"}});
  if (passes::ddp::applicable(g))
    out.push_back({"ddp (16 workers): bandwidth 1 -> 10 -> 100 Gbps",
                   {"ddp:workers=16,bandwidth=1Gbps", "ddp:workers=16,bandwidth=10Gbps",
                    "ddp:workers=16,bandwidth=100Gbps"}});
  return out;
}

/// The neutral settings: each must predict the baseline to the nanosecond, or report
/// that it changed nothing.
inline std::vector<std::string> neutral_specs(const graph& g) {
  std::vector<std::string> out;
  if (detail::any_gpu_kernel(g)) {
    out.push_back("amp:compute=1,tf32=1,memory=1,activations=1,casts=false,scaler=false");
    out.push_back("speedup:factor=1");
  }
  if (passes::precision::applicable(g)) out.push_back("precision:gemm=1");
  if (const auto rec = detail::recorded_gpu(g); !rec.empty()) out.push_back("gpu:target=" + rec); // the same GPU
  if (passes::ddp::applicable(g)) out.push_back("ddp:workers=1");
  // A trace that already loads in workers: dataloader must say it changes nothing.
  const auto fetches = passes::dataloader_fetches(g);
  if (!fetches.empty() && std::all_of(fetches.begin(), fetches.end(), [](auto& f) { return f.worker_processes; }))
    out.push_back("dataloader");
  return out;
}

/// Checks the laws on one trace's graph: the steady-state law on the baseline and every
/// scenario run, monotonicity along each series, neutral settings against the baseline,
/// and (given `measured`, the trace's step time per iteration of `its`) the replay error.
inline law_report check_laws(const graph& g, const std::vector<std::int32_t>& its, const std::vector<time_ns>& measured,
                             std::string trace, const law_options& o = {}) {
  law_report rep;
  rep.trace = std::move(trace);
  const auto base = run_scenario(g, its, "");
  auto ms = [](time_ns t) { return passes::format_time(t); };
  auto steady = [&](const scenario_times& s) {
    for (std::size_t k = 0; k < its.size(); ++k) {
      if (s.steps[k] < 0) continue;
      law_case c{law::steady_state, s.spec.empty() ? "baseline" : s.spec, true, ""};
      c.held = double(s.steps[k]) >= double(s.busiest[k]) * (1 - o.steady_tolerance);
      c.detail = fmt::format("iteration {}: step {}, busiest resource {} works {}", its[k], ms(s.steps[k]),
                             s.busiest_name[k], ms(s.busiest[k]));
      rep.cases.push_back(std::move(c));
    }
  };
  steady(base);
  for (std::size_t k = 0; k < its.size() && k < measured.size(); ++k) {
    if (measured[k] <= 0 || base.spans[k] < 0) continue;
    // The replay against the trace: the span, as the profiler measured the step.
    const double err = double(base.spans[k] - measured[k]) / double(measured[k]);
    std::string detail = fmt::format("iteration {}: replayed {}, measured {} ({:+.2f}%)", its[k], ms(base.spans[k]),
                                     ms(measured[k]), 100 * err);
    if (base.steps[k] > base.spans[k])
      detail += fmt::format("; not a steady step: {} works {} in it (steady-state step {})", base.busiest_name[k],
                            ms(base.busiest[k]), ms(base.steps[k]));
    const bool held = std::abs(err) <= o.replay_tolerance;
    if (!held)
      if (auto why = replay_error_note(g, its[k], base.spans[k], measured[k], o.replay_tolerance); !why.empty())
        detail += "; " + why;
    rep.cases.push_back({law::replay_error, "baseline", held, detail});
  }
  for (auto& spec : neutral_specs(g)) {
    const auto s = run_scenario(g, its, spec);
    law_case c{law::neutral, spec, true, ""};
    c.held = !s.applied || s.steps == base.steps;
    c.detail = fmt::format("{} against the baseline's {}{}", ms(s.median()), ms(base.median()),
                           s.applied ? "" : " (the pass says it changed nothing)");
    rep.cases.push_back(std::move(c));
  }
  for (auto& ser : default_series(g)) {
    std::vector<scenario_times> runs;
    for (auto& spec : ser.specs) {
      runs.push_back(run_scenario(g, its, spec));
      steady(runs.back());
    }
    law_case c{law::monotone, ser.name, true, ""};
    std::string seq;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      seq += (k ? " -> " : "") + ms(runs[k].median());
      if (k > 0 && runs[k - 1].median() > 0 &&
          double(runs[k].median()) > double(runs[k - 1].median()) * (1 + o.monotone_tolerance)) {
        c.held = false;
      }
    }
    c.detail = seq;
    rep.cases.push_back(std::move(c));
  }
  return rep;
}

} // namespace daydream::laws

#endif
