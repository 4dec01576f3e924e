// Defines gradient and find_gradients: per-parameter gradient sizes and the tasks that make them ready.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_GRADIENTS_HPP
#define DAYDREAM_SEMANTICS_GRADIENTS_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/resource.hpp>
#include <daydream/select.hpp>
#include <daydream/task.hpp>
#include <daydream/trace_order.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// The gradient of one parameter tensor (or of one layer, with a layer map) in one
/// iteration: how many bytes it has and which task's end makes it available for
/// communication.
struct gradient {
  std::int32_t iteration = 0;
  std::string layer;          ///< its layer when known, else empty
  std::uint64_t bytes = 0;    ///< size of the gradient
  task_id ready = no_task;    ///< the gradient exists when this task ends (a GPU task when there is one)
  task_id source = no_task;   ///< the AccumulateGrad CPU task it was found from, or no_task
  std::uint32_t position = 0; ///< parameter order in its iteration: 0 is used first by the forward
};

/// Where the gradient sizes came from.
enum class gradient_source : std::uint8_t {
  none,      ///< nothing found: the trace has no sizes and no map was given
  trace,     ///< AccumulateGrad input shapes recorded in the trace (cpu_task::tensor_bytes)
  layer_map, ///< a user-supplied layer -> bytes map
  given,     ///< an explicit list built by the caller
  spread,    ///< a user-supplied model size spread evenly over the trace's AccumulateGrad operators
  /// the bytes the trace's backward all-reduces (or reduce-scatters) per iteration, as its
  /// collectives record them (NCCL's `In msg nelems` and `dtype`), spread evenly over the
  /// AccumulateGrad operators: a data-parallel trace recorded without shapes
  collectives,
};

/// How a gradient_source reads in a report ("trace (AccumulateGrad input shapes)").
inline constexpr std::string_view to_string(gradient_source s) noexcept {
  switch (s) {
  case gradient_source::none: return "none";
  case gradient_source::trace: return "trace (AccumulateGrad input shapes)";
  case gradient_source::layer_map: return "layer map";
  case gradient_source::given: return "given list";
  case gradient_source::spread: return "model_bytes spread evenly over the AccumulateGrad operators";
  case gradient_source::collectives:
    return "the backward's recorded all-reduce bytes spread evenly over the AccumulateGrad operators";
  }
  return "?";
}

/// The bytes the backward of each iteration of `g` all-reduces or reduce-scatters, by
/// its recorded collectives (`comm_task::bytes`: NCCL's `In msg nelems` x `dtype`):
/// what a data-parallel rank's gradients weigh when the trace recorded no shapes.
/// Iterations without such collectives are absent.
inline std::map<std::int32_t, double> recorded_gradient_bytes(const graph& g) {
  std::map<std::int32_t, double> out;
  g.for_each<comm_task>([&](handle<comm_task> h) {
    const auto& c = g.payload(h);
    if (g.phase_of(h.id) == phase::backward && c.bytes > 0 &&
        (c.op == comm_op::all_reduce || c.op == comm_op::reduce_scatter))
      out[g.iteration(h.id)] += double(c.bytes);
  });
  return out;
}

/// The gradients of a graph, iteration by iteration, each iteration in the order its
/// gradients become ready (their ready tasks' trace order).
struct gradient_set {
  std::vector<gradient> grads;                    ///< iteration by iteration, in ready order
  gradient_source source = gradient_source::none; ///< where the sizes came from
  std::string note; ///< a sentence for the pass report (missing or partial sizes), or empty

  /// The iterations that have gradients, ascending.
  std::vector<std::int32_t> iterations() const {
    std::set<std::int32_t> s;
    for (auto& gr : grads) s.insert(gr.iteration);
    return {s.begin(), s.end()};
  }
  /// Indexes into `grads` of the gradients of iteration `i`, in ready order.
  std::vector<std::size_t> of_iteration(std::int32_t i) const {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < grads.size(); ++k)
      if (grads[k].iteration == i) out.push_back(k);
    return out;
  }
  /// Total gradient bytes of iteration `i`.
  std::uint64_t bytes(std::int32_t i) const {
    std::uint64_t b = 0;
    for (auto& gr : grads)
      if (gr.iteration == i) b += gr.bytes;
    return b;
  }
};

