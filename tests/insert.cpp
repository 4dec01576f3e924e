// Tests of insert.hpp: a task with dependencies, into a program order, a kernel with its launch.
// SPDX-License-Identifier: MIT
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

TEST_CASE("insert adds a task with explicit dependencies") {
  launches s;
  auto& g = s.g;
  auto k = insert(g, gpu_kernel{}, {.name = "decode", .duration = 40, .resource = s.st},
                  {{s.l2, no_task, dep_kind::launch}, {no_task, s.k2, dep_kind::data}});
  CHECK(g.size() == 5);
  CHECK(g.dependency_kind(s.l2, k) == dep_kind::launch);
  CHECK(g.dependency_kind(k, s.k2) == dep_kind::data);
  auto r = replay(g);
  check_span(r, k, 35, 75);    // ready at 10, but stream 7 runs k1 until 35
  check_span(r, s.k2, 75, 85); // waits for k (data)
  CHECK_NOTHROW(check_invariants(g));

  SUBCASE("a dependency must name a task, and a live one") {
    CHECK_THROWS_AS(insert(g, cpu_task{}, {.name = "x"}, {{no_task, no_task, dep_kind::data}}), error);
    remove(g, s.l1);
    CHECK_THROWS_WITH_AS(insert(g, cpu_task{}, {.name = "x"}, {{s.l1, no_task, dep_kind::data}}),
                         doctest::Contains("was removed"), error);
    CHECK(g.size() == 4); // nothing was added
  }
}

TEST_CASE("insert_between rewires the program order of a resource") {
  launches s;
  auto& g = s.g;
  SUBCASE("between two kernels of a stream") {
    auto e = insert_between(g, gpu_kernel{}, {.name = "encode", .duration = 12}, s.k1, s.k2);
    CHECK(g.resource_of(e) == s.st); // taken from the neighbours
    CHECK_FALSE(g.has_dependency(s.k1, s.k2));
    CHECK(g.dependency_kind(s.k1, e) == dep_kind::stream_order);
    CHECK(g.dependency_kind(e, s.k2) == dep_kind::stream_order);
    CHECK(g.trace_start(e) == 35); // k1's end in the trace
    CHECK(next_on_resource(g, s.k1) == e);
    CHECK(prev_on_resource(g, s.k2) == e);
    auto r = replay(g);
    check_span(r, e, 35, 47);
    check_span(r, s.k2, 47, 57);
  }
  SUBCASE("at the front and at the end of a thread") {
    auto first = insert_between(g, cpu_task{}, {.name = "first", .duration = 2, .resource = s.thr},
                                no_task, s.l1);
    auto last = insert_between(g, cpu_task{}, {.name = "last", .duration = 4}, s.l2, no_task);
    CHECK(g.dependency_kind(first, s.l1) == dep_kind::cpu_order);
    CHECK(g.dependency_kind(s.l2, last) == dep_kind::cpu_order);
    CHECK(prev_on_resource(g, first) == no_task);
    CHECK(next_on_resource(g, last) == no_task);
    auto r = replay(g);
    check_span(r, first, 0, 2);
    check_span(r, s.l1, 2, 7);
    check_span(r, last, 12, 16);
  }
  SUBCASE("the same task on both sides is refused") {
    CHECK_THROWS_AS(insert_between(g, gpu_kernel{}, {.name = "x"}, s.k1, s.k1), error);
    CHECK(g.size() == 4);
  }
  SUBCASE("neighbours on another resource are refused") {
    CHECK_THROWS_WITH_AS(insert_between(g, gpu_kernel{}, {.name = "x", .resource = s.st}, s.l1, s.k2),
                         doctest::Contains("not on the resource"), error);
    CHECK(g.size() == 4);
    CHECK(g.has_dependency(s.k1, s.k2));
  }
}

TEST_CASE("insert_after and insert_before place a task next to another") {
  launches s;
  auto& g = s.g;
  auto a = insert_after(g, gpu_kernel{}, {.name = "after conv", .duration = 3, .resource = s.thr}, s.k1);
  CHECK(g.resource_of(a) == s.st); // `f.resource` is ignored
  CHECK(next_on_resource(g, s.k1) == a);
  CHECK(next_on_resource(g, a) == s.k2);
  auto b = insert_before(g, cpu_task{}, {.name = "before l2", .duration = 1}, s.l2);
  CHECK(prev_on_resource(g, s.l2) == b);
  CHECK(prev_on_resource(g, b) == s.l1);
  CHECK(g.trace_start(b) == 5);
  auto r = replay(g);
  check_span(r, b, 5, 6);
  check_span(r, s.l2, 6, 11);
  check_span(r, a, 35, 38);
  check_span(r, s.k2, 38, 48);
  CHECK_NOTHROW(check_invariants(g));
}

TEST_CASE("insert_launched adds a kernel together with its launch call") {
  launches s;
  auto& g = s.g;
  auto [call, kernel] = insert_launched(g, gpu_kernel{.stream = 7},
                                        {.name = "gist_encode", .duration = 12, .layer = "relu1",
                                         .phase = phase::forward, .iteration = 2},
                                        s.l1, s.k1);
  CHECK(g.name(call) == "cudaLaunchKernel");
  CHECK(g.payload(call).call == cpu_call::launch);
  CHECK(g.duration(call) == 5); // copied from the launch call it follows
  CHECK(g.layer(call) == "relu1");
  CHECK(g.phase_of(call) == phase::forward);
  CHECK(g.iteration(call) == 2);
  CHECK(g.resource_of(call) == s.thr);
  CHECK(g.resource_of(kernel) == s.st);
  CHECK(g.payload(kernel).stream == 7);
  CHECK(g.dependency_kind(call, kernel) == dep_kind::launch);
  CHECK(next_on_resource(g, s.l1) == call);
  CHECK(next_on_resource(g, call) == s.l2);
  CHECK(next_on_resource(g, s.k1) == kernel);
  CHECK(next_on_resource(g, kernel) == s.k2);
  auto r = replay(g);
  check_span(r, call, 5, 10);
  check_span(r, s.l2, 10, 15);
  check_span(r, kernel, 35, 47);
  check_span(r, s.k2, 47, 57);

  SUBCASE("after a call that is not a launch, the launch costs 5 us") {
    auto op = g.add(cpu_task{}, {.name = "aten::relu", .duration = 100, .resource = s.thr});
    auto [c2, k2] = insert_launched(g, gpu_kernel{}, {.name = "k", .duration = 1, .resource = s.st}, op, no_task);
    CHECK(g.duration(c2) == 5'000);
    CHECK(g.resource_of(k2) == s.st);
    CHECK(prev_on_resource(g, k2) == no_task); // outside the stream's program order
  }
}
