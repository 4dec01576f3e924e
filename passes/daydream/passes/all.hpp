// Defines passes::bundled(): the registry of every pass that ships with daydream.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_ALL_HPP
#define DAYDREAM_PASSES_ALL_HPP

#include <daydream/fwd.hpp>
#include <daydream/kinds.hpp>
#include <daydream/passes/registry.hpp>

namespace daydream::passes {

/// Every bundled pass, by its command-line name.
inline registry<graph> bundled() {
  return registry<graph>::of<>();
}

} // namespace daydream::passes

#endif