/// A user-supplied map of layer name -> gradient bytes of that layer's parameters.
using layer_bytes = std::vector<std::pair<std::string, std::uint64_t>>;

/// The last GPU task launched from `t`'s CPU thread at or before `t` in its program
/// order: when it ends, every GPU task the thread had launched on that stream so far
/// has ended too (streams run in order). no_task if the thread launched nothing.
inline task_id last_launch_before(const graph& g, task_id t) {
  for (auto cur = t; cur != no_task;) {
    for (auto k : launched_by(g, cur))
      if (!g.is<cpu_task>(k)) return k;
    task_id prev = no_task;
    for (auto d : g.predecessors(cur))
      if (d.kind == dep_kind::cpu_order && g.is<cpu_task>(d.from)) { prev = d.from; break; }
    cur = prev;
  }
  return no_task;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline bool contains(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }
// The next / previous CPU task on t's thread.
inline task_id next_cpu(const graph& g, task_id t) {
  for (auto d : g.successors(t))
    if (d.kind == dep_kind::cpu_order && g.resource_of(d.to) == g.resource_of(t)) return d.to;
  return no_task;
}
inline task_id prev_cpu(const graph& g, task_id t) {
  for (auto d : g.predecessors(t))
    if (d.kind == dep_kind::cpu_order && g.resource_of(d.from) == g.resource_of(t)) return d.from;
  return no_task;
}
// A slice of the AccumulateGrad operator itself.
inline bool is_accumulate(const graph& g, task_id t) {
  auto n = g.name(t);
  return contains(n, "AccumulateGrad") && !contains(n, "evaluate_function");
}
// A slice of the autograd engine's wrapper around an AccumulateGrad (which also runs
// the gradient's hooks, DDP's among them).
inline bool is_accumulate_wrapper(const graph& g, task_id t) {
  auto n = g.name(t);
  return contains(n, "evaluate_function") && contains(n, "AccumulateGrad");
}
// Another autograd function: the end of an AccumulateGrad's run.
inline bool is_other_function(const graph& g, task_id t) {
  auto n = g.name(t);
  return contains(n, "evaluate_function") && !contains(n, "AccumulateGrad");
}
} // namespace detail
//! @endcond

