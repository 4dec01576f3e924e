// Tests of the replay kernel, unroll and iteration spans on small graphs whose timelines are computed by hand.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/unroll.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace daydream;

namespace {

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

void check_span(const replay_result& r, task_id t, time_ns start, time_ns end) {
  INFO("task #" << t);
  CHECK(r.start[t] == start);
  CHECK(r.end[t] == end);
}

} // namespace

TEST_CASE("replay keeps the CPU gap after each task on its thread") {
  builder b;
  auto thr = b.add_thread();
  auto a = b.cpu("a", 10, thr, 5);
  auto c = b.cpu("b", 20, thr, 3);
  auto d = b.cpu("c", 4, thr);
  b.dep(a, c, dep_kind::cpu_order);
  b.dep(c, d, dep_kind::cpu_order);
  auto r = replay(b.g);
  check_span(r, a, 0, 10);  // then idle 5
  check_span(r, c, 15, 35); // then idle 3
  check_span(r, d, 38, 42);
  CHECK(r.makespan == 42);
  CHECK(r.busy[thr] == 34); // gaps are idle time
  CHECK(r.tasks == 3);

  SUBCASE("a gap shorter than the wait for a dependency is absorbed") {
    // x runs without a resource for 30 ns; c waits for it (ready at 30 > 10 + 5).
    auto x = b.cpu("x", 30, no_resource);
    b.dep(x, c, dep_kind::data);
    auto r2 = replay(b.g);
    check_span(r2, a, 0, 10);
    check_span(r2, x, 0, 30);
    check_span(r2, c, 30, 50);
    check_span(r2, d, 53, 57);
  }
}

TEST_CASE("replay starts a kernel when its launch call ends and serializes its stream") {
  builder b;
  auto thr = b.add_thread();
  auto st = b.add_stream("stream 7");
  auto l1 = b.cpu("cudaLaunchKernel", 5, thr, 0, cpu_call::launch);
  auto l2 = b.cpu("cudaLaunchKernel", 5, thr, 0, cpu_call::launch);
  auto k1 = b.kernel("volta_sgemm", 30, st);
  auto k2 = b.kernel("relu", 10, st);
  b.dep(l1, l2, dep_kind::cpu_order);
  b.dep(k1, k2, dep_kind::stream_order);
  b.dep(l1, k1, dep_kind::launch);
  b.dep(l2, k2, dep_kind::launch);
  auto r = replay(b.g);
  check_span(r, l1, 0, 5);
  check_span(r, l2, 5, 10);
  check_span(r, k1, 5, 35);
  check_span(r, k2, 35, 45); // launched at 10, waits for k1
  CHECK(r.makespan == 45);
  auto cp = r.critical_path();
  REQUIRE(cp.size() == 3);
  CHECK(cp[0] == critical_step{l1, binding::none, dep_kind::control});
  CHECK(cp[1] == critical_step{k1, binding::dependency, dep_kind::launch});
  CHECK(cp[2] == critical_step{k2, binding::dependency, dep_kind::stream_order});
}

TEST_CASE("replay makes a synchronizing call wait for the GPU") {
  builder b;
  auto thr = b.add_thread();
  auto st = b.add_stream("stream 7");
  auto l = b.cpu("cudaLaunchKernel", 5, thr, 0, cpu_call::launch);
  auto s = b.cpu("cudaDeviceSynchronize", 2, thr, 0, cpu_call::sync);
  auto n = b.cpu("aten::add", 3, thr);
  auto k = b.kernel("volta_sgemm", 100, st);
  b.dep(l, s, dep_kind::cpu_order);
  b.dep(s, n, dep_kind::cpu_order);
  b.dep(l, k, dep_kind::launch);
  b.dep(k, s, dep_kind::sync);
  auto r = replay(b.g);
  check_span(r, l, 0, 5);
  check_span(r, k, 5, 105);
  check_span(r, s, 105, 107);
  check_span(r, n, 107, 110);
  CHECK(r.makespan == 110);

  SUBCASE("the critical path names the edge kind of every step") {
    auto cp = r.critical_path();
    REQUIRE(cp.size() == 4);
    CHECK(cp[0].task == l);
    CHECK(cp[0].why == binding::none);
    CHECK(cp[1] == critical_step{k, binding::dependency, dep_kind::launch});
    CHECK(cp[2] == critical_step{s, binding::dependency, dep_kind::sync});
    CHECK(cp[3] == critical_step{n, binding::dependency, dep_kind::cpu_order});
  }
  SUBCASE("a faster kernel moves the sync and everything after it") {
    b.g.core().duration[k] = 40;
    auto r2 = replay(b.g);
    check_span(r2, s, 45, 47);
    check_span(r2, n, 47, 50);
  }
}

