// Defines ps::simulate_training: an event-driven simulation of asynchronous parameter-server training (Li et al., ICPE'20).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_SIMULATE_HPP
#define DAYDREAM_PS_SIMULATE_HPP

#include <daydream/config.hpp>
#include <daydream/net/network.hpp>
#include <daydream/ps/config.hpp>
#include <daydream/ps/links.hpp>
#include <daydream/ps/steps.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::ps {

/// One recorded operation (or chunk of a transfer) of the simulated trace.
struct timeline_entry {
  std::uint32_t worker = 0;
  op_resource res = op_resource::worker;
  std::uint32_t server = 0;   ///< downlink, uplink, server
  std::uint32_t step = 0;     ///< the worker's step number
  std::uint32_t op = 0;       ///< index in its step's template
  std::uint32_t tensor = 0;
  double start = 0, end = 0;  ///< ns
  double bytes = 0;           ///< of this chunk
};

/// What a simulation gives.
struct result {
  double steps_per_s = 0;    ///< all workers together, over the measured window
  double window_begin = 0;   ///< ns: every worker had finished its warm-up steps
  double window_end = 0;     ///< ns: the first worker finished its last step (the simulation stops there)
  std::uint64_t measured_steps = 0; ///< steps ended inside the window
  double mean_step_ns = 0;   ///< workers / steps_per_s
  /// Per server, the fraction of its link's capacity used over the window (carried bytes /
  /// (capacity x window)), in each direction: at most 1.
  std::vector<double> downlink_util, uplink_util;
  std::uint64_t events = 0;  ///< operations and chunks run
  std::vector<timeline_entry> timeline; ///< config::timeline_steps > 0
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline std::uint64_t splitmix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d = 0) noexcept {
  return splitmix(splitmix(splitmix(splitmix(a) ^ b) ^ c) ^ d);
}

/// Throws what simulate_training throws for a configuration `c` it cannot run with
/// `steps` and `tensors`.
inline void check_training(const std::vector<step_template>& steps, const std::vector<tensor_info>& tensors,
                           const config& c) {
  if (c.workers == 0) throw usage_error("daydream ps: the number of workers must be at least 1");
  if (c.servers == 0) throw usage_error("daydream ps: the number of servers must be at least 1");
  if (!(c.bandwidth > 0) || !std::isfinite(c.bandwidth)) throw usage_error("daydream ps: the bandwidth must be positive and finite");
  if (c.flow_control && !(c.window > 0)) throw usage_error("daydream ps: the flow-control window must be positive (or turn flow control off)");
  if (!(c.stagger >= 0) || !std::isfinite(c.stagger)) throw usage_error("daydream ps: the stagger must be finite and not negative");
  if (c.steps <= c.warmup)
    throw usage_error("daydream ps: the steps per worker (" + std::to_string(c.steps) + ") must exceed the warm-up steps (" +
                      std::to_string(c.warmup) + ")");
  if (tensors.size() >= (std::size_t(1) << 24)) throw usage_error("daydream ps: at most 16,777,215 tensors");
  if (c.server_of.size() < tensors.size())
    throw usage_error("daydream ps: " + std::to_string(tensors.size()) + " tensors but a server for only " +
                      std::to_string(c.server_of.size()) + " (assign_servers)");
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (c.server_of[i] >= c.servers)
      throw usage_error("daydream ps: tensor " + std::to_string(i) + " is on server " + std::to_string(c.server_of[i]) +
                        " of " + std::to_string(c.servers));
  check_steps(steps, tensors.size());
}

/// The dependencies of a step template in flat arrays: per operation its in-degree and
/// its successors succ[first[i] .. first[i + 1]); the operations that depend on none.
struct step_graph {
  std::vector<std::uint32_t> indeg, first, succ, roots;
  explicit step_graph(const step_template& st) {
    auto& ops = st.ops;
    indeg.assign(ops.size(), 0);
    first.assign(ops.size() + 1, 0);
    for (auto& o : ops)
      for (auto a : o.after) ++first[a + 1];
    for (std::size_t i = 0; i < ops.size(); ++i) first[i + 1] += first[i];
    succ.assign(first.back(), 0);
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      indeg[i] = static_cast<std::uint32_t>(ops[i].after.size());
      for (auto a : ops[i].after) succ[fill[a]++] = i;
      if (ops[i].after.empty()) roots.push_back(i);
    }
  }
};

