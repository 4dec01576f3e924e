// Tests of launch_of/launched_by (launch.hpp), the positional inserts, fields_of and copy_task
// (insert.hpp), add_mem_delta (update.hpp) and trace order (trace_order.hpp).
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/launch.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>
#include <support/launches.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace daydream;

using testing::check_span;
using testing::launches;

TEST_CASE("launch_of and launched_by follow launch dependencies in both directions") {
  launches s;
  auto& g = s.g;
  CHECK(launch_of(g, s.k1) == s.l1);
  CHECK(launch_of(g, s.k2) == s.l2);
  CHECK(launch_of(g, s.l1) == no_task); // a CPU call has no launch
  CHECK(launched_by(g, s.l1) == std::vector<task_id>{s.k1});
  CHECK(launched_by(g, s.k1).empty());
  // A call that launches two kernels; program-order edges are not launches.
  auto k3 = g.add(gpu_kernel{}, {.name = "bias", .duration = 2, .resource = s.st, .trace_start = 45});
  g.add_dependency(s.k2, k3, dep_kind::stream_order);
  g.add_dependency(s.l2, k3, dep_kind::launch);
  auto both = launched_by(g, s.l2);
  CHECK(sort_in_trace_order(g, both) == std::vector<task_id>{s.k2, k3});
  CHECK(launch_of(g, k3) == s.l2);
}

TEST_CASE("insert_at puts a task before or after an anchor, or in no program order") {
  launches s;
  auto& g = s.g;
  auto before = insert_at(g, gpu_kernel{}, {.name = "cast", .duration = 3}, just_before(s.k2));
  auto after = insert_at(g, gpu_kernel{}, {.name = "scale", .duration = 4}, just_after(s.k2));
  auto loose = insert_at(g, gpu_kernel{}, {.name = "loose", .duration = 1, .resource = s.st}, position{});
  CHECK(next_on_resource(g, s.k1) == before);
  CHECK(next_on_resource(g, before) == s.k2);
  CHECK(next_on_resource(g, s.k2) == after);
  CHECK(prev_on_resource(g, loose) == no_task);
  CHECK(next_on_resource(g, loose) == no_task);
  CHECK(g.trace_start(before) == g.trace_start(s.k2)); // before: the anchor's trace start
  CHECK(g.trace_start(after) == 45);                   // after: the anchor's end in the trace
  auto r = replay(g);
  check_span(r, before, 35, 38);
  check_span(r, s.k2, 38, 48);
  check_span(r, after, 48, 52);
  check_span(r, loose, 0, 1); // ready at 0, the stream is free until K1 starts at 5
  CHECK_NOTHROW(check_invariants(g));
}

