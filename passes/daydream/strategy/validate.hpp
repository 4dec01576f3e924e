// Defines validate and splits_global_batch: whether a strategy can run a model on a cluster.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_VALIDATE_HPP
#define DAYDREAM_STRATEGY_VALIDATE_HPP

#include <daydream/config.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace daydream::strategy {

/// Whether the global batch of `o` splits into dp x micro whole micro-batches: always when
/// it is not given, or when the profiled batch counts batches, not samples (1).
inline bool splits_global_batch(const simulate_options& o, const model_profile& m, std::uint32_t dp,
                                std::uint32_t micro) {
  if (!(o.global_batch > 0 && m.batch > 1)) return true;
  const double per = o.global_batch / (double(dp) * micro);
  return per >= 1 && per == std::floor(per);
}

/// Throws daydream::usage_error when `s` cannot run `m` on `c`: more devices than the
/// cluster has, a pipeline deeper than the layer count, a tensor-parallel degree that
/// does not divide a layer's width, a global batch (in samples: the profiled batch is
/// more than 1) that does not split into dp x micro whole micro-batches.
///
/// A plan (strategy_plan) is checked the same way, the tensor-parallel degree against the
/// layers its plan splits only; the error then names the layer's tree node too.
inline void validate(const strategy_plan& p, const cluster_spec& c, const model_profile& m,
                     const simulate_options& o = {}) {
  const strategy_spec& s = p.spec;
  const std::string what = "daydream: strategy '" + p.name + "': ";
  if (s.devices() > c.devices())
    throw usage_error(what + "needs " + std::to_string(s.devices()) + " devices (dp x tp x pp), the cluster '" +
                      c.name + "' has " + std::to_string(c.devices()));
  if (s.pp > m.layers.size())
    throw usage_error(what + "a pipeline of " + std::to_string(s.pp) + " stages is deeper than the model's " +
                      std::to_string(m.layers.size()) + " layers");
  DAYDREAM_ASSERT(p.layers.size() == m.layers.size(), "strategy validate: the plan is not of this model");
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    auto& l = m.layers[i];
    if (l.width && p.layers[i].split && l.width % s.tp)
      throw usage_error(what + "tp=" + std::to_string(s.tp) + " does not divide layer '" + l.name + "' (width " +
                        std::to_string(l.width) + ")" +
                        (p.name == s.to_string() ? std::string() : ", tree node '" + p.layers[i].node + "'"));
  }
  if (!splits_global_batch(o, m, s.dp, s.micro))
    throw usage_error(what + "a global batch of " + std::to_string(std::int64_t(o.global_batch)) +
                      " does not split into dp x micro = " + std::to_string(s.dp * s.micro) + " micro-batches");
}

/// validate() of the uniform spec `s` (uniform_plan).
inline void validate(const strategy_spec& s, const cluster_spec& c, const model_profile& m,
                     const simulate_options& o = {}) {
  validate(uniform_plan(s, m), c, m, o);
}

} // namespace daydream::strategy

#endif
