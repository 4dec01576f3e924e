// Defines ps::sweep: throughput against the number of workers, the saturation point and the coarse models beside it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_SWEEP_HPP
#define DAYDREAM_PS_SWEEP_HPP

#include <daydream/ps/baselines.hpp>
#include <daydream/ps/config.hpp>
#include <daydream/ps/model.hpp>
#include <daydream/ps/simulate.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace daydream::ps {

/// One number of workers of a sweep.
struct sweep_point {
  std::uint32_t workers = 0;
  result sim;                 ///< the simulation
  double cynthia = 0;         ///< steps per second, Cynthia's formula
  double queueing = 0;        ///< steps per second, the three-phase queueing model
};

/// A sweep over numbers of workers.
struct sweep_result {
  std::vector<sweep_point> points;        ///< in the order of the workers given
  std::vector<std::uint32_t> server_of;   ///< the assignment used
  std::vector<double> server_bytes;       ///< bytes per server and step, each way
  /// The first number of workers after which the next one in the list gains less than
  /// 5% throughput; nothing if every step of the list gains 5% or more.
  std::optional<std::uint32_t> saturation;
};

/// The saturation point of `points` (see sweep_result::saturation): the first entry
/// whose successor's steps per second is below `1 + gain` times its own.
inline std::optional<std::uint32_t> saturation_point(const std::vector<sweep_point>& points, double gain = 0.05) {
  for (std::size_t k = 0; k + 1 < points.size(); ++k)
    if (points[k + 1].sim.steps_per_s < (1 + gain) * points[k].sim.steps_per_s) return points[k].workers;
  return std::nullopt;
}

/// Simulates `m` for every number of `workers` with the rest of `base` (its
/// `server_of`, when empty, is the greedy assignment for base.servers, with `pinned`
/// as in assign_servers), and computes the coarse models beside each. With `period` >
/// 0, W workers start `period` / W apart (config::stagger); else as `base` says.
inline sweep_result sweep(const model& m, config base, const std::vector<std::uint32_t>& workers,
                          const std::vector<std::uint32_t>& pinned = {}, double period = 0) {
  sweep_result out;
  if (base.server_of.empty()) base.server_of = assign_servers(m.tensors, base.servers, pinned);
  out.server_of = base.server_of;
  out.server_bytes.assign(base.servers, 0);
  for (std::size_t i = 0; i < m.tensors.size(); ++i)
    if (base.server_of[i] < base.servers) out.server_bytes[base.server_of[i]] += m.tensors[i].bytes;
  const coarse_step cs{m.compute_ns, m.update_ns, out.server_bytes, base.bandwidth};
  for (auto w : workers) {
    config c = base;
    c.workers = w;
    if (period > 0) c.stagger = period / double(w);
    sweep_point p;
    p.workers = w;
    p.sim = simulate_training(m.steps, m.tensors, c);
    p.cynthia = cynthia_steps_per_s(cs, w);
    p.queueing = queueing_steps_per_s(cs, w);
    out.points.push_back(std::move(p));
  }
  out.saturation = saturation_point(out.points);
  return out;
}

} // namespace daydream::ps

#endif