/// simulate_training as a state and its steps: the workers' queues and link schedulers,
/// the network, the pending computation events and the measurements are the members;
/// each round of run() starts the links that got streams, advances to the next event,
/// and ends the chunks and computations that end then.
class training_simulator {
public:
  /// A simulation of `c` (checked already: check_training).
  training_simulator(const std::vector<step_template>& steps, const std::vector<tensor_info>& tensors,
                     const config& c)
      : steps_(steps), tensors_(tensors), c_(c), W_(c.workers), M_(c.servers), bpn_(c.bandwidth / 1e9),
        equal_share_(c.share == bandwidth_sharing::server_links || c.servers == 1),
        links_(net_, equal_share_ ? 0 : W_, equal_share_ ? 0 : M_, bpn_, c.share), fair_(equal_share_ ? 2 * M_ : 0),
        fair_next_(fair_.size()), ws_(W_), carried_down0_(M_), carried_up0_(M_) {
    for (auto& st : steps) graphs_.emplace_back(st);
    for (auto& l : fair_) l.cap = bpn_;
    for (auto& w : ws_) {
      w.ps.resize(M_);
      w.down.resize(M_);
      w.up.resize(M_);
    }
    res_.downlink_util.assign(M_, 0);
    res_.uplink_util.assign(M_, 0);
  }

  /// Runs until the first worker finishes its last step.
  result run() {
    start_workers();
    while (!stop_) {
      start_touched_links();
      ++batch_;
      advance_to(next_event_time());
      for (auto& d : done_) chunk_done(d);
      run_computations();
    }
    return finish();
  }

private:
  // A stream waiting on a link: ordered by (batch, order, op), the batch (the loop round
  // it was queued in; 0 for all when flow control is off, so that the order alone
  // decides) in the high 40 bits of `key` and the order (24 bits) below.
  struct stream {
    std::uint64_t key;
    std::uint32_t op;
    bool served;
    double remaining;
    bool operator>(const stream& o) const { return key > o.key || (key == o.key && op > o.op); }
  };
  static constexpr std::uint64_t order_mask = (std::uint64_t(1) << 24) - 1;
  struct link_sched {
    std::priority_queue<stream, std::vector<stream>, std::greater<>> q;
    bool busy = false;
  };
  struct fifo {
    std::vector<std::uint32_t> q;
    std::size_t head = 0;
    bool busy = false;
    bool empty() const { return head == q.size(); }
    void push(std::uint32_t x) { q.push_back(x); }
    std::uint32_t pop() {
      auto x = q[head++];
      if (head == q.size()) {
        q.clear();
        head = 0;
      }
      return x;
    }
  };
  struct worker_state {
    std::uint32_t tmpl = 0;
    std::uint32_t step = 0; // steps started (the current one is step - 1)
    std::uint32_t left = 0; // operations of the current step not ended
    std::vector<std::uint32_t> wait;
    fifo compute;
    std::vector<fifo> ps;             // per server
    std::vector<link_sched> down, up; // per server
  };
  // A computation event: (time, seq) -> (worker, op, server; M for the worker, M + 1 for
  // a staggered worker's start).
  struct cevent {
    double time;
    std::uint64_t seq;
    std::uint32_t worker, op, server;
    bool operator>(const cevent& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
  };
  // A chunk of a stream on its way: the flow it is.
  struct chunk {
    std::uint32_t worker, op, server;
    bool down, last;
    stream st;
    double start, bytes;
  };

  // ---- the rounds

  /// Staggered workers start by an event; the others at once.
  void start_workers() {
    for (std::uint32_t w = 0; w < W_; ++w) {
      if (w > 0 && c_.stagger > 0) cq_.push({double(w) * c_.stagger, seq_++, w, 0, M_ + 1});
      else start_step(w);
    }
    if (c_.warmup == 0) {
      past_warmup_ = W_;
      res_.window_begin = 0;
    }
  }

  /// Links that got streams start their next chunk, in a fixed order.
  void start_touched_links() {
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    for (auto [w, s, down] : touched_) start_link(w, s, down);
    touched_.clear();
  }

