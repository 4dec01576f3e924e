// Defines testing::launch_chain: a small hand-built graph of two launches, two kernels and a sync.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_LAUNCH_CHAIN_HPP
#define DAYDREAM_TESTS_SUPPORT_LAUNCH_CHAIN_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>

namespace daydream::testing {

/// Two launch calls on a thread, the two kernels they launch on a stream, and a sync
/// call that waits for the second kernel:
///
///     thread 1:  #0 "launch sgemm" (5 ns, gap 2) -> #1 "launch relu" (5) -> #4 "cudaStreamSynchronize" (2)
///     stream 7:  #2 "sgemm" (30) -> #3 "relu" (10)
///     launches #0 -> #2, #1 -> #3; sync #3 -> #4
///
/// Replayed: #0 0..5, #1 7..12, #2 5..35, #3 35..45, #4 45..47 (makespan 47).
struct launch_chain {
  graph g;
  resource_id thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
  resource_id st = g.add_resource({"stream 7", resource_kind::gpu_stream});
  handle<cpu_task> launch_sgemm = g.add(cpu_task{.call = cpu_call::launch},
                                        {.name = "launch sgemm", .duration = 5, .resource = thr, .gap = 2});
  handle<cpu_task> launch_relu = g.add(cpu_task{.call = cpu_call::launch},
                                       {.name = "launch relu", .duration = 5, .resource = thr});
  handle<gpu_kernel> sgemm = g.add(gpu_kernel{.stream = 7}, {.name = "sgemm", .duration = 30, .resource = st});
  handle<gpu_kernel> relu = g.add(gpu_kernel{.stream = 7}, {.name = "relu", .duration = 10, .resource = st});
  handle<cpu_task> sync = g.add(cpu_task{.call = cpu_call::sync},
                                {.name = "cudaStreamSynchronize", .duration = 2, .resource = thr});
  launch_chain() {
    g.add_dependency(launch_sgemm, launch_relu, dep_kind::cpu_order);
    g.add_dependency(launch_relu, sync, dep_kind::cpu_order);
    g.add_dependency(sgemm, relu, dep_kind::stream_order);
    g.add_dependency(launch_sgemm, sgemm, dep_kind::launch);
    g.add_dependency(launch_relu, relu, dep_kind::launch);
    g.add_dependency(relu, sync, dep_kind::sync);
  }
};

} // namespace daydream::testing

#endif
