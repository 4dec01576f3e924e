// Defines step_profile: where one run's steady-state step goes (by phase, kernel family, layer, operator), from a trace's own times or a replay.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_COMPARE_PROFILE_HPP
#define DAYDREAM_COMPARE_PROFILE_HPP

#include <daydream/analysis.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/semantics/kernel_family.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// The times a trace recorded, as a replay_result of its graph: every task starts at
/// its trace start (shifted so the earliest is 0) and lasts its duration. A prediction
/// and a measurement are then broken down by one code path.
inline replay_result recorded_times(const graph& g) {
  replay_result r;
  r.start.assign(g.id_bound(), -1);
  r.end.assign(g.id_bound(), -1);
  r.pred.assign(g.id_bound(), no_task);
  r.why.assign(g.id_bound(), binding::none);
  r.edge.assign(g.id_bound(), dep_kind::control);
  time_ns origin = 0;
  bool any = false;
  g.for_each_task([&](task_id t) {
    origin = any ? std::min(origin, g.trace_start(t)) : g.trace_start(t);
    any = true;
  });
  g.for_each_task([&](task_id t) {
    r.start[t] = g.trace_start(t) - origin;
    r.end[t] = r.start[t] + g.duration(t);
    r.makespan = std::max(r.makespan, r.end[t]);
    ++r.tasks;
  });
  return r;
}

/// Where one run's steady-state step goes: the iteration times and, averaged over the
/// analysed iterations, GPU time by phase, kernel family and layer, CPU and GPU busy
/// time, kernel and launch counts, and per operator its runs, CPU time and kernels.
/// Built by profile_step from a graph and the times of its tasks (a replay, or
/// recorded_times for what the trace measured).
struct step_profile {
  std::vector<std::int32_t> iterations; ///< the analysed iterations
  std::vector<time_ns> per_iteration;   ///< the step time of each (as given to profile_step)
  time_ns median = -1;                  ///< their median
  time_ns lo = -1, hi = -1;             ///< their smallest and largest
  // Everything below is per iteration (the mean over the analysed iterations), ns.
  std::array<double, 4> gpu_by_phase{}; ///< summed GPU task time (kernels, copies, transfers) per phase
  std::array<double, passes::kernel_family_count> gpu_by_family{}; ///< summed GPU task time per kernel family
  std::map<std::string, double> gpu_by_layer; ///< summed GPU task time per layer ("" for tasks in none)
  double cpu_busy = 0;        ///< busy time of the busiest CPU thread within the steps
  std::string cpu_thread;     ///< that thread's name
  double gpu_busy = 0;        ///< time within the steps with any GPU task running
  double gpu_time = 0;        ///< summed GPU task time
  double kernels = 0;         ///< GPU kernels (and copies) per iteration
  double launches = 0;        ///< CPU calls that launch GPU work per iteration
  /// Peak device memory, bytes, when known (the trace's [memory] events).
  std::optional<std::int64_t> peak_memory;
  /// One operator (the innermost `cpu_op` around a CPU slice; slices outside every
  /// operator go by their own name).
  struct op_stat {
    double runs = 0;        ///< runs of consecutive slices of it on a thread, per iteration
    double cpu = 0;         ///< its slices' summed CPU time (exclusive of nested operators)
    double kernels = 0;     ///< GPU tasks launched from inside it
    double gpu = 0;         ///< their summed time
  };
  std::map<std::string, op_stat> ops; ///< by operator name
  /// GPU tasks grouped by (name, launching operator): count and summed time per iteration.
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> kernel_groups;
};

/// `name` without the object addresses Python writes into the names of bound methods
/// ("<built-in method item of Tensor object at 0x7f5dca0adf90>" is
/// "<built-in method item of Tensor object>"): two runs of one script name the same
/// operator with different addresses.
inline std::string without_addresses(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  constexpr std::string_view at = " at 0x";
  std::size_t i = 0;
  while (i < name.size()) {
    if (name.substr(i, at.size()) == at) {
      std::size_t j = i + at.size();
      while (j < name.size() && std::isxdigit(static_cast<unsigned char>(name[j]))) ++j;
      if (j > i + at.size()) {
        i = j;
        continue;
      }
    }
    out += name[i++];
  }
  return out;
}

