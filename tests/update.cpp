// Tests of update.hpp: durations, gaps, bytes and moves to another resource.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace daydream;

using testing::check_span;

TEST_CASE("update sets and scales durations, gaps and bytes") {
  graph g;
  auto t = g.add(gpu_kernel{.bytes = 8}, {.name = "k", .duration = 10});
  auto c = g.add(memcpy_task{.bytes = 100}, {.name = "copy", .duration = 5});
  auto ar = g.add(comm_task{.bytes = 1000}, {.name = "ar", .duration = 7});
  scale_duration(g, t, 1.0 / 3);
  CHECK(g.duration(t) == 3);
  scale_duration(g, c, 0.5);
  CHECK(g.duration(c) == 3); // 2.5 rounds away from zero
  scale_duration(g, ar, 2);
  CHECK(g.duration(ar) == 14);
  set_duration(g, t, 1'000);
  CHECK(g.duration(t) == 1'000);
  set_gap(g, t, 50);
  CHECK(g.gap(t) == 50);
  CHECK_THROWS_AS(set_duration(g, t, -1), error);
  CHECK_THROWS_AS(set_gap(g, t, -1), error);
  CHECK_THROWS_AS(scale_duration(g, t, -0.5), error);
  CHECK_THROWS_AS(scale_duration(g, t, std::numeric_limits<double>::quiet_NaN()), error);
  CHECK_THROWS_AS(scale_duration(g, t, std::numeric_limits<double>::infinity()), error);
  CHECK(g.duration(t) == 1'000);

  set_bytes(g, c, 4096);
  set_bytes(g, ar, 1 << 20);
  set_bytes(g, t, 64);
  CHECK(g.payload(c).bytes == 4096);
  CHECK(g.payload(ar).bytes == 1 << 20);
  CHECK(g.payload(t).bytes == 64);
  CHECK(g.duration(c) == 3); // bytes do not change durations: cost models do

  remove(g, t);
  CHECK_THROWS_AS(set_duration(g, t, 1), error);
  CHECK_THROWS_AS(set_bytes(g, t, 1), error);
}

TEST_CASE("move_to takes a task out of one program order and onto another resource") {
  graph g;
  auto s1 = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto s2 = g.add_resource({"stream 13", resource_kind::gpu_stream});
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto a = g.add(gpu_kernel{}, {.name = "a", .duration = 10, .resource = s1});
  auto t = g.add(comm_task{}, {.name = "allreduce", .duration = 20, .resource = s1});
  auto b = g.add(gpu_kernel{}, {.name = "b", .duration = 5, .resource = s1});
  auto x = g.add(cpu_task{cpu_call::launch}, {.name = "launch", .duration = 5, .resource = thr});
  g.add_dependency(a, t, dep_kind::stream_order);
  g.add_dependency(t, b, dep_kind::stream_order);
  g.add_dependency(x, t, dep_kind::launch);
  auto before = replay(g);
  check_span(before, t, 10, 30);
  check_span(before, b, 30, 35);

  move_to(g, t, s2);
  CHECK(g.resource_of(t) == s2);
  CHECK_FALSE(g.has_dependency(a, t));
  CHECK_FALSE(g.has_dependency(t, b));
  CHECK(g.dependency_kind(a, b) == dep_kind::stream_order);
  CHECK(g.dependency_kind(x, t) == dep_kind::launch); // other dependencies stay
  auto after = replay(g);
  check_span(after, t, 5, 25); // overlaps stream 7 now
  check_span(after, b, 10, 15);
  CHECK_NOTHROW(check_invariants(g));

  SUBCASE("moving to the same resource changes nothing") {
    auto deps = g.dependency_count();
    move_to(g, t, s2);
    CHECK(g.dependency_count() == deps);
  }
  SUBCASE("an unknown resource is refused") {
    CHECK_THROWS_WITH_AS(move_to(g, t, 17), doctest::Contains("resource #17"), error);
  }
  SUBCASE("a resource that does not fit the task's kind is refused, and nothing changes") {
    CHECK_THROWS_WITH_AS(move_to(g, x, s1),
                         "daydream: move_to: task #3 \"launch\" is a cpu_task, which runs on a "
                         "cpu_thread, not on resource #0 \"stream 7\" (a gpu_stream)",
                         error);
    CHECK_THROWS_WITH_AS(move_to(g, b, thr),
                         doctest::Contains("is a gpu_kernel, which runs on a gpu_stream, not on "
                                           "resource #2 \"thread\" (a cpu_thread)"),
                         error);
    CHECK(g.resource_of(x) == thr);
    CHECK(g.resource_of(b) == s1);
    CHECK(g.has_dependency(a, b));
  }
}
