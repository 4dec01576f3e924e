// Defines passes::tensor_partition: BytePS-style parameter-server synchronization with fixed-size partitions.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_TENSOR_PARTITION_HPP
#define DAYDREAM_PASSES_TENSOR_PARTITION_HPP

#include <daydream/cluster.hpp>
#include <daydream/graph.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/resource.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

using daydream::operator|;

/// Tensor partition as BytePS does it (Jiang et al., "A Unified Architecture for
/// Accelerating Distributed DNN Training in Heterogeneous GPU/CPU Clusters", OSDI 2020):
/// every gradient is split into fixed-size partitions that are pushed to and pulled
/// from the servers independently, so that large tensors pipeline and spread over the
/// servers.
///
/// Cost model. Each gradient (find_gradients) becomes ceil(bytes / partition)
/// partitions (BytePS's BYTEPS_PARTITION_BYTES, 4,096,000 bytes); each partition is one
/// push on the node's uplink when the gradient is ready and one pull on the downlink
/// after it, each ps_transfer_time(partition) on the cluster (servers: `ps=`, one per
/// machine by default). Both links are fair-shared: concurrent partitions split the
/// bandwidth, and pulls overlap later pushes. The servers only sum; the workers run
/// their optimizer step, which waits for every pull of its iteration. With one worker
/// the graph is left unchanged.
///
///     daydream::apply(g, daydream::passes::tensor_partition::from_params(
///         daydream::pass_params::parse("tensor_partition", "workers=16,partition=4MB")));
struct tensor_partition {
  /// The name on the command line.
  static constexpr std::string_view name = "tensor_partition";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "BytePS tensor partition: push/pull fixed-size partitions through parameter servers. "
      "params: cluster keys (workers=, bandwidth=, ps=, ...), partition=4096000, model_bytes= (when the trace has no sizes)";

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  std::uint64_t partition = 4'096'000; ///< BytePS's default partition bytes
  layer_bytes sizes;                   ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes

  /// Reads the cluster keys and `partition` (bytes).
  static tensor_partition from_params(const pass_params& p) {
    tensor_partition x;
    x.cluster = cluster::from_params(p);
    x.partition = static_cast<std::uint64_t>(p.get_bytes("partition", double(x.partition)));
    x.model_bytes = p.get_bytes("model_bytes", 0);
    p.finish();
    if (x.partition == 0) throw error("daydream: pass 'tensor_partition': partition must be positive");
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
    auto gs = find_gradients(g, sizes, model_bytes);
    report_gradients(rep, cluster, gs);
    if (cluster.workers() <= 1) {
      rep.note("one worker: nothing to synchronize, graph unchanged");
      return rep;
    }
    if (gs.grads.empty()) {
      rep.note("no gradients found: no transfers inserted");
      return rep;
    }
    auto up = node_link(g, "uplink", cluster.network.bandwidth);
    auto down = node_link(g, "downlink", cluster.network.bandwidth);
    auto none = [](const gradient&) { return std::int64_t{0}; };
    auto plan = insert_push_pull(g, gs, cluster, partition, up, down, none, none, false);
    std::size_t without_update = 0;
    const auto entries = update_entries_by_iteration(g);
    for (auto& [i, pulls] : plan.pulls)
      if (wait_before_update(g, entries, i, pulls) == 0) ++without_update;
    rep.add("partition", format_bytes(double(partition)));
    rep.add("partitions (push + pull each)", std::to_string(plan.pushes));
    rep.add("servers", std::to_string(cluster.servers()));
    if (without_update)
      rep.note(std::to_string(without_update) +
               " iteration(s) have no weight-update phase: their pulls only end the iteration");
    return rep;
  }
};

} // namespace daydream::passes

#endif
