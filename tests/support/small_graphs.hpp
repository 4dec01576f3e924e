// Defines the replay test builder shared by the core's tests (and brings launches and check_span).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_SMALL_GRAPHS_HPP
#define DAYDREAM_TESTS_SUPPORT_SMALL_GRAPHS_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <support/launches.hpp> // launches, check_span

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <utility>

namespace daydream::testing {

// Shorthands for the fixtures below: a CPU op, a launch call, a kernel, a transfer.
struct builder {
  graph g;
  resource_id add_thread(std::string name = "thread 1") {
    return g.add_resource({std::move(name), resource_kind::cpu_thread});
  }
  resource_id add_stream(std::string name) {
    return g.add_resource({std::move(name), resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  }
  resource_id add_link(std::string name, sharing s = sharing::fair) {
    return g.add_resource({std::move(name), resource_kind::link, s, 0, -1, 1e9});
  }
  handle<cpu_task> cpu(std::string_view name, time_ns dur, resource_id r, time_ns gap = 0,
                       cpu_call call = cpu_call::op, time_ns trace_start = 0) {
    return g.add(cpu_task{call}, {.name = name, .duration = dur, .resource = r, .gap = gap,
                                  .trace_start = trace_start});
  }
  handle<gpu_kernel> kernel(std::string_view name, time_ns dur, resource_id r, time_ns trace_start = 0) {
    return g.add(gpu_kernel{}, {.name = name, .duration = dur, .resource = r, .trace_start = trace_start});
  }
  handle<comm_task> transfer(std::string_view name, time_ns dur, resource_id r, time_ns trace_start = 0) {
    return g.add(comm_task{comm_op::all_reduce, 1000}, {.name = name, .duration = dur, .resource = r,
                                                        .trace_start = trace_start});
  }
  void dep(task_id a, task_id b, dep_kind k) { g.add_dependency(a, b, k); }
};

/// Two 5 us launch calls back to back on one thread 1 (at 0 and 5 us), each launching one
/// kernel on stream 7; the kernels' names, durations and trace starts are given, and the
/// second waits for the first on the stream. Replay: L1 [0, 5 us) K1 [5 us, 5 us + d1),
/// L2 [5 us, 10 us), K2 after K1 (or its launch).
struct two_launches {
  builder b;
  task_id k1 = no_task, k2 = no_task;
  two_launches(std::string_view n1, time_ns d1, time_ns s1, std::string_view n2, time_ns d2, time_ns s2) {
    auto thr = b.add_thread();
    auto s = b.add_stream("stream 7");
    auto l1 = b.cpu("cudaLaunchKernel", 5'000, thr, 0, cpu_call::launch, 0);
    auto l2 = b.cpu("cudaLaunchKernel", 5'000, thr, 0, cpu_call::launch, 5'000);
    k1 = b.kernel(n1, d1, s, s1);
    k2 = b.kernel(n2, d2, s, s2);
    b.dep(l1, l2, dep_kind::cpu_order);
    b.dep(l1, k1, dep_kind::launch);
    b.dep(l2, k2, dep_kind::launch);
    b.dep(k1, k2, dep_kind::stream_order);
  }
};

} // namespace daydream::testing

#endif
