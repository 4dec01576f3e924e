// Defines cluster_spec: a training cluster (nodes x devices, links, device memory) from a preset or a spec string.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_CLUSTER_SPEC_HPP
#define DAYDREAM_STRATEGY_CLUSTER_SPEC_HPP

#include <daydream/net/cluster.hpp>
#include <daydream/config.hpp>
#include <daydream/registry/params.hpp>

#include <charconv>
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::strategy {

/// A cluster that parallel strategies run on: daydream::cluster (nodes, GPUs per node,
/// NVLink or PCIe inside a node, one NIC per node) plus each GPU's memory.
///
///     auto c = daydream::strategy::cluster_spec::parse("4x8:nvlink=300GB/s,nic=100Gbps,mem=32GiB");
///     auto d = daydream::strategy::cluster_spec::parse("dgx-a100:nodes=4");
///     auto e = daydream::strategy::cluster_spec::parse("4x8:nvlink=300GB/s,bandwidth=100Gbps"); // nic=
struct cluster_spec {
  std::string name;                ///< the preset or the spec it was parsed from
  cluster links;                   ///< nodes (machines), GPUs per node, links
  double memory_bytes = 32.0 * (1ull << 30); ///< memory of one GPU

  /// GPUs in all.
  std::uint32_t devices() const noexcept { return links.workers(); }

  /// A named cluster shape (see presets()).
  struct preset {
    std::string_view name;    ///< "dgx-a100"
    std::string_view spec;    ///< what it stands for, as a spec string
    std::string_view source;  ///< where the figures come from
  };

  /// The presets. Link figures are per GPU and direction (NVLink) or per node (NIC).
  static const std::vector<preset>& presets() {
    static const std::vector<preset> p{
        {"proteus-titanxp", "1x8:pcie=12GB/s,nic=10Gbps,mem=12GiB",
         "Proteus (Duan et al.) cluster 1: 8 Titan Xp on PCIe 3.0 x16 (about 12 GB/s effective), 12 GB each"},
        {"proteus-v100", "4x8:nvlink=150GB/s,nic=100Gbps,mem=32GiB",
         "Proteus cluster 2: 4 nodes of 8 V100 SXM2 32 GB with NVLink 2.0 (6 links x 25 GB/s), 100 Gbit/s between nodes"},
        {"proteus-a100", "2x8:nvlink=300GB/s,nic=200Gbps,mem=40GiB",
         "Proteus cluster 3: 2 nodes of 8 A100 40 GB with NVLink 3 (12 links x 25 GB/s), 200 Gbit/s between nodes"},
        {"dgx1-v100", "1x8:nvlink=150GB/s,nic=400Gbps,mem=32GiB",
         "NVIDIA DGX-1 with V100 32 GB: NVLink 2.0 150 GB/s per GPU and direction, 4 x 100 Gbit/s EDR InfiniBand"},
        {"dgx-a100", "1x8:nvlink=300GB/s,nic=1600Gbps,mem=80GiB",
         "NVIDIA DGX A100 80 GB: NVLink 3 300 GB/s per GPU and direction, 8 x 200 Gbit/s HDR InfiniBand"},
        {"dgx-h100", "1x8:nvlink=450GB/s,nic=3200Gbps,mem=80GiB",
         "NVIDIA DGX H100: NVLink 4 450 GB/s per GPU and direction, 8 x 400 Gbit/s NDR InfiniBand"},
    };
    return p;
  }

  /// Parses `NODESxDEVICES[:key=value,...]` or `PRESET[:key=value,...]`. Keys: `nvlink`,
  /// `pcie`, `nic` (bandwidths: `300GB/s`, `100Gbps`; a plain number is Gbit/s),
  /// `nvlink_latency`, `pcie_latency`, `nic_latency` (`5us`), `mem` (`32GiB`), and for a
  /// preset `nodes` (how many of its nodes). The distributed passes' names for the same
  /// quantities are synonyms (cluster_from_params, registry/cluster_params.hpp):
  /// `bandwidth` for `nic`, `latency` for `nic_latency`, `machines` for `nodes`; giving a
  /// quantity under both names is an error. Throws daydream::usage_error naming the spec.
  static cluster_spec parse(std::string_view spec) {
    auto fail = [&](const std::string& why) -> cluster_spec {
      throw usage_error("daydream: cluster '" + std::string(spec) + "': " + why);
    };
    auto colon = spec.find(':');
    std::string_view shape = spec.substr(0, colon);
    std::string rest = colon == std::string_view::npos ? std::string() : std::string(spec.substr(colon + 1));
    cluster_spec c;
    c.name = std::string(spec);
    c.links.pcie = {12e9, 2'000};
    c.links.network = {100e9 / 8, 5'000};
    bool is_preset = false;
    for (auto& p : presets())
      if (p.name == shape) {
        auto base = parse(p.spec);
        c.links = base.links;
        c.memory_bytes = base.memory_bytes;
        is_preset = true;
      }
    if (!is_preset) {
      auto x = shape.find('x');
      if (x == std::string_view::npos) {
        std::string known;
        for (auto& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
        return fail("expected NODESxDEVICES (4x8) or a preset (" + known + ")");
      }
      auto number = [&](std::string_view s, const char* what) {
        std::uint32_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size() || v == 0)
          fail(std::string(what) + " must be a positive whole number, not '" + std::string(s) + "'");
        return v;
      };
      c.links.machines = number(shape.substr(0, x), "the node count");
      c.links.workers_per_machine = number(shape.substr(x + 1), "the devices per node");
    }
    try {
      auto p = pass_params::parse("cluster", rest);
      if (is_preset) {
        auto n = p.get_int(p.given_key("nodes", "machines"), c.links.machines);
        if (n < 1) fail("nodes must be at least 1");
        c.links.machines = static_cast<std::uint32_t>(n);
      }
      c.links.nvlink.bandwidth = p.get_bandwidth("nvlink", c.links.nvlink.bandwidth);
      c.links.nvlink.latency = p.get_time_ns("nvlink_latency", c.links.nvlink.latency);
      c.links.pcie.bandwidth = p.get_bandwidth("pcie", c.links.pcie.bandwidth);
      c.links.pcie.latency = p.get_time_ns("pcie_latency", c.links.pcie.latency);
      c.links.network.bandwidth = p.get_bandwidth(p.given_key("nic", "bandwidth"), c.links.network.bandwidth);
      c.links.network.latency = p.get_time_ns(p.given_key("nic_latency", "latency"), c.links.network.latency);
      c.memory_bytes = p.get_bytes("mem", c.memory_bytes);
      p.finish();
    } catch (const usage_error& e) {
      std::string why = e.what();
      const std::string prefix = "daydream: pass 'cluster'";
      if (why.starts_with(prefix)) why = why.substr(prefix.size());
      while (!why.empty() && (why.front() == ':' || why.front() == ' ')) why.erase(0, 1);
      fail(why);
    }
    if (!(c.links.network.bandwidth > 0)) fail("nic must be positive");
    if (!(c.links.pcie.bandwidth > 0)) fail("pcie must be positive");
    if (!(c.memory_bytes > 0)) fail("mem must be positive");
    return c;
  }

  /// "32 GPUs (4 nodes x 8), NVLink 150 GB/s, NIC 100 Gbit/s, 32 GiB each".
  std::string describe() const {
    auto s = links.describe();
    char buf[64];
    std::snprintf(buf, sizeof buf, ", %.4g GiB per GPU", memory_bytes / double(1ull << 30));
    return s + buf;
  }
};

} // namespace daydream::strategy

#endif
