// Defines layer_instance and layer_instances: the forward and backward tasks of each layer in each iteration.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_LAYERS_HPP
#define DAYDREAM_SEMANTICS_LAYERS_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>
#include <daydream/trace_order.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// The tasks of one layer (module) in one iteration, by phase, each list in trace
/// order (trace start, then id). A layer called twice in an iteration (a ReLU module
/// reused in a residual block) is one instance holding the tasks of both calls.
struct layer_instance {
  std::int32_t iteration = 0; ///< the iteration
  name_id layer = no_name;    ///< the layer's interned name (graph::str gives the string)
  std::vector<task_id> forward_cpu = {};  ///< cpu_task, phase forward
  std::vector<task_id> forward_gpu = {};  ///< gpu_kernel, phase forward
  std::vector<task_id> backward_cpu = {}; ///< cpu_task, phase backward
  std::vector<task_id> backward_gpu = {}; ///< gpu_kernel, phase backward
  /// Bytes the layer stashes for its backward, estimated from tensor sizes (see
  /// stashed_bytes).
  std::uint64_t stash_bytes = 0;
  /// Bytes the layer's forward leaves allocated, by the graph's memory model (the trace's
  /// [memory] events, or estimate_activation_memory): the net mem_delta of its forward
  /// tasks, never negative. -1 when the graph has no memory model.
  std::int64_t stash_measured = -1;
  /// Whether that model charges the layer's allocations to its CPU calls (the trace's
  /// [memory] events: the caching allocator's view, in host order) rather than to its
  /// kernels (estimate_activation_memory). A pass that frees or allocates the stash does
  /// it on the same side.
  bool stash_on_cpu = false;

  /// What the layer keeps from its forward to its backward: stash_measured when the
  /// graph has a memory model (what the trace recorded), else stash_bytes. What gist,
  /// vdnn and recompute move.
  std::uint64_t stash() const noexcept {
    return stash_measured >= 0 ? static_cast<std::uint64_t>(stash_measured) : stash_bytes;
  }

  /// Whether the layer has forward and backward kernels: its forward results are kept
  /// (stashed) for the backward, which gist, vdnn and recompute act on.
  bool stashes() const noexcept { return !forward_gpu.empty() && !backward_gpu.empty(); }
};

/// The bytes a layer stashes for its backward, estimated from the recorded tensor
/// sizes: the largest `cpu_task::tensor_bytes` among the layer's forward CPU tasks.
///
/// Why the largest and not the sum: the CPU tasks of one operator (its time slices and
/// runtime calls) all carry the tensors of that operator, and nested operators
/// (`aten::conv2d` > `aten::convolution` > `aten::cudnn_convolution`) carry the same
/// tensors again, so a sum counts one tensor many times. For a leaf module (a
/// convolution, linear, normalization or activation layer) the largest input set is
/// what autograd keeps for the backward: the input activation, plus the weights.
/// Limits: weights are counted although they are not activations; a composite module
/// whose operators each stash a different tensor is undercounted; 0 when the trace
/// recorded no shapes.
inline std::uint64_t stashed_bytes(const graph& g, const layer_instance& l) {
  std::uint64_t m = 0;
  for (auto t : l.forward_cpu) m = std::max(m, g.payload(g.as<cpu_task>(t)).tensor_bytes);
  return m;
}

