// Must not compile: applying a pass that takes the graph by value (it would edit a copy).
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>

struct add_marker {
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  void operator()(daydream::graph& g) const { g.add(daydream::cpu_task{}, {.name = "marker"}); }
#else
  void operator()(daydream::graph g) const { g.add(daydream::cpu_task{}, {.name = "marker"}); }
#endif
};

void misuse(daydream::graph& g) { daydream::apply(g, add_marker{}); }
