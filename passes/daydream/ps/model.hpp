// Defines ps::extract_steps: one worker's steps of parameter-server training (downlink, worker, uplink, server operations) from a graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_MODEL_HPP
#define DAYDREAM_PS_MODEL_HPP

#include <daydream/analysis.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/ps/steps.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/semantics/gradients.hpp>
#include <daydream/task.hpp>
#include <daydream/update.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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

/// One worker's steps, ready for simulate_training.
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

/// Where each tensor of one iteration is used and produced, in compressed time (the
/// iteration with its weight-update phase cut out), by position (0: used first).
struct tensor_points {
  std::vector<double> use, ready, bytes;
  std::vector<std::string> names;
  std::vector<std::uint32_t> made; // place in the ready order
  explicit tensor_points(std::size_t n) : use(n), ready(n), bytes(n), names(n), made(n) {}
  std::size_t size() const noexcept { return use.size(); }
};

/// extract_steps as a state and its steps: the graph, its replay and what the steps
/// are read from are the members; the trace's step is measured first, then the
/// collectives are taken out and the graph replayed again, and each iteration becomes
/// one step.
class step_extractor {
public:
  step_extractor(graph g, const std::vector<std::int32_t>& iterations, const model_options& o)
      : g_(std::move(g)), iterations_(iterations), o_(o) {}

  model run() {
    // The trace's step, replayed as recorded (before the collectives are taken out).
    const auto recorded = replay(g_);
    measure_trace_step(recorded);
    zero_collectives();
    gs_ = passes::find_gradients(g_, o_.sizes, o_.model_bytes);
    m_.source = gs_.source;
    if (!gs_.note.empty()) m_.notes.push_back(gs_.note);
    r_ = m_.collectives ? replay(g_) : recorded; // the same graph without collectives
    read_replay();
    for (auto it : iterations_) add_iteration(it);
    return finish();
  }

private:
  // ---- the whole trace

  /// The median steady-state step of the iterations in replay `recorded`.
  void measure_trace_step(const replay_result& recorded) {
    std::vector<time_ns> steps;
    for (auto& st : steady_steps(g_, recorded, iterations_)) steps.push_back(st.step());
    m_.trace_step_ns = double(median_of(std::move(steps)));
  }

  /// Recorded collectives take no time: the servers replace them.
  void zero_collectives() {
    g_.for_each<comm_task>([&](handle<comm_task> h) {
      if (g_.duration(h.id) > 0) set_duration(g_, h.id, 0);
      ++m_.collectives;
    });
    if (m_.collectives)
      m_.notes.push_back(std::to_string(m_.collectives) + " recorded collective task(s) take no time: the servers "
                         "replace the trace's gradient synchronization");
  }

  /// From the replay: the iterations' spans and steady-state steps, the forward GPU
  /// tasks of each iteration, the weight-update intervals.
  void read_replay() {
    spans_ = iteration_spans(g_, r_);
    // A step lasts the iteration's steady-state step: its span, or, when a resource falls
    // behind (a GPU whose queue grows while the CPU runs ahead), that resource's work.
    for (auto& st : steady_steps(g_, r_, iterations_)) step_of_[st.iteration] = st.step();
    fwd_ = passes::forward_gpu_tasks_by_iteration(g_);
    std::vector<std::pair<time_ns, time_ns>> wu;
    g_.for_each_task([&](task_id t) {
      if (g_.phase_of(t) == phase::weight_update && r_.start[t] >= 0) wu.push_back({r_.start[t], r_.end[t]});
    });
    update_.build(std::move(wu));
  }

  model finish() {
    if (m_.tensors.empty())
      throw error("daydream ps: no gradients found" + (gs_.note.empty() ? std::string() : ": " + gs_.note));
    if (m_.steps.empty()) throw error("daydream ps: no usable iteration among the steady-state ones");
    const double k = double(m_.steps.size());
    m_.compute_ns = compute_ / k;
    m_.update_ns = upd_ / k;
    return std::move(m_);
  }

