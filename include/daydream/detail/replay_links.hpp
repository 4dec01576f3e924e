// Defines fair_link: the bookkeeping of a fair-share resource (a link) during a replay, processor sharing on a virtual clock.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_LINKS_HPP
#define DAYDREAM_DETAIL_REPLAY_LINKS_HPP

#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// A fair-share resource (a link) during a replay: the transfers active on it split its
/// capacity evenly (processor sharing). A virtual clock advances by the real time over
/// the number of active transfers, so a transfer that takes `d` alone and starts at
/// virtual time `v` finishes when the clock reaches `v + d`, whatever starts or ends in
/// between. The event-driven kernel and the chained pass both keep one per link; the
/// times they compute from it are the same to the last bit.
class fair_link {
public:
  /// Whether no transfer is active.
  bool idle() const noexcept { return active_.empty(); }

  /// When the link last went from idle to busy.
  time_ns busy_since() const noexcept { return busy_since_; }

  /// Transfer `t`, which takes `dur` alone, starts at `now` (no earlier than the last
  /// start or step).
  void start(task_id t, time_ns dur, time_ns now) {
    advance(now);
    if (active_.empty()) busy_since_ = now;
    active_.push_back({vclock_ + double(dur), t});
    std::push_heap(active_.begin(), active_.end(), finishes_later);
  }

  /// When the first active transfer finishes at the current share, counted from `now`,
  /// the time of the last start or step. Only when the link is not idle.
  time_ns next_end(time_ns now) const {
    const double left = std::max(0.0, active_.front().first - vclock_) * double(active_.size());
    return now + static_cast<time_ns>(std::llround(left));
  }

  /// The link's step at `now`: every transfer with at most half a nanosecond left
  /// finishes (next_end rounded to whole nanoseconds, so any transfer left over needs
  /// more than half a nanosecond and its end lies in the future), and `f(t)` is called
  /// for each, in the order of their virtual finish times (ties by id).
  template <class F> void finish_due(time_ns now, F&& f) {
    advance(now);
    const double share = double(active_.size());
    while (!active_.empty() && std::max(0.0, active_.front().first - vclock_) * share <= 0.5) {
      const task_id t = active_.front().second;
      std::pop_heap(active_.begin(), active_.end(), finishes_later);
      active_.pop_back();
      f(t);
    }
  }

private:
  using transfer = std::pair<double, task_id>; // virtual finish time, task

  /// The heap order of `active_`: the first to finish on top.
  static bool finishes_later(const transfer& a, const transfer& b) noexcept { return a > b; }

  void advance(time_ns now) noexcept {
    if (!active_.empty()) vclock_ += double(now - updated_) / double(active_.size());
    updated_ = now;
  }

  double vclock_ = 0;
  time_ns updated_ = 0;    // real time of the last start or step
  time_ns busy_since_ = 0;
  std::vector<transfer> active_; // a heap (finishes_later)
};

} // namespace daydream::detail
//! @endcond

#endif
