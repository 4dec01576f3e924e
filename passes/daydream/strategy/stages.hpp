// Defines balance_stages: the layers cut into pipeline stages of balanced time.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_STAGES_HPP
#define DAYDREAM_STRATEGY_STAGES_HPP

#include <daydream/config.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace daydream::strategy {

/// Cuts the layers into `pp` contiguous stages that minimize the largest stage time
/// (forward + backward, tensor-parallel parts divided by `tp`): exact, by dynamic
/// programming, O(pp n^2). Returns [first, last) of each stage.
///
/// With a plan: only the layers it splits are divided by its tp, and a layer pinned to a
/// stage (resolved_layer::stage) lies in that stage; the cut is the best among those that
/// honour every pin. Throws daydream::usage_error when no cut does (pins that leave a
/// stage without layers).
inline std::vector<std::pair<std::size_t, std::size_t>> balance_stages(const model_profile& m, std::uint32_t pp,
                                                                        const strategy_plan* plan) {
  const std::size_t n = m.layers.size();
  if (pp == 0 || pp > n) throw usage_error("daydream: balance_stages: need 1 to " + std::to_string(n) + " stages");
  const std::uint32_t tp = plan ? plan->spec.tp : 1;
  std::vector<double> pre(n + 1, 0);
  std::vector<std::int32_t> pin(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    auto& l = m.layers[i];
    const bool split = !plan || plan->layers[i].split;
    if (plan) pin[i] = plan->layers[i].stage;
    pre[i + 1] = pre[i] + (split ? double(l.forward_split + l.backward_split) / tp
                                 : double(l.forward_split + l.backward_split)) +
                 double(l.forward_other + l.backward_other);
  }
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the largest stage time of the first i layers in k stages; cut[k][i]: where the last starts.
  std::vector<std::vector<double>> best(pp + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> cut(pp + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::uint32_t k = 1; k <= pp; ++k)
    for (std::size_t i = k; i <= n; ++i)
      // Stage k - 1 = layers [j, i): every pin in it must be k - 1. Larger j first, so
      // that a pin stops the scan; ties go to the smallest j.
      for (std::size_t j = i; j-- > k - 1;) {
        if (pin[j] >= 0 && pin[j] != std::int32_t(k - 1)) break;
        const double v = std::max(best[k - 1][j], pre[i] - pre[j]);
        if (v <= best[k][i] && v < inf) { best[k][i] = v; cut[k][i] = j; }
      }
  if (!(best[pp][n] < inf))
    throw usage_error("daydream: strategy: no cut of the " + std::to_string(n) + " layers into " + std::to_string(pp) +
                      " pipeline stages honours the stage pins (a stage would have no layers)");
  std::vector<std::pair<std::size_t, std::size_t>> out(pp);
  for (std::size_t k = pp, i = n; k > 0; --k) {
    out[k - 1] = {cut[k][i], i};
    i = cut[k][i];
  }
  return out;
}

/// balance_stages of a uniform `tp`: every layer's tensor-parallel part divided by it.
inline std::vector<std::pair<std::size_t, std::size_t>> balance_stages(const model_profile& m, std::uint32_t pp,
                                                                        std::uint32_t tp = 1) {
  if (tp <= 1) return balance_stages(m, pp, nullptr);
  strategy_spec s;
  s.tp = tp;
  s.pp = pp;
  auto p = uniform_plan(s, m);
  for (auto& l : p.layers) l.split = true; // forward_split is 0 where a layer does not split
  return balance_stages(m, pp, &p);
}

} // namespace daydream::strategy

#endif
