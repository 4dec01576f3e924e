// Must not compile: insert_launched of a CPU task (the CPU launches GPU-side work only).
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>

void misuse(daydream::graph& g, daydream::task_id call, daydream::task_id after) {
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  daydream::insert_launched(g, daydream::gpu_kernel{}, {.name = "k"}, call, after);
#else
  daydream::insert_launched(g, daydream::cpu_task{}, {.name = "k"}, call, after);
#endif
}
