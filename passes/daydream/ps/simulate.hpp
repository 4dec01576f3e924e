// Defines ps::simulate: an event-driven simulation of asynchronous parameter-server training (Li et al., ICPE'20).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_SIMULATE_HPP
#define DAYDREAM_PS_SIMULATE_HPP

#include <daydream/config.hpp>
#include <daydream/net/network.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::ps {

/// What an operation of a step runs on. Each worker has its own WORKER (its
/// computation) and, per server, its own PS (the server applying this worker's update,
/// as in Li et al., where server computation is not shared among workers); DOWNLINK
/// and UPLINK transfers share the network.
enum class op_resource : std::uint8_t {
  downlink, ///< parameters from a server to the worker (bytes)
  worker,   ///< the worker's computation (duration)
  uplink,   ///< gradients from the worker to a server (bytes)
  server,   ///< the server applying the update (duration)
};

/// How an op_resource reads ("downlink").
inline constexpr std::string_view to_string(op_resource r) noexcept {
  switch (r) {
  case op_resource::downlink: return "downlink";
  case op_resource::worker: return "worker";
  case op_resource::uplink: return "uplink";
  case op_resource::server: return "server";
  }
  return "?";
}

/// One operation of a step.
struct step_op {
  op_resource res = op_resource::worker;
  double duration = 0;       ///< ns, for worker and server operations
  double bytes = 0;          ///< for downlink and uplink operations
  std::uint32_t tensor = 0;  ///< downlink, uplink, server: the tensor (its server is the assignment's)
  std::vector<std::uint32_t> after = {}; ///< operations of the same step that must end first
};

/// One profiled step: its operations and their dependencies.
struct step_template {
  std::int32_t iteration = 0; ///< the trace's iteration it came from
  std::vector<step_op> ops;
};

/// A tensor exchanged with the servers every step.
struct tensor_info {
  std::string name;           ///< its layer, or "tensor N"
  double bytes = 0;           ///< its size
  std::uint32_t trace_rank = 0; ///< place in the trace's order (the order the gradients were produced)
  std::uint32_t use_rank = 0;   ///< place in the next forward's consumption order (TicTac's)
};

/// The order in which a worker-server link sends whole streams when flow control is off
/// (with flow control on, the order in which simultaneous streams are queued).
enum class stream_order : std::uint8_t {
  trace,   ///< the trace's order: the order the gradients were produced (tensor_info::trace_rank)
  tictac,  ///< the next forward's consumption order (tensor_info::use_rank; Hashemi et al.)
  reverse, ///< the reverse of the trace's order
  random,  ///< a random order per step, from the seed
};

/// Parses "trace", "tictac", "reverse" or "random"; throws daydream::usage_error otherwise.
inline stream_order parse_stream_order(std::string_view s) {
  if (s == "trace") return stream_order::trace;
  if (s == "tictac") return stream_order::tictac;
  if (s == "reverse") return stream_order::reverse;
  if (s == "random") return stream_order::random;
  throw usage_error("daydream ps: unknown stream order '" + std::string(s) + "' (known: trace, tictac, reverse, random)");
}

/// How concurrent transfers share the network.
enum class sharing : std::uint8_t {
  /// Li et al., Section 3.1: every worker active on a server's link (in one direction)
  /// gets 1/n of it; the workers' own links are not modelled.
  server_links,
  /// Max-min fair sharing (network.hpp) over the servers' links and every worker's own
  /// link in each direction. With one server the same as server_links; with two it is
  /// the rule of Li et al., Section 5 (a worker alone on server 1 but sharing server 2
  /// with n-1 others gets 1/n on server 2 and 1 - 1/n on server 1); any number of servers.
  max_min,
};

/// Parses "server_links" or "max_min"; throws daydream::usage_error otherwise.
inline sharing parse_sharing(std::string_view s) {
  if (s == "server_links") return sharing::server_links;
  if (s == "max_min") return sharing::max_min;
  throw usage_error("daydream ps: unknown sharing model '" + std::string(s) + "' (known: max_min, server_links)");
}

