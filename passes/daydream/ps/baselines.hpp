// Defines ps::cynthia_steps_per_s and ps::queueing_steps_per_s: the coarse throughput models Li et al. compare against.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_BASELINES_HPP
#define DAYDREAM_PS_BASELINES_HPP

#include <daydream/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace daydream::ps {

/// What the coarse models know of a step: sequential phases, no overlap.
struct coarse_step {
  double compute_ns = 0;             ///< T_P: the worker's computation per step
  double update_ns = 0;              ///< the server's update per step
  std::vector<double> server_bytes;  ///< bytes each server exchanges with a worker per step, each way
  double bandwidth = 10e9 / 8;       ///< bytes per second of a link
};

/// Cynthia's formula (Zheng et al., ICPP'19, as quoted by Li et al.): W workers process
/// W / (T_P max(1, W U_1) + 2 T_C) steps per second (times the batch K for samples),
/// where T_C is the transfer time of the model (of the busiest server's share, with
/// several servers) and U_1 = 2 T_C / (T_P + 2 T_C) is the network utilization of one
/// worker that computes and then sends and receives. Throws daydream::usage_error for
/// 0 workers or a bandwidth that is not positive.
inline double cynthia_steps_per_s(const coarse_step& s, std::uint32_t workers) {
  if (workers == 0) throw usage_error("daydream ps: the number of workers must be at least 1");
  if (!(s.bandwidth > 0)) throw usage_error("daydream ps: the bandwidth must be positive");
  const double bytes = s.server_bytes.empty() ? 0 : *std::max_element(s.server_bytes.begin(), s.server_bytes.end());
  const double tc = bytes / s.bandwidth * 1e9;
  const double tp = s.compute_ns;
  const double u1 = tp + 2 * tc > 0 ? 2 * tc / (tp + 2 * tc) : 0;
  const double w = double(workers);
  const double den = tp * std::max(1.0, w * u1) + 2 * tc;
  return den > 0 ? w / den * 1e9 : 0;
}

/// A queueing model of three sequential phases (after Lin et al., the model Li et al.
/// call [10]): W workers circulate in a closed network through each server's downlink
/// (a queue with service time bytes/B), their own computation (a delay of T_P), each
/// server's uplink (a queue) and the server's update (a delay). Solved exactly by mean
/// value analysis (Reiser & Lavenberg), O(W M). Steps per second of all workers.
/// Throws daydream::usage_error for 0 workers or a bandwidth that is not positive.
inline double queueing_steps_per_s(const coarse_step& s, std::uint32_t workers) {
  if (workers == 0) throw usage_error("daydream ps: the number of workers must be at least 1");
  if (!(s.bandwidth > 0)) throw usage_error("daydream ps: the bandwidth must be positive");
  std::vector<double> demand; // queueing stations: every server's downlink and uplink
  for (double b : s.server_bytes) {
    demand.push_back(b / s.bandwidth * 1e9);
    demand.push_back(b / s.bandwidth * 1e9);
  }
  const double delay = s.compute_ns + s.update_ns;
  std::vector<double> q(demand.size(), 0);
  double x = 0;
  for (std::uint32_t n = 1; n <= workers; ++n) {
    double r = delay;
    for (std::size_t k = 0; k < demand.size(); ++k) r += demand[k] * (1 + q[k]);
    if (!(r > 0)) return 0;
    x = double(n) / r;
    for (std::size_t k = 0; k < demand.size(); ++k) q[k] = x * demand[k] * (1 + q[k]);
  }
  return x * 1e9;
}

} // namespace daydream::ps

#endif
