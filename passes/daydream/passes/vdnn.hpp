// Defines the vdnn pass: stashed activations offloaded to host memory and prefetched back for the backward.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_VDNN_HPP
#define DAYDREAM_PASSES_VDNN_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/semantics/edit.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/layers.hpp>
#include <daydream/semantics/memory.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// vDNN (Rhu et al., "vDNN: Virtualized Deep Neural Networks for Scalable,
/// Memory-Efficient Neural Network Design", MICRO'16; modeled as in Daydream, Zhu et al.,
/// ATC'20, §6): the tensors a layer stashes for its backward live in host memory in
/// between.
///
/// Cost model, for every layer instance that stashes (forward and backward kernels,
/// a known stash, name selected by `layers`), with `b` its stash (layer_instance::stash():
/// what the trace's [memory] events show the layer keeping, else its tensor sizes):
/// - Offload: a D2H copy of `b` bytes taking `b / bandwidth` (PCIe) on a copy engine of
///   its own (resource "vdnn d2h", one per device), issued by a `cudaMemcpyAsync` call
///   right after the launch of the layer's first forward kernel. It starts once the
///   layer's input is ready (the kernel before the layer's first forward kernel on the
///   stream has ended), so it overlaps the layer's forward, and the stream waits for it
///   before the kernel that follows the layer's forward: vDNN synchronizes the compute
///   and memory streams at the end of each layer, which is where its overhead comes from.
/// - Prefetch: an H2D copy on the "vdnn h2d" engine, issued right before the launch of
///   the backward of the layer `lookahead` positions earlier in backward order (1: the
///   layer whose backward runs just before, vDNN's policy), starting once that backward
///   may start and the offload is done; the layer's first backward kernel waits for it.
/// - Replay policy: priority_policy; offloads are ranked in forward order and prefetches
///   in the order the backward needs them, so a busy copy engine serves the most urgent
///   copy first.
///
/// Memory (when the graph has a memory model, see estimate_activation_memory): the
/// stash is released when the stream passes the offload's synchronization point and
/// allocated again when the prefetch starts; with the trace's [memory] events, which
/// charge memory to the CPU calls that allocate it, when the offload call has been issued
/// and when the prefetch call is. The predicted time overhead and peak-memory
/// reduction both come from the replay.
///
/// Approximations: the copy engines are not shared with the trace's own copies; PCIe
/// runs at `bandwidth` regardless of pinned memory or contention from the other
/// direction; the stash estimate has the limits stated at stashed_bytes.
///
///     daydream::apply(g, daydream::passes::vdnn{.layers = ".*conv.*"});   // vDNN_conv
///     auto r = daydream::replay(g, daydream::pass_policy_t<daydream::passes::vdnn>{});
struct vdnn {
  static constexpr std::string_view name = "vdnn"; ///< the --pass name
  /// vDNN's prefetch order: priorities set by the pass, then trace order.
  using policy = priority_policy;
  double bandwidth = 12e9;   ///< PCIe bytes/s in each direction
  std::string layers = {};   ///< layers to offload (whole-name regex); empty: every layer
  std::int64_t lookahead = 1; ///< prefetch this many layers ahead in backward order

