// Defines passes::tictac: parameter transfers ordered by the next forward's consumption order.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_TICTAC_HPP
#define DAYDREAM_PASSES_TICTAC_HPP

#include <daydream/pass.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::passes {

/// TicTac (Hashemi et al., "TicTac: Accelerating Distributed Deep Learning with
/// Communication Scheduling", MLSys 2019): parameter-server training in which the
/// parameter transfers to the worker are issued in the order the next forward consumes
/// the parameters, instead of an arbitrary order.
///
/// Cost model. One push per gradient (whole tensors, no slicing) on the node's uplink
/// when it is ready, in ready order (first come, first served), and one pull per
/// parameter on the downlink after its push, each ps_transfer_time(bytes) on the
/// cluster. Both links carry one transfer at a time; the downlink picks the next pull
/// by the forward's consumption order (TIC's order: the parameter's position, earliest
/// first; `policy` = priority_policy). A parameter's pull precedes its first use in
/// the next iteration's forward. The servers update the weights, so the workers'
/// optimizer step is removed. A one-iteration graph is unrolled into `iterations`
/// copies. A trace's recorded all-reduces are replaced (run_data_parallel). With one
/// worker the graph is left unchanged.
///
///     daydream::what_if(g, daydream::passes::tictac{.cluster = {.machines = 8}, .iterations = 4});
struct tictac {
  /// The name on the command line.
  static constexpr std::string_view name = "tictac";

  /// Replays with priorities (set with reschedule): the downlink picks the next pull by them.
  using policy = daydream::priority_policy;

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  std::uint32_t iterations = 3; ///< copies when the graph holds one iteration

  /// Why the default what-if run leaves the pass out on `g`, or "" when it runs it
  /// (data_parallel_not_applicable: no backward, no gradient sizes, or a trace that
  /// synchronizes its gradients already).
  static std::string not_applicable(const graph& g) { return data_parallel_not_applicable(g); }
  /// Whether the default what-if run includes the pass on `g` (not_applicable is empty).
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Applies the pass to `g` (use daydream::apply for a transaction) and reports what it
  /// inserted (run_data_parallel: recorded all-reduces are replaced, a graph without
  /// gradients or a one-worker cluster is left unchanged and the report says why).
  pass_report operator()(graph& g) const {
    // Pushes keep their ready order: earlier iterations first, then first come, first served.
    auto fifo = [](const gradient& gr) { return std::int64_t(gr.iteration) << 32; };
    return run_overlapped(g, *this, 0, fifo);
  }
};

} // namespace daydream::passes

#endif
