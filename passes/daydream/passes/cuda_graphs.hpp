// Defines the cuda_graphs pass: each step's launches captured and replayed as CUDA graphs.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_CUDA_GRAPHS_HPP
#define DAYDREAM_PASSES_CUDA_GRAPHS_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/format.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// CUDA graphs: what if each step's GPU work were captured once and replayed as CUDA
/// graphs (`torch.cuda.graph` around the whole step, or `torch.compile(mode=
/// "reduce-overhead")` around the model), instead of launched operator by operator.
///
/// Cost model, per step (iteration) and CPU thread, over the tasks of the captured
/// phases (`scope=step`: every phase of the step but data loading; `scope=model`: the
/// forward and backward, the optimizer step staying eager):
///
/// 1. **What cannot be captured stays eager**, and splits the step into captured
///    regions: a CPU task that waits for the GPU (a sync dependency: `.item()`,
///    `cudaStreamSynchronize`, a blocking copy), one that copies between host and device
///    (a graph's inputs are copied into its static buffers before it is replayed), an
///    operator whose output shape depends on the data (`nonzero`, `unique`,
///    `masked_select`), and a launch that is already a graph launch. The report names
///    each kind found and how often.
/// 2. **A captured region is one graph launch.** Its CPU tasks (the operators, their
///    runtime calls and the Python between them) take no time, but for one call, at
///    the region's first task, that costs `launch_us + node_us` x the GPU tasks the
///    region launched (the graph's nodes). Its GPU tasks keep their durations and
///    become ready when that call returns; between two of them the GPU idles `gap_us`
///    (a graph's on-device launch gap) instead of what the trace showed. A region that
///    launches no GPU work is not a graph: its CPU work stays as traced.
/// 3. **Launch cost.** When the trace has graph launches (`cudaGraphLaunch`,
///    `hipGraphLaunch`), `launch_us` and `node_us` are fit to them (their CPU time
///    against the GPU tasks each launched); otherwise the defaults, 20 us + 2 us per
///    node, are the fit to graph launches recorded under the profiler on an H100 and an
///    H200 (PyTorch 2.11, CUDA 13: 20-30 us for 1-3 nodes, 44-110 us for 38, about
///    530 us for 238). They are a traced step's costs: without the profiler a graph
///    launch costs less.
///
/// A step that is GPU-bound gains little, and the report says so (the share of the
/// traced step the GPU is busy). A trace whose GPU time is already mostly launched by
/// graph launches is left alone. Not modelled: the capture itself (once, before the
/// first step), the memory of a graph's private pool, and graph breaks a compiler would
/// add (a `scope=model` region is the forward or backward as traced).
///
///     daydream::apply(g, daydream::passes::cuda_graphs{});                  // the whole step
///     daydream::apply(g, daydream::passes::cuda_graphs{.scope = "model"});  // forward + backward
struct cuda_graphs {
  static constexpr std::string_view name = "cuda_graphs"; ///< the --pass name
  std::string scope = "step"; ///< "step" (all but data loading) or "model" (forward and backward)
  double launch_us = -1;      ///< CPU cost of one graph launch, us; < 0: fit to the trace, else 20
  double node_us = -1;        ///< CPU cost per node of a graph launch, us; < 0: fit to the trace, else 2
  double gap_us = 0.5;        ///< the GPU's idle time between two nodes of a graph, us

  static constexpr double default_launch_us = 20; ///< launch_us when the trace has no graph launch
  static constexpr double default_node_us = 2;    ///< node_us when the trace has no graph launch

  /// Whether some CPU task of `g` launches GPU work.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Why the pass cannot apply to `g` ("" when it can).
  static std::string not_applicable(const graph& g) {
    for (auto t : tasks(g))
      if (!g.is<cpu_task>(t) && launch_of(g, t) != no_task) return {};
    return "no GPU work in the trace is launched by a CPU call (record with ProfilerActivity.CUDA): there are no "
           "launches to capture";
  }

