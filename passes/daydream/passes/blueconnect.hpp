// Defines passes::blueconnect: hierarchical all-reduce as reduce-scatter and all-gather stages on parallel channels.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_BLUECONNECT_HPP
#define DAYDREAM_PASSES_BLUECONNECT_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

using daydream::operator|;

/// BlueConnect (Cho et al., "BlueConnect: Decomposing All-Reduce for Deep Learning on
/// Heterogeneous Network Hierarchy", MLSys 2019): each all-reduce becomes a
/// reduce-scatter inside the machine, a reduce-scatter across machines, an all-gather
/// across machines and an all-gather inside the machine, so that every level of the
/// network hierarchy carries only the traffic it must.
///
/// Cost model. The gradients are bucketed as ddp does (`bucket_cap`, `first_bucket`).
/// Each bucket becomes up to four comm_tasks in sequence, costed by
/// blueconnect_stages(bytes, cluster): the intra-machine stages on the machine's GPU
/// link ("intra node N"), the inter-machine stages (each of the g GPUs sends its 1/g
/// shard, so the NIC is split g ways) on its NIC ("NIC node N"); stages that cost
/// nothing (one machine, or one GPU per machine) are left out. Every stage has its own
/// channel: the same stage of consecutive buckets runs in order, different stages run
/// at once, so bucket k+1 reduce-scatters inside the machine while bucket k crosses the
/// network; stages sharing a physical link split it fairly. The optimizer step waits
/// for the last stage of every bucket. With one worker the graph is left unchanged.
///
///     daydream::apply(g, daydream::passes::blueconnect::from_params(daydream::pass_params::parse(
///         "blueconnect", "machines=4,workers_per_machine=8,nvlink=150GB/s,bandwidth=100Gbps")));
struct blueconnect {
  /// The name on the command line.
  static constexpr std::string_view name = "blueconnect";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "BlueConnect: all-reduce as reduce-scatter/all-gather stages within and across machines, "
      "on parallel channels. params: cluster keys (machines=, workers_per_machine=, nvlink=, "
      "bandwidth=, ...), bucket_cap=25MiB, first_bucket=1MiB, model_bytes= (when the trace has no sizes)";

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  std::uint64_t bucket_cap = 25ull << 20;  ///< as ddp: DDP bucket_cap_mb = 25
  std::uint64_t first_bucket = 1ull << 20; ///< as ddp: the first bucket, 1 MiB
  layer_bytes sizes; ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes

  /// Reads the cluster keys, `bucket_cap` and `first_bucket`.
  static blueconnect from_params(const pass_params& p) {
    blueconnect x;
    x.cluster = cluster::from_params(p);
    x.bucket_cap = static_cast<std::uint64_t>(p.get_bytes("bucket_cap", double(x.bucket_cap)));
    x.first_bucket = static_cast<std::uint64_t>(p.get_bytes("first_bucket", double(x.first_bucket)));
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
    auto gs = find_gradients(g, sizes, model_bytes);
    report_gradients(rep, cluster, gs);
    if (cluster.workers() <= 1) {
      rep.note("one worker: nothing to all-reduce, graph unchanged");
      return rep;
    }
    if (gs.grads.empty()) {
      rep.note("no gradients found: no all-reduce inserted");
      return rep;
    }
    auto links = links_of(g, cluster);
    struct stage { comm_op op; std::string_view label; resource_id link; };
    const std::array<stage, 4> stages{{{comm_op::reduce_scatter, "reduce_scatter intra", links.intra},
                                       {comm_op::reduce_scatter, "reduce_scatter inter", links.nic},
                                       {comm_op::all_gather, "all_gather inter", links.nic},
                                       {comm_op::all_gather, "all_gather intra", links.intra}}};
    auto buckets = ddp_buckets(gs, bucket_cap, first_bucket);
    std::size_t without_update = 0, tasks = 0;
    hierarchical_stages first_cost;
    bool have_first = false;
    const auto entries = update_entries_by_iteration(g);
    for (auto i : gs.iterations()) {
      std::array<task_id, 4> prev{no_task, no_task, no_task, no_task};
      std::vector<task_id> lasts;
      std::size_t k = 0;
      for (auto& b : buckets) {
        if (b.iteration != i) continue;
        auto cost = blueconnect_stages(double(b.bytes), cluster);
        if (!have_first) { first_cost = cost; have_first = true; }
        const std::array<time_ns, 4> d{cost.reduce_scatter_intra, cost.reduce_scatter_inter,
                                       cost.all_gather_inter, cost.all_gather_intra};
        std::vector<task_id> after = ready_tasks(gs, b);
        for (std::size_t s = 0; s < 4; ++s) {
          if (d[s] == 0) continue;
          auto h = add_comm(g, stages[s].op, std::string(stages[s].label) + " bucket " + std::to_string(k),
                            b.bytes, cluster.workers(), d[s], stages[s].link, after, prev[s], i);
          prev[s] = h.id;
          after = {h.id};
          ++tasks;
        }
        lasts.push_back(after.front());
        ++k;
      }
      if (wait_before_update(g, entries, i, lasts) == 0) ++without_update;
    }
    rep.add("buckets", std::to_string(buckets.size()));
    rep.add("stage tasks", std::to_string(tasks));
    rep.add("first bucket stages (rs intra, rs inter, ag inter, ag intra)",
            format_time(first_cost.reduce_scatter_intra) + ", " + format_time(first_cost.reduce_scatter_inter) +
                ", " + format_time(first_cost.all_gather_inter) + ", " + format_time(first_cost.all_gather_intra));
    if (without_update)
      rep.note(std::to_string(without_update) +
               " iteration(s) have no weight-update phase: their all-reduces only end the iteration");
    return rep;
  }
};

} // namespace daydream::passes

#endif
