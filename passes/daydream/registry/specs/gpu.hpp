// Defines pass_spec<gpu>: the line --help shows for the gpu pass and how command-line parameters build it (the bundled device catalogue, plus a user's file).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_SPECS_GPU_HPP
#define DAYDREAM_REGISTRY_SPECS_GPU_HPP

#include <daydream/config.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/passes/gpu.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <cmath>
#include <exception>
#include <string>
#include <string_view>

namespace daydream::passes {

/// The command line's side of passes::gpu (see pass_spec).
template <> struct pass_spec<gpu> {
  /// The line `daydream whatif --help` shows.
  static constexpr std::string_view help =
      "the run on another GPU: every kernel rescaled from the recorded GPU to the target (memory- or compute-bound "
      "by class, precision, waves from the recorded launch), copies by the host link, collectives by the "
      "interconnect, or priced on a cluster given by the distributed passes' keys. params: target=NAME (H100, A100, "
      "B200, MI300X, ...: docs/cross_gpu.md), source=NAME (default: the trace's deviceProperties), cpu=1 (host speed "
      "factor), launch_floor=1us, catalogue=FILE (more GPUs); cluster keys (workers=, machines=, "
      "workers_per_machine=, bandwidth=, latency=, nvlink=, pcie=, algorithm=ring) price each recorded collective "
      "by its bytes and group";
  /// Not in a default what-if run: the target is the user's question (`--vary target=A100,H100,B200`).
  static constexpr bool default_scenario = false;

  /// The keys that describe the target's cluster (cluster_from_params).
  static constexpr std::string_view cluster_keys[] = {
      "workers", "machines", "nodes", "workers_per_machine", "bandwidth", "nic", "latency", "nic_latency",
      "nvlink", "nvlink_latency", "pcie", "pcie_latency", "algorithm"};

  /// Reads `target`, `source`, `cpu`, `launch_floor`, `catalogue` and, when any is
  /// given, the cluster keys (cluster_from_params; `algorithm` of all-reduces).
  static gpu from_params(const pass_params& p) {
    gpu g;
    bool clustered = false;
    for (auto k : cluster_keys) clustered |= p.has(std::string(k));
    if (p.has("ps") || p.has("ps_bandwidth"))
      throw usage_error("daydream: pass 'gpu': ps= and ps_bandwidth= describe parameter servers, which the gpu "
                        "pass does not model (the ps and p3 passes do)");
    if (clustered) {
      g.cluster = cluster_from_params(p);
      try {
        g.algorithm = parse_all_reduce_algorithm(p.get_string("algorithm", "ring"));
      } catch (const usage_error&) {
        throw;
      } catch (const std::exception& e) {
        throw usage_error(e.what());
      }
    }
    g.target = p.get_string("target", g.target);
    g.source = p.get_string("source", g.source);
    g.cpu = p.get_double("cpu", g.cpu);
    const double floor = p.get_time_ns("launch_floor", double(g.launch_floor));
    const std::string file = p.get_string("catalogue", "");
    p.finish();
    if (floor < 0) throw usage_error("daydream: pass 'gpu': launch_floor must not be negative");
    g.launch_floor = time_ns(std::llround(floor));
    g.catalogue = io::bundled_device_catalogue();
    if (!file.empty()) {
      try {
        g.catalogue.merge(io::load_device_catalogue(file));
      } catch (const usage_error&) {
        throw;
      } catch (const std::exception& e) {
        throw usage_error(e.what()); // a file that cannot be read is the user's to fix
      }
    }
    g.check();
    return g;
  }
};

} // namespace daydream::passes

#endif
