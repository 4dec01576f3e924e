// Defines layer_plan and plan_layer: how one layer runs on each device of its stage, as costs.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_LAYER_PLAN_HPP
#define DAYDREAM_STRATEGY_LAYER_PLAN_HPP

#include <daydream/strategy/model.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>

#include <cstddef>

namespace daydream::strategy {

/// How compile() runs one layer on each device of its stage, for one micro-batch: the
/// decisions taken per layer (whether it splits, what communication follows it, whether
/// its forward runs again in the backward), as costs.
struct layer_plan {
  double forward = 0;  ///< one device's forward time (ns)
  double backward = 0; ///< one device's backward time (ns), with the forward again when recomputed
  /// Bytes of the tensor-parallel collectives (per device, whole tensor) after its
  /// forward (all-reduce of its output, then all-gather of its output) and after its
  /// backward (all-reduce of its input gradient, then all-gather of it); 0: none.
  double fwd_all_reduce = 0, fwd_all_gather = 0, bwd_all_reduce = 0, bwd_all_gather = 0;
  double params = 0;   ///< parameter bytes one device holds of it (before ZeRO divides them)
  bool recompute = false; ///< its forward runs again before its backward
};

/// The costs of layer `i` of `m` under plan `p` (strategy_tree::resolve) with
/// micro-batches of `micro_share` of the profiled batch: a split layer divides the split
/// part of its time and its parameters by tp; its collectives as resolved_layer says, a
/// block's backward all-reduce sized as its output (the uniform spec's Megatron-LM pair:
/// an all-reduce of the output after the forward and after the backward), a column's
/// by its input; a re-computed layer runs its forward again before its backward.
inline layer_plan plan_layer(const strategy_plan& p, const model_profile& m, std::size_t i, double micro_share) {
  const auto& l = m.layers[i];
  const auto& r = p.layers[i];
  const double t = p.spec.tp;
  layer_plan pl;
  pl.forward = (r.split ? double(l.forward_split) / t + double(l.forward_other)
                        : double(l.forward_split) + double(l.forward_other)) * micro_share;
  pl.backward = (r.split ? double(l.backward_split) / t + double(l.backward_other)
                         : double(l.backward_split) + double(l.backward_other)) * micro_share;
  pl.recompute = r.recompute;
  if (r.recompute) pl.backward += pl.forward;
  if (p.spec.tp > 1) {
    const double out = double(l.output_bytes) * micro_share;
    const double in = double(i > 0 ? m.layers[i - 1].output_bytes : l.stash_bytes) * micro_share;
    if (r.fwd_all_reduce) pl.fwd_all_reduce = out;
    if (r.fwd_all_gather) pl.fwd_all_gather = out;
    if (r.bwd_all_reduce) pl.bwd_all_reduce = r.part == partition::block ? out : in;
    if (r.bwd_all_gather) pl.bwd_all_gather = in;
  }
  pl.params = r.split ? double(l.param_bytes) / t : double(l.param_bytes);
  return pl;
}

/// The costs of layer `i` under the uniform spec `s` (plan_layer of uniform_plan).
inline layer_plan plan_layer(const strategy_spec& s, const model_profile& m, std::size_t i, double micro_share) {
  return plan_layer(uniform_plan(s, m), m, i, micro_share);
}

} // namespace daydream::strategy

#endif
