// Defines the alpha-beta cost models of collectives and parameter-server transfers.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_NET_COLLECTIVE_HPP
#define DAYDREAM_NET_COLLECTIVE_HPP

#include <daydream/net/cluster.hpp>
#include <daydream/config.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace daydream {

// Notation of every formula below (Hockney's alpha-beta model, as used by Thakur,
// Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH",
// IJHPCA 2005): n is the message size in bytes, p the number of participants, alpha the
// latency of one message (link_spec::latency) and beta = 1 / bandwidth the time per
// byte. The cost of the reduction arithmetic (their gamma term) is left out: on GPUs it
// runs at memory speed and overlaps the transfers. Every function returns 0 for p <= 1
// (nothing to communicate) and rounds to whole nanoseconds.

/// ceil(log2(p)) for p >= 1: the rounds of a binomial tree or of recursive doubling.
constexpr std::uint32_t ceil_log2(std::uint32_t p) noexcept {
  std::uint32_t r = 0;
  while ((std::uint64_t{1} << r) < p) ++r;
  return r;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline time_ns round_ns(double ns) { return static_cast<time_ns>(std::llround(std::max(0.0, ns))); }
inline void check_bytes(double bytes) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw error("daydream: collective cost: the message size must be finite and not negative");
}
} // namespace detail
//! @endcond

/// Ring all-reduce: a reduce-scatter then an all-gather around a ring, 2(p-1) steps of
/// n/p bytes each:
///
///     T = 2(p-1) alpha + 2 (p-1)/p n beta
///
/// Bandwidth-optimal (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for
/// clusters of workstations", JPDC 2009); what NCCL and Horovod (Sergeev & Del Balso,
/// "Horovod: fast and easy distributed deep learning in TensorFlow", 2018) run.
///
///     daydream::ring_all_reduce_time(100e6, 4, {25e9 / 8, 5'000});  // 6e7 ns + 30 us
inline time_ns ring_all_reduce_time(double bytes, std::uint32_t p, const link_spec& l) {
  detail::check_bytes(bytes);
  if (p <= 1) return 0;
  const double steps = 2.0 * (p - 1);
  return detail::round_ns(steps * l.latency + steps / p * l.transfer_ns(bytes));
}

/// Tree all-reduce: a binomial-tree reduce to a root followed by a binomial-tree
/// broadcast, each ceil(log2 p) rounds that carry the whole message:
///
///     T = 2 ceil(log2 p) (alpha + n beta)
///
/// Latency-optimal for short messages (Thakur, Rabenseifner & Gropp 2005, section 4).
inline time_ns tree_all_reduce_time(double bytes, std::uint32_t p, const link_spec& l) {
  detail::check_bytes(bytes);
  if (p <= 1) return 0;
  const double rounds = 2.0 * ceil_log2(p);
  return detail::round_ns(rounds * (l.latency + l.transfer_ns(bytes)));
}

/// Rabenseifner's all-reduce: recursive-halving reduce-scatter then recursive-doubling
/// all-gather:
///
///     T = 2 ceil(log2 p) alpha + 2 (p-1)/p n beta
///
/// (Thakur, Rabenseifner & Gropp 2005, section 4.5; exact for powers of two.)
inline time_ns halving_doubling_all_reduce_time(double bytes, std::uint32_t p, const link_spec& l) {
  detail::check_bytes(bytes);
  if (p <= 1) return 0;
  return detail::round_ns(2.0 * ceil_log2(p) * l.latency +
                          2.0 * (p - 1) / p * l.transfer_ns(bytes));
}

/// Ring reduce-scatter of an n-byte buffer (each participant ends with n/p reduced bytes):
///
///     T = (p-1) alpha + (p-1)/p n beta
///
/// (Thakur, Rabenseifner & Gropp 2005, section 4.4.)
inline time_ns reduce_scatter_time(double bytes, std::uint32_t p, const link_spec& l) {
  detail::check_bytes(bytes);
  if (p <= 1) return 0;
  return detail::round_ns((p - 1.0) * l.latency + (p - 1.0) / p * l.transfer_ns(bytes));
}

