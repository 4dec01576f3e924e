// Defines passes::ddp: data-parallel training with bucketed all-reduce, as PyTorch DistributedDataParallel does it.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_DDP_HPP
#define DAYDREAM_PASSES_DDP_HPP

#include <daydream/pass.hpp>
#include <daydream/units.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

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
/// The optimizer's GPU kernels wait for every all-reduce of their iteration (a stream
/// wait, as NCCL's: the CPU launches on). On a trace that already holds all-reduces (a
/// rank of a DDP job) those are removed first and whatever waited for them waits for the
/// modelled ones (run_data_parallel). With one worker the graph is left unchanged.
///
/// Not modelled: stragglers and skew between workers (the all-reduce starts when this
/// worker's gradients are ready), the reduction arithmetic, contention of the NCCL
/// kernels with computation (see replay_options::overlap_slowdown).
///
///     using namespace daydream::literals;
///     daydream::apply(g, daydream::passes::ddp{.cluster = {.machines = 16}, .bucket_cap = 25_MiB});
struct ddp {
  /// The name on the command line.
  static constexpr std::string_view name = "ddp";

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  std::uint64_t bucket_cap = 25_MiB;  ///< DDP's bucket_cap_mb = 25
  std::uint64_t first_bucket = 1_MiB; ///< DDP's first bucket: 1 MiB
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< the collective's algorithm
  std::vector<gradient> gradients; ///< optional explicit gradients; overrides `sizes` and the trace

  /// Why the default what-if run leaves the pass out on `g`, or "" when it runs it
  /// (data_parallel_not_applicable: no backward, no gradient sizes, or a trace that
  /// synchronizes its gradients already).
  static std::string not_applicable(const graph& g) { return data_parallel_not_applicable(g); }
  /// Whether the default what-if run includes the pass on `g` (not_applicable is empty).
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// The gradients this pass all-reduces on `g`.
  gradient_set gradients_of(const graph& g) const {
    if (gradients.empty()) return find_gradients(g, sizes, model_bytes);
    gradient_set s{gradients, gradient_source::given, {}};
    order_gradients(g, s);
    return s;
  }

  /// Applies the pass to `g` (use daydream::apply for a transaction) and reports what it
  /// inserted (run_data_parallel: recorded all-reduces are replaced, a graph without
  /// gradients or a one-worker cluster is left unchanged and the report says why).
  pass_report operator()(graph& g) const {
    auto find = [&](const graph& h) { return gradients_of(h); };
    return run_data_parallel(g, name, cluster, find, weight_update::waits, 1, [&](data_parallel_step& s) {
      auto link = collective_link(s.g, s.c);
      auto buckets = ddp_buckets(s.gs, bucket_cap, first_bucket);
      tasks_by_iteration ends;
      time_ns first_time = 0;
      const auto its = s.gs.iterations();
      for (auto i : its) {
        task_id prev = no_task;
        std::size_t k = 0;
        for (auto* b : buckets_of(buckets, i)) {
          auto d = all_reduce_time(double(b->bytes), s.c, algorithm);
          prev = add_comm(s.g, comm_op::all_reduce, "all_reduce bucket " + std::to_string(k++), b->bytes,
                          s.c.workers(), d, link, ready_tasks(s.gs, *b), prev, i).id;
          ends[i].push_back(prev);
          if (i == its.front()) first_time += d;
        }
      }
      s.rep.add_count("buckets per iteration", std::int64_t(of_iteration(ends, its.front()).size()));
      s.rep.add("all-reduce time per iteration (alone on the link)", format_time(first_time),
                report_value::of_time(double(first_time)));
      s.rep.add("algorithm", std::string(to_string(algorithm)));
      s.rep.add("link", s.g.resource_at(link).name);
      return ends;
    });
  }
};

} // namespace daydream::passes

#endif