/// The layer instances of `g`: tasks with a layer name and phase forward or backward,
/// grouped by (iteration, layer), with stash_bytes filled (and stash_measured,
/// stash_on_cpu when some task of `g` has a nonzero mem_delta). Ordered by iteration, then by
/// the trace start of the instance's first forward task (instances without forward
/// work: of the first backward task). Memory copies and communication tasks are not
/// listed. O(V log V).
inline std::vector<layer_instance> layer_instances(const graph& g) {
  std::map<std::pair<std::int32_t, name_id>, std::size_t> index;
  std::vector<layer_instance> out;
  // Tasks of one instance mostly come in runs (a layer's calls, then its kernels): the
  // last instance is checked before the map.
  std::pair<std::int32_t, name_id> last_key{0, no_name};
  std::size_t last = 0;
  bool memory_model = false;
  g.for_each_task([&](task_id t) {
    memory_model = memory_model || g.mem_delta(t) != 0;
    auto l = g.layer_id(t);
    auto ph = g.phase_of(t);
    if (l == no_name || (ph != phase::forward && ph != phase::backward)) return;
    const bool cpu = g.is<cpu_task>(t);
    if (!cpu && !g.is<gpu_kernel>(t)) return;
    const std::pair key{g.iteration(t), l};
    if (key != last_key) {
      auto [it, fresh] = index.try_emplace(key, out.size());
      if (fresh) out.push_back({.iteration = key.first, .layer = l});
      last_key = key;
      last = it->second;
    }
    auto& li = out[last];
    if (ph == phase::forward) (cpu ? li.forward_cpu : li.forward_gpu).push_back(t);
    else (cpu ? li.backward_cpu : li.backward_gpu).push_back(t);
  });
  auto first = [&](const layer_instance& l) {
    time_ns s = 0;
    bool any = false;
    for (auto* v : {&l.forward_cpu, &l.forward_gpu})
      if (!v->empty() && (!any || g.trace_start(v->front()) < s)) { s = g.trace_start(v->front()); any = true; }
    if (any) return std::pair(0, s);
    for (auto* v : {&l.backward_cpu, &l.backward_gpu})
      if (!v->empty() && (!any || g.trace_start(v->front()) < s)) { s = g.trace_start(v->front()); any = true; }
    return std::pair(1, s);
  };
  for (auto& l : out) {
    for (auto* v : {&l.forward_cpu, &l.forward_gpu, &l.backward_cpu, &l.backward_gpu})
      sort_in_trace_order(g, *v);
    l.stash_bytes = stashed_bytes(g, l);
    if (memory_model) {
      std::int64_t on_cpu = 0, on_gpu = 0;
      for (auto t : l.forward_cpu) on_cpu += g.mem_delta(t);
      for (auto t : l.forward_gpu) on_gpu += g.mem_delta(t);
      l.stash_measured = std::max<std::int64_t>(0, on_cpu + on_gpu);
      l.stash_on_cpu = on_cpu > 0;
    }
  }
  std::stable_sort(out.begin(), out.end(), [&](const layer_instance& a, const layer_instance& b) {
    if (a.iteration != b.iteration) return a.iteration < b.iteration;
    return first(a) < first(b);
  });
  return out;
}

/// Selects layers by name: an ECMAScript regular expression that must match the whole
/// layer name (`layer1\.0\.conv1`, `.*conv.*`), ignoring case, so that `.*relu.*`
/// selects PyTorch's module names (`ReLU_0`) as well as attribute paths (`layer1.relu`);
/// the empty pattern selects every layer.
class layer_filter {
public:
  /// Every layer.
  layer_filter() = default;
  /// The layers whose whole name matches `pattern`. Throws daydream::usage_error for a
  /// bad pattern.
  explicit layer_filter(const std::string& pattern) : pattern_(pattern) {
    if (pattern.empty()) return;
    try {
      rx_ = std::regex(pattern, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    } catch (const std::regex_error& e) {
      throw usage_error("daydream: bad layer pattern '" + pattern + "': " + e.what());
    }
  }
  /// Whether `layer` is selected.
  bool operator()(std::string_view layer) const {
    return pattern_.empty() || std::regex_match(layer.begin(), layer.end(), rx_);
  }
  /// The pattern ("" for every layer).
  const std::string& pattern() const noexcept { return pattern_; }

private:
  std::string pattern_;
  std::regex rx_;
};

/// Why no layer instance of `all` (layer_instances(g)) is one a pass on stashed
/// activations can act on ("" when one is): the layer must be selected by `selected`,
/// have forward and backward kernels and, when `need_bytes`, a known stash size. Names
/// what the trace lacks and how to record it, for gist, vdnn and recompute.
inline std::string no_stashing_layer_reason(const graph& g, const std::vector<layer_instance>& all,
                                            const layer_filter& selected, bool need_bytes) {
  if (all.empty())
    return "no task has a layer: the trace maps no operator to a module (record with with_stack=True, or "
           "with_modules=True, so that operators carry their nn.Module)";
  std::size_t stashing = 0, sized = 0, chosen = 0;
  bool backward = false, memory_model = false;
  for (auto& l : all) {
    backward = backward || !l.backward_gpu.empty() || !l.backward_cpu.empty();
    memory_model = memory_model || l.stash_measured >= 0;
    if (!l.stashes()) continue;
    ++stashing;
    if (need_bytes && l.stash() == 0) continue;
    ++sized;
    if (selected(g.str(l.layer))) ++chosen;
  }
  if (!backward)
    return "the trace has no backward pass (inference, or a forward-only window): no layer stashes "
           "activations for a backward";
  if (stashing == 0) return "no layer has both forward and backward kernels: nothing is stashed for a backward";
  if (sized == 0 && memory_model)
    return fmt::format("none of the {} layer instances that stash activations leaves memory allocated after its "
                       "forward, by the trace's [memory] events",
                       stashing);
  if (sized == 0)
    return fmt::format("none of the {} layer instances that stash activations has a known size: the trace "
                       "recorded no tensor shapes (record with record_shapes=True)",
                       stashing);
  if (chosen == 0)
    return fmt::format("no layer matches layers='{}' ({} layer instances stash activations{})", selected.pattern(),
                       sized, need_bytes ? " of known size" : "");
  return {};
}

} // namespace daydream::passes

#endif
