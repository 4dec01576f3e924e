// Defines what_if: a pass applied as a transaction and the changed graph replayed with the pass's own policy.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_WHAT_IF_HPP
#define DAYDREAM_WHAT_IF_HPP

#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/report.hpp>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream {

/// What what_if(g, pass) found: what the passes said and the replay of the changed graph.
struct what_if_result {
  /// What each pass said, in the order they ran: one report for a pass, one for each pass of
  /// a pipeline (`a | b | c` gives three). A pass that returns no pass_report gives one with
  /// its name only; a report that names no pass is given the pass's name.
  std::vector<pass_report> reports;
  /// The changed graph replayed with the pass's policy (policy_of(pass)).
  replay_result replay;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
template <class P> inline constexpr bool is_pipeline = false;
template <class A, class B> inline constexpr bool is_pipeline<pipeline<A, B>> = true;

// Runs `p` on `g`, a pipeline pass by pass, and appends what each pass says to `out`.
template <class G, class Pass> void run_reporting(G& g, const Pass& p, std::vector<pass_report>& out) {
  if constexpr (is_pipeline<Pass>) {
    run_reporting(g, p.first, out);
    run_reporting(g, p.second, out);
  } else {
    pass_report r;
    if constexpr (std::is_convertible_v<std::invoke_result_t<const Pass&, G&>, pass_report>) r = p(g);
    else p(g);
    if (r.pass.empty()) r.pass = std::string(pass_traits<Pass>::name);
    out.push_back(std::move(r));
  }
}
} // namespace detail
//! @endcond

/// Asks "what if?": applies `pass` to `g` as one transaction (daydream::apply: if a pass
/// throws or leaves a cycle, `g` is restored and daydream::error names the pass), then
/// replays the changed graph with the scheduling policy the pass brings (policy_of(pass):
/// priority_policy for P3, TicTac and vDNN; a pipeline brings its last pass's), so that
/// a pass's reordering is never silently replayed in trace order. Returns what the passes
/// said and the replay. `g` is changed as apply changes it: copy it first to keep the
/// original. Invalidates what the pass invalidates (nothing when it is refused).
///
///     auto h = trace.g;
///     auto [reports, r] = daydream::what_if(h, daydream::passes::amp{} | daydream::passes::ddp{.cluster = c});
///     auto t = daydream::iteration_time(h, r, it);
template <class G, class Pass>
what_if_result what_if(G& g, const Pass& pass, const replay_options& options = {}) {
  static_assert(pass_for<Pass, G>, "daydream::what_if(g, pass): `pass` must be a pass over this graph type: "
                                   "callable as pass(g) on a G& (`operator()(graph& g) const`).");
  what_if_result out;
  daydream::apply(
      g, [&](G& h) { detail::run_reporting(h, pass, out.reports); }, pass_traits<Pass>::name);
  out.replay = daydream::replay(g, policy_of(pass), options);
  return out;
}

} // namespace daydream

#endif
