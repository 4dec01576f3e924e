// Two-translation-unit link test, second unit: the same headers and the same inline functions as link_a.cpp.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/format.hpp>

#include <fmt/format.h>

#include <string>

daydream::graph link_b_graph() {
  using namespace daydream;
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "volta_sgemm", .duration = 30, .resource = st});
  g.add_dependency(l, k, dep_kind::launch);
  check_invariants(g);
  return g;
}

std::string link_b_summary(const daydream::graph& g) {
  auto r = daydream::replay(g);
  std::string s = fmt::format("{} tasks, {} ns", g.size(), r.makespan);
  for (auto step : r.critical_path()) s += fmt::format(", {}", daydream::io::describe(g, step.task));
  return s;
}
