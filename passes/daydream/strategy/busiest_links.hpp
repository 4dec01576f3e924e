// Defines link_use and busiest_links: the link each kind of communication loaded most in a replay of a compiled strategy.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_BUSIEST_LINKS_HPP
#define DAYDREAM_STRATEGY_BUSIEST_LINKS_HPP

#include <daydream/graph.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/resource.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/task.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace daydream::strategy {

/// The link a kind of communication loaded most in the replay.
struct link_use {
  std::string name = "none"; ///< the physical link's kind: "NVLink", "PCIe", "NIC", "none"
  link_spec link;            ///< its figures (the whole link: nothing is divided statically)
  std::string resource;      ///< the busiest one ("rank 3: link out", "machine 0: NIC out")
  /// Its load by this kind: the time the kind's transfers on it need at its full
  /// bandwidth, over the iteration time.
  double load = 0;
  /// The share of its bandwidth the kind's transfers got on it, on average over their
  /// running time (1: never shared; 0.5: split with one other transfer throughout).
  double share = 1;
  std::string describe() const {
    if (name == "none") return "none";
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %.4g GB/s", name.c_str(), link.bandwidth / 1e9);
    std::string s = buf;
    std::snprintf(buf, sizeof buf, " (busiest: %s, loaded %.3g%% of the iteration, at %.3g%% of its bandwidth)",
                  resource.c_str(), 100 * load, 100 * share);
    return s + buf;
  }
};

/// The links each kind of communication loaded most in replay `r` of `cs`: for tp, pp and
/// dp (data-parallel reduction and ZeRO's gathers together), the link resource whose
/// transfers of that kind need the most time at full bandwidth (the lowest id among
/// equals), its load over `iteration` and the bandwidth share those transfers got on it.
/// A kind without transfers gets "none".
inline std::array<link_use, 3> busiest_links(const compiled_strategy& cs, const replay_result& r, time_ns iteration) {
  const auto& g = cs.g;
  const std::size_t nres = g.resource_count();
  // Slots: 0 tp, 1 pp, 2 dp (with zero).
  auto slot = [](comm_kind k) { return k == comm_kind::tp ? 0 : k == comm_kind::pp ? 1 : 2; };
  std::array<std::vector<double>, 3> nominal, replayed;
  std::array<std::vector<std::uint8_t>, 3> used;
  for (std::size_t k = 0; k < 3; ++k) {
    nominal[k].assign(nres, 0);
    replayed[k].assign(nres, 0);
    used[k].assign(nres, 0);
  }
  for (auto& tr : cs.transfers) {
    const auto k = std::size_t(slot(tr.kind));
    for (task_id x = tr.first; x < tr.last; ++x) {
      const auto res = g.resource_of(x);
      if (res == no_resource) continue;
      nominal[k][res] += double(g.duration(x));
      replayed[k][res] += double(r.duration(x));
      used[k][res] = 1;
    }
  }
  std::vector<std::uint8_t> is_nic(nres, 0);
  for (auto& [key, res] : cs.links.nic_out) is_nic[res] = 1;
  for (auto& [key, res] : cs.links.nic_in) is_nic[res] = 1;
  std::array<link_use, 3> out;
  for (std::size_t k = 0; k < 3; ++k) {
    std::size_t best = nres;
    for (std::size_t res = 0; res < nres; ++res)
      if (used[k][res] && (best == nres || nominal[k][res] > nominal[k][best])) best = res;
    if (best == nres) continue;
    auto& u = out[k];
    if (is_nic[best]) {
      u.name = "NIC";
      u.link = cs.hierarchy.nic;
    } else {
      u.name = cs.intra_name;
      u.link = cs.hierarchy.intra;
    }
    u.resource = g.resource_at(resource_id(best)).name;
    u.load = iteration > 0 ? nominal[k][best] / double(iteration) : 0;
    u.share = replayed[k][best] > 0 ? nominal[k][best] / replayed[k][best] : 1;
  }
  return out;
}

} // namespace daydream::strategy

#endif
