// Defines the sensitivity profile: for every layer, kernel family or kernel, the step the
// replay predicts if it alone were X times faster.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SENSITIVITY_SENSITIVITY_HPP
#define DAYDREAM_SENSITIVITY_SENSITIVITY_HPP

#include <daydream/analysis.hpp>
#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/overlay.hpp>
#include <daydream/replay.hpp>
#include <daydream/semantics/kernel_family.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::sensitivity {

/// What one row of the profile speeds up.
enum class grouping : std::uint8_t {
  layer,  ///< every GPU task of one layer (module); tasks without a layer form "(no layer)"
  family, ///< every GPU task of one kernel family (gemm/conv, attention, elementwise, ...)
  kernel, ///< every GPU task of one name (the `top` longest names)
};

/// The name of a grouping ("layer"; `family` is spelled "class", as the command line takes it).
inline constexpr std::string_view to_string(grouping b) noexcept {
  switch (b) {
  case grouping::layer: return "layer";
  case grouping::family: return "class";
  case grouping::kernel: return "kernel";
  }
  return "?";
}

/// Parses "layer", "class" or "kernel"; throws daydream::usage_error otherwise.
inline grouping parse_grouping(std::string_view s) {
  if (s == "layer") return grouping::layer;
  if (s == "class" || s == "family") return grouping::family;
  if (s == "kernel") return grouping::kernel;
  throw usage_error("daydream: sensitivity: unknown grouping '" + std::string(s) + "' (use layer, class or kernel)");
}

/// How to profile.
struct options {
  double factor = 2.0;              ///< each row's GPU tasks run this many times faster
  grouping by = grouping::layer;    ///< what a row is
  std::size_t top = 0;              ///< at most this many rows, the longest first (0: every one)
  replay_options replay = {};       ///< for every replay
};

/// One row: a group of GPU tasks and the step predicted with it alone `factor` faster.
struct row {
  std::string key;          ///< the layer, family or kernel name
  std::size_t tasks = 0;    ///< its GPU tasks (kernels, device copies, communication), every iteration
  time_ns gpu_time = 0;     ///< their recorded time in the analysed iterations (all: every iteration)
  double gpu_share = 0;     ///< gpu_time over the GPU time of the analysed iterations (0..1)
  time_ns predicted = 0;    ///< the median steady-state step with the group faster
  time_ns saved = 0;        ///< baseline - predicted (negative: a list-scheduling anomaly)
};

/// A profile: the baseline step and one row per group, most saved first.
struct profile {
  time_ns baseline = 0;                ///< the median steady-state step of the unmodified graph
  double factor = 2.0;                 ///< as given
  grouping by = grouping::layer;       ///< as given
  std::vector<std::int32_t> iterations;///< the iterations the steps are the median over
  time_ns gpu_time = 0;                ///< the GPU time of the analysed iterations (every GPU task)
  std::size_t groups = 0;              ///< groups found (rows may hold fewer: options::top)
  std::vector<row> rows;
};

//! @cond Doxygen_Suppress
namespace detail {
inline time_ns median_step(steady_plan& plan, const replay_result& r) {
  if (plan.iterations().empty()) return r.makespan;
  std::vector<time_ns> steps;
  for (auto& s : plan.steps(r))
    if (s.step() >= 0) steps.push_back(s.step());
  return steps.empty() ? r.makespan : median_of(std::move(steps));
}
} // namespace detail
//! @endcond

/// The sensitivity profile of `g` over iterations `its` (empty: the whole replay, its
/// makespan): for every group of GPU tasks (options::by), the median steady-state step
/// (steady_steps) predicted when that group alone runs `factor` times faster (in every
/// iteration: work queued before an analysed iteration counts), next to its share of the
/// GPU time of the analysed iterations. A causal profile: a layer with a large share that saves little
/// is off the critical path. One replay per row, into the same result arrays, of a
/// duration_overlay over `g` (no copy of the graph; `g` is not changed). CPU tasks keep
/// their times.
///
///     auto p = daydream::sensitivity::profile_of(g, trace.steady_state_iterations(), {.factor = 2});
///     for (auto& r : p.rows) fmt::print("{}: {:.0f}% of GPU time, saves {} ns\n", r.key, 100 * r.gpu_share, r.saved);
inline profile profile_of(const graph& g, std::vector<std::int32_t> its, const options& o = {}) {
  if (!(o.factor > 0) || !std::isfinite(o.factor))
    throw usage_error("daydream: sensitivity: the factor must be a positive number");
  profile p;
  p.factor = o.factor;
  p.by = o.by;
  p.iterations = its;
  // The groups: keys in first-seen order, each with its tasks.
  std::map<std::string, std::size_t> index;
  std::vector<std::pair<std::string, std::vector<task_id>>> groups;
  passes::kernel_families fam(g);
  std::vector<std::int32_t> window = its;
  std::sort(window.begin(), window.end());
  auto analysed = [&](task_id t) {
    return window.empty() || std::binary_search(window.begin(), window.end(), g.iteration(t));
  };
  g.for_each_task([&](task_id t) {
    if (g.is<cpu_task>(t)) return;
    if (analysed(t)) p.gpu_time += g.duration(t);
    std::string key;
    switch (o.by) {
    case grouping::layer: key = g.layer(t).empty() ? "(no layer)" : std::string(g.layer(t)); break;
    case grouping::family: key = std::string(passes::to_string(fam.family(t))); break;
    case grouping::kernel: key = std::string(g.name(t)); break;
    }
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh) groups.push_back({key, {}});
    groups[it->second].second.push_back(t);
  });
  p.groups = groups.size();
  auto time_of = [&](const std::vector<task_id>& v) {
    time_ns s = 0;
    for (auto t : v)
      if (analysed(t)) s += g.duration(t);
    return s;
  };
  // The longest groups first: `top` keeps those.
  std::vector<std::pair<time_ns, std::size_t>> order;
  for (std::size_t k = 0; k < groups.size(); ++k) order.push_back({time_of(groups[k].second), k});
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first > b.first; });
  if (o.top > 0 && order.size() > o.top) order.resize(o.top);

  replay_result r;
  replay_into(g, r, trace_order_policy{}, o.replay);
  steady_plan plan(g, its); // the graph's side of the steps, read once for every row
  p.baseline = detail::median_step(plan, r);
  duration_overlay faster(g);
  for (auto& [time, k] : order) {
    // plain references: clang 14 cannot capture structured bindings in a lambda
    const std::string& key = groups[k].first;
    const std::vector<task_id>& ts = groups[k].second;
    for (auto t : ts) faster.set_duration(t, static_cast<time_ns>(std::llround(double(g.duration(t)) / o.factor)));
    replay_into(faster, r, trace_order_policy{}, o.replay);
    const time_ns predicted = detail::median_step(plan, r);
    faster.reset();
    row w;
    w.key = key;
    w.tasks = ts.size();
    w.gpu_time = time;
    w.gpu_share = p.gpu_time > 0 ? double(time) / double(p.gpu_time) : 0.0;
    w.predicted = predicted;
    w.saved = p.baseline - w.predicted;
    p.rows.push_back(std::move(w));
  }
  std::stable_sort(p.rows.begin(), p.rows.end(), [](const row& a, const row& b) {
    return a.saved != b.saved ? a.saved > b.saved : a.gpu_time > b.gpu_time;
  });
  return p;
}

} // namespace daydream::sensitivity

#endif
