// Defines the user-defined task kinds (and the graph over them) that the core tests share.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_USER_KINDS_HPP
#define DAYDREAM_TESTS_SUPPORT_USER_KINDS_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>

#include <cstdint>
#include <string_view>

namespace daydream::testing {

/// A kind a user adds: a data-loader decode step with a byte count.
struct decode_task {
  static constexpr std::string_view name = "decode_task";
  static constexpr resource_kind resource = resource_kind::copy_engine;
  std::uint64_t bytes = 0;
  int quality = 90;
};
/// A kind with no members at all.
struct marker {};

/// A graph over a built-in kind and the two user kinds.
using my_graph = basic_graph<cpu_task, decode_task, marker>;

} // namespace daydream::testing

#endif
