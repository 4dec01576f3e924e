// Tests of remove.hpp: removal with bridging, of one task or a range.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace daydream;

using testing::check_span;
using testing::launches;

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
