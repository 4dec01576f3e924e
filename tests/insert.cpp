// Tests of insert.hpp: a task with dependencies, into a program order, a kernel with its launch (or launched like another), a copy of a subgraph.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <array>
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

TEST_CASE("edge_from, edge_to and edges_from name the dependencies of a task about to be inserted") {
  static_assert(edge_from(3, dep_kind::data) == dependency{3, no_task, dep_kind::data});
  static_assert(edge_to(4, dep_kind::sync) == dependency{no_task, 4, dep_kind::sync});
  launches s;
  const std::vector<task_id> ready{s.k1, s.k2};
  CHECK(edges_from(ready, dep_kind::comm) ==
        std::vector<dependency>{{s.k1, no_task, dep_kind::comm}, {s.k2, no_task, dep_kind::comm}});
  const std::vector<handle<gpu_kernel>> handles{s.k2};
  CHECK(edges_from(handles, dep_kind::data) == std::vector<dependency>{{s.k2, no_task, dep_kind::data}});
}

TEST_CASE("insert takes its dependencies as a braced list, a vector or any range") {
  launches s;
  auto& g = s.g;
  SUBCASE("a vector") {
    std::vector<dependency> deps = edges_from(std::vector<task_id>{s.k1, s.l2}, dep_kind::data);
    deps.push_back(edge_to(s.k2, dep_kind::control));
    auto t = insert(g, gpu_kernel{}, {.name = "x", .duration = 1, .resource = s.st}, deps);
    CHECK(g.dependency_kind(s.k1, t) == dep_kind::data);
    CHECK(g.dependency_kind(s.l2, t) == dep_kind::data);
    CHECK(g.dependency_kind(t, s.k2) == dep_kind::control);
    CHECK(g.in_degree(t) == 2);
  }
  SUBCASE("another range") {
    const std::array<dependency, 1> deps{edge_from(s.l1, dep_kind::launch)};
    auto t = insert(g, gpu_kernel{}, {.name = "x", .duration = 1, .resource = s.st}, deps);
    CHECK(launch_of(g, t) == s.l1);
  }
  SUBCASE("checked before anything is added") {
    const std::vector<dependency> deps{edge_from(s.k1, dep_kind::data), edge_from(99, dep_kind::data)};
    CHECK_THROWS_AS(insert(g, gpu_kernel{}, {.name = "x", .resource = s.st}, deps), error);
    CHECK(g.size() == 4);
    CHECK(g.dependency_count() == 4);
  }
}

TEST_CASE("insert_at adds the task at its position, then its dependencies") {
  launches s;
  auto& g = s.g;
  auto sync = insert_at(g, cpu_task{cpu_call::sync}, {.name = "cudaStreamSynchronize", .duration = 2},
                        just_before(s.l2), {edge_from(s.k1, dep_kind::sync)});
  CHECK(prev_on_resource(g, sync) == s.l1);
  CHECK(next_on_resource(g, sync) == s.l2);
  CHECK(g.dependency_kind(s.k1, sync) == dep_kind::sync);
  CHECK(g.trace_start(sync) == 5); // l2's
  auto r = replay(g);
  check_span(r, sync, 35, 37); // waits for conv
  check_span(r, s.k2, 42, 52);
  SUBCASE("in no program order") {
    auto t = insert_at(g, cpu_task{}, {.name = "free", .duration = 1, .resource = s.thr}, position{},
                       {edge_to(s.l2, dep_kind::control)});
    CHECK(prev_on_resource(g, t) == no_task);
    CHECK(g.dependency_kind(t, s.l2) == dep_kind::control);
  }
  SUBCASE("a dependency naming no task is refused before anything is added") {
    CHECK_THROWS_WITH_AS(insert_at(g, cpu_task{}, {.name = "x"}, just_after(s.l1), {{no_task, no_task, dep_kind::data}}),
                         doctest::Contains("insert_at: a dependency must name a task"), error);
    CHECK(g.size() == 5);
  }
}

TEST_CASE("insert_launched adds the launched task's dependencies after its launch") {
  launches s;
  auto& g = s.g;
  auto [call, copy] = insert_launched(g, memcpy_task{.direction = copy_kind::d2h, .bytes = 8},
                                      {.name = "offload", .duration = 4, .resource = s.st}, position{},
                                      just_after(s.l1), launch_call{cpu_call::memcpy, "cudaMemcpyAsync"},
                                      {edge_from(s.k1, dep_kind::data), edge_to(s.k2, dep_kind::control)});
  CHECK(g.dependency_kind(call, copy) == dep_kind::launch);
  CHECK(g.dependency_kind(s.k1, copy) == dep_kind::data);
  CHECK(g.dependency_kind(copy, s.k2) == dep_kind::control);
  std::vector<dependency> in(g.predecessors(copy).begin(), g.predecessors(copy).end());
  REQUIRE(in.size() == 2);
  CHECK(in[1].kind == dep_kind::launch); // added first (the in-list lists the newest first)
  CHECK_NOTHROW(check_invariants(g));
}

