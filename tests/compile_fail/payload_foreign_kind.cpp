// Must not compile: asking a graph for the payload of a kind it does not hold.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>

#include <cstdint>

using cpu_only = daydream::basic_graph<daydream::cpu_task>;

#ifdef DAYDREAM_COMPILE_FAIL_CONTROL
std::uint64_t misuse(cpu_only& g, daydream::handle<daydream::cpu_task> t) { return g.payload(t).correlation; }
#else
std::uint64_t misuse(cpu_only& g, daydream::handle<daydream::gpu_kernel> t) { return g.payload(t).stream; }
#endif
