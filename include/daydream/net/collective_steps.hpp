// Defines the fine level of collectives: each algorithm as its point-to-point chunk transfers, step by step, and the link hierarchy (GPU ports inside a machine, NICs between machines) they cross.
// SPDX-License-Identifier: MIT
//
// A collective of p participants is a list of transfers (collective_transfers): in step s
// participant `from` sends `bytes` to participant `to`. A transfer starts when both its
// ends have finished every transfer they took part in at earlier steps (a rendezvous: the
// sender has the data, the receiver has posted its buffer). link_hierarchy says which
// links a transfer between two ranks crosses. job.hpp turns both into tasks on link
// resources (job_model_options::communication = fine); docs/jobs.md describes the model.
#ifndef DAYDREAM_NET_COLLECTIVE_STEPS_HPP
#define DAYDREAM_NET_COLLECTIVE_STEPS_HPP

#include <daydream/net/cluster.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/config.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace daydream {

/// One point-to-point transfer of a collective's algorithm: in step `step`, participant
/// `from` sends `bytes` to participant `to` (participants are positions 0..p-1 in the
/// group's rank order).
struct collective_transfer {
  std::uint32_t step = 0;
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  double bytes = 0;
  friend bool operator==(const collective_transfer&, const collective_transfer&) = default;
};

/// How many transfers collective_transfers(op, bytes, p, algorithm) lists (whatever the
/// bytes), without listing them.
inline std::size_t collective_transfer_count(comm_op op, std::uint32_t p,
                                             all_reduce_algorithm algorithm = all_reduce_algorithm::ring) {
  if (p <= 1) return 0;
  const std::size_t n = p;
  switch (op) {
  case comm_op::all_reduce:
    if (algorithm == all_reduce_algorithm::tree) return 2 * (n - 1);
    if (algorithm == all_reduce_algorithm::halving_doubling && (p & (p - 1)) == 0) return 2 * n * ceil_log2(p);
    return 2 * (n - 1) * n;
  case comm_op::reduce_scatter:
  case comm_op::all_gather: return (n - 1) * n;
  case comm_op::broadcast:
  case comm_op::reduce: return n - 1;
  default: return (n - 1) * n;
  }
}