TEST_CASE("insert_launched_like puts GPU work next to a kernel and its call next to that kernel's launch") {
  launches s;
  auto& g = s.g;
  SUBCASE("right after") {
    auto [call, k] = insert_launched_like(g, gpu_kernel{}, {.name = "encode", .duration = 12}, just_after(s.k1));
    CHECK(g.resource_of(k) == s.st);
    CHECK(prev_on_resource(g, k) == s.k1);
    CHECK(next_on_resource(g, k) == s.k2);
    CHECK(g.trace_start(k) == 35); // conv's end in the trace
    CHECK(prev_on_resource(g, call) == s.l1);
    CHECK(next_on_resource(g, call) == s.l2);
    CHECK(g.duration(call) == 5); // as long as conv's launch
    CHECK(g.name(call) == "cudaLaunchKernel");
    CHECK(launch_of(g, k) == call);
    auto r = replay(g);
    check_span(r, k, 35, 47);
    check_span(r, s.k2, 47, 57);
  }
  SUBCASE("right before, with a call of its own and dependencies") {
    auto [call, k] = insert_launched_like(g, gpu_kernel{}, {.name = "decode", .duration = 3}, just_before(s.k2),
                                          launch_call{.name = "aten::to", .duration = 7},
                                          {edge_from(s.l1, dep_kind::data)});
    CHECK(next_on_resource(g, k) == s.k2);
    CHECK(next_on_resource(g, call) == s.l2);
    CHECK(g.name(call) == "aten::to");
    CHECK(g.duration(call) == 7);
    CHECK(g.trace_start(k) == 35); // relu's start
    CHECK(g.dependency_kind(s.l1, k) == dep_kind::data);
  }
  SUBCASE("a kernel the trace shows no launch for gets none") {
    auto k3 = insert_after(g, gpu_kernel{}, {.name = "loose", .duration = 1}, s.k2);
    auto [call, k] = insert_launched_like(g, gpu_kernel{}, {.name = "next", .duration = 1}, just_after(k3));
    CHECK_FALSE(call);
    CHECK(prev_on_resource(g, k) == k3);
  }
  SUBCASE("it needs a task to stand next to") {
    CHECK_THROWS_WITH_AS(insert_launched_like(g, gpu_kernel{}, {.name = "x"}, position{}),
                         doctest::Contains("needs a GPU task to insert next to"), error);
    CHECK(g.size() == 4);
  }
  CHECK_NOTHROW(check_invariants(g));
}

TEST_CASE("copy_subgraph copies tasks with the dependencies among them and returns the id map") {
  launches s;
  auto& g = s.g;
  reschedule(g, s.k1, 2);
  g.set_mem_delta(s.k1, 64);
  SUBCASE("every dependency among the copies, none from outside") {
    const std::vector<task_id> ts{s.l1, s.k1};
    auto map = copy_subgraph(g, g, ts);
    REQUIRE(map.size() == 4);
    CHECK(map[s.l2] == no_task);
    CHECK(map[s.k2] == no_task);
    const auto l1c = map[s.l1], k1c = map[s.k1];
    CHECK(g.size() == 6);
    CHECK(g.name(k1c) == "conv");
    CHECK(g.priority(k1c) == 2);
    CHECK(g.mem_delta(k1c) == 64);
    CHECK(g.dependency_kind(l1c, k1c) == dep_kind::launch);
    CHECK(g.in_degree(l1c) == 0);
    CHECK(g.out_degree(k1c) == 0);
    CHECK(prev_on_resource(g, k1c) == no_task); // in no program order
  }
  SUBCASE("with the dependencies from outside, not those of some kinds") {
    const std::vector<task_id> ts{s.l2, s.k2};
    auto map = copy_subgraph(g, g, ts, {.among = dep_kind::stream_order, .from_outside = dep_mask::all()});
    CHECK_FALSE(g.has_dependency(map[s.l2], map[s.k2])); // a launch: not among the kinds
    CHECK(g.dependency_kind(s.l1, map[s.l2]) == dep_kind::cpu_order);
    CHECK(g.dependency_kind(s.k1, map[s.k2]) == dep_kind::stream_order);
    CHECK(g.in_degree(map[s.k2]) == 1); // l2 was copied: its launch is not from outside
  }
  SUBCASE("placed and changed by a function of the original") {
    const std::vector<task_id> ts{s.l1, s.k1};
    auto map = copy_subgraph(g, g, ts, {}, [&](task_id t, task_fields& f) {
      f.phase = phase::backward;
      return just_after(t == s.l1 ? task_id(s.l2) : task_id(s.k2));
    });
    CHECK(prev_on_resource(g, map[s.l1]) == s.l2);
    CHECK(prev_on_resource(g, map[s.k1]) == s.k2);
    CHECK(g.phase_of(map[s.k1]) == phase::backward);
    CHECK(g.dependency_kind(map[s.l1], map[s.k1]) == dep_kind::launch);
    auto r = replay(g);
    check_span(r, map[s.k1], 45, 75);
  }
  SUBCASE("into another graph with the same resources") {
    graph h;
    h.add_resource(g.resource_at(s.thr));
    h.add_resource(g.resource_at(s.st));
    const std::vector<task_id> ts{s.k1, s.k2};
    auto map = copy_subgraph(h, g, ts);
    CHECK(h.size() == 2);
    CHECK(map[s.k1] == 0);
    CHECK(map[s.k2] == 1);
    CHECK(h.dependency_kind(0, 1) == dep_kind::stream_order);
    CHECK_THROWS_AS(copy_subgraph(h, g, ts, {.from_outside = dep_kind::launch}), error);
  }
  SUBCASE("a task listed twice or removed is refused before anything is copied") {
    const std::vector<task_id> twice{s.k1, s.k1};
    CHECK_THROWS_WITH_AS(copy_subgraph(g, g, twice), doctest::Contains("listed twice"), error);
    remove(g, s.l2);
    const std::vector<task_id> gone{s.k1, s.l2};
    CHECK_THROWS_AS(copy_subgraph(g, g, gone), error);
    CHECK(g.size() == 3);
  }
  CHECK_NOTHROW(check_invariants(g));
}
