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

} // namespace daydream::testing

#endif
