// Must not compile: a typed handle forged from a bare id, whose kind nothing checked.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <cstdint>

std::int32_t misuse(daydream::graph& g, daydream::task_id t) {
#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
  return g.payload(g.as<daydream::gpu_kernel>(t)).stream;
#else
  return g.payload(daydream::handle<daydream::gpu_kernel>{t}).stream;
#endif
}
