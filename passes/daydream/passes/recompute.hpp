// Defines the recompute pass: the forward of selected layers re-run before their backward instead of stashing.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_RECOMPUTE_HPP
#define DAYDREAM_PASSES_RECOMPUTE_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/layers.hpp>
#include <daydream/semantics/memory.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// Re-computation, or gradient checkpointing (Chen et al., "Training Deep Nets with
/// Sublinear Memory Cost", 2016; modeled as a graph rewrite as in dPRO, Hu et al.,
/// MLSys'22): selected layers drop what they stash after the forward and re-run their
/// forward right before their backward.
///
/// Cost model: for every layer instance that stashes (forward and backward kernels,
/// name selected by `layers`), its forward CPU tasks and kernels are copied, in trace
/// order, onto the thread of its first backward CPU task (right before it) and the
/// stream of its first backward kernel (right before it), with the launch, sync and data
/// dependencies among them copied too. The copies keep their durations and the gaps
/// between them (the last one's gap, which led to the next layer, is dropped) and are
/// marked phase backward. The forward's memory copies are not repeated.
///
/// Memory (when the graph has a memory model, see estimate_activation_memory): the
/// stash (layer_instance::stash(): what the trace's [memory] events show the layer keeping,
/// else its tensor sizes) is released after the layer's last forward kernel and allocated
/// again when the first re-computed kernel starts (with the trace's [memory] events, which
/// charge memory to the CPU calls that allocate it: after its last forward CPU call, and
/// when the first re-computed one starts); the copies allocate nothing else. The saving is an
/// upper bound: checkpointing keeps each segment's input, which the per-layer stash
/// estimate counts as part of the layer.
///
///     daydream::apply(g, daydream::passes::recompute{.layers = "layer[34]\\..*"});
struct recompute {
  static constexpr std::string_view name = "recompute"; ///< the --pass name
  std::string layers = {}; ///< layers to re-compute (whole-name regex); empty: every layer

  /// Why no layer of `g` has forward and backward kernels ("" when one has): what the
  /// trace lacks and how to record it.
  static std::string not_applicable(const graph& g) {
    return no_stashing_layer_reason(g, layer_instances(g), layer_filter{}, false);
  }
  /// Whether some layer of `g` has forward and backward kernels.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// The tasks of `g` that show it re-computes activations already: calls of PyTorch's
  /// activation checkpointing (`torch/utils/checkpoint.py`, `CheckpointFunction`,
  /// `CheckpointWrapper`), as with_stack and with_modules record them.
  static std::size_t traced_checkpoint_calls(const graph& g) {
    std::size_t n = 0;
    g.for_each_task([&](task_id t) {
      if (!g.is<cpu_task>(t)) return;
      const auto s = g.name(t);
      n += s.find("torch/utils/checkpoint.py") != std::string_view::npos ||
           s.find("CheckpointFunction") != std::string_view::npos ||
           s.find("CheckpointWrapper") != std::string_view::npos;
    });
    return n;
  }

  /// The dependencies a re-computed forward keeps among its tasks: all but program order
  /// (the copies take the program order of the backward they run in).
  static constexpr dep_mask not_program_order = {dep_kind::launch, dep_kind::sync, dep_kind::comm,
                                                 dep_kind::data, dep_kind::control};

  /// Copies the forward of each selected layer before its backward (and moves memory
  /// when the graph has a memory model); returns the layers, tasks and time. Invalidates
  /// nothing.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    const layer_filter selected(layers);
    const bool memory = has_memory_accounting(g);
    const auto checkpoint_calls = traced_checkpoint_calls(g); // before the copies
    std::size_t layers_done = 0, copied = 0;
    std::uint64_t bytes = 0;
    std::set<std::int32_t> iterations; // that had a layer acted on
    time_ns gpu_time = 0;
    for (auto& l : layer_instances(g)) {
      if (!l.stashes() || !selected(g.str(l.layer))) continue;
      const task_id b0 = l.backward_gpu.front();
      const task_id c0 = l.backward_cpu.empty() ? launch_of(g, b0) : l.backward_cpu.front();
      // The forward's CPU tasks right before the first backward CPU task, its kernels right
      // before the first backward kernel, as backward work, with the launches, syncs and
      // data between them (the program orders are the anchors').
      std::vector<task_id> forward;
      if (c0 != no_task) forward = l.forward_cpu;
      forward.insert(forward.end(), l.forward_gpu.begin(), l.forward_gpu.end());
      const auto copy = copy_subgraph(g, g, forward, {.among = not_program_order}, [&](task_id t, task_fields& f) {
        const bool cpu = g.is<cpu_task>(t);
        const task_id anchor = cpu ? c0 : b0;
        f.phase = phase::backward;
        f.trace_start = g.trace_start(anchor);
        if (t == (cpu ? l.forward_cpu : l.forward_gpu).back()) f.gap = 0; // it led to the next layer
        return just_before(anchor);
      });
      for (auto t : forward) g.set_mem_delta(copy[t], 0);
      for (auto t : l.forward_gpu) gpu_time += g.duration(t);
      if (memory && l.stash() > 0) {
        // Dropped after the forward and allocated again by the re-computation, where the
        // model charges this layer's memory: its CPU calls or its kernels.
        const auto b = static_cast<std::int64_t>(l.stash());
        const bool host = l.stash_on_cpu && !l.forward_cpu.empty() && c0 != no_task;
        add_mem_delta(g, release_point(g, host ? l.forward_cpu.back() : l.forward_gpu.back()), -b);
        add_mem_delta(g, copy[host ? l.forward_cpu.front() : l.forward_gpu.front()], b);
      }
      ++layers_done;
      copied += forward.size();
      bytes += l.stash();
      iterations.insert(l.iteration);
    }
    rep.add_count("layers re-computed", std::int64_t(layers_done));
    rep.add_count("tasks copied", std::int64_t(copied));
    rep.add("re-computed kernel time", format_time(gpu_time), report_value::of_time(double(gpu_time)));
    rep.add("stash dropped", format_bytes_per_iteration(double(bytes), iterations.size()),
            report_value::of_bytes(double(bytes)));
    if (!memory) rep.note("the graph has no memory model: peak memory not predicted "
                          "(the trace has no [memory] events, profile_memory=True, and no estimate "
                          "from tensor sizes, record_shapes=True)");
    if (const auto calls = checkpoint_calls; calls > 0)
      rep.note("the trace re-computes activations already (" + std::to_string(calls) +
               (calls == 1 ? " call" : " calls") +
               " of PyTorch's activation checkpointing): a layer it checkpoints is re-computed twice here; "
               "select the others with layers=");
    if (layers_done == 0)
      rep.not_applied(no_stashing_layer_reason(g, layer_instances(g), selected, false) + ": nothing re-computed");
    return rep;
  }
};

} // namespace daydream::passes

#endif
