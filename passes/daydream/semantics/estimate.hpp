// Defines size_rate and measure_rate: durations of new kernels from comparable kernels of the trace, scaled by size.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_ESTIMATE_HPP
#define DAYDREAM_SEMANTICS_ESTIMATE_HPP

#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/select.hpp>
#include <daydream/launch.hpp>
#include <daydream/task.hpp>

#include <cmath>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

namespace daydream::passes {

/// The tensor bytes of the operator that launched kernel `k`: the `tensor_bytes` of
/// its launch call or, when the call carries none, of the nearest CPU task before it on
/// its thread that belongs to the same operator (a few steps back at most). 0 when
/// unknown.
inline std::uint64_t launch_tensor_bytes(const graph& g, task_id k) {
  auto call = launch_of(g, k);
  if (call == no_task) return 0;
  const auto op = g.payload(g.as<cpu_task>(call)).op;
  for (int step = 0; call != no_task && step < 8; ++step) {
    auto h = g.as<cpu_task>(call);
    if (!h || (step > 0 && (op == no_name || g.payload(h).op != op))) break;
    if (g.payload(h).tensor_bytes > 0) return g.payload(h).tensor_bytes;
    call = prev_on_resource(g, call);
  }
  return 0;
}

/// How long comparable kernels of a trace take per byte of their operator's tensors.
struct size_rate {
  std::size_t samples = 0;  ///< kernels measured
  std::uint64_t bytes = 0;  ///< their operators' tensor bytes, summed
  time_ns time = 0;         ///< their durations, summed

  /// Nanoseconds per byte; 0 without samples.
  double ns_per_byte() const noexcept { return bytes ? double(time) / double(bytes) : 0.0; }

  /// The duration of a comparable kernel over `n` bytes: n times the measured rate (the
  /// ratio of the sums, so large, bandwidth-bound kernels dominate), or n /
  /// `fallback_bytes_per_s` when nothing was measured.
  time_ns estimate(std::uint64_t n, double fallback_bytes_per_s) const {
    double ns = samples ? double(n) * ns_per_byte() : double(n) / fallback_bytes_per_s * 1e9;
    return static_cast<time_ns>(std::llround(ns));
  }
};

/// The default "comparable kernel": PyTorch's elementwise kernels.
inline constexpr const char* elementwise_kernels = "elementwise";

/// Measures size_rate over the kernels of `g` whose name contains a match of
/// `comparable` (ECMAScript, case-insensitive) and whose operator's tensor bytes are
/// known (launch_tensor_bytes).
///
///     auto rate = daydream::passes::measure_rate(g);
///     auto encode = rate.estimate(activation_bytes, 300e9);
inline size_rate measure_rate(const graph& g, const std::string& comparable = elementwise_kernels) {
  const std::regex rx(comparable, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  size_rate r;
  std::vector<signed char> matches; // by name id: -1 unknown, 0 no, 1 yes
  const auto comparable_name = pred([&](const auto& k) {
    auto n = g.name_id_of(k);
    if (n >= matches.size()) matches.resize(n + 1, -1);
    if (matches[n] < 0) {
      auto s = g.name(k);
      matches[n] = std::regex_search(s.begin(), s.end(), rx) ? 1 : 0;
    }
    return matches[n] == 1;
  });
  for (auto k : tasks<gpu_kernel>(g) | where(comparable_name)) {
    auto b = launch_tensor_bytes(g, k);
    if (b == 0) continue;
    ++r.samples;
    r.bytes += b;
    r.time += g.duration(k);
  }
  return r;
}

} // namespace daydream::passes

#endif
