// Defines cluster: the machines, workers, links and parameter servers a distributed what-if runs on.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_NET_CLUSTER_HPP
#define DAYDREAM_NET_CLUSTER_HPP

#include <daydream/config.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace daydream {

/// One kind of link: its bandwidth (bytes per second, per direction) and its latency
/// (nanoseconds per message: the alpha of an alpha-beta model). A bandwidth of 0 means
/// the link does not exist.
///
///     daydream::link_spec nic{25e9 / 8, 5'000};   // 25 Gbit/s, 5 us
struct link_spec {
  double bandwidth = 0; ///< bytes per second, each direction
  double latency = 0;   ///< nanoseconds per message

  /// Whether the link exists (has a bandwidth).
  constexpr bool present() const noexcept { return bandwidth > 0; }
  /// Nanoseconds to push `bytes` through the link, latency excluded (the beta term).
  double transfer_ns(double bytes) const noexcept { return bytes / bandwidth * 1e9; }
  /// The slower of two links: the lower bandwidth and the higher latency.
  friend link_spec bottleneck(const link_spec& a, const link_spec& b) noexcept {
    return {std::min(a.bandwidth, b.bandwidth), std::max(a.latency, b.latency)};
  }
  /// The link with its bandwidth divided among `ways` concurrent flows.
  link_spec shared_by(double ways) const noexcept { return {bandwidth / std::max(1.0, ways), latency}; }
};

/// The cluster a distributed what-if runs on: `machines` machines with
/// `workers_per_machine` GPUs each, GPUs of one machine joined by NVLink (when present)
/// or PCIe, machines joined by one network interface (NIC) each, and optionally
/// parameter servers.
///
/// Every distributed pass holds one (its `cluster` member), so passes composed on one
/// graph model the same machines. The defaults model commodity servers: one GPU per
/// machine, 25 Gbit/s Ethernet-class NICs with 5 us per message, PCIe 3.0 x16 (12 GB/s
/// effective, 2 us) inside a machine and no NVLink. The command line describes one with
/// `key=value` parameters (daydream::cluster_from_params, registry/cluster_params.hpp).
///
///     daydream::cluster c{.machines = 2, .workers_per_machine = 8, .nvlink = {150e9, 1'000}};
///     // c.workers() == 16, c.intra().bandwidth == 150e9
struct cluster {
  std::uint32_t machines = 1;            ///< machines (hosts)
  std::uint32_t workers_per_machine = 1; ///< GPUs (data-parallel workers) per machine
  link_spec network{25e9 / 8, 5'000};    ///< each machine's NIC (25 Gbit/s, 5 us)
  link_spec nvlink{0, 1'000};            ///< GPU-GPU inside a machine; bandwidth 0: none
  link_spec pcie{12e9, 2'000};           ///< GPU-GPU / GPU-host inside a machine
  std::uint32_t parameter_servers = 0;   ///< 0: one server per machine, colocated
  double server_bandwidth = 0;           ///< bytes/s of a server's NIC; 0: network.bandwidth
  /// One NIC per GPU instead of one per machine (the fine level of jobs, link_hierarchy;
  /// the distributed passes do not read it).
  bool nic_per_gpu = false;

  /// GPUs per machine of an NVLink server (DGX-1, DGX A100, HGX H100 all hold 8): the
  /// machine shape assumed when NVLink is asked for without one.
  static constexpr std::uint32_t nvlink_machine_size = 8;

  /// Every worker of the cluster.
  constexpr std::uint32_t workers() const noexcept { return machines * workers_per_machine; }
  /// The link between two GPUs of one machine: NVLink if present, else PCIe.
  link_spec intra() const noexcept { return nvlink.present() ? nvlink : pcie; }
  /// The slowest link a ring over all workers crosses: the NIC if there is more than
  /// one machine (and the intra-machine link too if a machine holds several GPUs),
  /// else the intra-machine link.
  link_spec ring_link() const noexcept {
    if (machines <= 1) return intra();
    return workers_per_machine > 1 ? bottleneck(network, intra()) : network;
  }
  /// Parameter servers (one per machine unless set).
  constexpr std::uint32_t servers() const noexcept {
    return parameter_servers ? parameter_servers : machines;
  }
  /// A server's NIC.
  link_spec server_link() const noexcept {
    return {server_bandwidth > 0 ? server_bandwidth : network.bandwidth, network.latency};
  }

  /// A one-line description: "16 workers (2 machines x 8), NIC 25 Gbit/s 5 us, NVLink 150 GB/s 1 us".
  std::string describe() const {
    auto rate = [](double bytes_per_s) {
      char buf[64];
      if (bytes_per_s * 8 < 1e12) std::snprintf(buf, sizeof buf, "%g Gbit/s", bytes_per_s * 8 / 1e9);
      else std::snprintf(buf, sizeof buf, "%g GB/s", bytes_per_s / 1e9);
      return std::string(buf);
    };
    auto lat = [](double ns) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g us", ns / 1e3);
      return std::string(buf);
    };
    std::string s = std::to_string(workers()) + " workers (" + std::to_string(machines) +
                    " machines x " + std::to_string(workers_per_machine) + "), NIC " +
                    rate(network.bandwidth) + " " + lat(network.latency);
    if (workers_per_machine > 1)
      s += nvlink.present() ? ", NVLink " + rate(nvlink.bandwidth) + " " + lat(nvlink.latency)
                            : ", PCIe " + rate(pcie.bandwidth) + " " + lat(pcie.latency);
    return s;
  }
};

/// Finds the resource named `name` in `g`, or adds it as a link of node `node` with
/// `bandwidth` and the given sharing. Passes call it so that passes composed on one
/// graph (`ddp | dgc`) put their transfers on the same links. Invalidates nothing.
///
///     auto nic = daydream::link_resource(g, "NIC node 0", 25e9 / 8);
template <class Graph>
resource_id link_resource(Graph& g, const std::string& name, double bandwidth,
                          sharing share = sharing::fair, std::int32_t node = 0) {
  auto r = g.find_resource(name);
  if (r != no_resource) return r;
  return g.add_resource(resource{name, resource_kind::link, share, node, -1, bandwidth});
}

} // namespace daydream

#endif
