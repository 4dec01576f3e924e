// Defines the grad_accum pass: k micro-batches per weight update (gradient accumulation).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_GRAD_ACCUM_HPP
#define DAYDREAM_PASSES_GRAD_ACCUM_HPP

#include <daydream/depend.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/format.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// Gradient accumulation (modeled as a graph rewrite as in dPRO, Hu et al., MLSys'22):
/// the batch of each iteration is split into `k` micro-batches, each running forward
/// and backward, and the weights are updated once.
///
/// Cost model, per iteration: the forward-backward window (the iteration's forward and
/// backward tasks and whatever lies between them in dependency order, so on every
/// thread, stream or engine everything from its first to its last forward or backward
/// task) is repeated `k` times back to back. GPU kernels and memory copies of the window,
/// and the CPU calls that issue copies (a blocking copy's call lasts as long as the
/// transfer), take 1/`k` of their time: linear in the batch size, optimistic for small
/// micro-batches, which use the GPU less well. Other CPU tasks keep theirs, so CPU
/// overhead is paid `k` times. Communication tasks are repeated unchanged (no
/// `no_sync`). Dependencies into the window are given to every repetition, dependencies
/// out of it (to the weight update, the next iteration) leave from the last one. The
/// weight update runs once, unchanged.
///
/// Memory (when the graph has a memory model): what the window allocates and frees is
/// divided by `k` (activations scale with the batch), so the activation peak shrinks
/// about k-fold; memory outside the window (weights, optimizer state) is unchanged.
///
///     daydream::apply(g, daydream::passes::grad_accum{.k = 4});
struct grad_accum {
  static constexpr std::string_view name = "grad_accum"; ///< the --pass name
  std::int64_t k = 2; ///< micro-batches per iteration

  /// Whether `g` trains: it has backward tasks.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }
  /// Why the pass changes nothing on `g` ("" when it does): no backward pass.
  static std::string not_applicable(const graph& g) {
    auto backward = tasks(g) | where(in_phase(phase::backward));
    if (backward.begin() != backward.end()) return {};
    return "the trace has no backward pass (inference, or a forward-only window): there is no weight "
           "update to accumulate micro-batches for";
  }

  /// Repeats each iteration's forward-backward window `k` times; returns the counts and
  /// times. Invalidates nothing.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    if (k < 1) throw error("daydream: pass 'grad_accum': k must be at least 1");
    std::set<std::int32_t> iterations;
    for (auto t : tasks(g) | where(in_phase(phase::forward) || in_phase(phase::backward))) iterations.insert(t.iteration());
    std::size_t repeated = 0;
    time_ns scaled_before = 0, scaled_after = 0;
    for (auto it : iterations) {
      auto w = window(g, it);
      std::vector<char> in(g.id_bound(), 0);
      for (auto t : w.tasks) in[t] = 1;
      for (auto t : w.tasks) {
        if (g.is<gpu_kernel>(t) || g.is<memcpy_task>(t) || is_copy_call(g, t)) {
          scaled_before += g.duration(t);
          scale_duration(g, t, 1.0 / double(k));
          scaled_after += g.duration(t) * k;
        }
        g.set_mem_delta(t, static_cast<std::int64_t>(std::llround(double(g.mem_delta(t)) / double(k))));
      }
      // Dependencies leaving the window, to be moved to the last repetition.
      std::vector<dependency> out;
      for (auto t : w.tasks)
        for (auto d : g.successors(t))
          if (!in[d.to]) out.push_back(d);
      // Each repetition: a copy of the window that waits for what the window waits for,
      // following the previous repetition in every program order the window runs on.
      std::vector<task_id> prev(g.id_bound(), no_task);
      for (auto t : w.tasks) prev[t] = t;
      for (std::int64_t rep_i = 1; rep_i < k; ++rep_i) {
        auto next = copy_subgraph(g, g, w.tasks, {.from_outside = dep_mask::all()});
        for (auto& [first, last] : w.chains) add_program_order(g, prev[last], next[first]);
        repeated += w.tasks.size();
        prev = std::move(next);
      }
      if (k > 1)
        for (auto& d : out) move_dependency(g, d, prev[d.from], d.to);
    }
    rep.add_count("micro-batches", k);
    rep.add_count("iterations", std::int64_t(iterations.size()));
    rep.add_count("tasks repeated", std::int64_t(repeated));
    rep.add("GPU time of forward+backward",
            format_time(scaled_before) + " -> " + format_time(scaled_after) + " (all micro-batches)",
            report_value::of_change(report_kind::time, double(scaled_before), double(scaled_after)));
    if (iterations.empty()) rep.not_applied("no forward or backward task: nothing to split");
    else if (k == 1) rep.not_applied("k=1: one micro-batch per weight update is what the trace ran");
    return rep;
  }

private:
  /// A CPU call that copies data (its time is mostly the transfer, when it blocks).
  static bool is_copy_call(const graph& g, task_id t) {
    auto h = g.as<cpu_task>(t);
    return h && g.payload(h).call == cpu_call::memcpy;
  }

  /// The forward-backward window of one iteration: its tasks (in id order) and, per
  /// program-order chain it touches, the window's first and last task there.
  struct window_t {
    std::vector<task_id> tasks;
    std::vector<std::pair<task_id, task_id>> chains;
  };
  /// The iteration's forward and backward tasks and everything that lies between them:
  /// every task reachable from one of them that reaches one of them. Being closed that
  /// way, the window is contiguous in every program order, and repeating it cannot make
  /// a cycle (a task outside it either precedes it or follows it, never both).
  static window_t window(const graph& g, std::int32_t it) {
    const task_id n = g.id_bound();
    std::vector<char> seed(n, 0), down(n, 0), up(n, 0);
    std::vector<task_id> stack;
    for (auto t : tasks(g) | where(in_iteration(it) && (in_phase(phase::forward) || in_phase(phase::backward)))) {
      seed[t] = down[t] = up[t] = 1;
      stack.push_back(t);
    }
    const auto seeds = stack;
    while (!stack.empty()) {
      auto t = stack.back();
      stack.pop_back();
      for (auto d : g.successors(t))
        if (!down[d.to]) { down[d.to] = 1; stack.push_back(d.to); }
    }
    stack = seeds;
    while (!stack.empty()) {
      auto t = stack.back();
      stack.pop_back();
      for (auto d : g.predecessors(t))
        if (!up[d.from]) { up[d.from] = 1; stack.push_back(d.from); }
    }
    window_t w;
    std::vector<char> in(n, 0);
    for (auto t : tasks(g) | where(pred([&](task_id t) { return down[t] && up[t]; }))) {
      in[t] = 1;
      w.tasks.push_back(t);
    }
    for (auto t : w.tasks) {
      if (g.resource_of(t) == no_resource) continue;
      auto p = prev_on_resource(g, t);
      if (p != no_task && in[p]) continue;
      auto last = t;
      for (auto q = next_on_resource(g, t); q != no_task && in[q]; q = next_on_resource(g, q)) last = q;
      w.chains.push_back({t, last});
    }
    return w;
  }
};

} // namespace daydream::passes

#endif