  /// Why no layer of `g` stashes tensors of known size for its backward ("" when one
  /// does): what the trace lacks and how to record it.
  static std::string not_applicable(const graph& g) {
    return no_stashing_layer_reason(g, layer_instances(g), layer_filter{}, true);
  }
  /// Whether some layer of `g` stashes tensors of known size for its backward.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Inserts the offloads and prefetches, their calls, dependencies and priorities (and
  /// moves memory when the graph has a memory model); returns the layers, bytes and copy
  /// time. Adds two copy-engine resources per device. Invalidates nothing.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    const layer_filter selected(layers);
    const bool memory = has_memory_accounting(g);
    const auto all = layer_instances(g);
    // Backward order of each iteration: layer instances by their first backward kernel.
    std::map<std::int32_t, std::vector<const layer_instance*>> backward;
    for (auto& l : all)
      if (!l.backward_gpu.empty()) backward[l.iteration].push_back(&l);
    for (auto& [it, v] : backward)
      std::sort(v.begin(), v.end(), [before = trace_order(g)](auto* a, auto* b) {
        return before(a->backward_gpu.front(), b->backward_gpu.front());
      });
    std::size_t moved = 0;
    std::uint64_t bytes = 0;
    std::set<std::int32_t> iterations; // that had a layer acted on
    time_ns copy_time = 0;
    std::int64_t rank = 0;
    for (auto& l : all) {
      if (!l.stashes() || l.stash() == 0 || !selected(g.str(l.layer))) continue;
      const auto& order = backward[l.iteration];
      const auto pos = std::size_t(std::find(order.begin(), order.end(), &l) - order.begin());
      const auto* trigger = order[pos - std::min<std::size_t>(pos, std::size_t(std::max<std::int64_t>(0, lookahead)))];
      const auto b = l.stash();
      const time_ns d = static_cast<time_ns>(std::llround(double(b) / bandwidth * 1e9));
      const task_id f0 = l.forward_gpu.front(), fn = l.forward_gpu.back();
      const task_id b0 = l.backward_gpu.front(), t0 = trigger->backward_gpu.front();
      const auto device = g.payload(g.as<gpu_kernel>(f0)).device;
      const auto layer = g.layer(f0);

      // The offload waits for the layer's input (the kernel before its first forward kernel)
      // and the stream waits for it after the layer's forward.
      const auto in = prev_on_resource(g, f0), sync = next_on_resource(g, fn);
      std::vector<dependency> off_deps;
      if (in != no_task) off_deps.push_back(edge_from(in, dep_kind::data));
      if (sync != no_task) off_deps.push_back(edge_to(sync, dep_kind::control));
      const auto f0_call = launch_of(g, f0);
      auto off = insert_launched(g, memcpy_task{.direction = copy_kind::d2h, .bytes = b, .device = device},
                               {.name = "vdnn_offload", .duration = d, .resource = engine(g, "d2h", f0, bandwidth),
                                .trace_start = g.trace_start(f0), .layer = layer,
                                .phase = phase::forward, .iteration = l.iteration},
                               position{}, f0_call == no_task ? position{} : just_after(f0_call), memcpy_call(g, f0_call),
                               off_deps);

      // The prefetch waits for the offload and for the trigger's backward to be ready to
      // start; the layer's first backward kernel waits for it.
      std::vector<dependency> pre_deps{edge_from(off.task, dep_kind::data)};
      if (auto ready = prev_on_resource(g, t0); ready != no_task) pre_deps.push_back(edge_from(ready, dep_kind::data));
      pre_deps.push_back(edge_to(b0, dep_kind::data));
      const auto t0_call = launch_of(g, t0);
      auto pre = insert_launched(g, memcpy_task{.direction = copy_kind::h2d, .bytes = b, .device = device},
                               {.name = "vdnn_prefetch", .duration = d, .resource = engine(g, "h2d", f0, bandwidth),
                                .trace_start = g.trace_start(t0), .layer = layer,
                                .phase = phase::backward, .iteration = l.iteration},
                               position{}, t0_call == no_task ? position{} : just_before(t0_call), memcpy_call(g, t0_call),
                               pre_deps);

      reschedule(g, off.task, rank);
      reschedule(g, pre.task, std::int64_t(pos));
      ++rank;
      if (memory) {
        // Where the model charges this layer's memory: on its CPU calls (the trace's
        // [memory] events: the caching allocator frees the stash once the offload is
        // issued, and allocates it when the prefetch is), or on its kernels (the stream
        // passes the offload's synchronization point; the prefetch starts).
        const bool host = l.stash_on_cpu && off.launch && pre.launch;
        add_mem_delta(g, host ? release_point(g, off.launch.id) : sync == no_task ? off.task.id : sync,
                      -static_cast<std::int64_t>(b));
        add_mem_delta(g, host ? pre.launch.id : pre.task.id, static_cast<std::int64_t>(b));
      }
      ++moved;
      bytes += b;
      iterations.insert(l.iteration);
      copy_time += 2 * d;
    }
    rep.add_count("layers offloaded", std::int64_t(moved));
    rep.add("bytes offloaded", format_bytes_per_iteration(double(bytes), iterations.size()),
            report_value::of_bytes(double(bytes)));
    rep.add("copy time (offload + prefetch)", format_time(copy_time), report_value::of_time(double(copy_time)));
    rep.add("PCIe bandwidth", format_bytes(bandwidth) + "/s", report_value::of_rate(bandwidth));
    if (!memory) rep.note("the graph has no memory model: peak memory not predicted "
                          "(the trace has no [memory] events, profile_memory=True, and no estimate "
                          "from tensor sizes, record_shapes=True)");
    if (moved == 0) rep.not_applied(no_stashing_layer_reason(g, all, selected, true) + ": nothing offloaded");
    return rep;
  }

private:
  /// The copy engine of one direction on one device, added on first use.
  static resource_id engine(graph& g, std::string_view dir, task_id kernel, double bandwidth) {
    const auto device = g.payload(g.as<gpu_kernel>(kernel)).device;
    const auto stream = g.resource_of(kernel);
    const auto node = stream == no_resource ? 0 : g.resource_at(stream).node;
    const auto n = "vdnn " + std::string(dir) + " (node " + std::to_string(node) + ", device " +
                   std::to_string(device) + ")";
    if (auto r = g.find_resource(n); r != no_resource) return r;
    return g.add_resource({n, resource_kind::copy_engine, sharing::exclusive, node, device, bandwidth});
  }
  /// The cudaMemcpyAsync call, as long as the launch call it stands next to.
  static launch_call memcpy_call(const graph& g, task_id near) {
    return {cpu_call::memcpy, "cudaMemcpyAsync", near == no_task ? 0 : g.duration(near)};
  }
};

} // namespace daydream::passes

#endif
