// Defines passes::dgc: Deep Gradient Compression, sparse gradient exchange plus compression kernels.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_DGC_HPP
#define DAYDREAM_PASSES_DGC_HPP

#include <daydream/dependency.hpp>
#include <daydream/insert.hpp>
#include <daydream/pass.hpp>
#include <daydream/units.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

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
/// and memsets of at least 1 MiB (bytes moved / time). A measured value outside the
/// physical range of GPU memory (20 GB/s .. 10 TB/s), or none at all, gives way to
/// `mem_bandwidth` (default 500 GB/s), and the report says so. A kernel never takes less
/// than the shortest GPU kernel of the trace (its fixed cost; at most 20 us, else 2 us).
/// The optimizer's GPU kernels wait for the decompression. A trace's recorded
/// all-reduces are replaced (run_data_parallel). With one worker the graph is left
/// unchanged.
///
///     daydream::apply(g, daydream::passes::dgc{.cluster = {.machines = 16}, .ratio = 0.001});
struct dgc {
  /// The name on the command line.
  static constexpr std::string_view name = "dgc";

  /// The physical range of a GPU's memory throughput: a value measured on the trace
  /// outside it is not a memory throughput (copies too small to amortize their fixed
  /// cost, a wrong byte count) and mem_bandwidth is used instead. 20 GB/s is below any
  /// training GPU (embedded parts start at 25 GB/s), 10 TB/s above any shipping one.
  static constexpr double min_memory_throughput = 20e9, max_memory_throughput = 10e12;
  /// Copies and memsets smaller than this are left out of the measurement: their time is
  /// mostly the fixed cost of a GPU operation, not moving bytes.
  static constexpr std::uint64_t min_measured_bytes = 1ull << 20;
  /// The longest fixed cost of a kernel taken from the trace (its shortest kernel): a
  /// trace whose shortest kernel is longer has no small kernels to learn it from, and
  /// `default_kernel_floor` is used.
  static constexpr time_ns max_kernel_floor = 20'000, default_kernel_floor = 2'000;

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  std::uint64_t bucket_cap = 25_MiB;  ///< DDP's bucket_cap_mb = 25
  std::uint64_t first_bucket = 1_MiB; ///< DDP's first bucket: 1 MiB
  double ratio = 0.001;         ///< fraction of the gradient sent (99.9% sparsity)
  double compress_passes = 8;   ///< memory passes over the gradient to compress it
  double mem_bandwidth = 500e9; ///< bytes/s, when the trace has nothing (plausible) to measure

  /// Why the default what-if run leaves the pass out on `g`, or "" when it runs it
  /// (data_parallel_not_applicable: no backward, no gradient sizes, or a trace that
  /// synchronizes its gradients already).
  static std::string not_applicable(const graph& g) { return data_parallel_not_applicable(g); }
  /// Whether the default what-if run includes the pass on `g` (not_applicable is empty).
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// The device memory throughput (bytes/s) measured from `g`'s device copies and
  /// memsets (copy tasks, and kernels with bytes and no FLOPs) of at least min_measured_bytes (bytes moved / time: a copy reads and writes
  /// its bytes, a memset writes them), or 0 when there are none. Not checked: see
  /// memory_throughput.
  static double measured_throughput(const graph& g) {
    double bytes = 0, ns = 0;
    auto sized = pred([](const auto& r) {
      return r.duration() > 0 && r.payload().bytes >= min_measured_bytes &&
             (r.payload().direction == copy_kind::d2d || r.payload().direction == copy_kind::memset);
    });
    for (auto m : tasks<memcpy_task>(g) | where(sized)) {
      bytes += double(m.payload().bytes) * (m.payload().direction == copy_kind::d2d ? 2.0 : 1.0);
      ns += double(m.duration());
    }
    // Kernels that say their bytes and no FLOPs (memsets): a GEMM's or a convolution's
    // bytes (recorded shapes) over its time is no memory throughput.
    for (auto k : tasks<gpu_kernel>(g) | where(pred([](const auto& r) {
                    return r.duration() > 0 && r.payload().bytes >= min_measured_bytes && r.payload().flops == 0;
                  }))) {
      bytes += double(k.payload().bytes);
      ns += double(k.duration());
    }
    return ns > 0 ? bytes / ns * 1e9 : 0;
  }

  /// The memory throughput the compression kernels run at: measured_throughput when it
  /// lies within [min_memory_throughput, max_memory_throughput], else mem_bandwidth, with
  /// a note saying why.
  bounded_value memory_throughput(const graph& g) const {
    return bounded(measured_throughput(g), min_memory_throughput, max_memory_throughput, mem_bandwidth,
                   "device memory throughput", format_rate);
  }

  /// The shortest time a kernel takes (its fixed cost): the trace's shortest GPU kernel
  /// when it is at most max_kernel_floor, else default_kernel_floor, with a note.
  static bounded_value kernel_floor(const graph& g) {
    time_ns shortest = 0;
    for (auto k : tasks<gpu_kernel>(g) | where(pred([](const auto& r) { return r.duration() > 0; })))
      if (shortest == 0 || k.duration() < shortest) shortest = k.duration();
    return bounded(double(shortest), 1, double(max_kernel_floor), double(default_kernel_floor),
                   "shortest kernel (the fixed cost of a kernel)",
                   [](double ns) { return format_time(static_cast<time_ns>(ns)); });
  }

