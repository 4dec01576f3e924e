// Defines the scenarios of the what-if program: the library's (daydream::whatif), and the helpers its output shares.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_SCENARIO_HPP
#define DAYDREAM_CLI_WHATIF_SCENARIO_HPP

#include <daydream/daydream.hpp>
#include <daydream/whatif/scenario.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace whatif_cmd {

using daydream::graph;
using daydream::time_ns;
using daydream::whatif::memory_model;
using daydream::whatif::scenario;
using daydream::whatif::baseline;
using daydream::whatif::run_scenario;

/// The median of the non-negative values of `v` (daydream::median_of).
inline time_ns median(const std::vector<time_ns>& v) { return daydream::median_of(v); }

/// Smallest and largest non-negative value of `v`, {-1, -1} if there is none.
inline std::pair<time_ns, time_ns> extremes(const std::vector<time_ns>& v) {
  time_ns lo = -1, hi = -1;
  for (auto x : v) {
    if (x < 0) continue;
    lo = lo < 0 ? x : std::min(lo, x);
    hi = std::max(hi, x);
  }
  return {lo, hi};
}

} // namespace whatif_cmd

#endif
