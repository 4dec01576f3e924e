// Tests of task.hpp: typed handles, made by the graph and checked by its accessors.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <type_traits>
#include <utility>

using namespace daydream;

TEST_CASE("handles come from the graph; a handle of the wrong kind is caught by payload") {
  graph g;
  auto thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto l = g.add(cpu_task{.call = cpu_call::launch}, {.name = "launch", .resource = thr});
  auto k = g.add(gpu_kernel{.stream = 7}, {.name = "sgemm", .resource = st});
  static_assert(!std::is_aggregate_v<handle<gpu_kernel>>);
  static_assert(std::is_trivially_copyable_v<handle<gpu_kernel>>);
  static_assert(!std::is_convertible_v<task_id, handle<gpu_kernel>>);
  CHECK_FALSE(handle<gpu_kernel>{});
  CHECK(handle<gpu_kernel>{}.id == no_task);
  CHECK(g.as<gpu_kernel>(k.id) == k);
  CHECK_FALSE(g.as<gpu_kernel>(l.id));   // a cpu_task: empty
  CHECK_FALSE(g.as<gpu_kernel>(99));     // no such task: empty
  CHECK(handle<gpu_kernel>::unchecked(k.id) == k);
  CHECK(g.payload(handle<gpu_kernel>::unchecked(k.id)).stream == 7);
#ifndef NDEBUG
  // DAYDREAM_ASSERT is on unless NDEBUG: a forged handle of the wrong kind is refused
  // instead of reading the gpu_kernel array at the cpu_task's index.
  CHECK_THROWS_WITH_AS(g.payload(handle<gpu_kernel>::unchecked(l.id)),
                       "daydream: basic_graph::payload: handle<gpu_kernel> names task #0, which is "
                       "a cpu_task (make handles with g.as<K>(id), which checks the kind)",
                       error);
  CHECK_THROWS_WITH_AS(std::as_const(g).payload(handle<cpu_task>::unchecked(42)),
                       "daydream: basic_graph::payload: handle<cpu_task> names task #42, which "
                       "does not exist",
                       error);
  CHECK_THROWS_AS(g.payload(g.as<gpu_kernel>(l.id)), error); // the empty handle
#endif
}
