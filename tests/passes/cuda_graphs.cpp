// Tests of the cuda_graphs pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/cuda_graphs.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/cuda_graphs.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

namespace {

/// Launch costs easy to follow by hand: a graph launch costs 50 ns + 10 ns per node, and
/// a graph's nodes are 2 ns apart on the GPU.
const cuda_graphs small{.launch_us = 0.05, .node_us = 0.01, .gap_us = 0.002};

/// A launch-bound step: five ops whose launches take 100 ns and kernels 10 ns.
/// Baseline (by hand): launches [0,100) ... [400,500), kernel i runs [100i+100, 100i+110):
/// the step ends at 510.
builder launch_bound() {
  builder b;
  for (int i = 0; i < 5; ++i)
    b.op("vectorized_elementwise_kernel<add>", 10, "layer" + std::to_string(i), i < 3 ? phase::forward : phase::backward,
         0, 0, "aten::add", 100);
  return b;
}

} // namespace

TEST_CASE("cuda_graphs: a launch-bound step becomes one graph launch and its kernels run back to back") {
  auto b = launch_bound();
  CHECK(replay(b.g).makespan == 510);
  auto rep = small(b.g);
  REQUIRE(rep.applied);
  // One launch of 50 + 5 x 10 = 100 ns; the kernels are ready at 100 and run 10 ns each,
  // 2 ns apart: the last ends at 100 + 4 x 12 + 10 = 158.
  CHECK(replay(b.g).makespan == 158);
  CHECK(rep.value("graph launches (captured regions)") == "1");
  CHECK(rep.value("GPU tasks in graphs") == "5");
  CHECK(rep.value("graph launch cost").find("(given); 100 ns in all") != std::string::npos);
  CHECK(rep.value("left eager") == "nothing");
}

TEST_CASE("cuda_graphs: a host sync stays eager and splits the step into two graphs") {
  builder b;
  b.op("vectorized_elementwise_kernel<add>", 10, "l0", phase::forward, 0, 0, "aten::add", 100);
  auto second = b.op("vectorized_elementwise_kernel<add>", 10, "l1", phase::forward, 0, 0, "aten::add", 100);
  // .item() after the second op waits for its kernel, then the step goes on
  auto sync = b.cpu("aten::item", 5, "l1", phase::forward);
  b.g.add_dependency(second.kernel, sync, dep_kind::sync);
  for (int i = 2; i < 5; ++i)
    b.op("vectorized_elementwise_kernel<add>", 10, "l" + std::to_string(i), phase::backward, 0, 0, "aten::add", 100);
  auto rep = small(b.g);
  // Graph 1: launch 50 + 2 x 10 = 70, k1 [70,80), k2 [82,92); the sync [92,97); graph 2:
  // launch 50 + 3 x 10 = 80 [97,177), k3 [177,187), k4 [189,199), k5 [201,211).
  CHECK(replay(b.g).makespan == 211);
  CHECK(rep.value("graph launches (captured regions)") == "2");
  CHECK(rep.value("left eager") == "aten::item (waits for the GPU) x1");
}

TEST_CASE("cuda_graphs: scope=model leaves the optimizer step eager") {
  builder b;
  auto f = b.op("sgemm", 10, "fc", phase::forward, 0, 0, "aten::mm", 100);
  b.op("sgemm", 10, "fc", phase::backward, 0, 0, "aten::mm", 100);
  auto w = b.op("multi_tensor_apply_kernel", 10, "", phase::weight_update, 0, 0, "aten::_foreach_add_", 100);
  auto model = b.g;
  auto rep = apply(model, cuda_graphs{.scope = "model", .launch_us = 0.05, .node_us = 0.01, .gap_us = 0.002});
  // forward + backward: one launch of 70 ns, kernels [70,80) [82,92); the optimizer's
  // launch stays [70,170), its kernel [170,180).
  CHECK(model.duration(f.call) == 70);
  CHECK(model.duration(w.call) == 100);
  CHECK(replay(model).makespan == 180);
  CHECK(rep.applied);
  // The whole step: one launch of 80 ns, kernels [80,90) [92,102) [104,114).
  auto step = b.g;
  apply(step, small);
  CHECK(replay(step).makespan == 114);
}

