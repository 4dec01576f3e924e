// Tests of unroll.hpp: iterations replayed back to back.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/unroll.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace daydream;

using testing::builder;
using testing::check_span;

TEST_CASE("unroll runs iterations back to back and gives the steady-state time") {
  builder b;
  auto thr = b.add_thread();
  auto st = b.add_stream("stream 7");
  auto f = b.cpu("forward", 10, thr, 0, cpu_call::launch);
  auto k = b.kernel("volta_sgemm", 30, st, 10);
  b.dep(f, k, dep_kind::launch);
  b.g.set_iteration(f, 0);
  b.g.set_iteration(k, 0);

  SUBCASE("GPU bound: the stream sets the pace") {
    auto u = unroll(b.g, 3);
    REQUIRE(u.graph.size() == 6);
    CHECK(u.copies == 3);
    CHECK(u.copy == std::vector<std::uint32_t>{0, 0, 1, 1, 2, 2});
    CHECK(u.original == std::vector<task_id>{f, k, f, k, f, k});
    CHECK(u.graph.iteration(4) == 2);
    CHECK(u.graph.dependency_kind(0, 2) == dep_kind::cpu_order);
    CHECK(u.graph.dependency_kind(1, 3) == dep_kind::stream_order);
    auto r = replay(u.graph);
    check_span(r, 0, 0, 10);
    check_span(r, 1, 10, 40);
    check_span(r, 2, 10, 20);
    check_span(r, 3, 40, 70);
    check_span(r, 4, 20, 30);
    check_span(r, 5, 70, 100);
    CHECK(r.makespan == 100);
    CHECK(steady_state_time(u, r) == 30);
  }
  SUBCASE("a cross-iteration dependency: the next forward waits for the kernel") {
    auto u = unroll(b.g, 3, {}, {{k, f, dep_kind::data}});
    auto r = replay(u.graph);
    check_span(r, 2, 40, 50);
    check_span(r, 3, 50, 80);
    check_span(r, 4, 80, 90);
    check_span(r, 5, 90, 120);
    CHECK(steady_state_time(u, r) == 40);
    CHECK(u.graph.dependency_kind(1, 2) == dep_kind::data);
  }
  SUBCASE("carried edge kinds repeat a dependency into the next copy") {
    auto u = unroll(b.g, 2, dep_kind::launch);
    CHECK(u.graph.has_dependency(0, 3)); // forward of copy 0 -> kernel of copy 1
    CHECK(u.graph.dependency_kind(0, 3) == dep_kind::launch);
  }
  SUBCASE("one copy is the graph itself") {
    auto u = unroll(b.g, 1);
    auto r = replay(u.graph);
    CHECK(steady_state_time(u, r) == 40);
  }
  SUBCASE("zero copies are refused") { CHECK_THROWS_AS(unroll(b.g, 0), error); }
}

TEST_CASE("unroll does not chain the copies of a fair-share link") {
  builder b;
  auto link = b.add_link("nic0");
  b.transfer("a", 100, link);
  b.transfer("b", 100, link);
  auto u = unroll(b.g, 2);
  CHECK(u.graph.dependency_count() == 0);
  auto r = replay(u.graph);
  CHECK(r.makespan == 400); // four transfers of 100 sharing the link
}