TEST_CASE("replay runs two streams concurrently") {
  builder b;
  auto thr = b.add_thread();
  auto s1 = b.add_stream("stream 7");
  auto s2 = b.add_stream("stream 13");
  auto l1 = b.cpu("cudaLaunchKernel", 5, thr, 1, cpu_call::launch);
  auto l2 = b.cpu("cudaLaunchKernel", 5, thr, 1, cpu_call::launch);
  auto l3 = b.cpu("cudaLaunchKernel", 5, thr, 1, cpu_call::launch);
  auto k1 = b.kernel("k1", 20, s1);
  auto k2 = b.kernel("k2", 20, s2);
  auto k3 = b.kernel("k3", 10, s1);
  b.dep(l1, l2, dep_kind::cpu_order);
  b.dep(l2, l3, dep_kind::cpu_order);
  b.dep(l1, k1, dep_kind::launch);
  b.dep(l2, k2, dep_kind::launch);
  b.dep(l3, k3, dep_kind::launch);
  b.dep(k1, k3, dep_kind::stream_order);
  auto r = replay(b.g);
  check_span(r, l1, 0, 5);
  check_span(r, l2, 6, 11);
  check_span(r, l3, 12, 17);
  check_span(r, k1, 5, 25);
  check_span(r, k2, 11, 31); // on its own stream: overlaps k1
  check_span(r, k3, 25, 35); // after k1 on stream 7
  CHECK(r.makespan == 35);
  CHECK(r.busy == std::vector<time_ns>{15, 30, 20});
}

TEST_CASE("two equal transfers on a fair link take twice as long as one") {
  builder b;
  auto link = b.add_link("nic0");
  auto c1 = b.transfer("allreduce 1", 100, link);
  SUBCASE("alone") {
    auto r = replay(b.g);
    check_span(r, c1, 0, 100);
    CHECK(r.busy[link] == 100);
  }
  SUBCASE("together: both progress at half speed") {
    auto c2 = b.transfer("allreduce 2", 100, link);
    auto r = replay(b.g);
    check_span(r, c1, 0, 200);
    check_span(r, c2, 0, 200);
    CHECK(r.makespan == 200);
    CHECK(r.busy[link] == 200);
    CHECK(r.duration(c1) == 200);
  }
  SUBCASE("on an exclusive link they run one after the other") {
    b.g.resource_at(link).share = sharing::exclusive;
    auto c2 = b.transfer("allreduce 2", 100, link, 1);
    auto r = replay(b.g);
    check_span(r, c1, 0, 100);
    check_span(r, c2, 100, 200);
  }
}

TEST_CASE("transfers arriving at different times share a fair link") {
  builder b;
  auto thr = b.add_thread();
  auto link = b.add_link("nic0");
  auto x = b.cpu("backward", 50, thr);
  auto c1 = b.transfer("c1", 100, link);
  auto c2 = b.transfer("c2", 100, link);
  b.dep(x, c2, dep_kind::comm);
  SUBCASE("two transfers") {
    // c1 alone for 50 (50 done), then both at half speed: c1 needs 100 more, ends at
    // 150; c2 has 50 left, alone again, ends at 200.
    auto r = replay(b.g);
    check_span(r, c1, 0, 150);
    check_span(r, c2, 50, 200);
    CHECK(r.busy[link] == 200);
  }
  SUBCASE("three transfers, one short") {
    auto c3 = b.transfer("c3", 10, link);
    b.dep(x, c3, dep_kind::comm);
    // At 50: c1 has 50 left, c2 100, c3 10; a third each: c3 ends at 80 (30 ns), then
    // c1 has 40 left at half speed: 160; c2 has 50 left alone: 210 (all 210 ns of work).
    auto r = replay(b.g);
    check_span(r, c3, 50, 80);
    check_span(r, c1, 0, 160);
    check_span(r, c2, 50, 210);
    CHECK(r.busy[link] == 210);
  }
}

TEST_CASE("a fair link splits its capacity across thirds without losing time") {
  builder b;
  auto link = b.add_link("nic0");
  auto a = b.transfer("a", 10, link);
  auto c = b.transfer("b", 10, link);
  auto d = b.transfer("c", 11, link);
  auto r = replay(b.g);
  // 10 ns of work each at a third: a and b end at 30; c has 1 left, alone: 31.
  check_span(r, a, 0, 30);
  check_span(r, c, 0, 30);
  check_span(r, d, 0, 31);
}