  /// Captures each step's regions; returns what was captured, what stayed eager and
  /// why, and the launch cost used. Invalidates nothing.
  pass_report operator()(graph& g) const {
    check();
    pass_report rep;
    rep.pass = std::string(name);
    if (auto why = not_applicable(g); !why.empty()) {
      rep.not_applied(why);
      return rep;
    }
    // 1. Graph launches the trace already has: the launch cost, and what is left alone.
    const auto existing = existing_launches(g);
    time_ns gpu_time = 0;
    for (auto t : tasks(g))
      if (!g.is<cpu_task>(t)) gpu_time += g.duration(t);
    if (gpu_time > 0 && 2 * existing.graphed_time >= gpu_time) {
      rep.not_applied(fmt::format("the trace already launches {:.0f}% of its GPU time with graph launches ({} calls): "
                                  "it runs as CUDA graphs",
                                  100.0 * double(existing.graphed_time) / double(gpu_time), existing.calls));
      return rep;
    }
    const auto fitted = existing.fit(); // the defaults without graph launches to fit
    double base_us = fitted.first, per_node_us = fitted.second; // plain variables: the lambda below uses them
    std::string cost_source = existing.calls == 0
                                  ? std::string("defaults: the trace has no graph launch")
                                  : "fit to the trace's " + std::to_string(existing.calls) + " graph launches";
    if (launch_us >= 0) base_us = launch_us;
    if (node_us >= 0) per_node_us = node_us;
    if (launch_us >= 0 && node_us >= 0) cost_source = "given";
    const auto busy = gpu_busy_share(g);
    // 2. The captured tasks, per (iteration, thread), in trace order.
    std::map<std::pair<std::int32_t, resource_id>, std::vector<task_id>> threads;
    for (auto t : tasks<cpu_task>(g))
      if (g.iteration(t) >= 0) threads[{g.iteration(t), g.resource_of(t)}].push_back(t);
    std::map<std::string, std::size_t> eager; // why -> count
    std::size_t regions = 0, captured = 0, nodes_total = 0;
    time_ns cpu_removed = 0, launch_cost = 0;
    const auto gap = static_cast<time_ns>(std::llround(gap_us * 1e3));
    for (auto& [key, ts] : threads) {
      sort_in_trace_order(g, ts);
      std::vector<task_id> region;
      auto close = [&] {
        std::vector<task_id> nodes; // the GPU work the region launches
        for (auto c : region)
          for (auto k : launched_by(g, c)) nodes.push_back(k);
        if (nodes.empty()) { // no GPU work: nothing to replay as a graph, the CPU work stays
          region.clear();
          return;
        }
        for (auto k : nodes) set_gap(g, k, gap);
        time_ns before = 0;
        for (auto c : region) {
          before += g.duration(c) + g.gap(c);
          set_duration(g, c, 0);
          set_gap(g, c, 0);
        }
        const auto cost = static_cast<time_ns>(std::llround((base_us + per_node_us * double(nodes.size())) * 1e3));
        set_duration(g, region.front(), cost);
        launch_cost += cost;
        ++regions;
        cpu_removed += before;
        captured += region.size();
        nodes_total += nodes.size();
        region.clear();
      };
      for (auto t : ts) {
        if (!in_scope(g, t)) {
          close(); // the phases not captured run between the graphs, as traced
        } else if (auto why = uncapturable(g, t); !why.empty()) {
          ++eager[why];
          close();
        } else {
          region.push_back(t);
        }
      }
      close();
    }
    if (regions == 0) {
      rep.not_applied("no CPU task of a step in the captured phases (" + scope_text() +
                      ") launches GPU work outside what must stay eager: nothing to replay as a graph");
      return rep;
    }
    rep.add("scope", scope_text());
    rep.add_count("graph launches (captured regions)", std::int64_t(regions));
    rep.add("CPU tasks captured",
            std::to_string(captured) + ", " + format_time(cpu_removed) + " of CPU time and idle time between them",
            report_value::of_time(double(cpu_removed)).with_count(std::int64_t(captured)));
    rep.add_count("GPU tasks in graphs", std::int64_t(nodes_total));
    rep.add("graph launch cost", fmt::format("{:.1f} us + {:.2f} us per node ({}); {} in all", base_us, per_node_us,
                                             cost_source, format_time(launch_cost)),
            report_value::of_time(double(launch_cost)));
    rep.add("gap between a graph's nodes", fmt::format("{:.2f} us", gap_us), report_value::of_time(gap_us * 1e3));
    if (existing.calls > 0)
      rep.add_count("graph launches already in the trace (unchanged)", std::int64_t(existing.calls));
    std::string left;
    for (auto& [why, n] : eager) left += (left.empty() ? "" : "; ") + why + " x" + std::to_string(n);
    rep.add("left eager", left.empty() ? std::string("nothing") : left);
    if (busy >= 0) {
      rep.add("GPU busy in the traced steps", fmt::format("{:.0f}%", 100 * busy), report_value::of_ratio(busy));
      if (busy >= 0.9)
        rep.note(fmt::format("the traced steps are GPU-bound (the GPU is busy {:.0f}% of them): removing launch "
                             "overhead gains little",
                             100 * busy));
    }
    return rep;
  }

  /// Throws daydream::error (usage_error for `scope`) when a parameter is out of range;
  /// the call operator checks them too.
  void check() const {
    if (scope != "step" && scope != "model")
      throw usage_error("daydream: pass 'cuda_graphs': scope must be step or model (got '" + scope + "')");
    if (!std::isfinite(launch_us) || !std::isfinite(node_us) || !(gap_us >= 0) || !std::isfinite(gap_us))
      throw error("daydream: pass 'cuda_graphs': launch_us, node_us and gap_us must be finite, gap_us >= 0");
  }

private:
  std::string scope_text() const {
    return scope == "step" ? "step: every phase but data loading" : "model: forward and backward";
  }

