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
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace daydream;

using testing::builder;
using testing::check_span;

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