TEST_CASE("a priority policy changes the order among ready tasks") {
  builder b;
  auto thr = b.add_thread();
  auto ch = b.g.add_resource({"ps channel", resource_kind::other});
  auto x = b.cpu("step", 10, thr);
  auto mk = [&](std::string_view name, time_ns dur, time_ns ts) {
    auto t = b.g.add(comm_task{comm_op::push, 100}, {.name = name, .duration = dur, .resource = ch,
                                                     .trace_start = ts});
    b.dep(x, t, dep_kind::comm);
    return t;
  };
  auto a = mk("push a", 30, 100);
  auto c = mk("push b", 20, 200);
  auto d = mk("push c", 10, 300);
  SUBCASE("trace order") {
    auto r = replay(b.g);
    check_span(r, a, 10, 40);
    check_span(r, c, 40, 60);
    check_span(r, d, 60, 70);
  }
  SUBCASE("priority_policy with reschedule") {
    reschedule(b.g, d, as_soon_as_ready);
    reschedule(b.g, c, 1);
    auto r = replay(b.g, priority_policy{});
    check_span(r, d, 10, 20);
    check_span(r, a, 20, 50); // default priority 0 before 1
    check_span(r, c, 50, 70);
    // The trace order ignores priorities.
    auto t = replay(b.g, trace_order_policy{});
    check_span(t, a, 10, 40);
  }
  SUBCASE("a user policy: shortest first") {
    struct shortest_first {
      priority_key key(const graph& g, task_id t, time_ns) const { return {g.duration(t), 0, 0}; }
    };
    static_assert(selection_policy<shortest_first, graph>);
    auto r = replay(b.g, shortest_first{});
    check_span(r, d, 10, 20);
    check_span(r, c, 20, 40);
    check_span(r, a, 40, 70);
  }
}

TEST_CASE("trace order starts the earliest ready task, ties by trace start then id") {
  builder b;
  auto st = b.add_stream("stream 7");
  auto z = b.kernel("blocker", 20, st, 0);
  auto p = b.cpu("p", 5, no_resource);
  auto q = b.cpu("q", 8, no_resource);
  auto a = b.kernel("a", 10, st, 300);
  auto c = b.kernel("b", 10, st, 100);
  b.dep(p, a, dep_kind::launch);
  b.dep(q, c, dep_kind::launch);
  auto r = replay(b.g);
  check_span(r, z, 0, 20);
  check_span(r, a, 20, 30); // ready at 5, before b (ready at 8) despite its later trace start
  check_span(r, c, 30, 40);
  CHECK(r.why[a] == binding::resource);
  CHECK(r.pred[a] == z);

  SUBCASE("equal ready times: the earlier trace start wins") {
    builder e;
    auto s = e.add_stream("stream 7");
    auto late = e.kernel("late", 10, s, 50);
    auto early = e.kernel("early", 10, s, 40);
    auto tie = e.kernel("tie", 10, s, 50);
    auto r2 = replay(e.g);
    check_span(r2, early, 0, 10);
    check_span(r2, late, 10, 20); // same trace start as `tie`: smaller id first
    check_span(r2, tie, 20, 30);
  }
}

TEST_CASE("the critical path records a wait for a resource") {
  builder b;
  auto st = b.add_stream("stream 7");
  auto a = b.kernel("a", 10, st, 0);
  auto c = b.kernel("b", 5, st, 1);
  auto r = replay(b.g);
  check_span(r, a, 0, 10);
  check_span(r, c, 10, 15);
  auto cp = r.critical_path();
  REQUIRE(cp.size() == 2);
  CHECK(cp[0] == critical_step{a, binding::none, dep_kind::control});
  CHECK(cp[1].task == c);
  CHECK(cp[1].why == binding::resource);
}

TEST_CASE("tasks without a resource run as soon as they are ready") {
  builder b;
  auto a = b.cpu("a", 10, no_resource, 100);
  auto c = b.cpu("b", 7, no_resource);
  auto d = b.cpu("c", 0, no_resource);
  b.dep(a, d, dep_kind::data);
  b.dep(c, d, dep_kind::data);
  auto r = replay(b.g);
  check_span(r, a, 0, 10); // no resource: no gap either
  check_span(r, c, 0, 7);
  check_span(r, d, 10, 10);
  CHECK(r.pred[d] == a);
  CHECK(r.edge[d] == dep_kind::data);
}

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