/// Ring all-gather whose result is n bytes (each participant contributes n/p):
///
///     T = (p-1) alpha + (p-1)/p n beta
///
/// (Thakur, Rabenseifner & Gropp 2005, section 4.1.)
inline time_ns all_gather_time(double bytes, std::uint32_t p, const link_spec& l) {
  return reduce_scatter_time(bytes, p, l);
}

/// Binomial-tree broadcast of n bytes:
///
///     T = ceil(log2 p) (alpha + n beta)
///
/// (Thakur, Rabenseifner & Gropp 2005, section 4.2, short messages.)
inline time_ns broadcast_time(double bytes, std::uint32_t p, const link_spec& l) {
  detail::check_bytes(bytes);
  if (p <= 1) return 0;
  return detail::round_ns(ceil_log2(p) * (l.latency + l.transfer_ns(bytes)));
}

/// Pairwise-exchange all-to-all; n is a participant's whole send buffer (n/p to each
/// peer, its own part stays local):
///
///     T = (p-1) alpha + (p-1)/p n beta
///
/// (Thakur, Rabenseifner & Gropp 2005, section 4.6.)
inline time_ns all_to_all_time(double bytes, std::uint32_t p, const link_spec& l) {
  return reduce_scatter_time(bytes, p, l);
}

/// One push (worker -> servers) or pull (servers -> worker) of n bytes with `workers`
/// workers and `servers` parameter servers, the keys spread evenly over the servers.
/// The worker's link carries n bytes, each server's link n x workers / servers bytes;
/// the slower side bounds the transfer:
///
///     T = alpha + n max(1 / B_worker, workers / (servers B_server))
///
/// The analysis of Jiang et al., "A Unified Architecture for Accelerating Distributed
/// DNN Training in Heterogeneous GPU/CPU Clusters" (BytePS), OSDI 2020, section 3; the
/// model behind P3 (Jayarajan et al., "Priority-based Parameter Propagation for
/// Distributed DNN Training", MLSys 2019) and TicTac (Hashemi et al., "TicTac:
/// Accelerating Distributed Deep Learning with Communication Scheduling", MLSys 2019).
inline time_ns ps_transfer_time(double bytes, std::uint32_t workers, std::uint32_t servers,
                                const link_spec& worker, const link_spec& server) {
  detail::check_bytes(bytes);
  if (servers == 0 || workers == 0)
    throw error("daydream: ps_transfer_time: need at least one worker and one server");
  const double per_byte =
      std::max(1e9 / worker.bandwidth, 1e9 * double(workers) / (double(servers) * server.bandwidth));
  return detail::round_ns(worker.latency + bytes * per_byte);
}

/// The all-reduce algorithms a pass can pick.
enum class all_reduce_algorithm : std::uint8_t {
  ring,             ///< ring_all_reduce_time (NCCL's and Horovod's default)
  tree,             ///< tree_all_reduce_time
  halving_doubling, ///< halving_doubling_all_reduce_time (Rabenseifner)
};

/// The name of an all_reduce_algorithm value ("ring").
inline constexpr std::string_view to_string(all_reduce_algorithm a) noexcept {
  switch (a) {
  case all_reduce_algorithm::ring: return "ring";
  case all_reduce_algorithm::tree: return "tree";
  case all_reduce_algorithm::halving_doubling: return "halving_doubling";
  }
  return "?";
}

/// Parses "ring", "tree" or "halving_doubling"; throws daydream::error otherwise.
inline all_reduce_algorithm parse_all_reduce_algorithm(std::string_view s) {
  if (s == "ring") return all_reduce_algorithm::ring;
  if (s == "tree") return all_reduce_algorithm::tree;
  if (s == "halving_doubling" || s == "rabenseifner") return all_reduce_algorithm::halving_doubling;
  throw error("daydream: unknown all-reduce algorithm '" + std::string(s) +
              "' (use ring, tree or halving_doubling)");
}

