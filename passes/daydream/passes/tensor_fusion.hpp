// Defines passes::tensor_fusion: Horovod's tensor fusion, ready gradients fused per cycle up to a size cap.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_TENSOR_FUSION_HPP
#define DAYDREAM_PASSES_TENSOR_FUSION_HPP

#include <daydream/cluster.hpp>
#include <daydream/collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/data_parallel.hpp>
#include <daydream/passes/support/format.hpp>
#include <daydream/passes/support/gradients.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

using daydream::operator|;

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
/// every buffer. Defaults are Horovod's since 0.21: 1 ms cycles, 128 MiB buffers. The
/// copies into and out of the fusion buffer are not modelled. With one worker the graph
/// is left unchanged.
///
///     daydream::apply(g, daydream::passes::tensor_fusion::from_params(daydream::pass_params::parse(
///         "tensor_fusion", "workers=8,cycle_time=5ms,threshold=64MiB")));
struct tensor_fusion {
  /// The name on the command line.
  static constexpr std::string_view name = "tensor_fusion";
  /// The parameters daydream-whatif uses when it runs every pass with no --pass given.
  static constexpr std::string_view scenario_params = "workers=16,bandwidth=25Gbps";
  /// One line for `daydream-whatif --help`.
  static constexpr std::string_view help =
      "Horovod tensor fusion: gradients ready within a cycle fused into all-reduce buffers up to "
      "a cap. params: cluster keys (workers=, bandwidth=, ...), cycle_time=1ms, threshold=128MiB, "
      "algorithm=ring, model_bytes= (when the trace has no sizes)";

  daydream::cluster cluster; ///< the cluster (cluster::from_params reads it)
  time_ns cycle_time = 1'000'000;       ///< HOROVOD_CYCLE_TIME, 1 ms
  std::uint64_t threshold = 128ull << 20; ///< HOROVOD_FUSION_THRESHOLD, 128 MiB
  all_reduce_algorithm algorithm = all_reduce_algorithm::ring; ///< the collective's algorithm
  layer_bytes sizes; ///< optional layer -> gradient bytes; empty: from the trace
  double model_bytes = 0; ///< total gradient bytes to spread when the trace has no sizes

  /// Reads the cluster keys, `cycle_time`, `threshold` and `algorithm`.
  static tensor_fusion from_params(const pass_params& p) {
    tensor_fusion x;
    x.cluster = cluster::from_params(p);
    x.cycle_time = static_cast<time_ns>(p.get_time_ns("cycle_time", double(x.cycle_time)));
    x.threshold = static_cast<std::uint64_t>(p.get_bytes("threshold", double(x.threshold)));
    x.algorithm = parse_all_reduce_algorithm(p.get_string("algorithm", "ring"));
    x.model_bytes = p.get_bytes("model_bytes", 0);
    p.finish();
    if (x.cycle_time <= 0) throw error("daydream: pass 'tensor_fusion': cycle_time must be positive");
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
    auto link = collective_link(g, cluster);
    std::size_t buffers = 0, without_update = 0;
    time_ns waited = 0;
    const auto entries = update_entries_by_iteration(g);
    for (auto i : gs.iterations()) {
      auto r = daydream::replay(g);
      auto idx = gs.of_iteration(i);
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        return r.end[gs.grads[a].ready] < r.end[gs.grads[b].ready];
      });
      std::vector<task_id> comms;
      task_id prev = no_task;
      for (std::size_t a = 0; a < idx.size();) {
        const time_ns boundary = (r.end[gs.grads[idx[a]].ready] + cycle_time - 1) / cycle_time * cycle_time;
        // One buffer: the following gradients of the same cycle while they fit.
        std::size_t b = a;
        std::uint64_t bytes = 0;
        time_ns last_ready = 0;
        std::vector<task_id> ready;
        while (b < idx.size()) {
          const auto& gr = gs.grads[idx[b]];
          const time_ns at = r.end[gr.ready];
          if ((at + cycle_time - 1) / cycle_time * cycle_time != boundary) break;
          if (b > a && bytes + gr.bytes > threshold) break;
          bytes += gr.bytes;
          last_ready = std::max(last_ready, at);
          if (std::find(ready.begin(), ready.end(), gr.ready) == ready.end()) ready.push_back(gr.ready);
          ++b;
        }
        auto wait = g.add(cpu_task{.call = cpu_call::runtime},
                          task_fields{.name = "horovod cycle", .duration = boundary - last_ready,
                                      .trace_start = trace_end_of(g, ready), .phase = phase::backward,
                                      .iteration = i});
        for (auto t : ready) g.add_dependency(t, wait.id, dep_kind::comm);
        waited += boundary - last_ready;
        auto d = all_reduce_time(double(bytes), cluster, algorithm);
        auto h = add_comm(g, comm_op::all_reduce, "fused all_reduce " + std::to_string(comms.size()), bytes,
                          cluster.workers(), d, link, {wait.id}, prev, i);
        prev = h.id;
        comms.push_back(h.id);
        ++buffers;
        a = b;
      }
      if (wait_before_update(g, entries, i, comms) == 0) ++without_update;
    }
    rep.add("fused buffers", std::to_string(buffers));
    rep.add("time waiting for cycle boundaries", format_time(waited));
    rep.add("cycle time", format_time(cycle_time));
    rep.add("threshold", format_bytes(double(threshold)));
    if (without_update)
      rep.note(std::to_string(without_update) +
               " iteration(s) have no weight-update phase: their all-reduces only end the iteration");
    return rep;
  }
};

} // namespace daydream::passes

#endif