/// The configuration simulated.
struct config {
  std::uint32_t workers = 1;        ///< W
  std::uint32_t servers = 1;        ///< M
  double bandwidth = 10e9 / 8;      ///< bytes per second of every link, each direction
  bool flow_control = true;         ///< HTTP/2 flow control (gRPC's default): the window rule
  double window = 28e6;             ///< WIN, bytes a stream sends on its first service
  stream_order order = stream_order::trace;
  sharing share = sharing::max_min;
  std::uint32_t steps = 1000;       ///< N, steps per worker
  std::uint32_t warmup = 50;        ///< steps per worker left out of the average
  std::uint64_t seed = 1;           ///< step sampling and the random order
  std::vector<std::uint32_t> server_of; ///< server of each tensor (assign_servers)
  std::uint32_t timeline_steps = 0; ///< record the operations of each worker's first this many steps
  /// Worker w starts its first step at w x stagger ns (0: all at once, as in Li et al.).
  /// Workers with equal steps that start together stay in lockstep under fair sharing
  /// (their transfers always overlap); staggering shows the desynchronized state.
  double stagger = 0;
};

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
// The links of a simulation: every server's link in each direction and, with
// sharing::max_min, every worker's.
struct ps_links {
  std::vector<link_id> srv_down, srv_up, wrk_in, wrk_out;
  sharing share;
  ps_links(network& net, std::uint32_t workers, std::uint32_t servers, double bytes_per_ns, sharing sh) : share(sh) {
    for (std::uint32_t s = 0; s < servers; ++s) {
      srv_down.push_back(net.add_link(bytes_per_ns));
      srv_up.push_back(net.add_link(bytes_per_ns));
    }
    if (sh == sharing::max_min)
      for (std::uint32_t w = 0; w < workers; ++w) {
        wrk_in.push_back(net.add_link(bytes_per_ns));
        wrk_out.push_back(net.add_link(bytes_per_ns));
      }
  }
  // The path of a transfer between worker w and server s, written into buf.
  std::span<const link_id> path(std::uint32_t w, std::uint32_t s, bool down, link_id (&buf)[2]) const {
    std::size_t n = 0;
    if (down) {
      buf[n++] = srv_down[s];
      if (share == sharing::max_min) buf[n++] = wrk_in[w];
    } else {
      if (share == sharing::max_min) buf[n++] = wrk_out[w];
      buf[n++] = srv_up[s];
    }
    return {buf, n};
  }
};
// A link shared equally by its active flows (processor sharing), on a virtual clock:
// `vt` is the bytes each active flow has been sent since the link was last idle, so a
// flow of b bytes that starts at virtual time v ends when vt reaches v + b. Flows end in
// order of these tags (a heap), so an event costs O(log n) whatever n.
struct fair_link {
  double cap = 0;      // bytes per ns
  double vt = 0;       // virtual time (bytes per flow)
  double t0 = 0;       // real time vt refers to
  double carried = 0;  // bytes sent up to t0
  std::uint32_t n = 0; // active flows
  std::priority_queue<std::pair<double, std::uint32_t>, std::vector<std::pair<double, std::uint32_t>>, std::greater<>> heap;
  void advance(double t) {
    if (n) {
      vt += (t - t0) * cap / double(n);
      carried += (t - t0) * cap;
    }
    t0 = t;
  }
  double next() const { return n ? t0 + std::max(0.0, heap.top().first - vt) * double(n) / cap : std::numeric_limits<double>::infinity(); }
  void start(double t, double bytes, std::uint32_t id) {
    advance(t);
    heap.push({vt + bytes, id});
    ++n;
  }
  // The flow whose end next() predicted, and those ending with it (equal tags).
  template <class F> void finish(F&& done) {
    vt = std::max(vt, heap.top().first);
    while (!heap.empty() && heap.top().first <= vt) {
      done(heap.top().second);
      heap.pop();
      --n;
    }
    if (n == 0) vt = 0; // idle: restart the clock, so that tags stay small
  }
};
} // namespace detail
//! @endcond

/// A transfer between a worker and a server (see link_rates).
struct connection {
  std::uint32_t worker = 0;
  std::uint32_t server = 0;
  bool down = true; ///< from the server to the worker
};

