// Defines model_profile and profile_model: the per-layer costs of one training iteration, read from a single-GPU graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_MODEL_HPP
#define DAYDREAM_STRATEGY_MODEL_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>
#include <daydream/semantics/gradients.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/layers.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace daydream::strategy {

/// The costs of one layer in one iteration of the profiled (single-GPU) run.
///
/// Times are GPU time of the layer's kernels, split into the part a tensor-parallel
/// split divides (GEMM, convolution, attention: kernel_class::compute_bound) and the
/// rest (element-wise, normalization: unchanged by tensor parallelism).
struct layer_profile {
  std::string name;                 ///< the layer (module) name
  time_ns forward_split = 0;        ///< forward GPU time that tensor parallelism divides
  time_ns forward_other = 0;        ///< forward GPU time it leaves unchanged
  time_ns backward_split = 0;       ///< backward GPU time that tensor parallelism divides
  time_ns backward_other = 0;       ///< backward GPU time it leaves unchanged
  std::uint64_t param_bytes = 0;    ///< bytes of its parameters (= of its gradients)
  std::uint64_t stash_bytes = 0;    ///< bytes it keeps for its backward (per profiled batch)
  std::uint64_t output_bytes = 0;   ///< bytes of its output activation (per profiled batch)
  /// Bytes the trace's [memory] events show it keeping from its forward to its backward
  /// (passes::layer_instance::stash_measured); -1 when the trace has none: stash_bytes.
  std::int64_t held_bytes = -1;
  /// The dimension a tensor-parallel split cuts (hidden size, output channels), 0 when
  /// not known: the degree must divide it.
  std::uint64_t width = 0;

  /// The activation memory it holds for its backward (per profiled batch): held_bytes
  /// when the trace measured it, else stash_bytes.
  std::uint64_t held() const noexcept {
    return held_bytes >= 0 ? static_cast<std::uint64_t>(held_bytes) : stash_bytes;
  }
  time_ns forward() const noexcept { return forward_split + forward_other; }
  time_ns backward() const noexcept { return backward_split + backward_other; }
  /// Whether tensor parallelism splits the layer (it has GEMM/convolution work): the
  /// others are replicated on every tensor-parallel rank.
  bool splits() const noexcept { return forward_split + backward_split > 0; }
};

/// A model as the strategy compiler sees it: its layers in forward order and what the
/// iteration spends outside them.
struct model_profile {
  std::vector<layer_profile> layers; ///< forward order
  time_ns update = 0;     ///< weight-update GPU time of the iteration
  /// Iteration time not in the layers or the update: kernels outside any layer, CPU-bound
  /// gaps, data loading. Kept as it is under every strategy.
  time_ns other = 0;
  time_ns iteration = 0;  ///< the profiled iteration's replayed time
  double batch = 1;       ///< samples in the profiled iteration (1: throughput in batches)
  std::string gradient_source; ///< where parameter sizes came from
  /// The peak of allocated device memory the trace recorded (its [memory] events), bytes;
  /// -1 when unknown. The memory model of every strategy starts from it (stage_memory::recorded_rest).
  double recorded_peak = -1;
  std::vector<std::string> notes; ///< what was approximated or dropped, by reason

  time_ns compute() const noexcept {
    time_ns t = 0;
    for (auto& l : layers) t += l.forward() + l.backward();
    return t;
  }
  std::uint64_t param_bytes() const noexcept {
    std::uint64_t b = 0;
    for (auto& l : layers) b += l.param_bytes;
    return b;
  }
};

/// Options of profile_model.
struct profile_options {
  std::int32_t iteration = 0;        ///< the iteration to read
  double model_bytes = 0;            ///< total parameter bytes when the trace has no gradient sizes
  double batch = 1;                  ///< samples in the profiled iteration
  /// The trace's recorded peak of allocated device memory, bytes (io::kineto_info::memory_peak);
  /// negative: unknown.
  double recorded_peak = -1;
  passes::kernel_classifier classifier = passes::kernel_classifier::defaults();
};