  // ---- one iteration

  /// The step of iteration `it`, unless it is left out (with a note).
  void add_iteration(std::int32_t it) {
    const auto* sp = span_of(it);
    if (!sp) {
      m_.notes.push_back("iteration " + std::to_string(it) + " has no task and is left out");
      return;
    }
    const auto idx = gs_.of_iteration(it);
    if (idx.empty()) {
      m_.notes.push_back("iteration " + std::to_string(it) + " has no gradients and is left out");
      return;
    }
    if (!m_.tensors.empty() && idx.size() != m_.tensors.size()) {
      m_.notes.push_back("iteration " + std::to_string(it) + " has " + std::to_string(idx.size()) +
                         " gradients, not " + std::to_string(m_.tensors.size()) + ", and is left out");
      return;
    }
    begin_ = sp->begin;
    end_ = begin_ + step_of_[it]; // the step is never shorter than the span
    const double length = compressed(end_);
    const double upd_time = double(update_.covered_before(end_) - update_.covered_before(begin_)) * o_.update_scale;
    const auto pts = points_of(it, idx);
    if (m_.tensors.empty()) name_tensors(pts);
    const auto cuts = cuts_of(pts, length);
    auto st = worker_chain(it, cuts);
    add_transfers(st, pts, cuts, length, upd_time);
    compute_ += length * o_.compute_scale;
    upd_ += upd_time;
    m_.steps.push_back(std::move(st));
  }

  const iteration_span* span_of(std::int32_t it) const {
    const iteration_span* sp = nullptr;
    for (auto& s : spans_)
      if (s.iteration == it) sp = &s;
    return sp;
  }

  /// Time `t` of the current iteration, from its beginning, with the weight-update phase
  /// cut out.
  double compressed(time_ns t) const {
    t = std::clamp(t, begin_, end_);
    return double(t - begin_ - (update_.covered_before(t) - update_.covered_before(begin_)));
  }

  /// Where the gradients `idx` of iteration `it` are used and produced.
  tensor_points points_of(std::int32_t it, const std::vector<std::size_t>& idx) const {
    const auto& f = passes::of_iteration(fwd_, it);
    const std::size_t n = idx.size();
    tensor_points pts(n);
    for (std::size_t k = 0; k < n; ++k) {
      auto& gr = gs_.grads[idx[k]];
      const std::size_t p = std::min<std::size_t>(gr.position, n - 1);
      auto consumer = passes::forward_consumer(g_, gr, n, f);
      pts.use[p] = consumer == no_task ? 0.0 : compressed(r_.start[consumer]);
      pts.ready[p] = compressed(r_.end[gr.ready]);
      pts.bytes[p] = double(gr.bytes);
      pts.names[p] = gr.layer.empty() ? "tensor " + std::to_string(p) : gr.layer;
      pts.made[p] = static_cast<std::uint32_t>(k);
    }
    return pts;
  }

  /// The model's tensors, from the first usable iteration: consumption order by first
  /// use, then position.
  void name_tensors(const tensor_points& pts) {
    const std::size_t n = pts.size();
    std::vector<std::uint32_t> by_use(n);
    for (std::uint32_t p = 0; p < n; ++p) by_use[p] = p;
    std::stable_sort(by_use.begin(), by_use.end(), [&](auto a, auto b) { return pts.use[a] < pts.use[b]; });
    m_.tensors.resize(n);
    for (std::uint32_t k = 0; k < n; ++k) m_.tensors[by_use[k]].use_rank = k;
    for (std::size_t p = 0; p < n; ++p) {
      m_.tensors[p].name = pts.names[p];
      m_.tensors[p].bytes = pts.bytes[p];
      m_.tensors[p].trace_rank = pts.made[p];
      m_.bytes += pts.bytes[p];
    }
  }

