// Defines how concurrent transfers share a parameter server's network: bandwidth_sharing, link_rates.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_LINKS_HPP
#define DAYDREAM_PS_LINKS_HPP

#include <daydream/config.hpp>
#include <daydream/net/network.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::ps {

/// How concurrent transfers share the network.
enum class bandwidth_sharing : std::uint8_t {
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
inline bandwidth_sharing parse_bandwidth_sharing(std::string_view s) {
  if (s == "server_links") return bandwidth_sharing::server_links;
  if (s == "max_min") return bandwidth_sharing::max_min;
  throw usage_error("daydream ps: unknown sharing model '" + std::string(s) + "' (known: max_min, server_links)");
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
// The links of a simulation: every server's link in each direction and, with
// bandwidth_sharing::max_min, every worker's.
struct ps_links {
  std::vector<link_id> srv_down, srv_up, wrk_in, wrk_out;
  bandwidth_sharing share;
  ps_links(network& net, std::uint32_t workers, std::uint32_t servers, double bytes_per_ns, bandwidth_sharing sh)
      : share(sh) {
    for (std::uint32_t s = 0; s < servers; ++s) {
      srv_down.push_back(net.add_link(bytes_per_ns));
      srv_up.push_back(net.add_link(bytes_per_ns));
    }
    if (sh == bandwidth_sharing::max_min)
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
      if (share == bandwidth_sharing::max_min) buf[n++] = wrk_in[w];
    } else {
      if (share == bandwidth_sharing::max_min) buf[n++] = wrk_out[w];
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
/// bytes per second each way: the snapshot simulate_training uses between two events.
/// At most one transfer per (worker, server, direction), as the link schedulers send one
/// chunk at a time; throws daydream::usage_error otherwise.
///
///     // a worker alone on server 0 but sharing server 1 with 2 others (Li et al., Section 5)
///     auto r = daydream::ps::link_rates(3, 2, 1e9, daydream::ps::bandwidth_sharing::max_min,
///                                       {{0, 0, true}, {0, 1, true}, {1, 1, true}, {2, 1, true}});
///     // r = {2/3, 1/3, 1/3, 1/3} x 1e9
inline std::vector<double> link_rates(std::uint32_t workers, std::uint32_t servers, double bandwidth,
                                      bandwidth_sharing share, const std::vector<connection>& active) {
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

} // namespace daydream::ps

#endif
