// Defines breakdowns of a replay: time per phase, per resource, per kind, and the critical path of one iteration.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_ANALYSIS_HPP
#define DAYDREAM_ANALYSIS_HPP

#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// What bounds an iteration: the kind of work that holds most of its critical path.
enum class bound_by : std::uint8_t { cpu, gpu, communication, memory_copies, idle };

inline constexpr std::string_view to_string(bound_by b) noexcept {
  switch (b) {
  case bound_by::cpu: return "CPU";
  case bound_by::gpu: return "GPU";
  case bound_by::communication: return "communication";
  case bound_by::memory_copies: return "memory copies";
  case bound_by::idle: return "idle gaps";
  }
  return "?";
}

/// The critical path of one iteration: the chain of tasks that ends with the iteration's
/// last-finishing task, followed back while it stays inside the iteration.
template <class Graph>
std::vector<critical_step> iteration_critical_path(const Graph& g, const replay_result& r,
                                                   std::int32_t iteration) {
  task_id last = no_task;
  g.for_each_task([&](task_id t) {
    if (g.iteration(t) == iteration && r.end[t] >= 0 && (last == no_task || r.end[t] > r.end[last]))
      last = t;
  });
  std::vector<critical_step> path;
  for (auto t = last; t != no_task && g.iteration(t) == iteration; t = r.pred[t])
    path.push_back({t, r.why[t], r.edge[t]});
  std::reverse(path.begin(), path.end());
  return path;
}

/// Where the time of one iteration goes.
struct iteration_breakdown {
  std::int32_t iteration = 0;
  time_ns duration = 0;                          ///< iteration_time
  std::array<time_ns, 4> cpu_by_phase{};         ///< CPU task time per phase (index: phase)
  std::array<time_ns, 4> gpu_by_phase{};         ///< GPU, copy and communication time per phase
  std::vector<std::pair<resource_id, time_ns>> busy; ///< per resource, busiest first
  /// Critical-path time per kind of work: CPU, GPU kernels, communication, copies, idle.
  std::array<time_ns, 5> critical{};
  bound_by bound = bound_by::idle;
  /// Critical-path time per (layer, phase), largest first.
  std::vector<std::pair<std::pair<std::string, phase>, time_ns>> critical_by_layer;
};

/// Breaks iteration `iteration` of a replay down by phase, resource and critical path.
template <class Graph>
iteration_breakdown breakdown(const Graph& g, const replay_result& r, std::int32_t iteration) {
  iteration_breakdown b;
  b.iteration = iteration;
  b.duration = iteration_time(g, r, iteration);
  std::map<resource_id, time_ns> busy;
  g.for_each_task([&](task_id t) {
    if (g.iteration(t) != iteration || r.start[t] < 0) return;
    auto d = r.end[t] - r.start[t];
    auto p = static_cast<std::size_t>(g.phase_of(t));
    if (g.template is<cpu_task>(t)) b.cpu_by_phase[p] += d;
    else b.gpu_by_phase[p] += d;
    if (g.resource_of(t) != no_resource) busy[g.resource_of(t)] += d;
  });
  for (auto& [res, d] : busy) b.busy.push_back({res, d});
  std::stable_sort(b.busy.begin(), b.busy.end(), [](auto& x, auto& y) { return x.second > y.second; });

  auto path = iteration_critical_path(g, r, iteration);
  std::map<std::pair<std::string, phase>, time_ns> by_layer;
  time_ns prev_end = -1;
  for (auto& step : path) {
    auto t = step.task;
    auto d = r.end[t] - r.start[t];
    std::size_t k = g.template is<cpu_task>(t) ? 0 : g.template is<comm_task>(t) ? 2
                    : g.template is<memcpy_task>(t) ? 3 : 1;
    b.critical[k] += d;
    if (prev_end >= 0 && r.start[t] > prev_end) b.critical[4] += r.start[t] - prev_end;
    prev_end = r.end[t];
    by_layer[{std::string(g.layer(t)), g.phase_of(t)}] += d;
  }
  auto top = std::max_element(b.critical.begin(), b.critical.end()) - b.critical.begin();
  constexpr bound_by order[] = {bound_by::cpu, bound_by::gpu, bound_by::communication,
                                bound_by::memory_copies, bound_by::idle};
  b.bound = order[top];
  for (auto& [k, d] : by_layer) b.critical_by_layer.push_back({k, d});
  std::stable_sort(b.critical_by_layer.begin(), b.critical_by_layer.end(),
                   [](auto& x, auto& y) { return x.second > y.second; });
  return b;
}

} // namespace daydream

#endif
