// Defines testing::reference_replay: the plain event-loop replay, the oracle the shipping replay kernel is tested against.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_REFERENCE_REPLAY_HPP
#define DAYDREAM_TESTS_SUPPORT_REFERENCE_REPLAY_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/detail/diagnostics.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream::testing {

/// The reference replay: Daydream's Algorithm 1 as a plain event loop on the flat core,
/// one heap event per completion, dispatch and fair-share step, with the overlap
/// slowdown. It is written for obviousness, not speed: no state is shared with the
/// shipping kernels (detail::replay_flat), which must give exactly its results; the
/// property tests and the fuzzer compare them.
///
/// The rules it implements:
/// - A task becomes ready when its last dependency ends; that dependency binds its start
///   (ties: the first to end in event order).
/// - A task without a resource, or on a fair-share resource, starts when it is ready.
/// - An exclusive resource starts its best ready task (smallest policy key, ties by id)
///   once the task before it has ended and its gap has passed; a task that waited for
///   the resource is bound by the task before it.
/// - A fair-share resource splits its capacity evenly among its active transfers.
/// - With an overlap slowdown s, while a task runs on a link of a node, the tasks on
///   the exclusive GPU streams of the same node progress s times slower.
/// - Events of one time: completions, then fair-share steps, then dispatches; within a
///   type, by task or resource id.
template <class KeyFn> class reference_loop {
public:
  reference_loop(const detail::graph_core& c, KeyFn& key, const replay_options& opt)
      : c_(c), key_(key), slowdown_(opt.overlap_slowdown) {
    if (!(slowdown_ >= 1.0) || !std::isfinite(slowdown_))
      throw error("daydream: replay: overlap_slowdown must be a finite factor >= 1");
  }

  replay_result run() {
    set_up();
    for (task_id t = 0; t < c_.id_bound(); ++t)
      if (c_.alive[t] && waiting_[t] == 0) make_ready(t, 0);
    while (!events_.empty()) {
      const event ev = events_.top();
      events_.pop();
      handle(ev);
    }
    check_all_started();
    for (task_id t = 0; t < c_.id_bound(); ++t) r_.makespan = std::max(r_.makespan, r_.end[t]);
    r_.peak_memory = peak_memory();
    return r_;
  }

private:
  enum event_type : std::uint8_t { complete_event = 0, shared_event = 1, dispatch_event = 2 };
  struct event {
    time_ns time;
    event_type type;
    std::uint32_t who;     // task (completion) or resource (dispatch, fair-share step)
    std::uint64_t version; // which plan of a completion, or step of a resource, it is
    std::uint64_t seq;     // order of queueing, among otherwise equal events
    bool operator>(const event& o) const {
      if (time != o.time) return time > o.time;
      if (type != o.type) return type > o.type;
      if (who != o.who) return who > o.who;
      return seq > o.seq;
    }
  };
  struct ready_task {
    priority_key k;
    task_id t;
    bool operator>(const ready_task& o) const { return o.k < k || (!(k < o.k) && t > o.t); }
  };
  struct resource_state {
    // exclusive resources
    std::priority_queue<ready_task, std::vector<ready_task>, std::greater<>> ready;
    time_ns free_at = 0;
    task_id last = no_task;
    bool dispatch_pending = false;
    // fair-share resources: the active transfers with the virtual time each finishes at
    std::vector<std::pair<double, task_id>> active;
    double vclock = 0;
    time_ns updated = 0;
    time_ns busy_since = 0;
    std::uint64_t version = 0;
  };

  /// Every task unstarted, with its dependencies to wait for.
  void set_up() {
    const task_id n = c_.id_bound();
    r_.start.assign(n, -1);
    r_.end.assign(n, -1);
    r_.pred.assign(n, no_task);
    r_.why.assign(n, binding::none);
    r_.edge.assign(n, dep_kind::control);
    r_.busy.assign(c_.resources.size(), 0);
    waiting_.assign(n, 0);
    ready_at_.assign(n, 0);
    work_left_.assign(n, 0);
    rate_.assign(n, 1);
    since_.assign(n, 0);
    version_.assign(n, 0);
    resources_.assign(c_.resources.size(), resource_state{});
    for (task_id t = 0; t < n; ++t) {
      if (!c_.alive[t]) continue;
      if (c_.res[t] != no_resource && c_.res[t] >= c_.resources.size())
        throw error("daydream: replay: task " + detail::describe_task(c_, t) + " names resource #" +
                    std::to_string(c_.res[t]) + ", which does not exist");
      ++r_.tasks;
      waiting_[t] = c_.n_in[t];
    }
  }

  void push(time_ns time, event_type type, std::uint32_t who, std::uint64_t version = 0) {
    events_.push({time, type, who, version, seq_++});
  }

  // ---- what a resource is ----

  bool has_resource(task_id t) const { return c_.res[t] != no_resource; }
  const resource& resource_of(task_id t) const { return c_.resources[c_.res[t]]; }
  bool on_fair_resource(task_id t) const {
    return has_resource(t) && resource_of(t).share == sharing::fair;
  }
  bool slowing(task_id t) const {
    return slowdown_ != 1.0 && has_resource(t) && resource_of(t).kind == resource_kind::link;
  }
  bool slowed(task_id t) const {
    return slowdown_ != 1.0 && has_resource(t) && resource_of(t).kind == resource_kind::gpu_stream &&
           resource_of(t).share == sharing::exclusive;
  }
  /// Whether a transfer runs on a link of `node`.
  bool transferring(std::int32_t node) const {
    for (auto t : overlapping_)
      if (slowing(t) && resource_of(t).node == node) return true;
    return false;
  }

  // ---- tasks ----

  void make_ready(task_id t, time_ns now) {
    ready_at_[t] = now;
    if (!has_resource(t) || on_fair_resource(t)) {
      start(t, now);
      return;
    }
    auto& s = resources_[c_.res[t]];
    s.ready.push({key_(t, now), t});
    if (!s.dispatch_pending) {
      s.dispatch_pending = true;
      push(std::max(now, s.free_at), dispatch_event, c_.res[t]);
    }
  }

  void start(task_id t, time_ns now) {
    r_.start[t] = now;
    ++started_;
    if (slowing(t) && !transferring(resource_of(t).node)) retime(resource_of(t).node, now, 1.0 / slowdown_);
    if (slowing(t) || slowed(t)) overlapping_.push_back(t);
    if (on_fair_resource(t)) {
      start_transfer(t, now);
    } else if (slowed(t)) {
      work_left_[t] = double(c_.duration[t]);
      since_[t] = now;
      rate_[t] = transferring(resource_of(t).node) ? 1.0 / slowdown_ : 1.0;
      push(planned_end(t, now), complete_event, t, version_[t]);
    } else {
      push(now + c_.duration[t], complete_event, t);
    }
  }

  time_ns planned_end(task_id t, time_ns now) const {
    return now + static_cast<time_ns>(std::llround(work_left_[t] / rate_[t]));
  }

  void complete(task_id t, time_ns now) {
    r_.end[t] = now;
    if (slowing(t) || slowed(t)) overlapping_.erase(std::find(overlapping_.begin(), overlapping_.end(), t));
    if (slowed(t)) r_.busy[c_.res[t]] += (now - r_.start[t]) - c_.duration[t];
    if (slowing(t) && !transferring(resource_of(t).node)) retime(resource_of(t).node, now, 1.0);
    for (auto e = c_.head_out[t]; e != detail::no_edge; e = c_.edges[e].next_out) {
      const auto& edge = c_.edges[e];
      const task_id d = edge.dst;
      if (r_.pred[d] == no_task || now > ready_at_[d]) {
        r_.pred[d] = t;
        r_.edge[d] = edge.kind;
        r_.why[d] = binding::dependency;
        ready_at_[d] = now;
      }
      if (--waiting_[d] == 0) make_ready(d, now);
    }
  }

  /// The running slowed tasks of `node` go on at `new_rate` from `now`: their
  /// completions are planned again (the earlier plans are void), and so are the
  /// dispatches after them.
  void retime(std::int32_t node, time_ns now, double new_rate) {
    for (auto t : overlapping_) {
      if (!slowed(t) || resource_of(t).node != node) continue;
      work_left_[t] = std::max(0.0, work_left_[t] - double(now - since_[t]) * rate_[t]);
      since_[t] = now;
      rate_[t] = new_rate;
      const time_ns end = planned_end(t, now);
      push(end, complete_event, t, ++version_[t]);
      auto& s = resources_[c_.res[t]];
      s.free_at = end + c_.gap[t];
      if (s.dispatch_pending) push(s.free_at, dispatch_event, c_.res[t]);
    }
  }

  // ---- events ----

  void handle(const event& ev) {
    if (ev.type == complete_event) {
      if (ev.version == version_[ev.who]) complete(ev.who, ev.time); // else re-planned since
    } else if (ev.type == dispatch_event) {
      dispatch(ev.who, ev.time);
    } else {
      step_shared(ev.who, ev.time, ev.version);
    }
  }

  void dispatch(resource_id res, time_ns now) {
    auto& s = resources_[res];
    s.dispatch_pending = false;
    if (s.ready.empty()) return;
    if (s.free_at > now) { // still in the gap of the previous task, or re-planned
      s.dispatch_pending = true;
      push(s.free_at, dispatch_event, res);
      return;
    }
    const task_id t = s.ready.top().t;
    s.ready.pop();
    if (now > ready_at_[t] && s.last != no_task) { // waited for the resource
      r_.pred[t] = s.last;
      r_.why[t] = binding::resource;
    }
    start(t, now);
    r_.busy[res] += c_.duration[t];
    s.last = t;
    s.free_at = (slowed(t) ? planned_end(t, now) : now + c_.duration[t]) + c_.gap[t];
    if (!s.ready.empty()) {
      s.dispatch_pending = true;
      push(s.free_at, dispatch_event, res);
    }
  }

  // ---- fair sharing (processor sharing on a virtual clock) ----

  /// The virtual clock runs at the real time over the number of active transfers; a
  /// transfer that takes d alone, started at virtual time v, finishes at v + d.
  void advance(resource_state& s, time_ns now) {
    if (!s.active.empty()) s.vclock += double(now - s.updated) / double(s.active.size());
    s.updated = now;
  }

  /// The real time the first of the active transfers still needs, at the current share.
  static double time_left(const resource_state& s, double share) {
    double first = s.active.front().first;
    for (const auto& a : s.active) first = std::min(first, a.first);
    return std::max(0.0, first - s.vclock) * share;
  }

  /// Queues the step at which the first active transfer finishes (earlier steps void).
  void arm(resource_state& s, resource_id res, time_ns now) {
    ++s.version;
    if (s.active.empty()) return;
    const double left = time_left(s, double(s.active.size()));
    push(now + static_cast<time_ns>(std::llround(left)), shared_event, res, s.version);
  }

  void start_transfer(task_id t, time_ns now) {
    auto& s = resources_[c_.res[t]];
    advance(s, now);
    if (s.active.empty()) s.busy_since = now;
    s.active.push_back({s.vclock + double(c_.duration[t]), t});
    arm(s, c_.res[t], now);
  }

  void step_shared(resource_id res, time_ns now, std::uint64_t version) {
    auto& s = resources_[res];
    if (version != s.version) return;
    advance(s, now);
    // Every transfer with at most half a nanosecond left finishes: the step's time was
    // rounded to whole nanoseconds. Any transfer left over then needs more than half a
    // nanosecond, so the next step lies in the future.
    const double share = double(s.active.size());
    std::vector<std::pair<double, task_id>> left;
    for (const auto& a : s.active) {
      if (std::max(0.0, a.first - s.vclock) * share <= 0.5) push(now, complete_event, a.second);
      else left.push_back(a);
    }
    s.active = left;
    if (s.active.empty()) r_.busy[res] += now - s.busy_since;
    arm(s, res, now);
  }

  // ---- the result ----

  void check_all_started() const {
    if (started_ == r_.tasks) return;
    std::vector<std::uint8_t> stuck(c_.id_bound(), 0);
    for (task_id t = 0; t < c_.id_bound(); ++t) stuck[t] = c_.alive[t] && r_.start[t] < 0;
    auto cycle = detail::find_cycle_among(c_, stuck);
    throw error("daydream: replay: the graph has a cycle: " + detail::describe_tasks(c_, cycle));
  }

  /// The highest running sum of allocations, in (start, id) order.
  std::int64_t peak_memory() const {
    std::vector<std::pair<time_ns, std::int64_t>> mem;
    for (task_id t = 0; t < c_.id_bound(); ++t)
      if (c_.alive[t] && c_.mem_delta[t] != 0) mem.push_back({r_.start[t], c_.mem_delta[t]});
    std::stable_sort(mem.begin(), mem.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::int64_t sum = 0, peak = 0;
    for (auto& [at, d] : mem) peak = std::max(peak, sum += d);
    return peak;
  }

  const detail::graph_core& c_;
  KeyFn& key_;
  double slowdown_;
  replay_result r_;
  std::priority_queue<event, std::vector<event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  std::vector<resource_state> resources_;
  std::vector<std::uint32_t> waiting_;  // by task: dependencies not yet ended
  std::vector<time_ns> ready_at_;       // by task: the end of its binding dependency
  // Tasks started and not ended on links and slowed streams (with a slowdown only), in
  // start order.
  std::vector<task_id> overlapping_;
  std::size_t started_ = 0;
  // By task, for the slowed ones: work left at `since_`, rate since then, plan number.
  std::vector<double> work_left_, rate_;
  std::vector<time_ns> since_;
  std::vector<std::uint64_t> version_;
};

/// The reference replay of `c` (reference_loop): `key(t, ready)` is the policy.
template <class KeyFn>
replay_result reference_replay(const detail::graph_core& c, KeyFn&& key, const replay_options& opt = {}) {
  return reference_loop<std::remove_reference_t<KeyFn>>(c, key, opt).run();
}

} // namespace daydream::testing

#endif
