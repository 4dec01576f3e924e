// Defines passes::dgc: Deep Gradient Compression, sparse gradient exchange plus compression kernels.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_DGC_HPP
#define DAYDREAM_PASSES_DGC_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/resource.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/edit.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

using daydream::operator|;

/// Deep Gradient Compression (Lin et al., "Deep Gradient Compression: Reducing the
/// Communication Bandwidth for Distributed Training", ICLR 2018): each worker sends only
/// the largest `ratio` of its gradient values (with their indices), accumulating the
/// rest locally, at the price of compression work on the GPU.
///
/// Cost model. Gradients are bucketed as ddp does. For each bucket of n bytes:
/// - a `dgc_compress` kernel, launched from the CPU after the bucket's last gradient,
///   runs on that gradient's stream right after it. It streams the gradient through
///   memory `compress_passes` times (momentum correction, local accumulation, threshold
///   selection, masking: 8 by default) at the device's memory throughput;
/// - the sparse gradients of all workers are exchanged with an all-gather (sparse
///   vectors cannot be summed in a ring): each worker contributes c = 2 x ratio x n
///   bytes (a value and a 4-byte index per kept fp32 element), so the all-gather's
///   result is p x c bytes: all_gather_time(p c, p, ring link), on the NIC or GPU link
///   as ddp uses, in bucket order;
/// - a `dgc_decompress` kernel, launched right before the optimizer step's first
///   kernel, scatters the p sparse vectors into a dense gradient: it writes n bytes and
///   reads p x c.
/// The memory throughput is measured from comparable tasks of the trace: device copies
/// and memsets with known bytes (bytes moved / time); if there are none, `mem_bandwidth`
/// (default 500 GB/s). A kernel never takes less than the shortest GPU kernel of the
/// trace (its fixed cost). The optimizer waits for the decompression. With one worker
/// the graph is left unchanged.
///
///     daydream::apply(g, daydream::passes::dgc::from_params(
///         daydream::pass_params::parse("dgc", "workers=16,bandwidth=10Gbps,ratio=0.001")));
struct dgc {
  /// The name on the command line.
  static constexpr std::string_view name = "dgc";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "Deep Gradient Compression: all-gather of top-ratio sparse gradients plus compression and "
      "decompression kernels. params: cluster keys (workers=, bandwidth=, ...), ratio=0.001, "
      "compress_passes=8, mem_bandwidth=500GB/s, bucket_cap=25MiB, first_bucket=1MiB, model_bytes= (when the trace has no sizes)";

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  double ratio = 0.001;                    ///< fraction of the gradient sent (99.9% sparsity)
  double compress_passes = 8;              ///< memory passes over the gradient to compress it
  double mem_bandwidth = 500e9;            ///< bytes/s, when the trace has nothing to measure
  std::uint64_t bucket_cap = 25ull << 20;  ///< as ddp: DDP bucket_cap_mb = 25
  std::uint64_t first_bucket = 1ull << 20; ///< as ddp: the first bucket, 1 MiB
  layer_bytes sizes; ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes

  /// Reads the cluster keys, `ratio`, `compress_passes`, `mem_bandwidth`, `bucket_cap`
  /// and `first_bucket`.
  static dgc from_params(const pass_params& p) {
    dgc x;
    x.cluster = cluster::from_params(p);
    x.ratio = p.get_double("ratio", x.ratio);
    x.compress_passes = p.get_double("compress_passes", x.compress_passes);
    x.mem_bandwidth = p.get_bandwidth("mem_bandwidth", x.mem_bandwidth);
    x.bucket_cap = static_cast<std::uint64_t>(p.get_bytes("bucket_cap", double(x.bucket_cap)));
    x.first_bucket = static_cast<std::uint64_t>(p.get_bytes("first_bucket", double(x.first_bucket)));
    x.model_bytes = p.get_bytes("model_bytes", 0);
    p.finish();
    if (!(x.ratio > 0 && x.ratio <= 1)) throw error("daydream: pass 'dgc': ratio must be in (0, 1]");
    if (!(x.mem_bandwidth > 0)) throw error("daydream: pass 'dgc': mem_bandwidth must be positive");
    return x;
  }

  /// Whether the pass can act on `g`: it needs backward work (gradients).
  /// Runs by default only on traces with backward work and recorded gradient sizes.
  static bool applicable(const graph& g) { return has_backward(g) && has_gradient_sizes(g); }

  /// The device memory throughput (bytes/s) measured from `g`'s copies and memsets, or 0.
  static double measured_throughput(const graph& g) {
    double bytes = 0, ns = 0;
    g.for_each<memcpy_task>([&](handle<memcpy_task> h) {
      auto& p = g.payload(h);
      if (g.duration(h) <= 0 || p.bytes == 0) return;
      if (p.direction == copy_kind::d2d) { bytes += 2.0 * double(p.bytes); ns += double(g.duration(h)); }
      else if (p.direction == copy_kind::memset) { bytes += double(p.bytes); ns += double(g.duration(h)); }
    });
    g.for_each<gpu_kernel>([&](handle<gpu_kernel> h) {
      if (g.payload(h).bytes == 0 || g.duration(h) <= 0) return;
      bytes += double(g.payload(h).bytes);
      ns += double(g.duration(h));
    });
    return ns > 0 ? bytes / ns * 1e9 : 0;
  }