TEST_CASE("insert_launched at positions inserts the call, the GPU task and the launch between them") {
  launches s;
  auto& g = s.g;
  SUBCASE("before a kernel, launched before its launch call") {
    auto [call, k] = insert_launched(g, gpu_kernel{}, {.name = "gist_decode", .duration = 7, .phase = phase::backward},
                                     just_before(s.k2), just_before(s.l2));
    CHECK(launch_of(g, k) == call);
    CHECK(g.dependency_kind(call, k) == dep_kind::launch);
    CHECK(g.duration(call) == 5); // the anchor is a launch call: its duration
    CHECK(g.phase_of(call) == phase::backward);
    CHECK(next_on_resource(g, s.l1) == call);
    CHECK(next_on_resource(g, call) == s.l2);
    CHECK(next_on_resource(g, s.k1) == k);
    // L1 [0,5) call [5,10) L2 [10,15); K1 [5,35) decode [35,42) K2 [42,52).
    auto r = replay(g);
    check_span(r, call, 5, 10);
    check_span(r, s.l2, 10, 15);
    check_span(r, k, 35, 42);
    check_span(r, s.k2, 42, 52);
  }
  SUBCASE("a copy issued by a memcpy call with a given name and duration, outside the stream's order") {
    auto copy_engine = g.add_resource({"copy engine", resource_kind::copy_engine});
    auto [call, m] = insert_launched(g, memcpy_task{.direction = copy_kind::d2h, .bytes = 64},
                                     {.name = "offload", .duration = 20, .resource = copy_engine},
                                     position{}, just_after(s.l1),
                                     launch_call{cpu_call::memcpy, "cudaMemcpyAsync", 2});
    CHECK(g.name(call) == "cudaMemcpyAsync");
    CHECK(g.payload(call).call == cpu_call::memcpy);
    CHECK(g.duration(call) == 2);
    CHECK(g.resource_of(m) == copy_engine);
    CHECK(prev_on_resource(g, m) == no_task);
    auto r = replay(g);
    check_span(r, call, 5, 7);
    check_span(r, m, 7, 27);
    check_span(r, s.l2, 7, 12);
  }
  SUBCASE("a memcpy call next to a launch call does not copy its duration") {
    auto ce = g.add_resource({"copy engine", resource_kind::copy_engine});
    auto [call, m] = insert_launched(g, memcpy_task{}, {.name = "c", .duration = 1, .resource = ce},
                                     position{}, just_after(s.l1), launch_call{.call = cpu_call::memcpy});
    CHECK(g.duration(call) == 5'000);
  }
  SUBCASE("without a CPU position no call is inserted") {
    auto [call, k] = insert_launched(g, gpu_kernel{}, {.name = "k", .duration = 1}, just_after(s.k1), position{});
    CHECK_FALSE(call);
    CHECK(launch_of(g, k) == no_task);
    CHECK(next_on_resource(g, s.k1) == k);
    CHECK(g.size() == 5);
  }
  SUBCASE("a refused GPU task leaves no call behind") {
    const auto before = g.size();
    CHECK_THROWS_AS(insert_launched(g, gpu_kernel{}, {.name = "bad", .duration = -1}, just_after(s.k1),
                                    just_after(s.l1)),
                    daydream::error);
    CHECK_THROWS_AS(insert_launched(g, gpu_kernel{}, {.name = "nowhere", .duration = 1, .resource = 99},
                                    position{}, just_after(s.l1)),
                    daydream::error);
    CHECK(g.size() == before);
    CHECK(next_on_resource(g, s.l1) == s.l2);
  }
  CHECK_NOTHROW(check_invariants(g));
}

TEST_CASE("fields_of and copy_task copy a task with its payload, priority and memory, but no edges") {
  launches s;
  auto& g = s.g;
  g.set_mem_delta(s.k1, 1'024);
  reschedule(g, s.k1, 3);
  auto f = fields_of(g, s.k1);
  CHECK(f.name == "conv");
  CHECK(f.duration == 30);
  CHECK(f.resource == s.st);
  CHECK(f.trace_start == 5);
  f.duration = 15;
  const auto c = copy_task(g, s.k1, f, just_after(s.k2));
  CHECK(g.is<gpu_kernel>(c));
  CHECK(g.name(c) == "conv");
  CHECK(g.duration(c) == 15);
  CHECK(g.mem_delta(c) == 1'024);
  CHECK(g.priority(c) == 3);
  CHECK(prev_on_resource(g, c) == s.k2);
  CHECK(launch_of(g, c) == no_task); // dependencies are not copied
  auto r = replay(g);
  check_span(r, c, 45, 60);
  CHECK(r.peak_memory == 2'048);

  SUBCASE("add_mem_delta adds to what a task allocates") {
    add_mem_delta(g, c, -1'024);
    CHECK(g.mem_delta(c) == 0);
    add_mem_delta(g, s.l1, 10);
    CHECK(g.mem_delta(s.l1) == 10);
    CHECK_THROWS_AS(add_mem_delta(g, 1'000, 1), daydream::error);
  }
}

TEST_CASE("trace order sorts by trace start, ties by id") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto a = g.add(cpu_task{}, {.name = "a", .duration = 1, .resource = thr, .trace_start = 20});
  auto b = g.add(gpu_kernel{}, {.name = "b", .duration = 1, .resource = st, .trace_start = 10});
  auto c = g.add(gpu_kernel{}, {.name = "c", .duration = 1, .resource = st, .trace_start = 10});
  const trace_order before(g);
  CHECK(before(b, a));
  CHECK(before(b, c)); // same start: the smaller id first
  CHECK_FALSE(before(c, b));
  CHECK_FALSE(before(a, a));
  std::vector<task_id> ts{a, c, b};
  CHECK(sort_in_trace_order(g, ts) == std::vector<task_id>{b, c, a});
  CHECK(first_in_trace(g, std::vector<task_id>{a, c, b}) == b);
  CHECK(last_in_trace(g, std::vector<task_id>{c, a, b}) == a);
  CHECK(first_in_trace(g, std::vector<task_id>{}) == no_task);
}

TEST_CASE("phase_entries finds where a phase starts on each stream, per iteration") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto s1 = g.add_resource({"stream 1", resource_kind::gpu_stream});
  auto s2 = g.add_resource({"stream 2", resource_kind::gpu_stream});
  auto net = g.add_resource({"link", resource_kind::link, sharing::fair});
  auto wu = [&](auto kind, resource_id r, time_ns start, std::int32_t it) {
    return g.add(kind, {.name = "x", .duration = 1, .resource = r, .trace_start = start,
                        .phase = phase::weight_update, .iteration = it});
  };
  auto c0 = wu(cpu_task{}, thr, 1, 0);
  auto late = wu(gpu_kernel{}, s1, 30, 0);
  auto early = wu(gpu_kernel{}, s1, 20, 0);
  auto other = wu(gpu_kernel{}, s2, 40, 0);
  wu(comm_task{}, net, 5, 0); // communication is not the phase's compute
  auto only_cpu = wu(cpu_task{}, thr, 100, 1);
  g.add(gpu_kernel{}, {.name = "fwd", .duration = 1, .resource = s1, .trace_start = 0, .phase = phase::forward,
                       .iteration = 2});
  auto e = phase_entries(g, phase::weight_update);
  CHECK(e.size() == 2);
  CHECK(e[0] == std::vector<task_id>{early, other});
  CHECK(e[1] == std::vector<task_id>{only_cpu});
  (void)late;
  (void)c0;
  CHECK(phase_entries(g, phase::forward)[2].size() == 1);
  CHECK(phase_entries(g, phase::backward).empty());
}
