// Defines device_span and device_spans: every device's tracks in a replay of a compiled strategy.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_DEVICE_SPANS_HPP
#define DAYDREAM_STRATEGY_DEVICE_SPANS_HPP

#include <daydream/graph.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/resource.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

namespace daydream::strategy {

/// A span on one of a device's tracks in a replay of a compiled strategy.
struct device_span {
  std::uint32_t device = 0; ///< rank
  std::uint8_t track = 0;   ///< 0: computation, 1: feature queue, 2: gradient queue
  task_id task = no_task;   ///< the kernel, or the communication's issue task (its name, layer, phase)
  time_ns start = 0, end = 0;
};

/// The tracks of every device in replay `r` of `cs`: its kernels on the computation
/// track, and each communication on its queue's track from its issue to when it is done
/// on the device. Sorted by device, track, start.
inline std::vector<device_span> device_spans(const compiled_strategy& cs, const replay_result& r) {
  std::vector<device_span> out;
  std::vector<std::int32_t> device_of(cs.g.resource_count(), -1);
  for (std::size_t d = 0; d < cs.compute.size(); ++d) device_of[cs.compute[d]] = std::int32_t(d);
  cs.g.for_each_task([&](task_id x) {
    const auto res = cs.g.resource_of(x);
    if (res != no_resource && device_of[res] >= 0 && r.start[x] >= 0)
      out.push_back({std::uint32_t(device_of[res]), 0, x, r.start[x], r.end[x]});
  });
  for (auto& u : cs.queue_uses)
    out.push_back({u.device, std::uint8_t(u.queue == device_queue::features ? 1 : 2), u.issue, r.start[u.issue],
                   r.end[u.done]});
  std::sort(out.begin(), out.end(), [](const device_span& a, const device_span& b) {
    return std::tie(a.device, a.track, a.start, a.task) < std::tie(b.device, b.track, b.start, b.task);
  });
  return out;
}

} // namespace daydream::strategy

#endif