/// The parameter gradients recorded in the trace: one per AccumulateGrad operator.
///
/// Every parameter's gradient passes through one AccumulateGrad, which the autograd
/// engine wraps in `evaluate_function: torch::autograd::AccumulateGrad` (and which runs
/// the gradient's hooks, DDP's among them). In the graph they appear as time slices on
/// the autograd thread, cut around nested calls; one AccumulateGrad is a run of
/// back-to-back slices (no idle gap between them; time a call spent blocked is a
/// dependency, not a gap) that begins with the wrapper or the operator and ends at a
/// gap, at another autograd function or at a change of phase. Its
/// size is the recorded input of the AccumulateGrad slice (`cpu_task::tensor_bytes`),
/// or, when the profiler dropped that slice, of the first operator nested in it
/// (`aten::detach` of the new gradient). The gradient is ready when the last GPU task
/// launched from the thread up to the end of the operator (before its hooks) finishes:
/// the accumulation kernel if it launched one, else the kernel that computed it.
/// Positions (parameter order) are the reverse of the ready order, which is how
/// PyTorch's DDP orders parameters for its buckets. When no AccumulateGrad carries a
/// size and `model_bytes` > 0, it is spread evenly over the AccumulateGrads of each
/// iteration; without `model_bytes`, what the backward of each iteration all-reduces (or
/// reduce-scatters) by the trace's own collectives (recorded_gradient_bytes, or
/// `reduced_bytes` when given: read before those collectives were removed) is spread the
/// same way (gradient_source::collectives); the note says so, or says that the trace has
/// no sizes.
inline gradient_set gradients_from_trace(const graph& g, double model_bytes = 0,
                                         const std::map<std::int32_t, double>* reduced_bytes = nullptr) {
  gradient_set out;
  struct found { task_id first, last; std::uint64_t bytes; };
  std::vector<found> runs;
  std::vector<std::uint8_t> seen(g.id_bound(), 0);
  g.for_each<cpu_task>([&](handle<cpu_task> h) {
    const task_id t = h.id;
    if (seen[t] || !(detail::is_accumulate(g, t) || detail::is_accumulate_wrapper(g, t))) return;
    std::vector<task_id> run{t};
    seen[t] = 1;
    for (auto n = detail::next_cpu(g, t); n != no_task; n = detail::next_cpu(g, n)) {
      const auto prev = run.back();
      // Two wrapper slices in a row: the end of one AccumulateGrad and the next one.
      if (g.gap(prev) > 0 || detail::is_other_function(g, n) || g.phase_of(n) != g.phase_of(t) ||
          (detail::is_accumulate_wrapper(g, prev) && detail::is_accumulate_wrapper(g, n)))
        break;
      run.push_back(n);
      seen[n] = 1;
    }
    // The operator itself ends at its last slice; without one, before the wrapper's
    // next slice (the hooks).
    std::size_t end = run.size() - 1;
    bool has_op = false;
    for (std::size_t i = 0; i < run.size(); ++i)
      if (detail::is_accumulate(g, run[i])) { end = i; has_op = true; }
    if (!has_op) {
      end = 0; // without the wrapper's next slice, nothing in the run is known to be nested
      for (std::size_t i = 1; i < run.size(); ++i)
        if (detail::is_accumulate_wrapper(g, run[i])) { end = i - 1; break; }
    }
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i <= end && bytes == 0; ++i)
      if (detail::is_accumulate(g, run[i])) bytes = g.payload(g.as<cpu_task>(run[i])).tensor_bytes;
    if (!has_op)
      for (std::size_t i = 0; i <= end && bytes == 0; ++i)
        if (!detail::is_accumulate_wrapper(g, run[i])) bytes = g.payload(g.as<cpu_task>(run[i])).tensor_bytes;
    runs.push_back({has_op ? *std::find_if(run.begin(), run.end(),
                                           [&](task_id x) { return detail::is_accumulate(g, x); })
                           : run.front(),
                    run[end], bytes});
  });
  std::size_t unsized = 0;
  std::map<std::int32_t, std::size_t> per_iteration;
  for (auto& r : runs) {
    unsized += r.bytes == 0;
    ++per_iteration[g.iteration(r.first)];
  }
  // Without recorded sizes, a user-supplied model size can stand in; else what the
  // backward's gradient collectives carried, iteration by iteration.
  const bool none_sized = !runs.empty() && unsized == runs.size();
  const bool spread = none_sized && model_bytes > 0;
  std::map<std::int32_t, double> reduced;
  if (none_sized && !spread) reduced = reduced_bytes ? *reduced_bytes : recorded_gradient_bytes(g);
  bool from_collectives = false;
  for (auto& [it, b] : reduced) from_collectives = from_collectives || (b > 0 && per_iteration.count(it));
  auto spread_bytes = [&](std::int32_t it) {
    if (spread) return model_bytes / double(per_iteration[it]);
    auto f = reduced.find(it);
    return f == reduced.end() ? 0.0 : f->second / double(per_iteration[it]);
  };
  for (auto& r : runs) {
    gradient gr;
    gr.iteration = g.iteration(r.first);
    const bool spreading = spread || (from_collectives && r.bytes == 0);
    if (r.bytes == 0 && (!spreading || spread_bytes(gr.iteration) <= 0)) continue;
    gr.layer = std::string(g.layer(r.first));
    gr.bytes = spreading ? static_cast<std::uint64_t>(spread_bytes(gr.iteration)) : r.bytes;
    gr.source = r.first;
    auto k = last_launch_before(g, r.last);
    gr.ready = k != no_task ? k : r.last;
    out.grads.push_back(std::move(gr));
  }
  if (spread) {
    out.source = gradient_source::spread;
    out.note = "the trace carries no gradient sizes; model_bytes=" + std::to_string(std::uint64_t(model_bytes)) +
               " is spread evenly over the AccumulateGrad operators of each iteration (" +
               std::to_string(per_iteration.begin()->second) + " in iteration " +
               std::to_string(per_iteration.begin()->first) + "), so bucket boundaries are approximate";
    return out;
  }
  if (from_collectives && !out.grads.empty()) {
    out.source = gradient_source::collectives;
    const auto& [it, n] = *per_iteration.begin();
    out.note = "the trace carries no gradient sizes; what its backward all-reduces per iteration (its collectives' "
               "recorded message sizes: " +
               std::to_string(std::uint64_t(reduced.count(it) ? reduced[it] : 0)) + " bytes in iteration " +
               std::to_string(it) + ") is spread evenly over the " + std::to_string(n) +
               " AccumulateGrad operators of each iteration, so bucket boundaries are approximate";
    return out;
  }
  if (!out.grads.empty()) out.source = gradient_source::trace;
  if (unsized > 0 && out.grads.empty())
    out.note = "the trace carries no gradient sizes: its " + std::to_string(unsized) +
               " AccumulateGrad operators have no recorded input shapes (profile with "
               "record_shapes=True, or give model_bytes= or a layer -> bytes map)";
  else if (unsized > 0)
    out.note = std::to_string(unsized) + " AccumulateGrad operator(s) have no recorded size and "
               "are left out";
  else if (out.grads.empty())
    out.note = "the trace has no AccumulateGrad operators, so no gradients were found (give a "
               "layer -> bytes map)";
  return out;
}

