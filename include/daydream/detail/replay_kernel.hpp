// Defines replay_flat: the replay, by the chained pass when it applies, else by the event-driven kernel.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_KERNEL_HPP
#define DAYDREAM_DETAIL_REPLAY_KERNEL_HPP

#include <daydream/config.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/replay_chain.hpp>
#include <daydream/detail/replay_events.hpp>
#include <daydream/detail/replay_queue.hpp>
#include <daydream/replay_result.hpp>

#include <cmath>

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// The replay: one topological pass when the graph is chained and there is no overlap
/// slowdown (replay_chained), else the event-driven kernel (replay_flat_impl), compiled
/// without the overlap slowdown's bookkeeping when replay_options asks for none. Both
/// give the same results, written into `out` (its arrays' memory reused where it has
/// room; valid but unspecified if the replay throws). `times` replaces the graph's
/// durations and gaps where set (a duration_overlay).
///
/// A template (over the one core type) so that a translation unit that includes the
/// replay but never calls it does not instantiate the kernels; a program that links
/// daydream::compiled gets them compiled once (compiled/replay.cpp, the explicit
/// instantiation declared below).
template <class Core = graph_core>
void replay_flat_into(const Core& c, key_ref key, const replay_options& opt, replay_result& out,
                      replay_times times = {}) {
  const double slowdown = opt.overlap_slowdown;
  if (!(slowdown >= 1.0) || !std::isfinite(slowdown))
    throw error("daydream: replay: overlap_slowdown must be a finite factor >= 1");
  if (slowdown != 1.0) return replay_flat_impl<true>(c, key, opt, out, times);
  if (replay_chained(c, out, times)) return;
  replay_flat_impl<false>(c, key, opt, out, times);
}

#if defined(DAYDREAM_COMPILED) && !defined(DAYDREAM_COMPILING_REPLAY)
extern template void replay_flat_into<graph_core>(const graph_core&, key_ref, const replay_options&, replay_result&,
                                                  replay_times);
#endif

/// replay_flat_into a fresh result.
template <class Core = graph_core>
replay_result replay_flat(const Core& c, key_ref key, const replay_options& opt = {}) {
  replay_result r;
  replay_flat_into(c, key, opt, r);
  return r;
}

} // namespace daydream::detail
//! @endcond

#endif
