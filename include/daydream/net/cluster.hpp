// Defines cluster: the machines, workers, links and parameter servers a distributed what-if runs on.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_NET_CLUSTER_HPP
#define DAYDREAM_NET_CLUSTER_HPP

#include <daydream/config.hpp>
#include <daydream/params.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cmath>
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
/// Every distributed pass reads it the same way (from_params), so
/// `ddp:workers=16,bandwidth=25Gbps` and `p3:workers=16,bandwidth=25Gbps` describe the
/// same cluster. The defaults model commodity servers: one GPU per machine, 25 Gbit/s
/// Ethernet-class NICs with 5 us per message, PCIe 3.0 x16 (12 GB/s effective, 2 us)
/// inside a machine and no NVLink.
///
///     auto c = daydream::cluster::from_params(
///         daydream::pass_params::parse("ddp", "workers=16,workers_per_machine=8,nvlink=150GB/s"));
///     // c.machines == 2, c.workers() == 16, c.intra().bandwidth == 150e9
struct cluster {
  std::uint32_t machines = 1;            ///< machines (hosts)
  std::uint32_t workers_per_machine = 1; ///< GPUs (data-parallel workers) per machine
  link_spec network{25e9 / 8, 5'000};    ///< each machine's NIC (25 Gbit/s, 5 us)
  link_spec nvlink{0, 1'000};            ///< GPU-GPU inside a machine; bandwidth 0: none
  link_spec pcie{12e9, 2'000};           ///< GPU-GPU / GPU-host inside a machine
  std::uint32_t parameter_servers = 0;   ///< 0: one server per machine, colocated
  double server_bandwidth = 0;           ///< bytes/s of a server's NIC; 0: network.bandwidth
  /// One NIC per GPU instead of one per machine (the fine level of jobs, link_hierarchy;
  /// the job mode's `--cluster nic_per_gpu=true`; the distributed passes do not read it).
  bool nic_per_gpu = false;

  /// GPUs per machine assumed when `nvlink=` is given without a machine shape (an
  /// NVLink server: DGX-1, DGX A100, HGX H100 all hold 8).
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

  /// Reads the cluster keys of a pass's parameters (and only those; the pass reads its
  /// own keys and calls `p.finish()`):
  ///
  /// | key | meaning | default |
  /// |---|---|---|
  /// | `workers` | workers in all | machines x workers_per_machine |
  /// | `machines` (or `nodes`) | machines | workers / workers_per_machine, or workers / per_machine |
  /// | `workers_per_machine` | GPUs per machine | workers / machines, or per_machine |
  /// | `bandwidth` (or `nic`) | NIC bandwidth (`25Gbps`, `12.5GB/s`; a plain number is Gbit/s) | 25Gbps |
  /// | `latency` (or `nic_latency`) | NIC latency per message (`5us`; a plain number is us) | 5us |
  /// | `nvlink`, `nvlink_latency` | NVLink bandwidth and latency; no key: no NVLink | -, 1us |
  /// | `pcie`, `pcie_latency` | PCIe bandwidth and latency | 12GB/s, 2us |
  /// | `ps` | parameter servers | one per machine |
  /// | `ps_bandwidth` | a server's NIC bandwidth | `bandwidth` |
  ///
  /// `per_machine` is the machine shape a pass assumes when only `workers=` is given:
  /// 1 (one GPU per machine) for most passes; BlueConnect, whose point is the hierarchy,
  /// uses 8 (`workers=16` is 2 machines x 8 GPUs; fewer workers than that share one
  /// machine, and a count that does not divide into machines of 8 must say its shape).
  /// Giving `nvlink=` without a shape also means machines of nvlink_machine_size GPUs:
  /// NVLink joins the GPUs of one machine, so `ddp:workers=2,nvlink=300GB/s` is two GPUs
  /// of one machine, not two machines whose NVLink would go unused.
  ///
  /// The names in parentheses are the ones a cluster spec of `daydream strategy` uses
  /// (strategy/cluster_spec.hpp): both parsers take both, so one vocabulary describes a
  /// link wherever it is given; giving a quantity under both names is an error.
  ///
  /// Throws daydream::usage_error if the worker counts disagree (`workers=16,machines=3`)
  /// or a bandwidth is zero.
  static cluster from_params(const pass_params& p, std::uint32_t per_machine = 1) {
    cluster c;
    auto fail = [&](const std::string& why) {
      throw usage_error("daydream: pass '" + p.pass() + "': " + why);
    };
    // The key a quantity is given under: `name`, or its synonym `alias`.
    auto key = [&](const char* name, const char* alias) -> std::string {
      if (p.has(name) && p.has(alias))
        fail(std::string(name) + "= and " + alias + "= name the same quantity; give one of them");
      return p.has(alias) ? alias : name;
    };
    const auto machines_key = key("machines", "nodes");
    const bool has_w = p.has("workers"), has_m = p.has(machines_key),
               has_pm = p.has("workers_per_machine");
    auto w = p.get_int("workers", 1);
    auto m = p.get_int(machines_key, 1);
    auto pm = p.get_int("workers_per_machine", 1);
    if (w < 1 || m < 1 || pm < 1) fail("workers, machines and workers_per_machine must be at least 1");
    if (has_w) {
      if (has_m && has_pm && m * pm != w)
        fail("workers=" + std::to_string(w) + " is not machines x workers_per_machine = " +
             std::to_string(m) + " x " + std::to_string(pm));
      if (has_m && !has_pm) {
        if (w % m) fail("workers=" + std::to_string(w) + " does not divide into machines=" + std::to_string(m));
        pm = w / m;
      } else if (has_pm && !has_m) {
        if (w % pm)
          fail("workers=" + std::to_string(w) + " does not divide into workers_per_machine=" + std::to_string(pm));
        m = w / pm;
      } else if (!has_m && !has_pm) {
        // NVLink joins the GPUs of a machine: asking for it asks for machines of several.
        if (p.has("nvlink")) per_machine = std::max<std::uint32_t>(per_machine, nvlink_machine_size);
        pm = std::min<std::int64_t>(w, std::max<std::uint32_t>(per_machine, 1));
        if (w % pm)
          fail("workers=" + std::to_string(w) + " does not divide into machines of " + std::to_string(pm) +
               " GPUs (this pass's default shape); give machines= or workers_per_machine=");
        m = w / pm;
      }
    }
    c.machines = static_cast<std::uint32_t>(m);
    c.workers_per_machine = static_cast<std::uint32_t>(pm);
    c.network.bandwidth = p.get_bandwidth(key("bandwidth", "nic"), c.network.bandwidth);
    c.network.latency = p.get_time_ns(key("latency", "nic_latency"), c.network.latency);
    c.nvlink.bandwidth = p.get_bandwidth("nvlink", c.nvlink.bandwidth);
    c.nvlink.latency = p.get_time_ns("nvlink_latency", c.nvlink.latency);
    c.pcie.bandwidth = p.get_bandwidth("pcie", c.pcie.bandwidth);
    c.pcie.latency = p.get_time_ns("pcie_latency", c.pcie.latency);
    c.parameter_servers = static_cast<std::uint32_t>(p.get_int("ps", 0));
    c.server_bandwidth = p.get_bandwidth("ps_bandwidth", 0);
    if (!(c.network.bandwidth > 0)) fail("bandwidth must be positive");
    if (!(c.pcie.bandwidth > 0)) fail("pcie must be positive");
    return c;
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
