// Defines overlap_state: the bookkeeping of the overlap slowdown (replay_options) during a replay.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_OVERLAP_HPP
#define DAYDREAM_DETAIL_REPLAY_OVERLAP_HPP

#include <daydream/detail/core.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// The overlap slowdown (replay_options::overlap_slowdown) during a replay: while a task
/// runs on a link of node k, the tasks on the exclusive GPU streams of node k progress
/// `slowdown` times slower. It counts the active transfers of each node and keeps the
/// running slowed tasks of each node with the work they have left and their rate since
/// they were last re-timed; the replay starts and ends the tasks and moves the planned
/// ends it is handed.
class overlap_state {
public:
  /// What a resource is to the slowdown.
  enum class role : std::uint8_t {
    none,     ///< neither slowed nor slowing
    slowed,   ///< an exclusive GPU stream: its tasks slow down while its node transfers
    transfer, ///< a link: its tasks slow down the streams of its node
  };

  /// Sets up the roles and nodes of the resources of `c` and the state of its tasks.
  void prepare(const graph_core& c, double slowdown) {
    slowed_rate_ = 1.0 / slowdown;
    std::vector<std::int32_t> nodes;
    for (const auto& res : c.resources) nodes.push_back(res.node);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const std::size_t nres = c.resources.size();
    node_of_.resize(nres);
    role_.assign(nres, role::none);
    for (std::size_t i = 0; i < nres; ++i) {
      const auto& res = c.resources[i];
      node_of_[i] = static_cast<std::uint32_t>(
          std::lower_bound(nodes.begin(), nodes.end(), res.node) - nodes.begin());
      if (res.kind == resource_kind::link) role_[i] = role::transfer;
      else if (res.kind == resource_kind::gpu_stream && res.share == sharing::exclusive)
        role_[i] = role::slowed;
    }
    transfers_.assign(nodes.size(), 0);
    computing_.resize(nodes.size());
    const task_id n = c.id_bound();
    work_left_.assign(n, 0);
    rate_.assign(n, 1);
    since_.assign(n, 0);
    begin_.assign(n, 0);
  }

  role role_of(resource_id rr) const noexcept { return role_[rr]; }
  std::uint32_t node_of(resource_id rr) const noexcept { return node_of_[rr]; }
  /// The rate of a slowed task while its node transfers (1 / slowdown).
  double slowed_rate() const noexcept { return slowed_rate_; }

  /// A transfer starts on link `rr`: true when it is the first active one of its node
  /// (the replay then re-times the node's running tasks at slowed_rate()).
  bool transfer_starts(resource_id rr) noexcept { return transfers_[node_of_[rr]]++ == 0; }
  /// A transfer ends on link `rr`: true when it was the last active one of its node (the
  /// replay then re-times the node's running tasks at rate 1).
  bool transfer_ends(resource_id rr) noexcept { return --transfers_[node_of_[rr]] == 0; }

  /// Task `t`, which takes `dur` at full rate, starts at `at` on slowed stream `rr`:
  /// returns its planned end at the node's current rate.
  time_ns kernel_starts(task_id t, resource_id rr, time_ns dur, time_ns at) {
    const auto k = node_of_[rr];
    work_left_[t] = double(dur);
    since_[t] = at;
    begin_[t] = at;
    rate_[t] = transfers_[k] ? slowed_rate_ : 1.0;
    computing_[k].push_back(t);
    return at + static_cast<time_ns>(std::llround(work_left_[t] / rate_[t]));
  }
  /// Task `t` ends on slowed stream `rr`: returns its start.
  time_ns kernel_ends(task_id t, resource_id rr) {
    auto& v = computing_[node_of_[rr]];
    v.erase(std::find(v.begin(), v.end(), t));
    return begin_[t];
  }

  /// Re-plans the running slowed tasks of node `k` at `now` at `new_rate`: `f(t, end)`
  /// for each, with its new planned end, in the order they started.
  template <class F> void retime(std::uint32_t k, time_ns now, double new_rate, F&& f) {
    for (auto t : computing_[k]) {
      work_left_[t] = std::max(0.0, work_left_[t] - double(now - since_[t]) * rate_[t]);
      since_[t] = now;
      rate_[t] = new_rate;
      f(t, now + static_cast<time_ns>(std::llround(work_left_[t] / new_rate)));
    }
  }

private:
  double slowed_rate_ = 1;
  std::vector<std::uint32_t> node_of_;  // by resource: its node, numbered from 0
  std::vector<role> role_;              // by resource
  std::vector<std::uint32_t> transfers_;       // by node: active transfers
  std::vector<std::vector<task_id>> computing_; // by node: running slowed tasks
  std::vector<double> work_left_, rate_;       // by task: since `since_`
  std::vector<time_ns> since_, begin_;         // by task: last re-timed, started
};

} // namespace daydream::detail
//! @endcond

#endif