  /// Every use and ready point in [0, length], sorted, once each, with 0 and `length`.
  static std::vector<double> cuts_of(const tensor_points& pts, double length) {
    std::vector<double> cuts{0.0, length};
    for (std::size_t p = 0; p < pts.size(); ++p) {
      cuts.push_back(std::clamp(pts.use[p], 0.0, length));
      cuts.push_back(std::clamp(pts.ready[p], 0.0, length));
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    return cuts;
  }

  /// The worker's chain of computation, cut at every use and ready point.
  step_template worker_chain(std::int32_t it, const std::vector<double>& cuts) const {
    step_template st;
    st.iteration = it;
    const std::size_t segs = cuts.size() - 1;
    for (std::size_t k = 0; k < segs; ++k) {
      step_op op;
      op.res = op_resource::worker;
      op.duration = (cuts[k + 1] - cuts[k]) * o_.compute_scale;
      if (k) op.after.push_back(static_cast<std::uint32_t>(k - 1));
      st.ops.push_back(std::move(op));
    }
    return st;
  }

  /// Per tensor: downlink -> [overhead] -> the segment starting at its use point; the
  /// segment ending at its ready point -> uplink -> server (its share of `upd_time`, and
  /// the uplink's overhead).
  void add_transfers(step_template& st, const tensor_points& pts, const std::vector<double>& cuts, double length,
                     double upd_time) const {
    const std::size_t segs = cuts.size() - 1;
    const std::size_t n = pts.size();
    auto cut_index = [&](double t) { return std::size_t(std::lower_bound(cuts.begin(), cuts.end(), t) - cuts.begin()); };
    double total = 0;
    for (double b : pts.bytes) total += b;
    for (std::uint32_t p = 0; p < n; ++p) {
      const double over = o_.alpha * pts.bytes[p] + o_.beta;
      const auto down = static_cast<std::uint32_t>(st.ops.size());
      st.ops.push_back({op_resource::downlink, 0, pts.bytes[p], p, {}});
      std::uint32_t gate = down;
      if (over > 0) {
        gate = static_cast<std::uint32_t>(st.ops.size());
        st.ops.push_back({op_resource::worker, over, 0, p, {down}});
      }
      const auto u = cut_index(std::clamp(pts.use[p], 0.0, length));
      if (u < segs) st.ops[u].after.push_back(gate);
      const auto e = cut_index(std::clamp(pts.ready[p], 0.0, length));
      const auto up = static_cast<std::uint32_t>(st.ops.size());
      step_op uo{op_resource::uplink, 0, pts.bytes[p], p, {}};
      if (e > 0) uo.after.push_back(static_cast<std::uint32_t>(e - 1));
      st.ops.push_back(std::move(uo));
      const double share = total > 0 ? upd_time * pts.bytes[p] / total : upd_time / double(n);
      st.ops.push_back({op_resource::server, share + over, 0, p, {up}});
    }
  }

  graph g_;
  const std::vector<std::int32_t>& iterations_;
  const model_options& o_;
  model m_;
  passes::gradient_set gs_;
  replay_result r_;                      // the replay without collectives
  std::vector<iteration_span> spans_;
  std::map<std::int32_t, time_ns> step_of_; // by iteration: its steady-state step
  passes::tasks_by_iteration fwd_;       // forward GPU tasks
  interval_set update_;                  // the weight-update phase
  double compute_ = 0, upd_ = 0;         // summed over the steps
  time_ns begin_ = 0, end_ = 0;          // the current iteration's step
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
  if (iterations.empty()) throw error("daydream ps: the trace has no iteration to take steps from");
  if (!(o.alpha >= 0) || !(o.beta >= 0) || !(o.update_scale >= 0) || !(o.compute_scale > 0) || !std::isfinite(o.alpha) ||
      !std::isfinite(o.beta) || !std::isfinite(o.update_scale) || !std::isfinite(o.compute_scale))
    throw usage_error("daydream ps: alpha, beta and the update scale must be finite and not negative, the compute scale positive");
  return detail::step_extractor(std::move(g), iterations, o).run();
}

} // namespace daydream::ps

#endif