/// All-reduce of n bytes among p participants over link `l` with algorithm `a`.
inline time_ns all_reduce_time(double bytes, std::uint32_t p, const link_spec& l,
                               all_reduce_algorithm a = all_reduce_algorithm::ring) {
  switch (a) {
  case all_reduce_algorithm::tree: return tree_all_reduce_time(bytes, p, l);
  case all_reduce_algorithm::halving_doubling: return halving_doubling_all_reduce_time(bytes, p, l);
  case all_reduce_algorithm::ring: break;
  }
  return ring_all_reduce_time(bytes, p, l);
}

/// A flat all-reduce over every worker of cluster `c`: all steps advance together, so
/// the slowest link of the ring sets the pace (cluster::ring_link()).
inline time_ns all_reduce_time(double bytes, const cluster& c,
                               all_reduce_algorithm a = all_reduce_algorithm::ring) {
  return all_reduce_time(bytes, c.workers(), c.ring_link(), a);
}

/// The four stages of BlueConnect's hierarchical all-reduce (Cho et al., "BlueConnect:
/// Decomposing All-Reduce for Deep Learning on Heterogeneous Network Hierarchy", MLSys
/// 2019) of n bytes on cluster `c` with m machines of g GPUs:
///
/// 1. reduce-scatter inside each machine over its GPU link: `reduce_scatter_time(n, g, intra)`;
/// 2. reduce-scatter across machines of each GPU's n/g shard; the g shards of a machine
///    cross its NIC at once, each at a g-th of its bandwidth:
///    `reduce_scatter_time(n/g, m, nic / g)`;
/// 3. all-gather across machines, the mirror of 2;
/// 4. all-gather inside each machine, the mirror of 1.
///
/// Stages of one message run in sequence; passes put each stage on its own channel, so
/// the stages of consecutive messages overlap.
struct hierarchical_stages {
  time_ns reduce_scatter_intra = 0; ///< stage 1, inside each machine
  time_ns reduce_scatter_inter = 0; ///< stage 2, across machines
  time_ns all_gather_inter = 0;     ///< stage 3, across machines
  time_ns all_gather_intra = 0;     ///< stage 4, inside each machine
  /// The four stages back to back.
  constexpr time_ns total() const noexcept {
    return reduce_scatter_intra + reduce_scatter_inter + all_gather_inter + all_gather_intra;
  }
};

/// BlueConnect's stage costs for an all-reduce of `bytes` on cluster `c` (see
/// hierarchical_stages).
inline hierarchical_stages blueconnect_stages(double bytes, const cluster& c) {
  hierarchical_stages s;
  const auto g = c.workers_per_machine, m = c.machines;
  s.reduce_scatter_intra = reduce_scatter_time(bytes, g, c.intra());
  s.all_gather_intra = all_gather_time(bytes, g, c.intra());
  const auto nic = c.network.shared_by(double(g));
  s.reduce_scatter_inter = reduce_scatter_time(bytes / g, m, nic);
  s.all_gather_inter = all_gather_time(bytes / g, m, nic);
  return s;
}

/// The alpha-beta cost of a collective of `bytes` over `p` ranks on link `l` with
/// algorithm `a` (the functions above); all-to-all and send/recv are pairwise exchanges,
/// broadcast a binomial tree, reduce-scatter and all-gather rings (the algorithm changes
/// all-reduce only, as NCCL's does).
inline time_ns collective_cost(comm_op op, double bytes, std::uint32_t p, const link_spec& l,
                               all_reduce_algorithm a = all_reduce_algorithm::ring) {
  switch (op) {
  case comm_op::all_reduce: return all_reduce_time(bytes, p, l, a);
  case comm_op::reduce_scatter: return reduce_scatter_time(bytes, p, l);
  case comm_op::all_gather: return all_gather_time(bytes, p, l);
  case comm_op::broadcast:
  case comm_op::reduce: return broadcast_time(bytes, p, l);
  default: return all_to_all_time(bytes, p, l);
  }
}

} // namespace daydream

#endif
