// Defines grid: every strategy on a given number of devices.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_GRID_HPP
#define DAYDREAM_STRATEGY_GRID_HPP

#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/validate.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace daydream::strategy {

/// Every strategy using exactly `devices` devices: dp x tp x pp = devices, pp at most
/// the layer count, tp dividing every known layer width, micro in {1} without a
/// pipeline and {pp, 2pp, 4pp} with one (and, with a global batch, dividing it), zero,
/// recompute and schedule as in `base`.
inline std::vector<strategy_spec> grid(std::uint32_t devices, const model_profile& m, const strategy_spec& base = {},
                                       const simulate_options& o = {}) {
  std::vector<strategy_spec> out;
  for (std::uint32_t pp = 1; pp <= devices; ++pp) {
    if (devices % pp || pp > m.layers.size()) continue;
    for (std::uint32_t tp = 1; tp <= devices / pp; ++tp) {
      if ((devices / pp) % tp) continue;
      bool ok = true;
      for (auto& l : m.layers) ok = ok && !(l.width && l.splits() && l.width % tp);
      if (!ok) continue;
      const std::uint32_t dp = devices / pp / tp;
      std::vector<std::uint32_t> micros = pp == 1 ? std::vector<std::uint32_t>{1}
                                                  : std::vector<std::uint32_t>{pp, 2 * pp, 4 * pp};
      for (auto mb : micros) {
        if (!splits_global_batch(o, m, dp, mb)) continue;
        auto s = base;
        s.dp = dp;
        s.tp = tp;
        s.pp = pp;
        s.micro = mb;
        out.push_back(s);
      }
    }
  }
  return out;
}

/// Adds to `plans` (the strategies a user named, `given` their specs) every other strategy
/// of grid(devices, m, base, o) as a uniform plan, in the grid's order: what a search over
/// a grid evaluates beside the named ones.
inline void add_grid(std::vector<strategy_plan>& plans, const std::vector<strategy_spec>& given,
                     std::uint32_t devices, const model_profile& m, const strategy_spec& base = {},
                     const simulate_options& o = {}) {
  for (auto& s : grid(devices, m, base, o))
    if (std::find(given.begin(), given.end(), s) == given.end()) plans.push_back(uniform_plan(s, m));
}

} // namespace daydream::strategy

#endif
