// Must not compile: where() of something that is no predicate over task references.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/select.hpp>

#include <cstddef>

std::size_t misuse(daydream::graph& g) {
  std::size_t n = 0;
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  for (auto t : daydream::tasks(g) | daydream::where(daydream::on_gpu)) n += t.id;
#else
  for (auto t : daydream::tasks(g) | daydream::where(42)) n += t.id;
#endif
  return n;
}
