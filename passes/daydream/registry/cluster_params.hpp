// Defines cluster_from_params (a cluster from the command line's `key=value` parameters) and the readers of the keys every data-parallel pass shares.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_CLUSTER_PARAMS_HPP
#define DAYDREAM_REGISTRY_CLUSTER_PARAMS_HPP

#include <daydream/config.hpp>
#include <daydream/net/cluster.hpp>
#include <daydream/registry/params.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace daydream {

/// Reads the cluster keys of a pass's parameters (and only those; the pass's spec reads
/// the pass's own keys and calls `p.finish()`):
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
/// Giving `nvlink=` without a shape also means machines of cluster::nvlink_machine_size
/// GPUs: NVLink joins the GPUs of one machine, so `ddp:workers=2,nvlink=300GB/s` is two
/// GPUs of one machine, not two machines whose NVLink would go unused.
///
/// The names in parentheses are the ones a cluster spec of `daydream strategy` uses
/// (strategy/cluster_spec.hpp): both parsers take both, so one vocabulary describes a
/// link wherever it is given; giving a quantity under both names is an error.
///
/// Throws daydream::usage_error if the worker counts disagree (`workers=16,machines=3`)
/// or a bandwidth is zero.
///
///     auto c = daydream::cluster_from_params(
///         daydream::pass_params::parse("ddp", "workers=16,workers_per_machine=8,nvlink=150GB/s"));
///     // c.machines == 2, c.workers() == 16, c.intra().bandwidth == 150e9
inline cluster cluster_from_params(const pass_params& p, std::uint32_t per_machine = 1) {
  cluster c;
  auto fail = [&](const std::string& why) {
    throw usage_error("daydream: pass '" + p.pass() + "': " + why);
  };
  const auto machines_key = p.given_key("machines", "nodes");
  const bool has_w = p.has("workers"), has_m = p.has(machines_key), has_pm = p.has("workers_per_machine");
  auto w = p.get_int("workers", 1);
  auto m = p.get_int(machines_key, 1);
  auto pm = p.get_int("workers_per_machine", 1);
  if (w < 1 || m < 1 || pm < 1) fail("workers, machines and workers_per_machine must be at least 1");
  if (has_w) {
    if (has_m && has_pm && m * pm != w)
      fail("workers=" + std::to_string(w) + " is not machines x workers_per_machine = " + std::to_string(m) +
           " x " + std::to_string(pm));
    if (has_m && !has_pm) {
      if (w % m) fail("workers=" + std::to_string(w) + " does not divide into machines=" + std::to_string(m));
      pm = w / m;
    } else if (has_pm && !has_m) {
      if (w % pm)
        fail("workers=" + std::to_string(w) + " does not divide into workers_per_machine=" + std::to_string(pm));
      m = w / pm;
    } else if (!has_m && !has_pm) {
      // NVLink joins the GPUs of a machine: asking for it asks for machines of several.
      if (p.has("nvlink")) per_machine = std::max<std::uint32_t>(per_machine, cluster::nvlink_machine_size);
      pm = std::min<std::int64_t>(w, std::max<std::uint32_t>(per_machine, 1));
      if (w % pm)
        fail("workers=" + std::to_string(w) + " does not divide into machines of " + std::to_string(pm) +
             " GPUs (this pass's default shape); give machines= or workers_per_machine=");
      m = w / pm;
    }
  }
  c.machines = static_cast<std::uint32_t>(m);
  c.workers_per_machine = static_cast<std::uint32_t>(pm);
  c.network.bandwidth = p.get_bandwidth(p.given_key("bandwidth", "nic"), c.network.bandwidth);
  c.network.latency = p.get_time_ns(p.given_key("latency", "nic_latency"), c.network.latency);
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

} // namespace daydream

namespace daydream::passes {

/// Reads the keys every data-parallel pass takes into `pass`: the cluster keys
/// (cluster_from_params, with `per_machine` GPUs per machine when only `workers=` is
/// given) into `pass.cluster`, and `model_bytes`. Every data-parallel pass has the members
/// `cluster`, `sizes` (an optional layer -> gradient bytes map; empty: from the trace) and
/// `model_bytes` (total gradient bytes to spread when the trace has no sizes), declared
/// first, so `pass.cluster` means the same thing on each of them. The pass's spec reads
/// the pass's own keys after these and calls `p.finish()`.
///
///     ddp d;
///     read_cluster(d, p);
template <class Pass>
  requires requires(Pass& x) { x.cluster = cluster{}; x.model_bytes = 0.0; }
void read_cluster(Pass& x, const pass_params& p, std::uint32_t per_machine = 1) {
  x.cluster = cluster_from_params(p, per_machine);
  x.model_bytes = p.get_bytes("model_bytes", 0);
}

/// Reads the bucket keys of the passes that bucket as PyTorch DDP does (ddp, blueconnect,
/// dgc: members `bucket_cap`, DDP's bucket_cap_mb, 25 MiB by default, and `first_bucket`,
/// DDP's first bucket, 1 MiB): `bucket_cap` and `first_bucket`.
template <class Pass>
  requires requires(Pass& x) { x.bucket_cap = std::uint64_t{}; x.first_bucket = std::uint64_t{}; }
void read_buckets(Pass& x, const pass_params& p) {
  x.bucket_cap = static_cast<std::uint64_t>(p.get_bytes("bucket_cap", double(x.bucket_cap)));
  x.first_bucket = static_cast<std::uint64_t>(p.get_bytes("first_bucket", double(x.first_bucket)));
}

/// Reads `iterations` (member `iterations`: the copies of a one-iteration graph P3 and
/// TicTac unroll, so that one iteration's transfers overlap the next forward).
template <class Pass>
  requires requires(Pass& x) { x.iterations = std::uint32_t{}; }
void read_iterations(Pass& x, const pass_params& p) {
  x.iterations = static_cast<std::uint32_t>(p.get_int("iterations", x.iterations));
}

} // namespace daydream::passes

#endif
