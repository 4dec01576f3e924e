// Tests of depend.hpp: a task waits for others, program order between two tasks, a dependency moved, reachability.
// SPDX-License-Identifier: MIT
#include <daydream/depend.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace daydream;

using testing::check_span;
using testing::launches;

TEST_CASE("reachable_from marks what comes after a task, the task included") {
  launches s;
  auto& g = s.g;
  auto after = reachable_from(g, s.l1);
  CHECK(after[s.l1]);
  CHECK(after[s.l2]);
  CHECK(after[s.k1]);
  CHECK(after[s.k2]);
  after = reachable_from(g, s.k1);
  CHECK_FALSE(after[s.l1]);
  CHECK_FALSE(after[s.l2]);
  CHECK(after[s.k2]);
  CHECK_THROWS_AS(reachable_from(g, 99), error);
}

TEST_CASE("wait_for makes a task wait for others, once each") {
  launches s;
  auto& g = s.g;
  SUBCASE("one task") {
    CHECK(wait_for(g, s.l2, s.k1, dep_kind::sync));
    CHECK(g.dependency_kind(s.k1, s.l2) == dep_kind::sync);
    CHECK_FALSE(wait_for(g, s.l2, s.k1, dep_kind::data)); // there already: its kind stays
    CHECK(g.dependency_kind(s.k1, s.l2) == dep_kind::sync);
    CHECK_FALSE(wait_for(g, s.l2, s.l2, dep_kind::data)); // not on itself
    auto r = replay(g);
    check_span(r, s.l2, 35, 40);
  }
  SUBCASE("a range: the waiter itself and existing dependencies are left out") {
    const std::vector<task_id> ends{s.l1, s.k1, s.k2};
    CHECK(wait_for(g, s.k2, ends, dep_kind::comm) == 1); // l1 -> k2 only: k1 -> k2 exists
    CHECK(g.dependency_kind(s.l1, s.k2) == dep_kind::comm);
    CHECK(g.dependency_kind(s.k1, s.k2) == dep_kind::stream_order);
  }
  SUBCASE("tasks that come after the waiter are skipped on request") {
    const std::vector<task_id> ts{s.k2, s.k1};
    CHECK(wait_for(g, s.l2, ts, dep_kind::sync, on_cycle::skip) == 1); // k2 comes after l2
    CHECK_FALSE(g.has_dependency(s.k2, s.l2));
    CHECK(g.has_dependency(s.k1, s.l2));
    CHECK_NOTHROW(check_invariants(g));
    CHECK(wait_for(g, s.l2, ts, dep_kind::sync) == 1); // added anyway: a cycle
    CHECK_THROWS_AS(check_invariants(g), error);
  }
  SUBCASE("a removed task is refused") {
    remove(g, s.k1);
    CHECK_THROWS_AS(wait_for(g, s.l2, s.k1, dep_kind::sync), error);
    const std::vector<task_id> ts{s.k1};
    CHECK_THROWS_AS(wait_for(g, s.l2, ts, dep_kind::sync), error);
  }
}

TEST_CASE("add_program_order joins two runs of a resource's program order") {
  launches s;
  auto& g = s.g;
  auto k3 = insert(g, gpu_kernel{}, {.name = "loose", .duration = 4, .resource = s.st});
  CHECK(add_program_order(g, s.k2, k3));
  CHECK(g.dependency_kind(s.k2, k3) == dep_kind::stream_order);
  CHECK(next_on_resource(g, s.k2) == k3);
  auto c = insert(g, cpu_task{}, {.name = "late", .duration = 1, .resource = s.thr});
  CHECK(add_program_order(g, s.l2, c));
  CHECK(g.dependency_kind(s.l2, c) == dep_kind::cpu_order);
  CHECK_THROWS_WITH_AS(add_program_order(g, s.l1, s.k1), doctest::Contains("not on one resource"), error);
  auto r = replay(g);
  check_span(r, k3, 45, 49);
}

TEST_CASE("move_dependency moves a dependency to other ends, keeping its kind") {
  launches s;
  auto& g = s.g;
  auto k3 = insert_after(g, gpu_kernel{}, {.name = "copy of relu", .duration = 4}, s.k2);
  auto user = insert(g, cpu_task{}, {.name = "user", .duration = 1, .resource = s.thr},
                     {edge_from(s.k2, dep_kind::sync)});
  CHECK(move_dependency(g, {s.k2, user, dep_kind::sync}, k3, user));
  CHECK_FALSE(g.has_dependency(s.k2, user));
  CHECK(g.dependency_kind(k3, user) == dep_kind::sync);
  CHECK_THROWS_WITH_AS(move_dependency(g, {s.k2, user, dep_kind::sync}, k3, user), doctest::Contains("no dependency"),
                       error);
  CHECK_FALSE(move_dependency(g, {k3, user, dep_kind::sync}, k3, user)); // to where it is
  CHECK(g.has_dependency(k3, user));
  auto r = replay(g);
  check_span(r, user, 49, 50);
}