/// Breaks down iterations `its` of `g` with task times `r`; `step_times` are the step
/// times of those iterations (the trace's measured ones, or the replay's). Tasks count
/// for the iteration they belong to (graph::iteration); busy times are unions within
/// each iteration's span. O(V log V).
inline step_profile profile_step(const graph& g, const replay_result& r, const std::vector<std::int32_t>& its,
                                 const std::vector<time_ns>& step_times) {
  step_profile p;
  p.iterations = its;
  p.per_iteration = step_times;
  p.median = median_of(step_times);
  for (auto x : step_times) {
    if (x < 0) continue;
    p.lo = p.lo < 0 ? x : std::min(p.lo, x);
    p.hi = std::max(p.hi, x);
  }
  const std::set<std::int32_t> wanted(its.begin(), its.end());
  const double n = its.empty() ? 1.0 : double(its.size());
  passes::kernel_families fam(g);
  std::map<std::int32_t, iteration_span> spans;
  for (auto& s : iteration_spans(g, r))
    if (wanted.count(s.iteration)) spans[s.iteration] = s;

  using intervals = std::vector<std::pair<time_ns, time_ns>>;
  std::map<std::int32_t, intervals> gpu_iv;                      // by iteration
  std::map<std::pair<resource_id, std::int32_t>, intervals> cpu_iv; // by (thread, iteration)
  // Operators by interned name: the innermost operator of a CPU slice, else its own name.
  auto op_key = [&](task_id t) -> name_id {
    auto h = g.as<cpu_task>(t);
    return h && g.payload(h).op != no_name ? g.payload(h).op : g.name_id_of(t);
  };
  constexpr name_id no_launch = no_name;
  std::map<name_id, step_profile::op_stat> ops;
  std::map<std::pair<name_id, name_id>, std::pair<double, double>> groups;
  std::map<name_id, double> layers;
  g.for_each_task([&](task_id t) {
    if (t >= r.start.size() || r.start[t] < 0) return;
    const auto it = g.iteration(t);
    const bool counted = wanted.count(it) != 0;
    const auto res = g.resource_of(t);
    const bool cpu = g.is<cpu_task>(t);
    // Busy time: every task that runs inside an analysed iteration's span counts.
    for (auto& [i, s] : spans) {
      auto b = std::max(r.start[t], s.begin), e = std::min(r.end[t], s.end);
      if (e <= b) continue;
      if (cpu) cpu_iv[{res, i}].push_back({b, e});
      else gpu_iv[i].push_back({b, e});
    }
    if (!counted) return;
    const double d = double(r.end[t] - r.start[t]);
    if (cpu) {
      const auto key = op_key(t);
      auto& o = ops[key];
      o.cpu += d;
      const auto prev = prev_on_resource(g, t);
      if (prev == no_task || !g.is<cpu_task>(prev) || op_key(prev) != key) o.runs += 1;
      if (g.payload(g.as<cpu_task>(t)).call == cpu_call::launch) p.launches += 1;
      return;
    }
    p.gpu_time += d;
    p.kernels += 1;
    p.gpu_by_phase[static_cast<std::size_t>(g.phase_of(t))] += d;
    p.gpu_by_family[static_cast<std::size_t>(fam.family(t))] += d;
    layers[g.layer_id(t)] += d;
    const auto call = launch_of(g, t);
    const name_id op = call == no_task ? no_launch : op_key(call);
    auto& o = ops[op];
    o.kernels += 1;
    o.gpu += d;
    auto& kg = groups[{g.name_id_of(t), op}];
    kg.first += 1;
    kg.second += d;
  });
  auto str = [&](name_id id) {
    return id == no_launch ? std::string("(no launch recorded)") : without_addresses(g.str(id));
  };
  for (auto& [k, o] : ops) {
    auto& to = p.ops[str(k)];
    to.runs += o.runs;
    to.cpu += o.cpu;
    to.kernels += o.kernels;
    to.gpu += o.gpu;
  }
  for (auto& [k, v] : groups) {
    auto& tv = p.kernel_groups[{std::string(g.str(k.first)), str(k.second)}];
    tv.first += v.first;
    tv.second += v.second;
  }
  for (auto& [k, v] : layers) p.gpu_by_layer[std::string(g.str(k))] += v;
  for (auto& [i, s] : spans) {
    auto it = gpu_iv.find(i);
    if (it != gpu_iv.end()) p.gpu_busy += double(union_length(it->second, s.begin, s.end));
  }
  std::map<resource_id, double> per_thread;
  for (auto& [key, v] : cpu_iv) {
    auto s = spans.at(key.second);
    per_thread[key.first] += double(union_length(v, s.begin, s.end));
  }
  for (auto& [res, busy] : per_thread)
    if (busy > p.cpu_busy) {
      p.cpu_busy = busy;
      p.cpu_thread = g.resource_at(res).name;
    }
  // Means per iteration.
  p.cpu_busy /= n;
  p.gpu_busy /= n;
  p.gpu_time /= n;
  p.kernels /= n;
  p.launches /= n;
  for (auto& x : p.gpu_by_phase) x /= n;
  for (auto& x : p.gpu_by_family) x /= n;
  for (auto& [k, v] : p.gpu_by_layer) v /= n;
  for (auto& [k, o] : p.ops) {
    o.runs /= n;
    o.cpu /= n;
    o.kernels /= n;
    o.gpu /= n;
  }
  for (auto& [k, v] : p.kernel_groups) {
    v.first /= n;
    v.second /= n;
  }
  return p;
}

/// The iterations a comparison analyses in `t` and their measured step times: the
/// steady-state ones (kineto_trace::steady_state_iterations), each measured as the
/// profiler recorded it (kineto_trace::measured). A trace without iterations is one
/// iteration 0 spanning the whole trace: `g` (a copy of the trace's graph) gets every
/// task put in iteration 0.
inline std::pair<std::vector<std::int32_t>, std::vector<time_ns>> analysed_iterations(const io::kineto_trace& t,
                                                                                        graph& g) {
  std::vector<std::int32_t> its;
  std::vector<time_ns> times;
  if (t.iterations.empty()) {
    g.for_each_task([&](task_id u) { g.set_iteration(u, 0); });
    its.push_back(0);
    times.push_back(t.info.end - t.info.begin);
    return {its, times};
  }
  its = t.steady_state_iterations();
  for (auto i : its) times.push_back(t.measured(i));
  return {its, times};
}

} // namespace daydream

#endif
