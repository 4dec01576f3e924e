// Must not compile: adding a task of a kind the graph was not instantiated with.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>

#include <cstdint>

struct decode_task {
  std::uint64_t bytes = 0;
};

void misuse() {
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  daydream::basic_graph<daydream::cpu_task, decode_task> g;
#else
  daydream::basic_graph<daydream::cpu_task, daydream::gpu_kernel> g;
#endif
  g.add(decode_task{}, {.name = "decode"});
}
