// Defines ps::extract_steps: one worker's steps of parameter-server training (downlink, worker, uplink, server operations) from a graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_MODEL_HPP
#define DAYDREAM_PS_MODEL_HPP

#include <daydream/analysis.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/semantics/gradients.hpp>
#include <daydream/ps/simulate.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>
#include <daydream/update.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace daydream::ps {

/// How the steps are made from a trace.
struct model_options {
  passes::layer_bytes sizes = {}; ///< layer -> gradient bytes; empty: from the trace
  double model_bytes = 0;         ///< spread over the gradients when the trace has no sizes
  double alpha = 0;               ///< ns per byte of a transfer's overhead (parsing, copies)
  double beta = 0;                ///< ns per transfer of overhead
  double update_scale = 1;        ///< multiplies the server's update time (the trace's weight-update time)
  /// Multiplies the worker's computation (not the overheads): a what-if for a batch k
  /// times larger on a device that its batch already saturates (time linear in the batch).
  double compute_scale = 1;
};

/// One worker's steps, ready for simulate.
struct model {
  std::vector<step_template> steps;   ///< one per steady-state iteration
  std::vector<tensor_info> tensors;   ///< the tensors exchanged every step, in parameter order
  passes::gradient_source source = passes::gradient_source::none; ///< where the sizes came from
  double bytes = 0;          ///< model size: the tensors' bytes
  double compute_ns = 0;     ///< mean over the steps of the worker's computation per step (scaled)
  double update_ns = 0;      ///< mean over the steps of the trace's weight-update time per step
  /// The trace's step: the baseline `daydream whatif` gives for the same iterations, the
  /// median steady-state step (steady_steps) of the trace replayed as recorded.
  double trace_step_ns = 0;
  std::size_t collectives = 0; ///< recorded collective tasks whose time was set to 0
  std::vector<std::string> notes; ///< what was estimated, left out or fallen back to
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
// Disjoint sorted intervals with prefix lengths: how much of them lies before t.
struct interval_set {
  std::vector<std::pair<time_ns, time_ns>> iv;
  std::vector<time_ns> before; // total length of iv[0..k)
  void build(std::vector<std::pair<time_ns, time_ns>> v) {
    std::sort(v.begin(), v.end());
    for (auto [b, e] : v) {
      if (e <= b) continue;
      if (!iv.empty() && b <= iv.back().second) iv.back().second = std::max(iv.back().second, e);
      else iv.push_back({b, e});
    }
    before.assign(iv.size() + 1, 0);
    for (std::size_t k = 0; k < iv.size(); ++k) before[k + 1] = before[k] + iv[k].second - iv[k].first;
  }
  time_ns covered_before(time_ns t) const {
    auto k = std::size_t(std::upper_bound(iv.begin(), iv.end(), std::pair(t, std::numeric_limits<time_ns>::max())) - iv.begin());
    // iv[0..k) start at or before t; the last of them may extend past t.
    if (k == 0) return 0;
    return before[k - 1] + std::min(t, iv[k - 1].second) - iv[k - 1].first;
  }
};
} // namespace detail
//! @endcond