/// The transfers of collective `op` of `bytes` over `p` participants, in step order, as
/// the algorithms of collective.hpp run it (each one's uncontended time on a uniform
/// link is that function's formula; tested):
///
/// | op | algorithm | steps | each step |
/// |---|---|---|---|
/// | all-reduce | ring | 2(p-1) | i sends bytes/p to i+1 (reduce-scatter, then all-gather) |
/// | all-reduce | tree | 2 ceil(log2 p) | binomial reduce to 0 (in round k, i with i mod 2^(k+1) = 2^k sends all bytes to i - 2^k), then binomial broadcast from 0 |
/// | all-reduce | halving_doubling | 2 log2 p | recursive halving (partner i xor p/2^(k+1), half of what is left), then recursive doubling; p must be a power of two (else ring) |
/// | reduce-scatter, all-gather | ring | p-1 | i sends bytes/p to i+1 |
/// | broadcast | binomial | ceil(log2 p) | in round k, i < 2^k sends all bytes to i + 2^k |
/// | reduce | binomial | ceil(log2 p) | the reduce half of the tree all-reduce |
/// | all-to-all, send/recv, other | pairwise exchange | p-1 | in round s, i sends bytes/p to i+s mod p |
///
/// The tree is a simple binomial tree, not NCCL's pipelined double binary tree: each round
/// carries the whole message. `algorithm` changes all-reduce only. Returns no transfer for
/// p <= 1.
inline std::vector<collective_transfer> collective_transfers(comm_op op, double bytes, std::uint32_t p,
                                                             all_reduce_algorithm algorithm = all_reduce_algorithm::ring) {
  detail::check_bytes(bytes);
  std::vector<collective_transfer> out;
  if (p <= 1) return out;
  out.reserve(collective_transfer_count(op, p, algorithm));
  const double chunk = bytes / double(p);
  auto ring = [&](std::uint32_t steps, std::uint32_t first) {
    for (std::uint32_t s = 0; s < steps; ++s)
      for (std::uint32_t i = 0; i < p; ++i) out.push_back({first + s, i, (i + 1) % p, chunk});
  };
  const std::uint32_t rounds = ceil_log2(p);
  auto reduce = [&](std::uint32_t first) {
    for (std::uint32_t k = 0; k < rounds; ++k) {
      const std::uint32_t bit = 1u << k;
      for (std::uint32_t i = bit; i < p; i += 2 * bit) out.push_back({first + k, i, i - bit, bytes});
    }
  };
  auto broadcast = [&](std::uint32_t first) {
    for (std::uint32_t k = 0; k < rounds; ++k) {
      const std::uint32_t bit = 1u << k;
      for (std::uint32_t i = 0; i < bit && i + bit < p; ++i) out.push_back({first + k, i, i + bit, bytes});
    }
  };
  switch (op) {
  case comm_op::all_reduce:
    if (algorithm == all_reduce_algorithm::tree) {
      reduce(0);
      broadcast(rounds);
    } else if (algorithm == all_reduce_algorithm::halving_doubling && (p & (p - 1)) == 0) {
      // Recursive halving: in round k the partner is i xor p/2^(k+1) and each sends half
      // of what it still holds (bytes/2^(k+1)); recursive doubling mirrors it.
      for (std::uint32_t k = 0; k < rounds; ++k)
        for (std::uint32_t i = 0; i < p; ++i)
          out.push_back({k, i, i ^ (p >> (k + 1)), bytes / double(2u << k)});
      for (std::uint32_t k = 0; k < rounds; ++k) {
        const std::uint32_t back = rounds - 1 - k;
        for (std::uint32_t i = 0; i < p; ++i)
          out.push_back({rounds + k, i, i ^ (p >> (back + 1)), bytes / double(2u << back)});
      }
    } else
      ring(2 * (p - 1), 0);
    break;
  case comm_op::reduce_scatter:
  case comm_op::all_gather: ring(p - 1, 0); break;
  case comm_op::broadcast: broadcast(0); break;
  case comm_op::reduce: reduce(0); break;
  default:
    for (std::uint32_t s = 1; s < p; ++s)
      for (std::uint32_t i = 0; i < p; ++i) out.push_back({s - 1, i, (i + s) % p, chunk});
    break;
  }
  return out;
}

/// The links of a cluster as the fine level sees them: every GPU has one port to its
/// machine's fabric (NVLink when the cluster has it, else PCIe), each direction one link;
/// every machine has one NIC (or every GPU its own, `nic_per_gpu`), each direction one
/// link. A transfer between two GPUs of one machine crosses the sender's port out and the
/// receiver's port in; between machines, the sender's NIC out and the receiver's NIC in.
/// Ranks are placed on machines by `machine` (rank -> machine), by default
/// rank / cluster.workers_per_machine.
///
///     auto h = daydream::link_hierarchy::of(c, 16);   // c: 2 machines x 8 GPUs
///     h.same_machine(3, 4);                          // true
///     h.path(7, 8).bandwidth == c.network.bandwidth; // crosses the NICs
struct link_hierarchy {
  link_spec intra;                    ///< a GPU's port to its machine (each direction)
  link_spec nic;                      ///< a NIC (each direction)
  bool nic_per_gpu = false;           ///< one NIC per GPU instead of one per machine
  std::vector<std::uint32_t> machine; ///< by rank: its machine

