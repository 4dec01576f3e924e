// Defines what bounds an iteration, in words: the kind of work holding its critical path, the resource that does it, and the critical path by layer kind and phase.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_WHATIF_BOUND_HPP
#define DAYDREAM_WHATIF_BOUND_HPP

#include <daydream/analysis.hpp>
#include <daydream/graph.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace daydream::whatif {

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline double percent(time_ns part, time_ns whole) { return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0; }
} // namespace detail
//! @endcond

/// One line saying what bounds an iteration, from its breakdown: GPU-, CPU-, CPU
/// launch-, input-, communication-, copy- or latency-bound, the busiest resource of that
/// kind on the critical path and how busy it is, and the share of the critical path the
/// bounding work holds ("GPU-bound: stream 7 (gpu 0) busy 97%; GPU kernels hold 51% of
/// the critical path").
inline std::string explain_bound(const graph& g, const iteration_breakdown& b) {
  using detail::percent;
  if (b.duration <= 0) return "nothing ran in the iteration";
  auto busy_of = [&](resource_id r) {
    for (auto& [res, t] : b.busy)
      if (res == r) return t;
    return time_ns(0);
  };
  auto top_resource = [&](std::initializer_list<resource_kind> kinds) -> std::string {
    for (auto& [res, t] : b.critical_by_resource) {
      auto k = g.resource_at(res).kind;
      if (std::find(kinds.begin(), kinds.end(), k) != kinds.end())
        return fmt::format("{} busy {:.0f}%", g.resource_at(res).name, percent(busy_of(res), b.duration));
    }
    return "";
  };
  auto with = [](std::string head, std::string res, std::string tail) {
    return res.empty() ? head + ": " + tail : head + ": " + res + "; " + tail;
  };
  // input-bound is CPU work on the critical path (critical[0]); the others index it directly.
  const auto kind = b.bound == bound_by::input ? bound_by::cpu : b.bound;
  const double on_path = percent(b.critical[static_cast<int>(kind)], b.duration);
  switch (b.bound) {
  case bound_by::gpu:
    return with("GPU-bound", top_resource({resource_kind::gpu_stream}),
                fmt::format("GPU kernels hold {:.0f}% of the critical path", on_path));
  case bound_by::cpu:
    if (2 * b.critical_launch >= b.critical[0])
      return with("CPU launch-bound", top_resource({resource_kind::cpu_thread}),
                  fmt::format("kernel launch calls hold {:.0f}% of the critical path, the GPUs are busy {:.0f}%",
                              percent(b.critical_launch, b.duration), percent(b.gpu_busy, b.duration)));
    return with("CPU-bound", top_resource({resource_kind::cpu_thread}),
                fmt::format("CPU work holds {:.0f}% of the critical path{}, the GPUs are busy {:.0f}%", on_path,
                            percent(b.critical_cpu_gaps, b.duration) >= 0.5
                                ? fmt::format(" ({:.0f}% between traced operators: Python, data loading)",
                                              percent(b.critical_cpu_gaps, b.duration))
                                : std::string(),
                            percent(b.gpu_busy, b.duration)));
  case bound_by::input:
    return with("input-bound", top_resource({resource_kind::cpu_thread}),
                fmt::format("{:.0f}% of the step waits in DataLoader.__next__ on the training thread (data loading "
                            "holds {:.0f}% of the critical path's CPU time), the GPUs are busy {:.0f}%",
                            percent(b.critical_input, b.duration), percent(b.critical_input, b.critical[0]),
                            percent(b.gpu_busy, b.duration)));
  case bound_by::communication:
    return with("communication-bound",
                top_resource({resource_kind::link, resource_kind::gpu_stream, resource_kind::other}),
                fmt::format("communication holds {:.0f}% of the critical path ({:.0f}% of communication time "
                            "overlaps GPU computation)",
                            on_path, percent(b.comm_overlapped, b.comm_busy)));
  case bound_by::memory_copies:
    return with("copy-bound", top_resource({resource_kind::copy_engine, resource_kind::gpu_stream}),
                fmt::format("memory copies hold {:.0f}% of the critical path", on_path));
  case bound_by::idle:
    return fmt::format("latency-bound: {:.0f}% of the critical path is idle time between tasks (waits for "
                       "synchronization, data loading or launch latency), the GPUs are busy {:.0f}%",
                       on_path, percent(b.gpu_busy, b.duration));
  }
  return "";
}

/// One row of a critical path summarized by kind of layer: the layers of one kind
/// (layer_kind: "Linear" for Linear_3) in one phase.
struct critical_group {
  std::string layer;         ///< the kind of layer ("(no layer)" for none)
  phase ph{};                ///< the phase
  time_ns time = 0;          ///< critical-path time of its layers in that phase
  std::size_t instances = 0; ///< distinct layers
};

/// The critical path of breakdown `b` summarized by kind of layer and phase, largest first
/// (stable for ties). The rows and the path's gaps and idle time (b.critical_cpu_gaps,
/// b.critical[4]) add up to the iteration.
inline std::vector<critical_group> critical_groups(const iteration_breakdown& b) {
  std::map<std::pair<std::string, phase>, critical_group> m;
  for (auto& [k, d] : b.critical_by_layer) {
    std::string kind = k.first.empty() ? std::string("(no layer)") : std::string(layer_kind(k.first));
    auto& gr = m[{kind, k.second}];
    gr.layer = kind;
    gr.ph = k.second;
    gr.time += d;
    ++gr.instances;
  }
  std::vector<critical_group> out;
  for (auto& [k, gr] : m) out.push_back(gr);
  std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.time > y.time; });
  return out;
}

} // namespace daydream::whatif

#endif
