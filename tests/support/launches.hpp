// Defines testing::launches, a two-launch graph whose replay is worked out by hand, and check_span.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_LAUNCHES_HPP
#define DAYDREAM_TESTS_SUPPORT_LAUNCHES_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <doctest/doctest.h>

namespace daydream::testing {

/// thread: L1 (launch, 5) -> L2 (launch, 5); stream: K1 (30) -> K2 (10); L1 -> K1, L2 -> K2.
/// Replay: L1 [0,5) L2 [5,10) K1 [5,35) K2 [35,45).
struct launches {
  graph g;
  resource_id thr, st;
  handle<cpu_task> l1, l2;
  handle<gpu_kernel> k1, k2;
  launches() {
    thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
    st = g.add_resource({"stream 7", resource_kind::gpu_stream});
    l1 = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr});
    l2 = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr,
                                            .trace_start = 5});
    k1 = g.add(gpu_kernel{}, {.name = "conv", .duration = 30, .resource = st, .trace_start = 5});
    k2 = g.add(gpu_kernel{}, {.name = "relu", .duration = 10, .resource = st, .trace_start = 35});
    g.add_dependency(l1, l2, dep_kind::cpu_order);
    g.add_dependency(k1, k2, dep_kind::stream_order);
    g.add_dependency(l1, k1, dep_kind::launch);
    g.add_dependency(l2, k2, dep_kind::launch);
  }
};

/// Checks, as doctest assertions, that task `t` ran over [start, end) in `r`.
inline void check_span(const replay_result& r, task_id t, time_ns start, time_ns end) {
  INFO("task #" << t);
  CHECK(r.start[t] == start);
  CHECK(r.end[t] == end);
}

} // namespace daydream::testing

#endif
