// Tests of the fused_adam pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/launch.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/fused_adam.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("fused_adam replaces the optimizer step with one launch and one kernel") {
  mlp m;
  auto& g = m.b.g;
  const auto before = g.size();
  auto rep = fused_adam{}(g);
  CHECK(g.size() == before - 4 + 2);
  CHECK_FALSE(g.contains(m.opt1.kernel));
  CHECK_FALSE(g.contains(m.opt2.call));
  std::vector<task_id> fused;
  for (auto k : tasks<gpu_kernel>(g) | where(name_matches("^fused_adam$"))) fused.push_back(k);
  REQUIRE(fused.size() == 1);
  CHECK(g.duration(fused[0]) == 21); // 0.35 x (30 + 30), rounded
  CHECK(g.phase_of(fused[0]) == phase::weight_update);
  auto call = launch_of(g, fused[0]);
  REQUIRE(call != no_task);
  CHECK(g.duration(call) == 10);
  CHECK(prev_on_resource(g, call) == m.fc1_b.call);
  CHECK(prev_on_resource(g, fused[0]) == m.fc1_b.kernel);
  // launches 0..40, the new one [40,50); k4 ends at 450, the fused kernel [450,471)
  CHECK(makespan(g) == 471);
  CHECK(rep.items[1].second == "4");
  check_invariants(g);
}

TEST_CASE("fused_adam takes its duration from the estimator it is given") {
  mlp m;
  optimizer_step seen;
  apply(m.b.g, fused_adam{.estimate = [&](const optimizer_step& s) { seen = s; return time_ns(5); }});
  CHECK(seen.kernels == 2);
  CHECK(seen.kernel_time == 60);
  CHECK(seen.cpu_tasks == 2);
  CHECK(seen.cpu_time == 20);
  CHECK(makespan(m.b.g) == 455);
  CHECK(fused_adam::from_params(pass_params::parse("fused_adam", "traffic=0.5")).traffic == 0.5);
}

TEST_CASE("fused_adam keeps the memory the optimizer step allocated") {
  mlp m;
  m.b.g.set_mem_delta(m.opt1.kernel, 64);
  m.b.g.set_mem_delta(m.opt2.kernel, -32);
  apply(m.b.g, fused_adam{});
  CHECK(replay(m.b.g).peak_memory == 32);
}

TEST_CASE("fused_adam obeys the pass laws") {
  testing::check_pass_laws(fused_adam{}, pass_fixtures(), {.allow_refusal = false});
}

TEST_CASE("fused_adam names the optimizer it does not model, and refuses a step that is fused already") {
  SUBCASE("SGD: applied, with a note that the traffic ratio is Adam's") {
    mlp m;
    m.b.cpu("Optimizer.step#SGD.step", 5, "", phase::weight_update);
    CHECK(fused_adam::traced_optimizers(m.b.g) == std::vector<std::string>{"SGD"});
    CHECK(fused_adam::applicable(m.b.g));
    auto rep = apply(m.b.g, fused_adam{});
    CHECK(rep.applied);
    REQUIRE(rep.notes.size() == 1);
    CHECK(rep.notes[0].find("the trace's optimizer is SGD") != std::string::npos);
    CHECK(rep.notes[0].find("give traffic= for SGD's fused kernel") != std::string::npos);
  }
  SUBCASE("Adam: applied without a note") {
    mlp m;
    m.b.cpu("Optimizer.step#AdamW.step", 5, "", phase::weight_update);
    auto rep = apply(m.b.g, fused_adam{});
    CHECK(rep.applied);
    CHECK(rep.notes.empty());
  }
  SUBCASE("an optimizer named Fused...: not applied, the graph unchanged") {
    mlp m;
    m.b.cpu("Optimizer.step#FusedAdam.step", 5, "", phase::weight_update);
    const graph before = m.b.g;
    CHECK(fused_adam::not_applicable(m.b.g) ==
          "the optimizer step is fused already (Optimizer.step#FusedAdam.step): nothing to fuse");
    auto rep = apply(m.b.g, fused_adam{});
    CHECK_FALSE(rep.applied);
    CHECK(rep.reason == fused_adam::not_applicable(before));
    CHECK(testing::graph_difference(before, m.b.g).empty());
  }
  SUBCASE("PyTorch's fused=True kernels: not applied") {
    mlp m;
    m.b.g.set_name(m.opt1.kernel, "multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>");
    CHECK(fused_adam::not_applicable(m.b.g).find("fused already (its kernel multi_tensor_apply_kernel<FusedAdam") !=
          std::string::npos);
    CHECK_FALSE(fused_adam::applicable(m.b.g));
  }
  SUBCASE("no weight update: says what the profiler marks") {
    mlp m;
    std::vector<task_id> ids;
    for (auto t : tasks(m.b.g) | where(in_phase(phase::weight_update))) ids.push_back(t);
    for (auto t : ids) m.b.g.set_phase(t, phase::backward);
    CHECK(fused_adam::not_applicable(m.b.g).find("Optimizer.step#NAME.step") != std::string::npos);
    CHECK_FALSE(apply(m.b.g, fused_adam{}).applied);
  }
}
