// Tests of io/format.hpp: {fmt} output of handles, task refs, enums, dependencies and critical paths.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/format.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

using namespace daydream;

TEST_CASE("handles print as kind#id, task refs and described tasks add the name") {
  graph g;
  auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5});
  auto k = g.add(gpu_kernel{}, {.name = "volta_sgemm", .duration = 30});
  CHECK(fmt::format("{}", k) == "gpu_kernel#1");
  CHECK(fmt::format("{}", handle<memcpy_task>{}) == "memcpy_task#none");
  CHECK(fmt::format("[{:>14}]", k) == "[  gpu_kernel#1]");
  CHECK(fmt::format("{}", io::describe(g, k)) == "gpu_kernel#1 \"volta_sgemm\"");
  for (auto t : tasks<gpu_kernel>(g)) CHECK(fmt::format("{}", t) == "gpu_kernel#1 \"volta_sgemm\"");
  for (auto t : tasks(g)) CHECK(fmt::format("{}", t).find(std::string(g.name(t))) != std::string::npos);
  remove(g, l);
  CHECK(fmt::format("{}", io::describe(g, l)) == "#0 (removed)");
  // doctest prints handles through the same formatter.
  CHECK(doctest::toString(k) == doctest::String("gpu_kernel#1"));
}

TEST_CASE("enums print as their names") {
  CHECK(fmt::format("{}", phase::weight_update) == "weight_update");
  CHECK(fmt::format("{}", dep_kind::stream_order) == "stream_order");
  CHECK(fmt::format("{}", resource_kind::copy_engine) == "copy_engine");
  CHECK(fmt::format("{}", sharing::fair) == "fair");
  CHECK(fmt::format("{}", cpu_call::sync) == "sync");
  CHECK(fmt::format("{}", copy_kind::d2h) == "d2h");
  CHECK(fmt::format("{}", comm_op::reduce_scatter) == "reduce_scatter");
  CHECK(fmt::format("{}", binding::resource) == "resource");
  CHECK(fmt::format("{:<8}|", phase::forward) == "forward |");
  CHECK(toString(dep_kind::launch) == doctest::String("launch")); // what failed checks print
}

TEST_CASE("dependencies, masks, keys, resources and steps print compactly") {
  CHECK(fmt::format("{}", dependency{3, 7, dep_kind::launch}) == "#3 -launch-> #7");
  CHECK(fmt::format("{}", dep_mask{dep_kind::sync, dep_kind::launch}) == "{launch, sync}");
  CHECK(fmt::format("{}", dep_mask{}) == "{}");
  CHECK(fmt::format("{}", priority_key{1, -2, 3}) == "(1, -2, 3)");
  CHECK(fmt::format("{}", resource{"stream 7", resource_kind::gpu_stream}) == "stream 7 [gpu_stream]");
  CHECK(fmt::format("{}", resource{"nic0", resource_kind::link, sharing::fair}) == "nic0 [link, fair]");
  CHECK(fmt::format("{}", critical_step{4, binding::dependency, dep_kind::sync}) == "#4 after sync");
  CHECK(fmt::format("{}", critical_step{4, binding::resource, dep_kind::sync}) == "#4 after its resource");
  CHECK(fmt::format("{}", critical_step{0, binding::none, dep_kind::control}) == "#0 at the start");
}

TEST_CASE("a critical path prints one step per line with its edge and times") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5, .resource = thr});
  auto k = g.add(gpu_kernel{}, {.name = "volta_sgemm", .duration = 30, .resource = st});
  auto k2 = g.add(gpu_kernel{}, {.name = "relu", .duration = 1, .resource = st, .trace_start = 1});
  g.add_dependency(l, k, dep_kind::launch);
  auto r = replay(g);
  CHECK(fmt::format("{}", io::describe_path(g, r)) ==
        "  cpu_task#0 \"cudaLaunchKernel\" [0, 5)\n"
        "  -launch-> gpu_kernel#1 \"volta_sgemm\" [5, 35)\n");
  (void)k2;
  CHECK(fmt::format("{}", io::describe_path(g, r, {{k2, binding::resource, dep_kind::control}})) ==
        "  -resource-> gpu_kernel#2 \"relu\" [0, 1)\n");
}