/// Reads the per-layer costs of iteration `o.iteration` of a single-GPU graph.
///
/// Layers are the graph's layer instances (passes::layer_instances: the trace's layer
/// names, which the ingest takes from the module annotations when recorded), in forward
/// order; layers without GPU work are left out (counted in notes). Times: kernel
/// durations in `g` (the replay does not change a kernel's duration). Parameter bytes:
/// passes::find_gradients (AccumulateGrad input sizes, or `model_bytes` spread), each
/// gradient given to its layer, or to the layer whose backward kernel ran last before
/// it became ready. Stash: layer_instance::stash_bytes (the largest recorded input set of
/// its forward operators) less its parameter bytes. Output: the next layer's stash (its
/// input), the last layer's own. Held memory: when the trace has [memory] events, what
/// they show the layer keeping from its forward to its backward
/// (layer_instance::stash_measured), which the memory model uses instead of the stash.
/// `other` = replayed iteration time - layer time - update time (0 and a note when the
/// streams overlapped so much that this is negative). Throws daydream::error if the
/// iteration has no layer with GPU work.
inline model_profile profile_model(const graph& g, const profile_options& o = {}) {
  model_profile m;
  m.batch = o.batch;
  m.recorded_peak = o.recorded_peak >= 0 ? o.recorded_peak : -1;
  auto r = replay(g);
  m.iteration = iteration_time(g, r, o.iteration);
  if (m.iteration < 0) throw error("daydream: strategy: the graph has no iteration " + std::to_string(o.iteration));
  passes::classified cls(g, o.classifier);
  auto split = [&](task_id t) { return cls(t) == passes::kernel_class::compute_bound; };
  std::size_t no_gpu = 0;
  std::map<std::string, std::size_t> index;
  std::vector<std::pair<time_ns, std::size_t>> last_backward; // trace start of a backward kernel -> layer
  const auto instances = passes::layer_instances(g);
  // [memory] events charge allocations to CPU calls; a model estimated from tensor sizes
  // charges them to kernels, and its stash is the shape estimate below.
  const bool traced_memory =
      std::any_of(instances.begin(), instances.end(), [](auto& li) { return li.stash_on_cpu; });
  for (auto& li : instances) {
    if (li.iteration != o.iteration) continue;
    if (li.forward_gpu.empty() && li.backward_gpu.empty()) { ++no_gpu; continue; }
    layer_profile l;
    l.name = std::string(g.str(li.layer));
    for (auto t : li.forward_gpu) (split(t) ? l.forward_split : l.forward_other) += g.duration(t);
    for (auto t : li.backward_gpu) (split(t) ? l.backward_split : l.backward_other) += g.duration(t);
    l.stash_bytes = li.stash_bytes;
    if (traced_memory) l.held_bytes = li.stash_measured;
    index[l.name] = m.layers.size();
    for (auto t : li.backward_gpu) last_backward.emplace_back(g.trace_start(t), m.layers.size());
    m.layers.push_back(std::move(l));
  }
  if (m.layers.empty())
    throw error("daydream: strategy: iteration " + std::to_string(o.iteration) +
                " has no layer with GPU work (the trace records no layer names)");
  if (no_gpu) m.notes.push_back(std::to_string(no_gpu) + " layers without GPU work left out");
  std::sort(last_backward.begin(), last_backward.end());

  auto grads = passes::find_gradients(g, {}, o.model_bytes);
  m.gradient_source = std::string(passes::to_string(grads.source));
  std::uint64_t unplaced = 0;
  for (auto& gr : grads.grads) {
    if (gr.iteration != o.iteration) continue;
    std::string layer = gr.layer.empty() && gr.ready != no_task ? std::string(g.layer(gr.ready)) : gr.layer;
    auto it = index.find(layer);
    if (it != index.end()) { m.layers[it->second].param_bytes += gr.bytes; continue; }
    const time_ns at = gr.ready != no_task ? g.trace_start(gr.ready) : -1;
    auto b = std::upper_bound(last_backward.begin(), last_backward.end(),
                              std::pair<time_ns, std::size_t>(at, SIZE_MAX));
    if (b == last_backward.begin()) { unplaced += gr.bytes; continue; }
    m.layers[std::prev(b)->second].param_bytes += gr.bytes;
  }
  // `bytes` shared evenly by the layers, the remainder a byte each to the first ones.
  auto spread_evenly = [&](std::uint64_t bytes) {
    const auto n = m.layers.size();
    for (std::size_t i = 0; i < n; ++i) m.layers[i].param_bytes += bytes / n + (i < bytes % n ? 1 : 0);
  };
  if (unplaced) {
    spread_evenly(unplaced);
    m.notes.push_back(std::to_string(unplaced) + " gradient bytes with no layer spread evenly over the layers");
  }
  std::uint64_t placed = 0;
  for (auto& l : m.layers) placed += l.param_bytes;
  if (placed == 0 && o.model_bytes > 0) {
    // No AccumulateGrad to spread model_bytes over (an inference trace, a forward pass):
    // the layers share it evenly.
    const auto total = static_cast<std::uint64_t>(o.model_bytes);
    const auto n = m.layers.size();
    spread_evenly(total);
    m.gradient_source = "model_bytes spread over the layers";
    m.notes.push_back("the trace has no gradients (no AccumulateGrad operator: an inference trace?): model_bytes=" +
                      std::to_string(total) + " is spread evenly over its " + std::to_string(n) + " layers");
  } else if (grads.grads.empty()) {
    m.notes.push_back("no gradient sizes (give model_bytes): parameters count 0 bytes");
  }

  // The recorded input set of a layer holds its weights too: the stash is the rest.
  for (auto& l : m.layers) l.stash_bytes = l.stash_bytes > l.param_bytes ? l.stash_bytes - l.param_bytes : 0;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    auto& next = m.layers[i + 1 < m.layers.size() ? i + 1 : i];
    m.layers[i].output_bytes = next.stash_bytes;
  }

  g.for_each_task([&](task_id t) {
    if (g.iteration(t) == o.iteration && g.phase_of(t) == phase::weight_update && g.is<gpu_kernel>(t))
      m.update += g.duration(t);
  });
  const time_ns rest = m.iteration - m.compute() - m.update;
  if (rest < 0)
    m.notes.push_back("the layers' GPU time exceeds the iteration (overlapping streams): nothing kept outside the layers");
  m.other = std::max<time_ns>(0, rest);
  std::uint64_t stashed = 0;
  for (auto& l : m.layers) stashed += l.stash_bytes;
  if (stashed == 0)
    m.notes.push_back("the trace records no activation sizes (profile with record_shapes=True): activation memory and "
                      "tensor- and pipeline-parallel traffic count 0 bytes");
  if (m.iteration > 0 && 2 * m.other > m.iteration)
    m.notes.push_back(std::to_string(100 * m.other / m.iteration) +
                      "% of the iteration lies outside the layers the trace names (CPU-bound gaps, kernels of no "
                      "layer): it is kept as traced under every strategy, so no parallelism shortens it");
  return m;
}

} // namespace daydream::strategy

#endif
