// Must not compile: set_bytes on a CPU task, a kind without a byte count.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/update.hpp>

void misuse(daydream::graph& g) {
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  auto t = g.add(daydream::memcpy_task{}, {.name = "Memcpy HtoD"});
#else
  auto t = g.add(daydream::cpu_task{}, {.name = "aten::add"});
#endif
  daydream::set_bytes(g, t, 1024);
}
