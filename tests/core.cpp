#include <daydream/daydream.hpp>
#include <doctest/doctest.h>

using namespace daydream;

TEST_CASE("smoke: a launch and a kernel replay in order") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto a = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr, .gap = 2});
  auto b = g.add(cpu_task{}, {.name = "aten::add", .duration = 3, .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "kernel", .duration = 10, .resource = st});
  g.add_dependency(a, b, dep_kind::cpu_order);
  g.add_dependency(a, k, dep_kind::launch);
  auto r = replay(g);
  CHECK(r.start[a] == 0);
  CHECK(r.start[b] == 7);
  CHECK(r.start[k] == 5);
  CHECK(r.makespan == 15);
  auto cp = r.critical_path();
  REQUIRE(cp.size() == 2);
  CHECK(cp[1].edge == dep_kind::launch);
  int n = 0;
  for (auto t : tasks<gpu_kernel>(g) | where(name_matches("ker") && !in_phase(phase::backward))) { ++n; (void)t; }
  CHECK(n == 1);
  remove(g, a);
  CHECK(g.has_dependency(b, k) == false);
  check_invariants(g);
  auto u = unroll(g, 3);
  auto ru = replay(u.graph);
  CHECK(steady_state_time(u, ru) == 10);
}