  /// The time of the next computation event or chunk end; throws when there is none.
  double next_event_time() {
    const double tc = cq_.empty() ? std::numeric_limits<double>::infinity() : cq_.top().time;
    double tn = std::numeric_limits<double>::infinity();
    if (equal_share_) {
      for (std::size_t k = 0; k < fair_.size(); ++k) {
        fair_next_[k] = fair_[k].next();
        tn = std::min(tn, fair_next_[k]);
      }
    } else tn = net_.next_event();
    const double t = std::min(tc, tn);
    if (!std::isfinite(t)) throw error("daydream ps: the simulation stalled (an operation waits for nothing that can end)");
    return t;
  }

  /// Advances the links to `t`; the chunks that end then are in done_.
  void advance_to(double t) {
    done_.clear();
    if (equal_share_) {
      for (std::size_t k = 0; k < fair_.size(); ++k) {
        fair_[k].advance(t);
        if (fair_next_[k] <= t) fair_[k].finish([&](std::uint32_t id) { done_.push_back({id, t}); });
      }
      for (auto& d : done_) free_ids_.push_back(d.flow);
    } else net_.advance_to(t, done_);
    now_ = t;
  }

  /// A chunk ended: its link is free; its operation ends with the stream's last chunk,
  /// else the rest of the stream goes back to the link's queue.
  void chunk_done(const network::completion& d) {
    const chunk ch = flows_[d.flow];
    auto& l = link(ch.worker, ch.server, ch.down);
    l.busy = false;
    const auto res = ch.down ? op_resource::downlink : op_resource::uplink;
    record(ch.worker, res, ch.server, ch.op, ch.start, now_, ch.bytes);
    if (ch.last) op_done(ch.worker, ch.op);
    else {
      stream st = ch.st;
      st.remaining -= ch.bytes;
      st.served = true;
      st.key = (batch_ << 24) | (st.key & order_mask);
      l.q.push(st);
    }
    touched_.emplace_back(ch.worker, ch.server, ch.down);
  }

  /// The computations that end now, and the staggered workers that start now. After the
  /// first worker's last step, the steps that end at the same instant still count.
  void run_computations() {
    while (!cq_.empty() && cq_.top().time <= now_) {
      const cevent e = cq_.top();
      cq_.pop();
      if (e.server == M_ + 1) {
        if (!stop_) start_step(e.worker);
        continue;
      }
      auto& f = e.server == M_ ? ws_[e.worker].compute : ws_[e.worker].ps[e.server];
      f.busy = false;
      const double d = steps_[ws_[e.worker].tmpl].ops[e.op].duration;
      record(e.worker, e.server == M_ ? op_resource::worker : op_resource::server, e.server == M_ ? 0 : e.server, e.op,
             e.time - d, e.time, 0);
      op_done(e.worker, e.op);
      start_compute(e.worker, e.server);
    }
  }

  /// The throughput and link use over the window.
  result finish() {
    res_.window_end = now_;
    const double span = res_.window_end - res_.window_begin;
    if (span > 0) {
      res_.steps_per_s = double(res_.measured_steps) / span * 1e9;
      res_.mean_step_ns = res_.steps_per_s > 0 ? double(W_) / res_.steps_per_s * 1e9 : 0;
      std::vector<double> d(M_), u(M_);
      measure_links(d, u);
      for (std::uint32_t s = 0; s < M_; ++s) {
        res_.downlink_util[s] = std::min(1.0, (d[s] - carried_down0_[s]) / (bpn_ * span));
        res_.uplink_util[s] = std::min(1.0, (u[s] - carried_up0_[s]) / (bpn_ * span));
      }
    }
    return std::move(res_);
  }

  // ---- steps and operations

  /// Worker `w` starts its next step, drawn from (seed, w, step).
  void start_step(std::uint32_t w) {
    auto& x = ws_[w];
    x.tmpl = static_cast<std::uint32_t>(mix(c_.seed, w, x.step) % steps_.size());
    ++x.step;
    auto& sg = graphs_[x.tmpl];
    x.wait = sg.indeg;
    x.left = static_cast<std::uint32_t>(sg.indeg.size());
    for (auto r : sg.roots) make_ready(w, r);
  }

