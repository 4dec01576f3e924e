// Tests of the mutating primitives: insert, remove (with bridging), update and reschedule.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>
#include <support/launches.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
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

TEST_CASE("remove bridges the dependencies of a mid-chain task") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto a = g.add(cpu_task{}, {.name = "a", .duration = 1, .resource = thr});
  auto b = g.add(cpu_task{}, {.name = "b", .duration = 1, .resource = thr});
  auto c = g.add(cpu_task{}, {.name = "c", .duration = 1, .resource = thr});
  auto x = g.add(gpu_kernel{}, {.name = "x", .duration = 1});
  g.add_dependency(a, b, dep_kind::cpu_order);
  g.add_dependency(b, c, dep_kind::cpu_order);
  g.add_dependency(b, x, dep_kind::launch);
  remove(g, b);
  CHECK_FALSE(g.contains(b));
  CHECK(g.size() == 3);
  CHECK(g.dependency_kind(a, c) == dep_kind::cpu_order); // the kind of b -> c
  CHECK(g.dependency_kind(a, x) == dep_kind::launch);    // the kind of b -> x
  CHECK(g.dependency_count() == 2);
  CHECK_THROWS_AS(remove(g, b), error);
  CHECK_NOTHROW(check_invariants(g));

  SUBCASE("an existing edge keeps its kind") {
    auto y = g.add(cpu_task{}, {.name = "y"});
    g.add_dependency(a, y, dep_kind::data);
    g.add_dependency(y, c, dep_kind::control);
    remove(g, y);
    CHECK(g.dependency_kind(a, c) == dep_kind::cpu_order);
  }
}

TEST_CASE("removing a launch call re-parents its kernel onto the call's predecessor") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto p = g.add(cpu_task{}, {.name = "aten::conv2d", .duration = 10, .resource = thr});
  auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr});
  auto n = g.add(cpu_task{}, {.name = "aten::relu", .duration = 3, .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "conv", .duration = 20, .resource = st});
  g.add_dependency(p, l, dep_kind::cpu_order);
  g.add_dependency(l, n, dep_kind::cpu_order);
  g.add_dependency(l, k, dep_kind::launch);
  auto before = replay(g);
  check_span(before, l, 10, 15);
  check_span(before, k, 15, 35);

  remove(g, l);
  CHECK(g.contains(k)); // the kernel stays
  CHECK(g.dependency_kind(p, k) == dep_kind::launch);
  CHECK(g.dependency_kind(p, n) == dep_kind::cpu_order);
  auto after = replay(g);
  check_span(after, n, 10, 13);
  check_span(after, k, 10, 30); // launched as soon as the thread reaches that point

  SUBCASE("a first call has no predecessor: its kernel becomes a root") {
    remove(g, p);
    CHECK(g.in_degree(k) == 0);
    check_span(replay(g), k, 0, 20);
  }
  SUBCASE("to drop the kernel too, remove it as well") {
    remove(g, k);
    CHECK(g.size() == 2);
    CHECK(replay(g).makespan == 13);
  }
}

TEST_CASE("remove takes a range of tasks") {
  launches s;
  auto& g = s.g;
  std::vector<handle<gpu_kernel>> ks{s.k1, s.k2};
  remove(g, ks);
  CHECK(g.size() == 2);
  CHECK(g.dependency_count() == 1);
  std::vector<task_id> calls{s.l1, s.l2};
  remove(g, calls);
  CHECK(g.empty());
  CHECK(g.dependency_count() == 0);
  CHECK_NOTHROW(check_invariants(g));
}

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
}

TEST_CASE("reschedule sets the priority that priority policies read") {
  graph g;
  auto t = g.add(cpu_task{}, {.name = "t"});
  CHECK(g.priority(t) == default_priority);
  reschedule(g, t, as_soon_as_ready);
  CHECK(g.priority(t) == std::numeric_limits<std::int64_t>::min());
  reschedule(g, t, 3);
  CHECK(g.priority(t) == 3);
  priority_policy p;
  CHECK(p.key(g, t, 100) == priority_key{3, 100, 0});
  trace_order_policy o;
  CHECK(o.key(g, t, 100) == priority_key{100, 0, 0});
  remove(g, t);
  CHECK_THROWS_AS(reschedule(g, t, 1), error);
}