  /// Applies the pass to `g` (use daydream::apply for a transaction) and reports what it
  /// inserted (run_data_parallel: recorded all-reduces are replaced, a graph without
  /// gradients or a one-worker cluster is left unchanged and the report says why).
  pass_report operator()(graph& g) const {
    auto find = [&](const graph& h) { return find_gradients(h, sizes, model_bytes); };
    return run_data_parallel(g, name, cluster, find, weight_update::waits, 1, [&](data_parallel_step& s) {
      return insert(s);
    });
  }

private:
  tasks_by_iteration insert(data_parallel_step& s) const {
    auto& g = s.g;
    const auto throughput = memory_throughput(g);
    s.rep.add(throughput.derived ? "memory throughput (from the trace's copies)" : "memory throughput (mem_bandwidth)",
              format_rate(throughput.value), report_value::of_rate(throughput.value));
    if (!throughput.derived) s.rep.note("compression kernels costed at mem_bandwidth: " + throughput.note);
    const auto floor = kernel_floor(g);
    if (!floor.derived) s.rep.note(floor.note);
    auto kernel_time = [&](double bytes_moved) {
      return std::max(static_cast<time_ns>(floor.value),
                      static_cast<time_ns>(std::llround(bytes_moved / throughput.value * 1e9)));
    };

    auto link = collective_link(g, s.c);
    const auto p = s.c.workers();
    auto buckets = ddp_buckets(s.gs, bucket_cap, first_bucket);
    std::size_t kernels = 0;
    double sent = 0, dense = 0;
    const auto its = s.gs.iterations();
    tasks_by_iteration ends;
    for (auto i : its) {
      task_id prev = no_task;
      std::vector<std::pair<task_id, std::uint64_t>> gathers; // all-gather, dense bytes
      std::size_t k = 0;
      for (auto* b : buckets_of(buckets, i)) {
        const auto c = static_cast<std::uint64_t>(std::ceil(2.0 * ratio * double(b->bytes)));
        // The compression kernel, after the bucket's last gradient on its stream, waiting
        // for the bucket's other gradients.
        const auto& last = s.gs.grads[b->members.back()];
        task_fields f{.name = "dgc_compress", .duration = kernel_time(compress_passes * double(b->bytes)),
                      .layer = last.layer, .phase = phase::backward, .iteration = i};
        std::vector<dependency> others;
        for (auto t : ready_tasks(s.gs, *b))
          if (t != last.ready) others.push_back(edge_from(t, dep_kind::data));
        const task_id compress = insert_after_gpu(g, f, last.ready, others);
        ++kernels;
        auto d = all_gather_time(double(p) * double(c), p, s.c.ring_link());
        prev = add_comm(g, comm_op::all_gather, "sparse all_gather bucket " + std::to_string(k++), c, p, d, link,
                        {compress}, prev, i).id;
        gathers.emplace_back(prev, b->bytes);
        if (i == its.front()) { sent += double(c); dense += double(b->bytes); }
      }
      // Decompression before the optimizer step's first GPU task; the optimizer waits
      // for it (run_data_parallel adds those waits).
      task_id gpu_entry = no_task;
      for (auto e : of_iteration(s.entries, i))
        if (!g.is<cpu_task>(e)) { gpu_entry = e; break; }
      for (auto& [gather, bytes] : gathers) {
        const double moved = double(bytes) + double(p) * std::ceil(2.0 * ratio * double(bytes));
        task_fields f{.name = "dgc_decompress", .duration = kernel_time(moved), .phase = phase::weight_update,
                      .iteration = i};
        const dependency exchanged = edge_from(gather, dep_kind::comm);
        const task_id dk = gpu_entry != no_task
                               ? insert_launched_like(g, gpu_kernel{}, f, just_before(gpu_entry), {}, {exchanged}).task.id
                               : daydream::insert(g, gpu_kernel{}, f, {exchanged}).id;
        ends[i].push_back(dk);
        ++kernels;
      }
    }
    s.rep.add_count("buckets", std::int64_t(buckets.size()));
    s.rep.add("bytes sent per iteration", format_bytes(sent) + " instead of " + format_bytes(dense),
              report_value::of_change(report_kind::bytes, dense, sent));
    s.rep.add_count("compression kernels inserted", std::int64_t(kernels));
    return ends;
  }

  // A kernel right after `after` on its stream, launched like it; when `after` is not on a
  // GPU stream (a CPU task, or no resource), a kernel in no program order that waits for it.
  // Then it waits for `others` too.
  static task_id insert_after_gpu(graph& g, const task_fields& f, task_id after, std::vector<dependency> others) {
    if (g.is<cpu_task>(after) || g.resource_of(after) == no_resource ||
        g.resource_at(g.resource_of(after)).kind != resource_kind::gpu_stream) {
      others.insert(others.begin(), edge_from(after, dep_kind::data));
      return daydream::insert(g, gpu_kernel{}, f, others).id;
    }
    return insert_launched_like(g, gpu_kernel{}, f, just_after(after), {}, others).task.id;
  }
};

} // namespace daydream::passes

#endif