  /// Operation `op` of worker `w`'s step is ready: onto its resource's queue.
  void make_ready(std::uint32_t w, std::uint32_t op) {
    auto& o = steps_[ws_[w].tmpl].ops[op];
    switch (o.res) {
    case op_resource::worker:
      ws_[w].compute.push(op);
      start_compute(w, M_);
      break;
    case op_resource::server: {
      auto s = c_.server_of[o.tensor];
      ws_[w].ps[s].push(op);
      start_compute(w, s);
      break;
    }
    case op_resource::downlink:
    case op_resource::uplink: {
      const bool down = o.res == op_resource::downlink;
      auto s = c_.server_of[o.tensor];
      auto key = order_key(w, o.tensor);
      link(w, s, down).q.push({(c_.flow_control ? batch_ << 24 : 0) | key, op, false, o.bytes});
      touched_.emplace_back(w, s, down);
      break;
    }
    }
  }

  /// Operation `op` of worker `w`'s step ended: its successors may be ready, and the
  /// step may have ended.
  void op_done(std::uint32_t w, std::uint32_t op) {
    auto& x = ws_[w];
    auto& sg = graphs_[x.tmpl];
    for (auto k = sg.first[op]; k < sg.first[op + 1]; ++k)
      if (--x.wait[sg.succ[k]] == 0) make_ready(w, sg.succ[k]);
    if (--x.left > 0) return;
    step_ended(w);
  }

  /// Worker `w`'s step ended: the window opens when every worker has finished its
  /// warm-up, and the simulation stops when a worker has run all its steps.
  void step_ended(std::uint32_t w) {
    const std::uint32_t finished = ws_[w].step;
    if (finished == c_.warmup && ++past_warmup_ == W_) {
      res_.window_begin = now_;
      measure_links(carried_down0_, carried_up0_);
    }
    if (past_warmup_ == W_ && finished > c_.warmup && now_ > res_.window_begin) ++res_.measured_steps;
    if (finished >= c_.steps) stop_ = true;
    if (!stop_) start_step(w);
  }

  // ---- resources

  /// The scheduler of the link between worker `w` and server `s` in one direction.
  link_sched& link(std::uint32_t w, std::uint32_t s, bool down) { return down ? ws_[w].down[s] : ws_[w].up[s]; }

  /// Where a stream of `tensor` stands among those queued on a link at once.
  std::uint64_t order_key(std::uint32_t w, std::uint32_t tensor) const {
    switch (c_.order) {
    case stream_order::trace: return tensors_[tensor].trace_rank & order_mask;
    case stream_order::tictac: return tensors_[tensor].use_rank & order_mask;
    case stream_order::reverse: return order_mask - (tensors_[tensor].trace_rank & order_mask);
    case stream_order::random: return mix(c_.seed, w, ws_[w].step, tensor + 1) >> 40;
    }
    return 0;
  }

  /// Worker `w`'s computation (server M_) or its PS on server `server` starts its next
  /// ready operation, if it is free.
  void start_compute(std::uint32_t w, std::uint32_t server) {
    auto& f = server == M_ ? ws_[w].compute : ws_[w].ps[server];
    if (f.busy || f.empty()) return;
    f.busy = true;
    auto op = f.pop();
    cq_.push({now_ + steps_[ws_[w].tmpl].ops[op].duration, seq_++, w, op, server});
  }

  /// A link, if free, sends a chunk of the first stream in its queue: with flow control a
  /// stream's first service sends at most the window.
  void start_link(std::uint32_t w, std::uint32_t s, bool down) {
    auto& l = link(w, s, down);
    if (l.busy || l.q.empty()) return;
    stream st = l.q.top();
    l.q.pop();
    l.busy = true;
    double bytes = st.remaining;
    if (c_.flow_control && !st.served && st.remaining > c_.window) bytes = c_.window;
    const std::uint32_t f = start_flow(w, s, down, bytes);
    if (flows_.size() <= f) flows_.resize(f + 1);
    flows_[f] = {w, st.op, s, down, bytes >= st.remaining, st, now_, bytes};
  }

  /// A flow of `bytes` between worker `w` and server `s` from now on; its id.
  std::uint32_t start_flow(std::uint32_t w, std::uint32_t s, bool down, double bytes) {
    if (!equal_share_) {
      link_id path[2];
      return net_.start(links_.path(w, s, down, path), bytes);
    }
    std::uint32_t f;
    if (!free_ids_.empty()) {
      f = free_ids_.back();
      free_ids_.pop_back();
    } else f = next_id_++;
    fair_[2 * s + (down ? 0 : 1)].start(now_, bytes, f);
    return f;
  }

