// Defines duration_overlay: changed durations and gaps over a shared graph, replayed without copying the graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_OVERLAY_HPP
#define DAYDREAM_OVERLAY_HPP

#include <daydream/config.hpp>
#include <daydream/detail/replay_kernel.hpp>
#include <daydream/detail/replay_queue.hpp>
#include <daydream/fwd.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/task.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace daydream {

/// A what-if that changes only durations and gaps, without copying the graph: the
/// durations and gaps it sets, over a base graph it shares (read-only). replay_into(o, r)
/// replays the base graph with them and gives exactly what replaying a copy of the base
/// with the same set_duration / scale_duration / set_gap calls gives, every field; the
/// analyses of a replay (iteration_spans, steady_steps, critical paths) take the base
/// graph with that result (a steady_plan reads the base's side of the steady-state steps
/// once for the whole loop). reset() brings every task back to the base's times in
/// O(tasks changed), so a loop of what-ifs (a sensitivity profile, a sweep) costs a
/// replay each and no copy.
///
/// The overlay stores the duration column on the first set_duration or scale_duration
/// and the gap column on the first set_gap (8 bytes per task each), and keeps them
/// across reset(). The base must outlive the overlay and must not change while the
/// overlay is used (a structural what-if needs a copy of the graph: daydream::apply);
/// replay_into refuses an overlay whose base gained tasks since. A replay policy's key
/// sees the base graph (the bundled policies read no durations).
///
///     daydream::duration_overlay o(g);
///     daydream::steady_plan steps(g, its);
///     daydream::replay_result r;
///     for (auto& layer : layers) {
///       for (auto t : layer) o.scale_duration(t, 0.5);  // this layer 2x faster
///       daydream::replay_into(o, r);
///       fmt::print("{}: {}\n", name(layer), steps.steps(r)[0].step());
///       o.reset();
///     }
template <class Graph> class basic_duration_overlay {
public:
  /// An overlay that changes nothing yet: every task has its time in `base`.
  explicit basic_duration_overlay(const Graph& base) noexcept : base_(&base) {}

  /// The graph the overlay changes.
  const Graph& base() const noexcept { return *base_; }

  /// The duration of `t` with the overlay's changes.
  time_ns duration(task_id t) const { return dur_.empty() ? base_->duration(t) : dur_[t]; }
  /// The gap after `t` with the overlay's changes.
  time_ns gap(task_id t) const { return gap_.empty() ? base_->gap(t) : gap_[t]; }

  /// Sets the duration of `t` (nanoseconds, not negative), as daydream::set_duration.
  void set_duration(task_id t, time_ns d) {
    base_->core().check_task(t, "duration_overlay::set_duration");
    if (d < 0) throw error("daydream: set_duration: negative duration for task #" + std::to_string(t));
    own(dur_, base_->core().duration);
    dur_[t] = d;
    touched_.push_back(t);
  }

  /// Multiplies the duration of `t` by `factor`, rounded to the nearest nanosecond, as
  /// daydream::scale_duration.
  void scale_duration(task_id t, double factor) {
    base_->core().check_task(t, "duration_overlay::scale_duration");
    if (!(factor >= 0) || !std::isfinite(factor))
      throw error("daydream: scale_duration: factor must be finite and not negative");
    const double scaled = double(duration(t)) * factor;
    if (!(scaled < 0x1p63))
      throw error("daydream: scale_duration: task #" + std::to_string(t) + " would last longer than 2^63 ns");
    own(dur_, base_->core().duration);
    dur_[t] = static_cast<time_ns>(std::llround(scaled));
    touched_.push_back(t);
  }

  /// Sets the idle time after `t` on its resource (nanoseconds, not negative), as
  /// daydream::set_gap.
  void set_gap(task_id t, time_ns gap) {
    base_->core().check_task(t, "duration_overlay::set_gap");
    if (gap < 0) throw error("daydream: set_gap: negative gap for task #" + std::to_string(t));
    own(gap_, base_->core().gap);
    gap_[t] = gap;
    touched_.push_back(t);
  }

  /// Brings every task back to its time in the base, keeping the stored columns: O(the
  /// set_* calls since the last reset).
  void reset() noexcept {
    const auto& c = base_->core();
    for (auto t : touched_) {
      if (!dur_.empty()) dur_[t] = c.duration[t];
      if (!gap_.empty()) gap_[t] = c.gap[t];
    }
    touched_.clear();
  }

  /// Whether some duration or gap was set since the last reset.
  bool changed() const noexcept { return !touched_.empty(); }

  /// A copy of the base with the overlay's durations and gaps: the graph the overlay
  /// stands for.
  Graph materialize() const {
    Graph g = *base_;
    for (auto t : touched_) {
      g.core().duration[t] = duration(t);
      g.core().gap[t] = gap(t);
    }
    return g;
  }

  //! @cond DAYDREAM_INTERNAL
  /// The columns the replay reads in place of the base's (nullptr: the base's own).
  /// Throws when the base gained tasks since they were stored.
  detail::replay_times times() const {
    const auto n = std::size_t(base_->core().id_bound());
    if ((!dur_.empty() && dur_.size() != n) || (!gap_.empty() && gap_.size() != n))
      throw error("daydream: duration_overlay: its graph has " + std::to_string(n) +
                  " task ids, the overlay was made for " + std::to_string(dur_.empty() ? gap_.size() : dur_.size()) +
                  " (the graph changed under it; make a new overlay)");
    return {dur_.empty() ? nullptr : dur_.data(), gap_.empty() ? nullptr : gap_.data()};
  }
  //! @endcond

private:
  template <class Column> static void own(std::vector<time_ns>& mine, const Column& base) {
    if (mine.empty()) mine.assign(base.begin(), base.end());
  }

  const Graph* base_;
  std::vector<time_ns> dur_;      // the durations, once one is set (empty: the base's)
  std::vector<time_ns> gap_;      // the gaps, once one is set
  std::vector<task_id> touched_;  // the tasks set since the last reset (repeats allowed)
};

/// replay_into() of the graph an overlay stands for: the base replayed with the
/// overlay's durations and gaps, into `out` (its arrays reused). Equal, every field, to
/// replay_into(o.materialize(), out, policy, options); no copy of the graph, and the
/// replay's working memory is the same per-thread memory every replay reuses.
template <class Graph, class Policy = trace_order_policy>
replay_result& replay_into(const basic_duration_overlay<Graph>& o, replay_result& out, const Policy& policy = {},
                           const replay_options& options = {}) {
  static_assert(selection_policy<Policy, Graph>,
                "daydream::replay_into(overlay, out, policy): the policy must have a member "
                "`priority_key key(const Graph&, task_id, time_ns ready) const`.");
  if constexpr (selection_policy<Policy, Graph>) {
    const auto times = o.times();
    const Graph& g = o.base();
    auto policy_key = [&](task_id t, time_ns ready) { return policy.key(g, t, ready); };
    const detail::key_ref key(policy_key);
    detail::replay_flat_into(g.core(), key, options, out, times);
  }
  return out;
}

/// replay() of the graph an overlay stands for, into a fresh result.
template <class Graph, class Policy = trace_order_policy>
replay_result replay(const basic_duration_overlay<Graph>& o, const Policy& policy = {},
                     const replay_options& options = {}) {
  replay_result r;
  replay_into(o, r, policy, options);
  return r;
}

} // namespace daydream

#endif