TEST_CASE("iteration_time measures from one iteration's first start to the next one's") {
  builder b;
  auto thr = b.add_thread();
  auto a = b.cpu("a", 10, thr, 2);
  auto c = b.cpu("b", 5, thr);
  auto d = b.cpu("c", 10, thr);
  auto e = b.cpu("d", 3, thr);
  b.dep(a, c, dep_kind::cpu_order);
  b.dep(c, d, dep_kind::cpu_order);
  b.dep(d, e, dep_kind::cpu_order);
  b.g.set_iteration(d, 1);
  b.g.set_iteration(e, 1);
  auto x = b.cpu("setup", 1, no_resource);
  b.g.set_iteration(x, -1); // outside any iteration: ignored
  auto r = replay(b.g);
  check_span(r, c, 12, 17);
  check_span(r, d, 17, 27);
  auto spans = iteration_spans(b.g, r);
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].iteration == 0);
  CHECK(spans[0].begin == 0);
  CHECK(spans[0].end == 17);
  CHECK(spans[0].last_end == 17);
  CHECK(spans[0].tasks == 2);
  CHECK(spans[1].begin == 17);
  CHECK(spans[1].end == 30);
  CHECK(iteration_time(b.g, r, 0) == 17);
  CHECK(iteration_time(b.g, r, 1) == 13);
  CHECK(iteration_time(b.g, r, 2) == -1);
}

TEST_CASE("a cycle is rejected with its tasks named") {
  builder b;
  auto thr = b.add_thread();
  auto root = b.cpu("root", 1, thr);
  auto a = b.cpu("alpha", 1, thr);
  auto c = b.cpu("beta", 1, thr);
  auto d = b.cpu("gamma", 1, thr);
  b.dep(root, a, dep_kind::cpu_order);
  b.dep(a, c, dep_kind::cpu_order);
  b.dep(c, d, dep_kind::data);
  b.dep(d, a, dep_kind::control);
  CHECK(find_cycle(b.g) == std::vector<task_id>{a, c, d, a});
  std::string msg;
  try {
    replay(b.g);
  } catch (const error& e) {
    msg = e.what();
  }
  CHECK(msg.find("cycle") != std::string::npos);
  CHECK(msg.find("#1 \"alpha\" -> #2 \"beta\" -> #3 \"gamma\" -> #1 \"alpha\"") != std::string::npos);
  CHECK_THROWS_WITH_AS(check_acyclic(b.g), doctest::Contains("\"gamma\""), error);
  CHECK_THROWS_AS(check_invariants(b.g), error);
  b.g.remove_dependency(d, a);
  CHECK(find_cycle(b.g).empty());
  CHECK_NOTHROW(replay(b.g));
}

TEST_CASE("peak memory is the highest running sum of mem_delta in start order") {
  builder b;
  auto s1 = b.add_stream("stream 7");
  auto s2 = b.add_stream("stream 13");
  auto alloc1 = b.kernel("alloc1", 10, s1);
  auto free1 = b.kernel("free1", 10, s1);
  auto alloc2 = b.kernel("alloc2", 5, s2);
  auto free2 = b.kernel("free2", 5, s2);
  b.dep(alloc1, free1, dep_kind::stream_order);
  b.dep(alloc2, free2, dep_kind::stream_order);
  b.g.set_mem_delta(alloc1, 100);
  b.g.set_mem_delta(free1, -100);
  b.g.set_mem_delta(alloc2, 70);
  b.g.set_mem_delta(free2, -70);
  // Starts: alloc1 0, alloc2 0, free2 5, free1 10: running 100, 170, 100, 0.
  CHECK(replay(b.g).peak_memory == 170);
  SUBCASE("serialized, the allocations no longer overlap") {
    b.dep(free1, alloc2, dep_kind::data);
    CHECK(replay(b.g).peak_memory == 100);
  }
}

TEST_CASE("replay is deterministic and rejects an unknown resource") {
  builder b;
  auto thr = b.add_thread();
  auto st = b.add_stream("stream 7");
  for (int i = 0; i < 20; ++i) {
    auto l = b.cpu("launch", 3, thr, 1, cpu_call::launch, i);
    auto k = b.kernel("k", 7, st, i);
    b.dep(l, k, dep_kind::launch);
  }
  auto r1 = replay(b.g), r2 = replay(b.g);
  CHECK(r1.start == r2.start);
  CHECK(r1.end == r2.end);
  CHECK(r1.pred == r2.pred);
  b.g.core().res[0] = 99;
  CHECK_THROWS_WITH_AS(replay(b.g), doctest::Contains("resource #99"), error);
}

TEST_CASE("an empty graph replays to nothing") {
  graph g;
  auto r = replay(g);
  CHECK(r.makespan == 0);
  CHECK(r.tasks == 0);
  CHECK(r.critical_path().empty());
  CHECK(iteration_spans(g, r).empty());
}
