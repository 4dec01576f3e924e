// Defines passes::blueconnect: hierarchical all-reduce as reduce-scatter and all-gather stages on parallel channels.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_BLUECONNECT_HPP
#define DAYDREAM_PASSES_BLUECONNECT_HPP

#include <daydream/pass.hpp>
#include <daydream/units.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

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
/// for the last stage of every bucket (a GPU stream wait). A trace's recorded all-reduces
/// are replaced (run_data_parallel). With one worker the graph is left unchanged.
///
///     daydream::apply(g, daydream::passes::blueconnect{
///         .cluster = {.machines = 4, .workers_per_machine = 8, .network = {100e9 / 8, 5'000}, .nvlink = {150e9, 1'000}}});
struct blueconnect {
  /// The name on the command line.
  static constexpr std::string_view name = "blueconnect";

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  std::uint64_t bucket_cap = 25_MiB;  ///< DDP's bucket_cap_mb = 25
  std::uint64_t first_bucket = 1_MiB; ///< DDP's first bucket: 1 MiB

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
      auto links = links_of(s.g, s.c);
      struct stage { comm_op op; std::string_view label; resource_id link; };
      const std::array<stage, 4> stages{{{comm_op::reduce_scatter, "reduce_scatter intra", links.intra},
                                         {comm_op::reduce_scatter, "reduce_scatter inter", links.nic},
                                         {comm_op::all_gather, "all_gather inter", links.nic},
                                         {comm_op::all_gather, "all_gather intra", links.intra}}};
      auto buckets = ddp_buckets(s.gs, bucket_cap, first_bucket);
      std::size_t tasks = 0;
      tasks_by_iteration ends;
      for (auto i : s.gs.iterations()) {
        std::array<task_id, 4> prev{no_task, no_task, no_task, no_task};
        std::size_t k = 0;
        for (auto* b : buckets_of(buckets, i)) {
          auto cost = blueconnect_stages(double(b->bytes), s.c);
          const std::array<time_ns, 4> d{cost.reduce_scatter_intra, cost.reduce_scatter_inter,
                                         cost.all_gather_inter, cost.all_gather_intra};
          std::vector<task_id> after = ready_tasks(s.gs, *b);
          for (std::size_t st = 0; st < 4; ++st) {
            if (d[st] == 0) continue;
            prev[st] = add_comm(s.g, stages[st].op, std::string(stages[st].label) + " bucket " + std::to_string(k),
                                b->bytes, s.c.workers(), d[st], stages[st].link, after, prev[st], i).id;
            after = {prev[st]};
            ++tasks;
          }
          ends[i].push_back(after.front());
          ++k;
        }
      }
      const auto first = blueconnect_stages(buckets.empty() ? 0.0 : double(buckets.front().bytes), s.c);
      s.rep.add_count("buckets", std::int64_t(buckets.size()));
      s.rep.add_count("stage tasks", std::int64_t(tasks));
      s.rep.add("first bucket stages (rs intra, rs inter, ag inter, ag intra)",
                format_time(first.reduce_scatter_intra) + ", " + format_time(first.reduce_scatter_inter) + ", " +
                    format_time(first.all_gather_inter) + ", " + format_time(first.all_gather_intra),
                report_value::of_time(double(first.reduce_scatter_intra + first.reduce_scatter_inter +
                                             first.all_gather_inter + first.all_gather_intra))
                    .with_count(4));
      return ends;
    });
  }
};

} // namespace daydream::passes

#endif
