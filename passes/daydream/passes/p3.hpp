// Defines passes::p3: Priority-based Parameter Propagation, sliced parameter-server pushes and pulls in layer order.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_P3_HPP
#define DAYDREAM_PASSES_P3_HPP

#include <daydream/cluster.hpp>
#include <daydream/graph.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::passes {

using daydream::operator|;

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
/// iterations. With one worker the graph is left unchanged.
///
///     auto p = daydream::passes::p3::from_params(
///         daydream::pass_params::parse("p3", "workers=4,bandwidth=10Gbps,slice=160KB"));
///     daydream::apply(g, p);
///     auto r = daydream::replay(g, daydream::pass_policy_t<daydream::passes::p3>{});
struct p3 {
  /// The name on the command line.
  static constexpr std::string_view name = "p3";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "P3: sliced parameter-server push/pull, earlier layers first, next forward overlaps. "
      "params: cluster keys (workers=, bandwidth=, ps=, ...), slice=160KB, iterations=3, model_bytes= (when the trace has no sizes)";
  /// Replays with priorities (set with reschedule): the links pick the next transfer by them.
  using policy = daydream::priority_policy;

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  std::uint64_t slice = 160'000;  ///< 40,000 fp32 parameters
  std::uint32_t iterations = 3;   ///< copies when the graph holds one iteration
  layer_bytes sizes;              ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes

  /// Reads the cluster keys, `slice` (bytes) and `iterations`.
  static p3 from_params(const pass_params& p) {
    p3 x;
    x.cluster = cluster::from_params(p);
    x.slice = static_cast<std::uint64_t>(p.get_bytes("slice", double(x.slice)));
    x.iterations = static_cast<std::uint32_t>(p.get_int("iterations", x.iterations));
    x.model_bytes = p.get_bytes("model_bytes", 0);
    p.finish();
    if (x.slice == 0) throw error("daydream: pass 'p3': slice must be positive");
    return x;
  }

  /// Whether the pass can act on `g`: it needs backward work (gradients).
  /// Runs by default only on traces with backward work and recorded gradient sizes.
  static bool applicable(const graph& g) { return has_backward(g) && has_gradient_sizes(g); }

  /// Applies the pass to `g` (use daydream::apply for a transaction) and reports what it
  /// inserted; a graph without gradients or a one-worker cluster is left unchanged, with a note.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    if (cluster.workers() <= 1) {
      rep.add("cluster", cluster.describe());
      rep.note("one worker: nothing to synchronize, graph unchanged");
      return rep;
    }
    if (unroll_for_overlap(g, iterations))
      rep.add("unrolled", std::to_string(iterations) + " iterations (read the steady state from the last)");
    auto gs = find_gradients(g, sizes, model_bytes);
    report_gradients(rep, cluster, gs);
    if (gs.grads.empty()) {
      rep.note("no gradients found: no transfers inserted");
      return rep;
    }
    auto removed = remove_weight_update(g);
    auto up = node_link(g, "uplink (one at a time)", cluster.network.bandwidth, sharing::exclusive);
    auto down = node_link(g, "downlink (one at a time)", cluster.network.bandwidth, sharing::exclusive);
    auto plan = insert_push_pull(g, gs, cluster, slice, up, down, position_priority, position_priority, true);
    rep.add("slice", format_bytes(double(slice)));
    rep.add("slices (push + pull each)", std::to_string(plan.pushes));
    rep.add("pulls tied to the next forward", std::to_string(plan.consumers) + " gradients");
    rep.add("optimizer tasks removed (the servers update)", std::to_string(removed));
    rep.add("servers", std::to_string(cluster.servers()));
    return rep;
  }
};

} // namespace daydream::passes

#endif
