// Defines simulate_strategy: a strategy compiled, replayed and read (iteration time, throughput, memory, busiest links, what bounds it).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_SIMULATE_HPP
#define DAYDREAM_STRATEGY_SIMULATE_HPP

#include <daydream/graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/strategy/busiest_links.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compile.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace daydream::strategy {

/// What simulate_strategy predicts for one strategy.
struct strategy_evaluation {
  strategy_spec strategy;
  std::string name;            ///< strategy_plan::name (the spec for a uniform one)
  time_ns predicted = 0;       ///< iteration time
  double samples_per_s = 0;    ///< global batch / iteration time
  double global_batch = 0;     ///< samples per iteration, all replicas
  double peak_memory = 0;      ///< the largest device's peak, bytes
  bool oom = false;            ///< peak_memory above the cluster's device memory
  comm_bytes comm;             ///< bytes each device sends per iteration (mean over devices)
  std::vector<stage_memory> memory; ///< by stage
  std::vector<std::pair<std::size_t, std::size_t>> stages;
  link_use dp_link, tp_link, pp_link; ///< the busiest link of each kind (busiest_links)
  std::uint32_t busiest_device = 0;   ///< the device the breakdown is of (its rank)
  /// Breakdown of the iteration on its busiest device (they add up to `predicted`).
  /// dp_exposed: gradient reduction between the last backward and the update, plus what
  /// the gradient queue runs after the update (ZeRO-1/2's all-gather).
  time_ns compute = 0, tp_comm = 0, dp_exposed = 0, update = 0, other = 0, bubble = 0;
  /// What bounds the iteration: "compute", "pipeline bubble", "tensor-parallel all-reduces over ...",
  /// "data-parallel gradient sync over ...", "time outside the layers".
  std::string bound;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// By device (rank), what the breakdown of an iteration reads from a replay: the time of
/// its forward and backward kernels, of its tensor-parallel communications (issue to
/// done), the end of its backward (tensor-parallel communications of the backward
/// included), the start and time of its update, the end of its gradient queue.
struct device_times {
  std::vector<time_ns> compute, tp_comm, backward_end, update_start, update, gradients_end;
  explicit device_times(std::size_t n)
      : compute(n, 0), tp_comm(n, 0), backward_end(n, 0), update_start(n, 0), update(n, 0), gradients_end(n, 0) {}
};

/// device_times of replay `r` of `cs`.
inline device_times read_device_times(const compiled_strategy& cs, const replay_result& r) {
  const std::size_t n = cs.compute.size();
  device_times x(n);
  std::vector<std::int32_t> device_of(cs.g.resource_count(), -1);
  for (std::size_t d = 0; d < n; ++d) device_of[cs.compute[d]] = std::int32_t(d);
  cs.g.for_each_task([&](task_id t) {
    const auto res = cs.g.resource_of(t);
    if (res == no_resource || device_of[res] < 0) return;
    const auto d = std::size_t(device_of[res]);
    const auto ph = cs.g.phase_of(t);
    if (ph == phase::forward || ph == phase::backward) x.compute[d] += r.duration(t);
    if (ph == phase::backward) x.backward_end[d] = std::max(x.backward_end[d], r.end[t]);
    if (ph == phase::weight_update) {
      x.update_start[d] = r.start[t];
      x.update[d] = r.duration(t);
    }
  });
  for (auto& u : cs.queue_uses) {
    const auto d = u.device;
    if (u.kind == comm_kind::tp) {
      x.tp_comm[d] += r.end[u.done] - r.start[u.issue];
      if (cs.g.phase_of(u.issue) == phase::backward) x.backward_end[d] = std::max(x.backward_end[d], r.end[u.done]);
    }
    if (u.queue == device_queue::gradients) x.gradients_end[d] = std::max(x.gradients_end[d], r.end[u.done]);
  }
  return x;
}

/// What bounds the iteration of `e` (strategy `s`): the largest of its bubble,
/// tensor-parallel communication, exposed gradient sync and time outside the layers when
/// it is more than a tenth of the iteration, else computation.
inline std::string bound_of(const strategy_evaluation& e, const strategy_spec& s) {
  std::vector<std::pair<time_ns, std::string>> parts{
      {e.bubble, s.pp > 1 ? "pipeline bubble (" + std::to_string(s.pp) + " stages, " + std::to_string(s.micro) +
                                " micro-batches; sends over " + e.pp_link.describe() + ")"
                          : "waiting (nothing runs on the busiest device)"},
      {e.tp_comm, "tensor-parallel all-reduces over " + e.tp_link.describe()},
      {e.dp_exposed, "data-parallel gradient sync" + std::string(s.zero ? " and ZeRO gathers" : "") + " over " +
                         e.dp_link.describe() + " not hidden by computation"},
      {e.other, "time outside the layers (kept as traced)"}};
  auto worst = std::max_element(parts.begin(), parts.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return worst->first * 10 > e.predicted ? worst->second : "compute";
}

/// The breakdown of the iteration of `e` on its busiest device (the most computation; the
/// lowest rank among equals) of replay `r` of `cs`, and what bounds it.
inline void read_breakdown(strategy_evaluation& e, const compiled_strategy& cs, const replay_result& r,
                           const model_profile& m) {
  const auto x = read_device_times(cs, r);
  const auto k = static_cast<std::size_t>(std::max_element(x.compute.begin(), x.compute.end()) - x.compute.begin());
  e.busiest_device = std::uint32_t(k);
  e.compute = x.compute[k];
  e.tp_comm = x.tp_comm[k];
  e.update = x.update[k];
  e.other = m.other;
  // Gradient sync before the update, and ZeRO's gather after it, that nothing hides.
  e.dp_exposed = std::max<time_ns>(0, x.update_start[k] - x.backward_end[k]) +
                 std::max<time_ns>(0, x.gradients_end[k] - (x.update_start[k] + x.update[k]));
  e.bubble = std::max<time_ns>(0, e.predicted - e.compute - e.tp_comm - e.update - e.other - e.dp_exposed);
  e.bound = bound_of(e, cs.strategy);
}

} // namespace detail
//! @endcond

/// Compiles `plan` (compile()), replays the graph of every device with the overlap
/// factor, and reads the iteration time, throughput, memory, the busiest link of each
/// kind of communication and what bounds the iteration on the busiest device (the most
/// computation; the lowest rank among equals).
inline strategy_evaluation simulate_strategy(const strategy_plan& plan, const cluster_spec& c,
                                             const model_profile& m, const simulate_options& o = {}) {
  auto cs = compile(plan, c, m, o);
  replay_options ro;
  ro.overlap_slowdown = o.overlap_slowdown;
  auto r = replay(cs.g, trace_order_policy{}, ro);
  strategy_evaluation e;
  e.strategy = plan.spec;
  e.name = plan.name;
  e.predicted = r.makespan;
  e.global_batch = cs.global_batch;
  e.samples_per_s = r.makespan > 0 ? cs.global_batch / (double(r.makespan) / 1e9) : 0;
  for (auto& mem : cs.memory) e.peak_memory = std::max(e.peak_memory, mem.total());
  e.oom = e.peak_memory > c.memory_bytes;
  e.comm = cs.comm;
  e.memory = cs.memory;
  e.stages = cs.stages;
  auto links = busiest_links(cs, r, r.makespan);
  e.tp_link = links[0];
  e.pp_link = links[1];
  e.dp_link = links[2];
  detail::read_breakdown(e, cs, r, m);
  return e;
}

/// simulate_strategy() of the uniform plan of `s`.
inline strategy_evaluation simulate_strategy(const strategy_spec& s, const cluster_spec& c, const model_profile& m,
                                             const simulate_options& o = {}) {
  return simulate_strategy(uniform_plan(s, m), c, m, o);
}

} // namespace daydream::strategy

#endif