/// One worker's steps of asynchronous parameter-server training, from its trace's graph
/// (after Li et al., ICPE'20, Section 3: the four resources DOWNLINK, WORKER, UPLINK, PS).
///
/// For each of `iterations` (the trace's steady-state iterations) the graph's replay
/// gives a time line of the worker. From it:
/// - Tensors: the gradients (passes::find_gradients: the trace's AccumulateGrad sizes, a
///   layer map, or `model_bytes` spread evenly), one stream each way per step.
/// - WORKER: the iteration's span with the weight-update phase cut out (the servers
///   apply the updates), split at every point where a parameter is consumed or a
///   gradient is produced into a chain of computation operations; their durations are
///   the replayed times between the points, idle time included, so that one worker
///   with free communication takes exactly the replayed iteration time less the
///   optimizer time.
/// - DOWNLINK of a tensor: at the step's start; it precedes the operation that begins
///   at the start of the first forward GPU task that uses it (passes::forward_consumer).
/// - UPLINK of a tensor: follows the operation that ends when its gradient is ready.
/// - PS: follows the uplink; its duration is the iteration's weight-update time (the
///   union of its weight-update tasks' replayed intervals) times `update_scale`, shared
///   among the tensors in proportion to their bytes.
/// - Overhead `alpha * bytes + beta` of a downlink is a worker operation between the
///   downlink and its consumer; of an uplink, it is added to the PS operation.
/// `g` is taken by value: recorded collectives (comm_task: a data-parallel trace's all-reduces) get duration 0
/// first, since the servers replace them; the count is in `collectives`.
///
/// Throws daydream::error naming what is missing: no iteration, no gradients (give
/// sizes or `model_bytes`). Iterations whose gradients differ in number from the
/// first's are left out with a note.
inline model extract_steps(graph g, const std::vector<std::int32_t>& iterations, const model_options& o = {}) {
  model m;
  if (iterations.empty()) throw error("daydream ps: the trace has no iteration to take steps from");
  if (!(o.alpha >= 0) || !(o.beta >= 0) || !(o.update_scale >= 0) || !(o.compute_scale > 0) || !std::isfinite(o.alpha) ||
      !std::isfinite(o.beta) || !std::isfinite(o.update_scale) || !std::isfinite(o.compute_scale))
    throw usage_error("daydream ps: alpha, beta and the update scale must be finite and not negative, the compute scale positive");
  // The trace's step, replayed as recorded (before the collectives are taken out).
  const auto recorded = replay(g);
  {
    std::vector<time_ns> steps;
    for (auto& st : steady_steps(g, recorded, iterations)) steps.push_back(st.step());
    m.trace_step_ns = double(median_of(std::move(steps)));
  }
  g.for_each<comm_task>([&](handle<comm_task> h) {
    if (g.duration(h.id) > 0) set_duration(g, h.id, 0);
    ++m.collectives;
  });
  if (m.collectives)
    m.notes.push_back(std::to_string(m.collectives) + " recorded collective task(s) take no time: the servers replace "
                      "the trace's gradient synchronization");
  auto gs = passes::find_gradients(g, o.sizes, o.model_bytes);
  m.source = gs.source;
  if (!gs.note.empty()) m.notes.push_back(gs.note);
  const auto r = m.collectives ? replay(g) : recorded; // the same graph without collectives
  const auto spans = iteration_spans(g, r);
  // A step lasts the iteration's steady-state step: its span, or, when a resource falls
  // behind (a GPU whose queue grows while the CPU runs ahead), that resource's work.
  std::map<std::int32_t, time_ns> step_of;
  for (auto& st : steady_steps(g, r, iterations)) step_of[st.iteration] = st.step();
  const auto fwd = passes::forward_gpu_tasks_by_iteration(g);

  std::vector<std::pair<time_ns, time_ns>> wu;
  g.for_each_task([&](task_id t) {
    if (g.phase_of(t) == phase::weight_update && r.start[t] >= 0) wu.push_back({r.start[t], r.end[t]});
  });
  detail::interval_set update;
  update.build(std::move(wu));

  double compute = 0, upd = 0;
  for (auto it : iterations) {
    const iteration_span* sp = nullptr;
    for (auto& s : spans)
      if (s.iteration == it) sp = &s;
    if (!sp) {
      m.notes.push_back("iteration " + std::to_string(it) + " has no task and is left out");
      continue;
    }
    auto idx = gs.of_iteration(it);
    if (idx.empty()) {
      m.notes.push_back("iteration " + std::to_string(it) + " has no gradients and is left out");
      continue;
    }
    if (!m.tensors.empty() && idx.size() != m.tensors.size()) {
      m.notes.push_back("iteration " + std::to_string(it) + " has " + std::to_string(idx.size()) + " gradients, not " +
                        std::to_string(m.tensors.size()) + ", and is left out");
      continue;
    }
    const time_ns begin = sp->begin, end = begin + step_of[it]; // the step is never shorter than the span
    const auto compressed = [&](time_ns t) {
      t = std::clamp(t, begin, end);
      return double(t - begin - (update.covered_before(t) - update.covered_before(begin)));
    };
    const double length = compressed(end);
    const double upd_time = double(update.covered_before(end) - update.covered_before(begin)) * o.update_scale;
    // Where each tensor is used and produced, in compressed time; by position (0: used first).
    const auto& f = passes::of_iteration(fwd, it);
    const std::size_t n = idx.size();
    std::vector<double> use(n), ready(n), bytes(n);
    std::vector<std::string> names(n);
    std::vector<std::uint32_t> made(n); // place in the ready order
    for (std::size_t k = 0; k < n; ++k) {
      auto& gr = gs.grads[idx[k]];
      const std::size_t p = std::min<std::size_t>(gr.position, n - 1);
      auto consumer = passes::forward_consumer(g, gr, n, f);
      use[p] = consumer == no_task ? 0.0 : compressed(r.start[consumer]);
      ready[p] = compressed(r.end[gr.ready]);
      bytes[p] = double(gr.bytes);
      names[p] = gr.layer.empty() ? "tensor " + std::to_string(p) : gr.layer;
      made[p] = static_cast<std::uint32_t>(k);
    }
    if (m.tensors.empty()) {
      // Consumption order: by first use, then position.
      std::vector<std::uint32_t> by_use(n);
      for (std::uint32_t p = 0; p < n; ++p) by_use[p] = p;
      std::stable_sort(by_use.begin(), by_use.end(), [&](auto a, auto b) { return use[a] < use[b]; });
      m.tensors.resize(n);
      for (std::uint32_t k = 0; k < n; ++k) m.tensors[by_use[k]].use_rank = k;
      for (std::size_t p = 0; p < n; ++p) {
        m.tensors[p].name = names[p];
        m.tensors[p].bytes = bytes[p];
        m.tensors[p].trace_rank = made[p];
        m.bytes += bytes[p];
      }
    }
    // The worker's chain, cut at every use and ready point.
    std::vector<double> cuts{0.0, length};
    for (std::size_t p = 0; p < n; ++p) {
      cuts.push_back(std::clamp(use[p], 0.0, length));
      cuts.push_back(std::clamp(ready[p], 0.0, length));
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    step_template st;
    st.iteration = it;
    const std::size_t segs = cuts.size() - 1;
    for (std::size_t k = 0; k < segs; ++k) {
      step_op op;
      op.res = op_resource::worker;
      op.duration = (cuts[k + 1] - cuts[k]) * o.compute_scale;
      if (k) op.after.push_back(static_cast<std::uint32_t>(k - 1));
      st.ops.push_back(std::move(op));
    }
    auto cut_index = [&](double t) { return std::size_t(std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin()); };
    double total = 0;
    for (double b : bytes) total += b;
    for (std::uint32_t p = 0; p < n; ++p) {
      const double over = o.alpha * bytes[p] + o.beta;
      // Downlink -> [overhead] -> the segment starting at the use point.
      const auto down = static_cast<std::uint32_t>(st.ops.size());
      st.ops.push_back({op_resource::downlink, 0, bytes[p], p, {}});
      std::uint32_t gate = down;
      if (over > 0) {
        gate = static_cast<std::uint32_t>(st.ops.size());
        st.ops.push_back({op_resource::worker, over, 0, p, {down}});
      }
      const auto u = cut_index(std::clamp(use[p], 0.0, length));
      if (u < segs) st.ops[u].after.push_back(gate);
      // The segment ending at the ready point -> uplink -> server.
      const auto e = cut_index(std::clamp(ready[p], 0.0, length));
      const auto up = static_cast<std::uint32_t>(st.ops.size());
      step_op uo{op_resource::uplink, 0, bytes[p], p, {}};
      if (e > 0) uo.after.push_back(static_cast<std::uint32_t>(e - 1));
      st.ops.push_back(std::move(uo));
      const double share = total > 0 ? upd_time * bytes[p] / total : upd_time / double(n);
      st.ops.push_back({op_resource::server, share + over, 0, p, {up}});
    }
    compute += length * o.compute_scale;
    upd += upd_time;
    m.steps.push_back(std::move(st));
  }
  if (m.tensors.empty())
    throw error("daydream ps: no gradients found" + (gs.note.empty() ? std::string() : ": " + gs.note));
  if (m.steps.empty()) throw error("daydream ps: no usable iteration among the steady-state ones");
  const double k = double(m.steps.size());
  m.compute_ns = compute / k;
  m.update_ns = upd / k;
  return m;
}

} // namespace daydream::ps

#endif
