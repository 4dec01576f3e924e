// Defines passes::tensor_fusion: Horovod's tensor fusion, ready gradients fused per cycle up to a size cap.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_TENSOR_FUSION_HPP
#define DAYDREAM_PASSES_TENSOR_FUSION_HPP

#include <daydream/dependency.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/units.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// Horovod's tensor fusion (Sergeev & Del Balso, "Horovod: fast and easy distributed
/// deep learning in TensorFlow", 2018): a background thread wakes up every `cycle_time`,
/// takes the gradients that became ready since, and all-reduces them in fused buffers
/// of at most `threshold` bytes.
///
/// Cost model. Ready times come from replaying the graph (trace order) with the
/// all-reduces of the earlier iterations already inserted. Cycles start at multiples of
/// `cycle_time` from time 0; a gradient ready at t is taken at the first cycle boundary
/// at or after t. The gradients of one cycle, in ready order, are packed greedily into
/// buffers of at most `threshold` bytes (a larger gradient travels alone). Each buffer
/// is one all-reduce comm_task (all_reduce_time on the cluster, flat ring) on the NIC
/// (several machines) or the GPU link (one machine), after a "horovod cycle" wait task
/// that lasts from the buffer's last ready gradient to the cycle boundary, and after the
/// previous buffer's all-reduce (one at a time, in order). The optimizer step waits for
/// every buffer (a GPU stream wait). Defaults are Horovod's since 0.21: 1 ms cycles,
/// 128 MiB buffers. The copies into and out of the fusion buffer are not modelled. A
/// trace's recorded all-reduces are replaced (run_data_parallel). With one worker the
/// graph is left unchanged.
///
///     using namespace daydream::literals;
///     daydream::apply(g, daydream::passes::tensor_fusion{.cluster = {.machines = 8}, .cycle_time = 5_ms,
///                                                        .threshold = 64_MiB});
struct tensor_fusion {
  /// The name on the command line.
  static constexpr std::string_view name = "tensor_fusion";

  daydream::cluster cluster; ///< the cluster the workers run on
  layer_bytes sizes;         ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;    ///< total gradient bytes to spread when the trace has no sizes
  time_ns cycle_time = 1_ms;           ///< HOROVOD_CYCLE_TIME, 1 ms
  std::uint64_t threshold = 128_MiB;    ///< HOROVOD_FUSION_THRESHOLD, 128 MiB
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< the collective's algorithm

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
      return insert(s);
    });
  }

private:
  // The first cycle boundary at or after `t`.
  time_ns boundary_of(time_ns t) const { return (t + cycle_time - 1) / cycle_time * cycle_time; }

  tasks_by_iteration insert(data_parallel_step& s) const {
    auto& g = s.g;
    auto link = collective_link(g, s.c);
    std::size_t buffers = 0;
    time_ns waited = 0;
    tasks_by_iteration ends;
    for (auto i : s.gs.iterations()) {
      auto r = daydream::replay(g);
      auto idx = s.gs.of_iteration(i);
      auto ready_at = [&](std::size_t k) { return r.end[s.gs.grads[k].ready]; };
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return ready_at(a) < ready_at(b); });
      task_id prev = no_task;
      for (std::size_t a = 0; a < idx.size();) {
        const time_ns boundary = boundary_of(ready_at(idx[a]));
        // One buffer: the following gradients of the same cycle while they fit.
        std::size_t b = a;
        std::uint64_t bytes = 0;
        time_ns last_ready = 0;
        std::vector<task_id> ready;
        while (b < idx.size()) {
          const auto& gr = s.gs.grads[idx[b]];
          if (boundary_of(ready_at(idx[b])) != boundary) break;
          if (b > a && bytes + gr.bytes > threshold) break;
          bytes += gr.bytes;
          last_ready = std::max(last_ready, ready_at(idx[b]));
          if (std::find(ready.begin(), ready.end(), gr.ready) == ready.end()) ready.push_back(gr.ready);
          ++b;
        }
        // The cycle's wait: from the buffer's last gradient to the cycle boundary.
        auto wait = daydream::insert(g, cpu_task{.call = cpu_call::runtime},
                                     task_fields{.name = "horovod cycle", .duration = boundary - last_ready,
                                                 .trace_start = trace_end_of(g, ready), .phase = phase::backward,
                                                 .iteration = i},
                                     edges_from(ready, dep_kind::comm));
        waited += boundary - last_ready;
        auto d = all_reduce_time(double(bytes), s.c, algorithm);
        prev = add_comm(g, comm_op::all_reduce, "fused all_reduce " + std::to_string(of_iteration(ends, i).size()),
                        bytes, s.c.workers(), d, link, {wait.id}, prev, i).id;
        ends[i].push_back(prev);
        ++buffers;
        a = b;
      }
      // The next iteration's ready times depend on this one's optimizer waiting.
      s.wait_now(i, of_iteration(ends, i));
    }
    s.rep.add_count("fused buffers", std::int64_t(buffers));
    s.rep.add("time waiting for cycle boundaries", format_time(waited), report_value::of_time(double(waited)));
    s.rep.add("cycle time", format_time(cycle_time), report_value::of_time(double(cycle_time)));
    s.rep.add("threshold", format_bytes(double(threshold)), report_value::of_bytes(double(threshold)));
    return ends;
  }
};

} // namespace daydream::passes

#endif
