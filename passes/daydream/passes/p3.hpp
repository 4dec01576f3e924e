// Defines passes::p3: Priority-based Parameter Propagation, sliced parameter-server pushes and pulls in layer order.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_P3_HPP
#define DAYDREAM_PASSES_P3_HPP

#include <daydream/pass.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/units.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::passes {

/// P3 (Jayarajan et al., "Priority-based Parameter Propagation for Distributed DNN
/// Training", MLSys 2019): parameter-server training where every layer's gradient is
/// cut into slices and the slices go out in the order the next forward needs them.
///
/// Cost model. The gradients (find_gradients) are cut into `slice`-byte slices (P3's
/// default, MXNet's MXNET_KVSTORE_SLICE_THRESHOLD: 40,000 fp32 parameters). Each slice
/// is one push on the node's uplink after its gradient is ready and one pull on the
/// downlink after the push, each ps_transfer_time(slice) on the cluster (the worker's
/// NIC or the servers' NICs bound it). Both links carry one slice at a time and pick
/// the next by priority (`policy` = priority_policy): earlier iterations first, then
/// earlier layers (the reverse of the ready order). A parameter's pulls precede its
/// first use in the next iteration's forward, so the next forward starts while later
/// layers still synchronize. The servers update the weights, so the workers' optimizer
/// step (phase weight_update) is removed. A graph of one iteration is first unrolled
/// into `iterations` copies (daydream::unroll); read the steady state from the last
/// iterations. A trace's recorded all-reduces are replaced (run_data_parallel). With one
/// worker the graph is left unchanged.
///
///     using namespace daydream::literals;
///     auto [reports, r] = daydream::what_if(g, daydream::passes::p3{.cluster = {.machines = 4}, .slice = 160_KB});
///     // what_if replays with p3's policy
struct p3 {
  /// The name on the command line.
  static constexpr std::string_view name = "p3";

  /// Replays with priorities (set with reschedule): the links pick the next transfer by them.
  using policy = daydream::priority_policy;

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  std::uint32_t iterations = 3;  ///< copies when the graph holds one iteration
  std::uint64_t slice = 160_KB;  ///< 40,000 fp32 parameters

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
    return run_overlapped(g, *this, slice, position_priority);
  }
};

} // namespace daydream::passes

#endif