  static bool graph_launch_name(std::string_view n) { return n.find("GraphLaunch") != std::string_view::npos; }

  static bool data_loading(std::string_view n) { return n.find("DataLoader") != std::string_view::npos; }

  bool in_scope(const graph& g, task_id t) const {
    const auto ph = g.phase_of(t);
    if (scope == "model") return ph == phase::forward || ph == phase::backward;
    return !data_loading(g.name(t));
  }

  /// Why CPU task `t` cannot be captured ("" when it can).
  static std::string uncapturable(const graph& g, task_id t) {
    const auto n = g.name(t);
    if (graph_launch_name(n)) return "graph launches already in the trace";
    for (auto d : g.predecessors(t))
      if (d.kind == dep_kind::sync) return std::string(n) + " (waits for the GPU)";
    for (auto k : launched_by(g, t))
      if (auto m = g.as<memcpy_task>(k)) {
        const auto dir = g.payload(m).direction;
        if (dir == copy_kind::h2d || dir == copy_kind::d2h)
          return std::string(n) + " (a copy between host and device)";
      }
    static const std::regex data_dependent(R"(aten::(item|_local_scalar_dense|nonzero|unique|_unique2|masked_select)\b)");
    if (std::regex_search(n.begin(), n.end(), data_dependent)) return std::string(n) + " (data-dependent: a host sync)";
    if (n.find("Synchronize") != std::string_view::npos) return std::string(n) + " (waits for the GPU)";
    return {};
  }

  /// The graph launches of the trace: their count, CPU time, nodes, and the GPU time of
  /// what they launched.
  struct launches {
    std::size_t calls = 0;
    time_ns graphed_time = 0;
    std::vector<std::pair<double, double>> points; ///< (nodes, CPU us) per launching call

    /// (base us, per-node us) fit to the points by least squares (both >= 0); the
    /// defaults when there is nothing to fit.
    std::pair<double, double> fit() const {
      if (points.empty()) return {default_launch_us, default_node_us};
      double sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (auto [x, y] : points) { sx += x; sy += y; sxx += x * x; sxy += x * y; }
      const double n = double(points.size()), den = n * sxx - sx * sx;
      if (points.size() < 2 || den <= 1e-9) {
        const double per = std::max(0.0, (sy / n - default_launch_us) / std::max(1.0, sx / n));
        return {std::min(default_launch_us, sy / n), per};
      }
      double per = (n * sxy - sx * sy) / den, base = (sy - per * sx) / n;
      if (per < 0) { per = 0; base = sy / n; }
      if (base < 0) { base = 0; per = sxy / sxx; }
      return {base, per};
    }
  };

  static launches existing_launches(const graph& g) {
    launches L;
    std::map<resource_id, std::vector<task_id>> calls; // graph-launch tasks per thread
    for (auto t : tasks<cpu_task>(g))
      if (graph_launch_name(g.name(t))) calls[g.resource_of(t)].push_back(t);
    for (auto& [r, ts] : calls) {
      sort_in_trace_order(g, ts);
      // A graph launch the ingest cut in two: the piece that launches, then the rest of
      // the call (same name, nothing launched) right after it.
      for (std::size_t i = 0; i < ts.size(); ++i) {
        auto nodes = launched_by(g, ts[i]);
        if (nodes.empty()) continue;
        time_ns cpu = g.duration(ts[i]);
        if (i + 1 < ts.size() && launched_by(g, ts[i + 1]).empty() &&
            g.trace_start(ts[i + 1]) == g.trace_start(ts[i]) + g.duration(ts[i]))
          cpu += g.duration(ts[i + 1]);
        ++L.calls;
        for (auto k : nodes) L.graphed_time += g.duration(k);
        L.points.emplace_back(double(nodes.size()), double(cpu) / 1e3);
      }
    }
    return L;
  }

  /// The share of the traced steps the GPU is busy: the GPU time of the steps' tasks
  /// over the steps' spans in the trace (-1 when the graph has no steps).
  static double gpu_busy_share(const graph& g) {
    std::map<std::int32_t, std::pair<time_ns, time_ns>> span; // iteration -> [first start, last end)
    std::map<std::int32_t, time_ns> gpu;
    for (auto t : tasks(g)) {
      const auto it = g.iteration(t);
      if (it < 0) continue;
      auto [p, fresh] = span.try_emplace(it, g.trace_start(t), g.trace_start(t) + g.duration(t));
      if (!fresh) {
        p->second.first = std::min(p->second.first, g.trace_start(t));
        p->second.second = std::max(p->second.second, g.trace_start(t) + g.duration(t));
      }
      if (!g.is<cpu_task>(t)) gpu[it] += g.duration(t);
    }
    time_ns total = 0, busy = 0;
    for (auto& [it, s] : span) {
      total += s.second - s.first;
      busy += std::min(gpu[it], s.second - s.first);
    }
    return total > 0 ? double(busy) / double(total) : -1;
  }
};

} // namespace daydream::passes

#endif