/// The rates (bytes per second) that `active` transfers get at once under sharing
/// model `share`, with `workers` workers and `servers` servers on links of `bandwidth`
/// bytes per second each way: the snapshot simulate uses between two events. At most
/// one transfer per (worker, server, direction), as the link schedulers send one chunk
/// at a time; throws daydream::usage_error otherwise.
///
///     // a worker alone on server 0 but sharing server 1 with 2 others (Li et al., Section 5)
///     auto r = daydream::ps::link_rates(3, 2, 1e9, daydream::ps::sharing::max_min,
///                                       {{0, 0, true}, {0, 1, true}, {1, 1, true}, {2, 1, true}});
///     // r = {2/3, 1/3, 1/3, 1/3} x 1e9
inline std::vector<double> link_rates(std::uint32_t workers, std::uint32_t servers, double bandwidth, sharing share,
                                      const std::vector<connection>& active) {
  network net;
  const detail::ps_links links(net, workers, servers, bandwidth / 1e9, share);
  std::vector<flow_id> f;
  for (std::size_t i = 0; i < active.size(); ++i) {
    auto& a = active[i];
    if (a.worker >= workers || a.server >= servers)
      throw usage_error("daydream ps: link_rates: connection " + std::to_string(i) + " names a worker or server that does not exist");
    for (std::size_t j = 0; j < i; ++j)
      if (active[j].worker == a.worker && active[j].server == a.server && active[j].down == a.down)
        throw usage_error("daydream ps: link_rates: connection " + std::to_string(i) + " repeats connection " + std::to_string(j));
    link_id buf[2];
    f.push_back(net.start(links.path(a.worker, a.server, a.down, buf), 1e18));
  }
  std::vector<network::completion> done;
  net.advance_to(0, done); // every flow begins sending; rates are allocated
  std::vector<double> out;
  for (auto x : f) out.push_back(net.rate(x) * 1e9);
  return out;
}

/// Throws daydream::error naming the step and operation when `steps` cannot be
/// simulated with `tensors`: no step, an empty step, a dependency that does not exist,
/// a cycle, a negative or non-finite size or duration, a tensor out of range.
inline void check_steps(const std::vector<step_template>& steps, std::size_t tensors) {
  if (steps.empty()) throw error("daydream ps: no step to simulate");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    auto& st = steps[s];
    auto where = [&](std::size_t i) {
      return "daydream ps: step " + std::to_string(s) + " (iteration " + std::to_string(st.iteration) +
             "), operation " + std::to_string(i) + ": ";
    };
    if (st.ops.empty()) throw error("daydream ps: step " + std::to_string(s) + " has no operation");
    std::vector<std::uint32_t> indeg(st.ops.size(), 0);
    std::vector<std::vector<std::uint32_t>> succ(st.ops.size());
    for (std::size_t i = 0; i < st.ops.size(); ++i) {
      auto& o = st.ops[i];
      if (!(o.duration >= 0) || !std::isfinite(o.duration)) throw error(where(i) + "the duration must be finite and not negative");
      if (!(o.bytes >= 0) || !std::isfinite(o.bytes)) throw error(where(i) + "the size must be finite and not negative");
      if (o.res != op_resource::worker && o.tensor >= tensors)
        throw error(where(i) + "tensor " + std::to_string(o.tensor) + " does not exist (" + std::to_string(tensors) + " tensors)");
      for (auto a : o.after) {
        if (a >= st.ops.size() || a == i) throw error(where(i) + "depends on operation " + std::to_string(a) + ", which is not another operation of the step");
        succ[a].push_back(static_cast<std::uint32_t>(i));
        ++indeg[i];
      }
    }
    std::vector<std::uint32_t> ready;
    for (std::uint32_t i = 0; i < indeg.size(); ++i)
      if (!indeg[i]) ready.push_back(i);
    std::size_t seen = 0;
    while (!ready.empty()) {
      auto i = ready.back();
      ready.pop_back();
      ++seen;
      for (auto j : succ[i])
        if (--indeg[j] == 0) ready.push_back(j);
    }
    if (seen != st.ops.size()) throw error("daydream ps: step " + std::to_string(s) + ": its dependencies form a cycle");
  }
}

