// Tests of kinds.hpp: built-in and user-defined kinds, kind_traits, and the resources a kind runs on.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>
#include <support/compare.hpp>
#include <support/print.hpp>
#include <support/user_kinds.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>

using namespace daydream;

namespace {

using testing::decode_task;
using testing::marker;
using testing::my_graph;

} // namespace

TEST_CASE("a task runs on a resource that fits its kind; launches go from CPU to GPU work") {
  graph g;
  auto thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto ce = g.add_resource({"copy engine", resource_kind::copy_engine});
  auto any = g.add_resource({"modelled", resource_kind::other});
  static_assert(resource_fits(resource_kind::gpu_stream, resource_kind::copy_engine));
  static_assert(!resource_fits(resource_kind::gpu_stream, resource_kind::cpu_thread));
  static_assert(!resource_fits(resource_kind::cpu_thread, resource_kind::link));
  static_assert(resource_fits(resource_kind::other, resource_kind::cpu_thread));
  static_assert(launch_fits(resource_kind::cpu_thread, resource_kind::gpu_stream));
  static_assert(!launch_fits(resource_kind::gpu_stream, resource_kind::gpu_stream));
  static_assert(!launch_fits(resource_kind::cpu_thread, resource_kind::cpu_thread));

  CHECK_THROWS_WITH_AS(g.add(gpu_kernel{}, {.name = "sgemm", .resource = thr}),
                       "daydream: task \"sgemm\" is a gpu_kernel, which runs on a gpu_stream, not "
                       "on resource #0 \"thread 1\" (a cpu_thread)",
                       error);
  CHECK_THROWS_WITH_AS(g.add(cpu_task{}, {.name = "op", .resource = st}),
                       doctest::Contains("is a cpu_task, which runs on a cpu_thread, not on resource #1"),
                       error);
  CHECK(g.empty());
  // GPU-side work on any GPU-side resource (copies and collectives run on streams in
  // traces), anything on a resource of kind `other`.
  auto call = g.add(cpu_task{.call = cpu_call::launch}, {.name = "launch", .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "k", .resource = st});
  auto copy = g.add(memcpy_task{}, {.name = "copy", .resource = st});
  auto ar = g.add(comm_task{}, {.name = "allreduce", .resource = st});
  auto copy2 = g.add(memcpy_task{}, {.name = "copy2", .resource = ce});
  auto free_op = g.add(cpu_task{}, {.name = "anywhere", .resource = any});
  CHECK(g.kind_resource(call) == resource_kind::cpu_thread);
  CHECK(g.kind_resource(copy) == resource_kind::copy_engine);

  CHECK(g.add_dependency(call, k, dep_kind::launch));
  CHECK(g.add_dependency(free_op, copy2, dep_kind::launch)); // cpu_task on `other`: still CPU work
  CHECK_THROWS_WITH_AS(g.add_dependency(k, call, dep_kind::launch),
                       "daydream: add_dependency: a launch dependency #1 gpu_kernel \"k\" -> #0 "
                       "cpu_task \"launch\" must go from CPU work to GPU-side work",
                       error);
  CHECK_THROWS_AS(g.add_dependency(k, copy, dep_kind::launch), error);     // a kernel launches nothing
  CHECK_THROWS_AS(g.add_dependency(call, free_op, dep_kind::launch), error); // CPU work is not launched
  CHECK(g.add_dependency(ar, call, dep_kind::sync)); // other kinds: any direction
  CHECK(g.add_dependency(copy, ar, dep_kind::stream_order));
  CHECK_NOTHROW(check_invariants(g));

  SUBCASE("check_invariants finds a task on a resource of the wrong kind") {
    g.core().res[k] = thr;
    CHECK_THROWS_WITH_AS(check_invariants(g),
                         doctest::Contains("#1 \"k\", a gpu_kernel, runs on resource #0 (a "
                                           "cpu_thread), which does not fit its kind"),
                         error);
  }
  SUBCASE("check_invariants finds a launch dependency that ends at CPU work") {
    g.core().link(copy2, free_op, dep_kind::launch);
    CHECK_THROWS_WITH_AS(check_invariants(g),
                         doctest::Contains("launch dependency #4 \"copy2\" -> #5 \"anywhere\" "
                                           "launches CPU work (a launch ends at GPU-side work)"),
                         error);
  }
  (void)ar;
}

TEST_CASE("a kind with a run-time name member is a kind without a constant name") {
  struct labelled {
    std::string name = "a label per task";
    std::string_view resource = "a member called resource";
  };
  using g_t = basic_graph<cpu_task, labelled>;
  static_assert(kind_traits<labelled>::name == "user_kind");
  static_assert(kind_traits<labelled>::resource == resource_kind::other);
  g_t g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto t = g.add(labelled{.name = "first"}, {.name = "x", .resource = thr});
  CHECK(g.payload(t).name == "first");
  CHECK(g.kind_name(t) == "user_kind");
}

TEST_CASE("a graph over user-defined kinds works like the built-in one") {
  my_graph g;
  auto r = g.add_resource({"loader", resource_kind::other});
  auto d = g.add(decode_task{.bytes = 1 << 20, .quality = 75}, {.name = "decode", .duration = 40, .resource = r});
  auto m = g.add(marker{}, {.name = "epoch", .duration = 0});
  auto c = g.add(cpu_task{}, {.name = "step", .duration = 10, .resource = r});
  g.add_dependency(d, c, dep_kind::data);
  g.add_dependency(m, d, dep_kind::control);
  CHECK(g.kind_name(d) == "decode_task");
  CHECK(g.kind_name(m) == "user_kind");
  CHECK(g.payload(d).quality == 75);
  auto res = replay(g);
  CHECK(res.start[c] == 40);
  CHECK(res.makespan == 50);
  auto copy = g;
  CHECK(testing::graph_difference(g, copy).empty());
}
