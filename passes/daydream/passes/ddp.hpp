// Defines passes::ddp: data-parallel training with bucketed all-reduce, as PyTorch DistributedDataParallel does it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_DDP_HPP
#define DAYDREAM_PASSES_DDP_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

using daydream::operator|;

/// Data-parallel training on `cluster` as PyTorch DDP runs it (Li et al., "PyTorch
/// Distributed: Experiences on Accelerating Data Parallel Training", VLDB 2020).
///
/// Cost model. The gradients (find_gradients: AccumulateGrad shapes from the trace, or
/// a layer -> bytes map) are grouped into buckets the way DDP does (ddp_buckets: in
/// the order they become ready, a bucket closes once it holds `bucket_cap` bytes, the
/// first one at `first_bucket`). Each bucket becomes one all-reduce comm_task that
/// depends on the tasks producing its gradients and follows the previous bucket's
/// all-reduce (DDP launches buckets in order on one NCCL stream). Its duration is the
/// alpha-beta cost of a flat `algorithm` all-reduce over all workers, paced by the
/// slowest link of the ring (all_reduce_time(bytes, cluster)); it runs on the machine's
/// NIC when there are several machines, else on the link between its GPUs, both
/// fair-shared so that concurrent collectives of composed passes split the bandwidth.
/// The optimizer step of the iteration waits for every all-reduce (dep_kind::comm into
/// update_entries). With one worker the graph is left unchanged.
///
/// Not modelled: stragglers and skew between workers (the all-reduce starts when this
/// worker's gradients are ready), the reduction arithmetic, contention of the NCCL
/// kernels with computation (see replay_options::overlap_slowdown).
///
///     auto p = daydream::passes::ddp{.cluster = daydream::cluster::from_params(
///                  daydream::pass_params::parse("ddp", "workers=16,bandwidth=25Gbps"))};
///     daydream::apply(g, p);
struct ddp {
  /// The name on the command line.
  static constexpr std::string_view name = "ddp";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "data-parallel all-reduce with DDP buckets. params: workers=, machines=, "
      "workers_per_machine=, bandwidth=25Gbps, latency=5us, nvlink=, pcie=12GB/s, "
      "bucket_cap=25MiB, first_bucket=1MiB, algorithm=ring|tree|halving_doubling, model_bytes= (when the trace has no sizes)";

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  std::uint64_t bucket_cap = 25ull << 20;  ///< DDP bucket_cap_mb = 25
  std::uint64_t first_bucket = 1ull << 20; ///< DDP first bucket: 1 MiB
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< the collective's algorithm
  layer_bytes sizes;               ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes
  std::vector<gradient> gradients; ///< optional explicit gradients; overrides `sizes` and the trace

  /// Reads the cluster keys (cluster::from_params), `bucket_cap`, `first_bucket` and
  /// `algorithm`.
  static ddp from_params(const pass_params& p) {
    ddp d;
    d.cluster = cluster::from_params(p);
    d.bucket_cap = static_cast<std::uint64_t>(p.get_bytes("bucket_cap", double(d.bucket_cap)));
    d.first_bucket = static_cast<std::uint64_t>(p.get_bytes("first_bucket", double(d.first_bucket)));
    d.algorithm = parse_all_reduce_algorithm(p.get_string("algorithm", "ring"));
    d.model_bytes = p.get_bytes("model_bytes", 0);
    p.finish();
    return d;
  }

  /// Whether the pass can act on `g`: it needs backward work (gradients).
  /// Runs by default only on traces with backward work and recorded gradient sizes.
  static bool applicable(const graph& g) { return has_backward(g) && has_gradient_sizes(g); }

  /// The gradients this pass all-reduces on `g`.
  gradient_set gradients_of(const graph& g) const {
    if (gradients.empty()) return find_gradients(g, sizes, model_bytes);
    gradient_set s{gradients, gradient_source::given, {}};
    order_gradients(g, s);
    return s;
  }

  /// Applies the pass to `g` (use daydream::apply for a transaction) and reports what it
  /// inserted; a graph without gradients or a one-worker cluster is left unchanged, with a note.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    auto gs = gradients_of(g);
    report_gradients(rep, cluster, gs);
    if (cluster.workers() <= 1) {
      rep.note("one worker: nothing to all-reduce, graph unchanged");
      return rep;
    }
    if (gs.grads.empty()) {
      rep.note("no gradients found: no all-reduce inserted");
      return rep;
    }
    auto link = collective_link(g, cluster);
    auto buckets = ddp_buckets(gs, bucket_cap, first_bucket);
    std::size_t without_update = 0, per_iteration = 0;
    time_ns comm_time = 0;
    const auto its = gs.iterations();
    const auto entries = update_entries_by_iteration(g);
    for (auto i : its) {
      std::vector<task_id> comms;
      task_id prev = no_task;
      std::size_t k = 0;
      for (auto& b : buckets) {
        if (b.iteration != i) continue;
        auto d = all_reduce_time(double(b.bytes), cluster, algorithm);
        auto h = add_comm(g, comm_op::all_reduce, "all_reduce bucket " + std::to_string(k++), b.bytes,
                          cluster.workers(), d, link, ready_tasks(gs, b), prev, i);
        prev = h.id;
        comms.push_back(h.id);
        if (i == its.front()) comm_time += d;
      }
      if (i == its.front()) per_iteration = comms.size();
      if (wait_before_update(g, entries, i, comms) == 0) ++without_update;
    }
    rep.add("buckets per iteration", std::to_string(per_iteration));
    rep.add("all-reduce time per iteration (alone on the link)", format_time(comm_time));
    rep.add("algorithm", std::string(to_string(algorithm)));
    rep.add("link", g.resource_at(link).name);
    if (without_update)
      rep.note(std::to_string(without_update) +
               " iteration(s) have no weight-update phase: their all-reduces only end the iteration");
    return rep;
  }
};

} // namespace daydream::passes

#endif