/// Whether the trace behind `g` recorded gradient sizes (AccumulateGrad input shapes):
/// what the distributed passes need to run without a user-supplied size.
inline bool has_gradient_sizes(const graph& g) { return !gradients_from_trace(g).grads.empty(); }

/// Gradients from a user-supplied map: for every layer of the map and every iteration
/// in which the layer has backward GPU work, one gradient of the given size, ready when
/// the layer's last backward GPU task (in trace order) ends. Layers of the map that the
/// graph does not have are named in the note.
inline gradient_set gradients_from_layers(const graph& g, const layer_bytes& sizes) {
  gradient_set out;
  out.source = gradient_source::layer_map;
  std::map<std::string, std::uint64_t, std::less<>> want(sizes.begin(), sizes.end());
  // (iteration, layer) -> last backward GPU task.
  std::map<std::pair<std::int32_t, std::string>, task_id> last;
  const trace_order before(g);
  std::set<std::string> seen;
  const auto in_map = pred([&](const auto& t) { return !t.layer().empty() && want.count(t.layer()); });
  for (auto t : tasks(g) | where(in_phase(phase::backward) && on_gpu && !of_kind<comm_task> && in_map)) {
    auto l = t.layer();
    seen.insert(std::string(l));
    auto [it, fresh] = last.try_emplace({t.iteration(), std::string(l)}, t);
    if (!fresh && before(it->second, t)) it->second = t;
  }
  for (auto& [key, t] : last)
    out.grads.push_back({key.first, key.second, want.find(key.second)->second, t, no_task, 0});
  std::string missing;
  for (auto& [l, b] : want)
    if (!seen.count(l)) missing += (missing.empty() ? "" : ", ") + l;
  if (!missing.empty()) out.note = "layers of the map without backward GPU work in the graph: " + missing;
  return out;
}

/// Sorts `s.grads` by iteration, then ready order (the ready tasks' trace start), and
/// numbers positions as the reverse of the ready order within each iteration.
inline void order_gradients(const graph& g, gradient_set& s) {
  std::stable_sort(s.grads.begin(), s.grads.end(), [before = trace_order(g)](const gradient& a, const gradient& b) {
    if (a.iteration != b.iteration) return a.iteration < b.iteration;
    if (a.ready != b.ready) return before(a.ready, b.ready);
    return a.source < b.source;
  });
  for (std::size_t i = 0; i < s.grads.size();) {
    std::size_t j = i;
    while (j < s.grads.size() && s.grads[j].iteration == s.grads[i].iteration) ++j;
    for (std::size_t k = i; k < j; ++k) s.grads[k].position = static_cast<std::uint32_t>(j - 1 - k);
    i = j;
  }
}

