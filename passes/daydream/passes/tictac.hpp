// Defines passes::tictac: parameter transfers ordered by the next forward's consumption order.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_TICTAC_HPP
#define DAYDREAM_PASSES_TICTAC_HPP

#include <daydream/cluster.hpp>
#include <daydream/graph.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::passes {

using daydream::operator|;

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
/// copies. With one worker the graph is left unchanged.
///
///     daydream::apply(g, daydream::passes::tictac::from_params(
///         daydream::pass_params::parse("tictac", "workers=8,bandwidth=10Gbps")));
struct tictac {
  /// The name on the command line.
  static constexpr std::string_view name = "tictac";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "TicTac: parameter-server pulls ordered by the next forward's consumption order. "
      "params: cluster keys (workers=, bandwidth=, ps=, ...), iterations=3, model_bytes= (when the trace has no sizes)";
  /// Replays with priorities (set with reschedule): the links pick the next transfer by them.
  using policy = daydream::priority_policy;

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  std::uint32_t iterations = 3; ///< copies when the graph holds one iteration
  layer_bytes sizes;            ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes

  /// Reads the cluster keys and `iterations`.
  static tictac from_params(const pass_params& p) {
    tictac x;
    x.cluster = cluster::from_params(p);
    x.iterations = static_cast<std::uint32_t>(p.get_int("iterations", x.iterations));
    x.model_bytes = p.get_bytes("model_bytes", 0);
    p.finish();
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
    // Pushes keep their ready order: earlier iterations first, then first come, first served.
    auto fifo = [](const gradient& gr) { return std::int64_t(gr.iteration) << 32; };
    auto plan = insert_push_pull(g, gs, cluster, 0, up, down, fifo, position_priority, true);
    rep.add("transfers (push + pull each)", std::to_string(plan.pushes));
    rep.add("pulls tied to the next forward", std::to_string(plan.consumers) + " gradients");
    rep.add("optimizer tasks removed (the servers update)", std::to_string(removed));
    return rep;
  }
};

} // namespace daydream::passes

#endif