/// Greedy assignment of tensors to `servers` servers, TensorFlow's default: in tensor
/// order, each tensor goes to the server holding the fewest bytes so far (the lowest
/// numbered among equals). `fixed[i]` < servers pins tensor i to that server first (a
/// user's map); the others are placed greedily after the pinned ones are counted.
inline std::vector<std::uint32_t> assign_servers(const std::vector<tensor_info>& tensors, std::uint32_t servers,
                                                 const std::vector<std::uint32_t>& fixed = {}) {
  if (servers == 0) throw usage_error("daydream ps: the number of servers must be at least 1");
  std::vector<std::uint32_t> out(tensors.size(), 0);
  std::vector<double> load(servers, 0);
  std::vector<bool> pinned(tensors.size(), false);
  for (std::size_t i = 0; i < fixed.size() && i < tensors.size(); ++i)
    if (fixed[i] < servers) {
      out[i] = fixed[i];
      load[fixed[i]] += tensors[i].bytes;
      pinned[i] = true;
    }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (pinned[i]) continue;
    auto s = static_cast<std::uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    out[i] = s;
    load[s] += tensors[i].bytes;
  }
  return out;
}

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
/// sharing::max_min, the worker's link), whose rates follow the sharing model.
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
inline result simulate(const std::vector<step_template>& steps, const std::vector<tensor_info>& tensors, const config& c) {
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

  const std::uint32_t W = c.workers, M = c.servers;
  // Successors and in-degrees of every template, in flat arrays.
  struct compiled {
    std::vector<std::uint32_t> indeg, first, succ, roots;
  };
  std::vector<compiled> comp(steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s) {
    auto& ops = steps[s].ops;
    auto& cp = comp[s];
    cp.indeg.assign(ops.size(), 0);
    cp.first.assign(ops.size() + 1, 0);
    for (auto& o : ops)
      for (auto a : o.after) ++cp.first[a + 1];
    for (std::size_t i = 0; i < ops.size(); ++i) cp.first[i + 1] += cp.first[i];
    cp.succ.assign(cp.first.back(), 0);
    std::vector<std::uint32_t> fill(cp.first.begin(), cp.first.end() - 1);
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      cp.indeg[i] = static_cast<std::uint32_t>(ops[i].after.size());
      for (auto a : ops[i].after) cp.succ[fill[a]++] = i;
      if (ops[i].after.empty()) cp.roots.push_back(i);
    }
  }

  const double bpn = c.bandwidth / 1e9; // bytes per ns
  // Equal sharing of each server's link: with sharing::server_links, and with max_min
  // and one server (a worker then has one transfer per direction, so its own link never
  // binds), every link is a fair_link; else the max-min network.
  const bool equal_share = c.share == sharing::server_links || M == 1;
  network net;
  const detail::ps_links links(net, equal_share ? 0 : W, equal_share ? 0 : M, bpn, c.share);
  std::vector<detail::fair_link> fair(equal_share ? 2 * M : 0); // 2s: down, 2s + 1: up
  for (auto& l : fair) l.cap = bpn;
  std::vector<std::uint32_t> free_ids;
  std::uint32_t next_id = 0;

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
      if (head == q.size()) { q.clear(); head = 0; }
      return x;
    }
  };
  struct worker_state {
    std::uint32_t tmpl = 0;
    std::uint32_t step = 0;       // steps started (the current one is step - 1)
    std::uint32_t left = 0;       // operations of the current step not ended
    std::vector<std::uint32_t> wait;
    fifo compute;
    std::vector<fifo> ps;         // per server
    std::vector<link_sched> down, up; // per server
  };
  std::vector<worker_state> ws(W);
  for (auto& w : ws) {
    w.ps.resize(M);
    w.down.resize(M);
    w.up.resize(M);
  }
  // Computation events: (time, seq) -> (worker, op, server or M for the worker).
  struct cevent {
    double time;
    std::uint64_t seq;
    std::uint32_t worker, op, server;
    bool operator>(const cevent& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
  };
  std::priority_queue<cevent, std::vector<cevent>, std::greater<>> cq;
  std::uint64_t seq = 0, batch = 1;
  struct chunk { std::uint32_t worker, op, server; bool down, last; stream st; double start, bytes; };
  std::vector<chunk> flows; // by flow_id
  std::vector<network::completion> done;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, bool>> touched; // (worker, server, down) to start
  result res;
  res.downlink_util.assign(M, 0);
  res.uplink_util.assign(M, 0);
  std::vector<double> carried_down0(M), carried_up0(M);
  std::uint32_t past_warmup = 0;
  bool stop = false;
  double now = 0;

  constexpr std::uint64_t order_mask = (std::uint64_t(1) << 24) - 1;
  auto order_key = [&](std::uint32_t w, std::uint32_t tensor) -> std::uint64_t {
    switch (c.order) {
    case stream_order::trace: return tensors[tensor].trace_rank & order_mask;
    case stream_order::tictac: return tensors[tensor].use_rank & order_mask;
    case stream_order::reverse: return order_mask - (tensors[tensor].trace_rank & order_mask);
    case stream_order::random: return detail::mix(c.seed, w, ws[w].step, tensor + 1) >> 40;
    }
    return 0;
  };
  auto record = [&](std::uint32_t w, op_resource r, std::uint32_t server, std::uint32_t op, double start, double end,
                    double bytes) {
    ++res.events;
    if (ws[w].step > c.timeline_steps) return;
    res.timeline.push_back({w, r, server, ws[w].step - 1, op, steps[ws[w].tmpl].ops[op].tensor, start, end, bytes});
  };
  auto start_compute = [&](std::uint32_t w, std::uint32_t server) {
    auto& f = server == M ? ws[w].compute : ws[w].ps[server];
    if (f.busy || f.empty()) return;
    f.busy = true;
    auto op = f.pop();
    cq.push({now + steps[ws[w].tmpl].ops[op].duration, seq++, w, op, server});
  };
  auto start_link = [&](std::uint32_t w, std::uint32_t s, bool down) {
    auto& l = down ? ws[w].down[s] : ws[w].up[s];
    if (l.busy || l.q.empty()) return;
    stream st = l.q.top();
    l.q.pop();
    l.busy = true;
    double bytes = st.remaining;
    if (c.flow_control && !st.served && st.remaining > c.window) bytes = c.window;
    std::uint32_t f;
    if (equal_share) {
      if (!free_ids.empty()) {
        f = free_ids.back();
        free_ids.pop_back();
      } else f = next_id++;
      fair[2 * s + (down ? 0 : 1)].start(now, bytes, f);
    } else {
      link_id path[2];
      f = net.start(links.path(w, s, down, path), bytes);
    }
    if (flows.size() <= f) flows.resize(f + 1);
    flows[f] = {w, st.op, s, down, bytes >= st.remaining, st, now, bytes};
  };
  auto make_ready = [&](std::uint32_t w, std::uint32_t op) {
    auto& o = steps[ws[w].tmpl].ops[op];
    switch (o.res) {
    case op_resource::worker:
      ws[w].compute.push(op);
      start_compute(w, M);
      break;
    case op_resource::server: {
      auto s = c.server_of[o.tensor];
      ws[w].ps[s].push(op);
      start_compute(w, s);
      break;
    }
    case op_resource::downlink:
    case op_resource::uplink: {
      const bool down = o.res == op_resource::downlink;
      auto s = c.server_of[o.tensor];
      auto key = order_key(w, o.tensor);
      (down ? ws[w].down[s] : ws[w].up[s]).q.push({(c.flow_control ? batch << 24 : 0) | key, op, false, o.bytes});
      touched.emplace_back(w, s, down);
      break;
    }
    }
  };
  auto start_step = [&](std::uint32_t w) {
    auto& x = ws[w];
    x.tmpl = static_cast<std::uint32_t>(detail::mix(c.seed, w, x.step) % steps.size());
    ++x.step;
    auto& cp = comp[x.tmpl];
    x.wait = cp.indeg;
    x.left = static_cast<std::uint32_t>(cp.indeg.size());
    for (auto r : cp.roots) make_ready(w, r);
  };
  auto measure_links = [&](std::vector<double>& d, std::vector<double>& u) {
    for (std::uint32_t s = 0; s < M; ++s) {
      if (equal_share) {
        fair[2 * s].advance(now);
        fair[2 * s + 1].advance(now);
        d[s] = fair[2 * s].carried;
        u[s] = fair[2 * s + 1].carried;
      } else {
        d[s] = net.carried(links.srv_down[s]);
        u[s] = net.carried(links.srv_up[s]);
      }
    }
  };
  auto op_done = [&](std::uint32_t w, std::uint32_t op) {
    auto& x = ws[w];
    auto& cp = comp[x.tmpl];
    for (auto k = cp.first[op]; k < cp.first[op + 1]; ++k)
      if (--x.wait[cp.succ[k]] == 0) make_ready(w, cp.succ[k]);
    if (--x.left > 0) return;
    // The step ended.
    const std::uint32_t finished = x.step;
    if (finished == c.warmup && ++past_warmup == W) {
      res.window_begin = now;
      measure_links(carried_down0, carried_up0);
    }
    if (past_warmup == W && finished > c.warmup && now > res.window_begin) ++res.measured_steps;
    if (finished >= c.steps) stop = true;
    if (!stop) start_step(w);
  };

  // Staggered workers start by an event (server M + 1); the others at once.
  for (std::uint32_t w = 0; w < W; ++w) {
    if (w > 0 && c.stagger > 0) cq.push({double(w) * c.stagger, seq++, w, 0, M + 1});
    else start_step(w);
  }
  if (c.warmup == 0) { past_warmup = W; res.window_begin = 0; }
  std::vector<double> fair_next(fair.size());
  while (!stop) {
    // Links that got streams start their next chunk, in a fixed order.
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (auto [w, s, down] : touched) start_link(w, s, down);
    touched.clear();
    ++batch;
    const double tc = cq.empty() ? std::numeric_limits<double>::infinity() : cq.top().time;
    double tn = std::numeric_limits<double>::infinity();
    if (equal_share) {
      for (std::size_t k = 0; k < fair.size(); ++k) {
        fair_next[k] = fair[k].next();
        tn = std::min(tn, fair_next[k]);
      }
    } else tn = net.next_event();
    const double t = std::min(tc, tn);
    if (!std::isfinite(t)) throw error("daydream ps: the simulation stalled (an operation waits for nothing that can end)");
    done.clear();
    if (equal_share) {
      for (std::size_t k = 0; k < fair.size(); ++k) {
        fair[k].advance(t);
        if (fair_next[k] <= t) fair[k].finish([&](std::uint32_t id) { done.push_back({id, t}); });
      }
      for (auto& d : done) free_ids.push_back(d.flow);
    } else net.advance_to(t, done);
    now = t;
    for (auto& d : done) {
      const chunk ch = flows[d.flow];
      auto& l = ch.down ? ws[ch.worker].down[ch.server] : ws[ch.worker].up[ch.server];
      l.busy = false;
      record(ch.worker, ch.down ? op_resource::downlink : op_resource::uplink, ch.server, ch.op, ch.start, now, ch.bytes);
      if (ch.last) op_done(ch.worker, ch.op);
      else {
        stream st = ch.st;
        st.remaining -= ch.bytes;
        st.served = true;
        st.key = (batch << 24) | (st.key & order_mask);
        l.q.push(st);
      }
      touched.emplace_back(ch.worker, ch.server, ch.down);
    }
    // After the first worker's last step, the steps that end at the same instant still count.
    while (!cq.empty() && cq.top().time <= now) {
      const cevent e = cq.top();
      cq.pop();
      if (e.server == M + 1) {
        if (!stop) start_step(e.worker);
        continue;
      }
      auto& f = e.server == M ? ws[e.worker].compute : ws[e.worker].ps[e.server];
      f.busy = false;
      const double d = steps[ws[e.worker].tmpl].ops[e.op].duration;
      record(e.worker, e.server == M ? op_resource::worker : op_resource::server, e.server == M ? 0 : e.server, e.op,
             e.time - d, e.time, 0);
      op_done(e.worker, e.op);
      start_compute(e.worker, e.server);
    }
  }
  res.window_end = now;
  const double span = res.window_end - res.window_begin;
  if (span > 0) {
    res.steps_per_s = double(res.measured_steps) / span * 1e9;
    res.mean_step_ns = res.steps_per_s > 0 ? double(W) / res.steps_per_s * 1e9 : 0;
    std::vector<double> d(M), u(M);
    measure_links(d, u);
    for (std::uint32_t s = 0; s < M; ++s) {
      res.downlink_util[s] = std::min(1.0, (d[s] - carried_down0[s]) / (bpn * span));
      res.uplink_util[s] = std::min(1.0, (u[s] - carried_up0[s]) / (bpn * span));
    }
  }
  return res;
}

} // namespace daydream::ps

#endif