  /// Applies the pass to `g` (use daydream::apply for a transaction) and reports what it
  /// inserted; a graph without gradients or a one-worker cluster is left unchanged, with a note.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    auto gs = find_gradients(g, sizes, model_bytes);
    report_gradients(rep, cluster, gs);
    if (cluster.workers() <= 1) {
      rep.note("one worker: nothing to exchange, graph unchanged");
      return rep;
    }
    if (gs.grads.empty()) {
      rep.note("no gradients found: nothing compressed");
      return rep;
    }
    double throughput = measured_throughput(g);
    if (throughput > 0) rep.add("memory throughput (from the trace's copies)", format_bytes(throughput) + "/s");
    else {
      throughput = mem_bandwidth;
      rep.add("memory throughput (mem_bandwidth)", format_bytes(throughput) + "/s");
      rep.note("no device copy or memset with bytes in the trace: compression kernels costed at mem_bandwidth");
    }
    time_ns floor = 0;
    g.for_each<gpu_kernel>([&](handle<gpu_kernel> h) {
      if (g.duration(h) > 0 && (floor == 0 || g.duration(h) < floor)) floor = g.duration(h);
    });
    auto kernel_time = [&](double bytes_moved) {
      return std::max(floor, static_cast<time_ns>(std::llround(bytes_moved / throughput * 1e9)));
    };

    auto link = collective_link(g, cluster);
    const auto p = cluster.workers();
    auto buckets = ddp_buckets(gs, bucket_cap, first_bucket);
    std::size_t kernels = 0, without_update = 0;
    double sent = 0, dense = 0;
    const auto its = gs.iterations();
    const auto entries_by_iteration = update_entries_by_iteration(g);
    for (auto i : its) {
      task_id prev = no_task;
      std::vector<task_id> gathers;
      std::vector<std::uint64_t> gathered;
      std::size_t k = 0;
      for (auto& b : buckets) {
        if (b.iteration != i) continue;
        const auto c = static_cast<std::uint64_t>(std::ceil(2.0 * ratio * double(b.bytes)));
        // The compression kernel, after the bucket's last gradient on its stream.
        const task_id last = gs.grads[b.members.back()].ready;
        task_fields f{.name = "dgc_compress", .duration = kernel_time(compress_passes * double(b.bytes)),
                      .layer = gs.grads[b.members.back()].layer, .phase = phase::backward, .iteration = i};
        auto compress = add_after_gpu(g, f, last);
        for (auto t : ready_tasks(gs, b))
          if (t != last) g.add_dependency(t, compress, dep_kind::data);
        ++kernels;
        auto d = all_gather_time(double(p) * double(c), p, cluster.ring_link());
        auto h = add_comm(g, comm_op::all_gather, "sparse all_gather bucket " + std::to_string(k++), c, p, d,
                          link, {compress}, prev, i);
        prev = h.id;
        gathers.push_back(h.id);
        gathered.push_back(b.bytes);
        if (i == its.front()) { sent += double(c); dense += double(b.bytes); }
      }
      // Decompression before the optimizer step.
      const auto& entries = of_iteration(entries_by_iteration, i);
      task_id gpu_entry = no_task;
      for (auto e : entries)
        if (g.resource_of(e) != no_resource && g.resource_at(g.resource_of(e)).kind == resource_kind::gpu_stream) {
          gpu_entry = e;
          break;
        }
      std::vector<task_id> done;
      for (std::size_t j = 0; j < gathers.size(); ++j) {
        const double moved = double(gathered[j]) + double(p) * std::ceil(2.0 * ratio * double(gathered[j]));
        task_fields f{.name = "dgc_decompress", .duration = kernel_time(moved),
                      .phase = phase::weight_update, .iteration = i};
        auto dk = gpu_entry != no_task ? add_before_gpu(g, f, gpu_entry) : g.add(gpu_kernel{}, f).id;
        g.add_dependency(gathers[j], dk, dep_kind::comm);
        done.push_back(dk);
        ++kernels;
      }
      if (entries.empty()) ++without_update;
      for (auto dk : done)
        for (auto e : entries)
          if (e != dk && !g.has_dependency(dk, e)) g.add_dependency(dk, e, dep_kind::data);
    }
    rep.add("buckets", std::to_string(buckets.size()));
    rep.add("bytes sent per iteration", format_bytes(sent) + " instead of " + format_bytes(dense));
    rep.add("compression kernels inserted", std::to_string(kernels));
    if (without_update)
      rep.note(std::to_string(without_update) +
               " iteration(s) have no weight-update phase: decompression only ends the iteration");
    return rep;
  }

private:
  // A kernel on `after`'s stream right after it, launched right after `after`'s launch
  // call when it has one; unconstrained (after it) when `after` is not on a GPU stream.
  static task_id add_after_gpu(graph& g, task_fields f, task_id after) {
    if (g.is<cpu_task>(after) || g.resource_of(after) == no_resource ||
        g.resource_at(g.resource_of(after)).kind != resource_kind::gpu_stream) {
      auto k = g.add(gpu_kernel{}, f).id;
      g.add_dependency(after, k, dep_kind::data);
      return k;
    }
    f.trace_start = g.trace_start(after) + g.duration(after);
    if (auto launch = launch_of(g, after); launch != no_task)
      return daydream::insert_launched(g, gpu_kernel{}, f, launch, after).task.id;
    return daydream::insert_after(g, gpu_kernel{}, f, after).id;
  }
  // A kernel on `before`'s stream right before it, launched right before its launch call.
  static task_id add_before_gpu(graph& g, task_fields f, task_id before) {
    auto k = daydream::insert_before(g, gpu_kernel{}, f, before).id;
    if (auto launch = launch_of(g, before); launch != no_task) {
      task_fields lf{.name = "cudaLaunchKernel", .duration = g.duration(launch), .phase = f.phase,
                     .iteration = f.iteration};
      auto call = daydream::insert_before(g, cpu_task{.call = cpu_call::launch}, lf, launch);
      g.add_dependency(call.id, k, dep_kind::launch);
    }
    return k;
  }
};

} // namespace daydream::passes

#endif