  /// The bytes each server's link has carried so far, each way.
  void measure_links(std::vector<double>& d, std::vector<double>& u) {
    for (std::uint32_t s = 0; s < M_; ++s) {
      if (equal_share_) {
        fair_[2 * s].advance(now_);
        fair_[2 * s + 1].advance(now_);
        d[s] = fair_[2 * s].carried;
        u[s] = fair_[2 * s + 1].carried;
      } else {
        d[s] = net_.carried(links_.srv_down[s]);
        u[s] = net_.carried(links_.srv_up[s]);
      }
    }
  }

  /// Counts an operation or chunk, and records it while its worker is within the
  /// timeline's steps.
  void record(std::uint32_t w, op_resource r, std::uint32_t server, std::uint32_t op, double start, double end,
              double bytes) {
    ++res_.events;
    if (ws_[w].step > c_.timeline_steps) return;
    res_.timeline.push_back({w, r, server, ws_[w].step - 1, op, steps_[ws_[w].tmpl].ops[op].tensor, start, end, bytes});
  }

  const std::vector<step_template>& steps_;
  const std::vector<tensor_info>& tensors_;
  const config& c_;
  const std::uint32_t W_, M_;   // workers, servers
  const double bpn_;            // bytes per ns of every link
  // Equal sharing of each server's link: with bandwidth_sharing::server_links, and with
  // max_min and one server (a worker then has one transfer per direction, so its own
  // link never binds), every link is a fair_link; else the max-min network.
  const bool equal_share_;
  std::vector<step_graph> graphs_; // by step template
  network net_;
  const ps_links links_;
  std::vector<fair_link> fair_;     // 2s: server s's downlink, 2s + 1: its uplink
  std::vector<double> fair_next_;   // by fair link: when its next flow ends
  std::vector<std::uint32_t> free_ids_; // fair links' flow ids free again
  std::uint32_t next_id_ = 0;
  std::vector<worker_state> ws_;
  std::priority_queue<cevent, std::vector<cevent>, std::greater<>> cq_;
  std::uint64_t seq_ = 0, batch_ = 1;
  std::vector<chunk> flows_;        // by flow id
  std::vector<network::completion> done_; // the chunks ending at the current event
  std::vector<std::tuple<std::uint32_t, std::uint32_t, bool>> touched_; // (worker, server, down) to start
  result res_;
  std::vector<double> carried_down0_, carried_up0_; // what the servers' links carried when the window opened
  std::uint32_t past_warmup_ = 0;
  bool stop_ = false;
  double now_ = 0;
};

} // namespace detail
//! @endcond

/// Simulates W workers training asynchronously against M servers, each worker running
/// `c.steps` steps sampled with replacement from `steps` (Li, Yan, Paolieri, Golubchik,
/// "Performance Modeling of Asynchronous SGD with a Parameter Server", ICPE'20,
/// Algorithm 3.1), and returns the throughput.
///
/// Model. Every worker runs one step at a time; a step ends when all its operations
/// have ended, and the worker then starts its next sampled step. An operation starts
/// when the operations it depends on have ended and its resource lets it: the worker's
/// computation and each (worker, server) PS run their ready operations one at a time in
/// the order they became ready; each (worker, server, direction) link has a scheduler
/// that sends one chunk at a time. With flow control, a stream's first service sends at
/// most `window` bytes and its second service sends the rest (the stream rejoins the
/// back of the queue in between); without, whole streams go in `order`. Chunks of all
/// links are flows of a network (network.hpp) on the server's link (and, with
/// bandwidth_sharing::max_min, the worker's link), whose rates follow the sharing model.
///
/// Throughput is measured over the window from the moment every worker has finished
/// its `warmup` steps to the moment the first worker finishes its last step (where the
/// simulation stops, so every worker is still active over the whole window): the steps
/// ended in it over its length. Deterministic: the k-th step of worker w is drawn from
/// (seed, w, k) alone.
///
/// Throws daydream::usage_error for 0 workers, 0 servers, a bandwidth or window that is
/// not positive, steps <= warmup, a tensor without a server; daydream::error for bad
/// steps (check_steps).
///
/// Complexity: O(E log E) for E operations and chunks run, plus the network's rate
/// updates (network.hpp), which are O(W) per transfer event with W workers on a link.
inline result simulate_training(const std::vector<step_template>& steps, const std::vector<tensor_info>& tensors,
                                const config& c) {
  detail::check_training(steps, tensors, c);
  return detail::training_simulator(steps, tensors, c).run();
}

} // namespace daydream::ps

#endif