/// The gradients of `g`: from the map when one is given, else from the trace (with
/// `model_bytes` spread evenly when the trace recorded no sizes); ordered by
/// order_gradients. The note says when sizes are missing or estimated.
///
///     auto gs = daydream::passes::find_gradients(g);
///     if (gs.grads.empty()) report.note(gs.note);
inline gradient_set find_gradients(const graph& g, const layer_bytes& sizes = {}, double model_bytes = 0) {
  auto s = sizes.empty() ? gradients_from_trace(g, model_bytes) : gradients_from_layers(g, sizes);
  order_gradients(g, s);
  return s;
}

/// Tasks grouped by iteration (update_entries_by_iteration, forward_gpu_tasks_by_iteration).
using tasks_by_iteration = std::map<std::int32_t, std::vector<task_id>>;

/// The tasks of iteration `i` in `m`; empty when `m` has none.
inline const std::vector<task_id>& of_iteration(const tasks_by_iteration& m, std::int32_t i) {
  static const std::vector<task_id> none;
  const auto it = m.find(i);
  return it == m.end() ? none : it->second;
}

/// Where the optimizer step of each iteration starts on the GPU (see update_entries;
/// phase_entries of phase::weight_update), for every iteration at once in one scan of the graph: a pass that works iteration by
/// iteration takes this first, where update_entries per iteration would scan the graph
/// each time. Iterations without weight-update work are absent.
inline tasks_by_iteration update_entries_by_iteration(const graph& g) {
  return phase_entries(g, phase::weight_update);
}

/// Where the optimizer step of iteration `i` starts on the GPU: on every GPU stream,
/// the first task (in trace order) of phase weight_update. If the iteration has no
/// weight-update GPU work, its first weight-update CPU task; else nothing. Whatever must
/// finish before the weights change (an all-reduce) gets a dependency to these.
inline std::vector<task_id> update_entries(const graph& g, std::int32_t i) {
  return of_iteration(update_entries_by_iteration(g), i);
}

/// The forward GPU tasks of every iteration, each list in trace order, in one scan of
/// the graph (see forward_gpu_tasks).
inline tasks_by_iteration forward_gpu_tasks_by_iteration(const graph& g) {
  tasks_by_iteration out;
  for (auto t : tasks(g) | where(in_phase(phase::forward) && on_gpu && !of_kind<comm_task>))
    out[t.iteration()].push_back(t);
  for (auto& [i, v] : out) sort_in_trace_order(g, v);
  return out;
}

/// The forward GPU tasks of iteration `i` in trace order: what a parameter pull of the
/// previous iteration must precede.
inline std::vector<task_id> forward_gpu_tasks(const graph& g, std::int32_t i) {
  return of_iteration(forward_gpu_tasks_by_iteration(g), i);
}

/// The first forward GPU task of iteration `next` that uses gradient `gr`'s parameter:
/// the first forward GPU task of its layer when the layer is known and has forward
/// work in `next`; otherwise the forward task at the same relative place in the forward
/// as the parameter's position among `count` parameters (parameters are used in
/// position order; an approximation when layers are unknown). no_task if `next` has no
/// forward GPU work. `fwd` is forward_gpu_tasks(g, next).
inline task_id forward_consumer(const graph& g, const gradient& gr, std::size_t count,
                                const std::vector<task_id>& fwd) {
  if (fwd.empty()) return no_task;
  if (!gr.layer.empty())
    for (auto t : fwd)
      if (g.layer(t) == gr.layer) return t;
  auto idx = count ? std::size_t(double(gr.position) * double(fwd.size()) / double(count)) : 0;
  return fwd[std::min(idx, fwd.size() - 1)];
}

} // namespace daydream::passes

#endif