  /// The hierarchy of cluster `c` for `ranks` ranks placed rank / workers_per_machine.
  static link_hierarchy of(const cluster& c, std::uint32_t ranks) {
    link_hierarchy h;
    h.intra = c.intra();
    h.nic = c.network;
    h.nic_per_gpu = c.nic_per_gpu;
    const std::uint32_t per = std::max<std::uint32_t>(c.workers_per_machine, 1);
    for (std::uint32_t r = 0; r < ranks; ++r) h.machine.push_back(r / per);
    return h;
  }
  /// The machine of rank `r`; throws daydream::error for a rank it does not place.
  std::uint32_t machine_of(std::int32_t r) const {
    if (r < 0 || std::size_t(r) >= machine.size())
      throw error("daydream: link_hierarchy: rank " + std::to_string(r) + " is not placed on a machine (" +
                  std::to_string(machine.size()) + " ranks placed)");
    return machine[std::size_t(r)];
  }
  /// Whether ranks `a` and `b` share a machine.
  bool same_machine(std::int32_t a, std::int32_t b) const { return machine_of(a) == machine_of(b); }
  /// The link a transfer from rank `a` to rank `b` is limited by (both its links have it).
  link_spec path(std::int32_t a, std::int32_t b) const { return same_machine(a, b) ? intra : nic; }
};

/// The time of transfers `t` among `ranks` (participant i is rank ranks[i]) on `h` when
/// no link is shared: each transfer starts when both its ends finished their earlier
/// steps and takes its path's latency plus bytes / bandwidth (rounded to whole
/// nanoseconds, as the job graph's tasks are). The fine level's time for a collective
/// alone; on a uniform link, the collective.hpp formula of its algorithm.
inline time_ns uncontended_time(const std::vector<collective_transfer>& t, const std::vector<std::int32_t>& ranks,
                                const link_hierarchy& h) {
  std::vector<time_ns> ready(ranks.size(), 0), next(ranks.size(), 0);
  time_ns end = 0;
  for (std::size_t a = 0; a < t.size();) {
    std::size_t b = a;
    while (b < t.size() && t[b].step == t[a].step) ++b;
    next = ready;
    for (std::size_t x = a; x < b; ++x) {
      const auto& tr = t[x];
      const auto l = h.path(ranks[tr.from], ranks[tr.to]);
      const time_ns e = std::max(ready[tr.from], ready[tr.to]) + detail::round_ns(l.latency) +
                        detail::round_ns(l.transfer_ns(tr.bytes));
      next[tr.from] = std::max(next[tr.from], e);
      next[tr.to] = std::max(next[tr.to], e);
      end = std::max(end, e);
    }
    ready.swap(next);
    a = b;
  }
  return end;
}

/// The same time for collective `op` of `bytes` with `algorithm` among `ranks`, without
/// listing its transfers where a ring runs it (ring all-reduce, reduce-scatter,
/// all-gather): every step waits for the slowest ring link, so the time is the steps
/// times the slowest link's latency plus chunk (O(p) instead of O(p^2)). Other
/// algorithms: uncontended_time of collective_transfers.
inline time_ns uncontended_time(comm_op op, double bytes, const std::vector<std::int32_t>& ranks,
                                const link_hierarchy& h, all_reduce_algorithm algorithm = all_reduce_algorithm::ring) {
  const auto p = std::uint32_t(ranks.size());
  if (p <= 1) return 0;
  const bool ring = (op == comm_op::all_reduce && (algorithm == all_reduce_algorithm::ring ||
                                                   (algorithm == all_reduce_algorithm::halving_doubling && (p & (p - 1)) != 0))) ||
                    op == comm_op::reduce_scatter || op == comm_op::all_gather;
  if (!ring) return uncontended_time(collective_transfers(op, bytes, p, algorithm), ranks, h);
  detail::check_bytes(bytes);
  const double chunk = bytes / double(p);
  time_ns slowest = 0;
  for (std::uint32_t i = 0; i < p; ++i) {
    const auto l = h.path(ranks[i], ranks[(i + 1) % p]);
    slowest = std::max(slowest, detail::round_ns(l.latency) + detail::round_ns(l.transfer_ns(chunk)));
  }
  const time_ns steps = op == comm_op::all_reduce ? 2 * time_ns(p - 1) : time_ns(p - 1);
  return steps * slowest;
}

} // namespace daydream

#endif
