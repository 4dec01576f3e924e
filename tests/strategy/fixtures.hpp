// Shared fixtures of the strategy tests: clusters with known links.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_STRATEGY_FIXTURES_HPP
#define DAYDREAM_TESTS_STRATEGY_FIXTURES_HPP

#include <daydream/config.hpp>
#include <daydream/strategy/cluster_spec.hpp>

#include <cstdint>
#include <string>

namespace daydream::testing {

/// A cluster of `nodes` x `per_node` devices whose links cost nothing (no latency, infinite
/// bandwidth) and whose devices never run out of memory: what is left is computation.
inline strategy::cluster_spec free_links(std::uint32_t nodes, std::uint32_t per_node) {
  strategy::cluster_spec c;
  c.name = "free";
  c.links.machines = nodes;
  c.links.workers_per_machine = per_node;
  c.links.network = {1e30, 0};
  c.links.nvlink = {1e30, 0};
  c.links.pcie = {1e30, 0};
  c.memory_bytes = 1e15;
  return c;
}

/// The message of the usage error `f()` throws, or "(no error)".
template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const usage_error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace daydream::testing

#endif