TEST_CASE("cuda_graphs: a GPU-bound step gains little, and the report says why") {
  builder b;
  for (int i = 0; i < 4; ++i) b.op("sgemm", 1000, "fc", phase::forward, 0, 0, "aten::mm", 10);
  const auto before = replay(b.g).makespan; // 10 + 4 x 1000
  CHECK(before == 4010);
  auto rep = apply(b.g, cuda_graphs{});
  CHECK(rep.applied);
  CHECK(replay(b.g).makespan >= before - 10);
  CHECK(rep.value("graph launch cost") == "20.0 us + 2.00 us per node (defaults: the trace has no graph launch); "
                                          "28 us in all");
  REQUIRE(rep.notes.size() == 1);
  CHECK(rep.notes[0].find("GPU-bound") != std::string::npos);
}

TEST_CASE("cuda_graphs: a trace already launched by graphs is left alone; its launches give the cost") {
  builder b;
  auto launch = b.g.add(cpu_task{cpu_call::launch, b.g.intern(""), 0, 0},
                        {.name = "cudaGraphLaunch", .duration = 44'000, .resource = b.thread, .trace_start = 0,
                         .phase = phase::forward, .iteration = 0});
  task_id last = no_task;
  for (int i = 0; i < 12; ++i) {
    auto k = b.g.add(gpu_kernel{0, 7, 0, 0}, {.name = "triton_poi_fused_add_0", .duration = 1000,
                                              .resource = b.stream, .trace_start = 1 + i, .phase = phase::forward,
                                              .iteration = 0});
    b.g.add_dependency(launch, k, dep_kind::launch);
    if (last != no_task) b.g.add_dependency(last, k, dep_kind::stream_order);
    last = k;
  }
  b.last_cpu = launch;
  b.last_gpu = last;
  auto g = b.g;
  auto rep = apply(g, cuda_graphs{});
  CHECK_FALSE(rep.applied);
  CHECK(rep.reason.find("already launches 100%") != std::string::npos);
  // With eager work beside it (20 ms of GPU time), the trace's graph launch gives the
  // cost: 44 us for 12 nodes.
  b.op("sgemm", 20'000'000, "fc", phase::forward, 0, 0, "aten::mm", 10);
  auto rep2 = apply(b.g, cuda_graphs{});
  CHECK(rep2.applied);
  CHECK(rep2.value("graph launches already in the trace (unchanged)") == "1");
  CHECK(rep2.value("graph launch cost").find("(fit to the trace's 1 graph launches)") != std::string::npos);
  CHECK(rep2.value("left eager") == "graph launches already in the trace x1");
}

TEST_CASE("cuda_graphs: parameters, and what it says where it cannot apply") {
  auto p = from_params<cuda_graphs>(pass_params::parse("cuda_graphs", "scope=model,launch_us=5,node_us=1,gap_us=0"));
  CHECK(p.scope == "model");
  CHECK(p.launch_us == 5);
  CHECK(p.node_us == 1);
  CHECK(p.gap_us == 0);
  CHECK_THROWS_AS(from_params<cuda_graphs>(pass_params::parse("cuda_graphs", "scope=layer")), daydream::usage_error);
  CHECK_THROWS_AS(from_params<cuda_graphs>(pass_params::parse("cuda_graphs", "gap_us=-1")), daydream::error);
  CHECK_THROWS_AS(from_params<cuda_graphs>(pass_params::parse("cuda_graphs", "scop=model")), daydream::error);
  builder b;
  b.cpu("aten::empty", 10, "", phase::forward);
  CHECK_FALSE(cuda_graphs::applicable(b.g));
  CHECK(cuda_graphs::not_applicable(b.g).find("ProfilerActivity.CUDA") != std::string::npos);
  auto rep = apply(b.g, cuda_graphs{});
  CHECK_FALSE(rep.applied);
}

TEST_CASE("cuda_graphs obeys the pass laws") {
  testing::check_pass_laws(cuda_graphs{}, pass_fixtures(), {.allow_refusal = true});
}
