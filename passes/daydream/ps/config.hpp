// Defines ps::config: the parameter-server configuration simulated (workers, servers, links, flow control, stream order, steps), and assign_servers.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_CONFIG_HPP
#define DAYDREAM_PS_CONFIG_HPP

#include <daydream/config.hpp>
#include <daydream/ps/links.hpp>
#include <daydream/ps/steps.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::ps {

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

/// The configuration simulated.
struct config {
  std::uint32_t workers = 1;        ///< W
  std::uint32_t servers = 1;        ///< M
  double bandwidth = 10e9 / 8;      ///< bytes per second of every link, each direction
  bool flow_control = true;         ///< HTTP/2 flow control (gRPC's default): the window rule
  double window = 28e6;             ///< WIN, bytes a stream sends on its first service
  stream_order order = stream_order::trace;
  bandwidth_sharing share = bandwidth_sharing::max_min;
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

} // namespace daydream::ps

#endif
