// Defines passes::tensor_partition: BytePS-style parameter-server synchronization with fixed-size partitions.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_TENSOR_PARTITION_HPP
#define DAYDREAM_PASSES_TENSOR_PARTITION_HPP

#include <daydream/pass.hpp>
#include <daydream/units.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace daydream::passes {

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
/// their optimizer step, whose GPU kernels wait for every pull of its iteration. A
/// trace's recorded all-reduces are replaced (run_data_parallel). With one worker the
/// graph is left unchanged.
///
///     using namespace daydream::literals;
///     daydream::apply(g, daydream::passes::tensor_partition{.cluster = {.machines = 16}, .partition = 4_MB});
struct tensor_partition {
  /// The name on the command line.
  static constexpr std::string_view name = "tensor_partition";

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  std::uint64_t partition = 4096_KB;   ///< BytePS's default partition bytes (4,096,000)

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
    auto find = [&](const graph& h) { return find_gradients(h, sizes, model_bytes); };
    return run_data_parallel(g, name, cluster, find, weight_update::waits, 1, [&](data_parallel_step& s) {
      auto up = node_link(s.g, "uplink", s.c.network.bandwidth);
      auto down = node_link(s.g, "downlink", s.c.network.bandwidth);
      auto none = [](const gradient&) { return std::int64_t{0}; };
      auto plan = insert_push_pull(s.g, s.gs, s.c, partition, up, down, none, none, false);
      s.rep.add("partition", format_bytes(double(partition)), report_value::of_bytes(double(partition)));
      s.rep.add_count("partitions (push + pull each)", std::int64_t(plan.pushes));
      s.rep.add_count("servers", std::int64_t(s.c.servers()));
      return plan.pulls;
    });
  }
};

} // namespace daydream::passes

#endif
