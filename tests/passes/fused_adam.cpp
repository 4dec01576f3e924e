// Tests of the fused_adam pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/fused_adam.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/fused_adam.hpp>
#include "builder.hpp"
#include <support/compare.hpp>
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
  // The step's two operator calls (10 ns each: their launches) become the fused step's
  // two calls at the median, 10 ns each.
  CHECK(g.duration(call) == 20);
  CHECK(prev_on_resource(g, call) == m.fc1_b.call);
  CHECK(prev_on_resource(g, fused[0]) == m.fc1_b.kernel);
  // launches 0..40, the new one [40,60); k4 ends at 450, the fused kernel [450,471)
  CHECK(makespan(g) == 471);
  CHECK(rep.value("tasks removed") == "4");
  CHECK(rep.at("tasks removed").value == report_value::of_count(4));
  check_invariants(g);
}

TEST_CASE("fused_adam keeps the optimizer's Python around its operators and dispatches the fused kernel") {
  // A forward GEMM (launch [0,10), kernel [10,110)), then an unfused Adam step of two
  // parameters on the same thread: the step annotation's own 50 ns (the optimizer
  // gathering parameters and state), then per parameter 4 ns of Python and aten::mul_
  // (3 ns + a 5 ns launch of a 10 ns kernel), 4 ns of Python and aten::add_ (the same),
  // then the annotation's last 7 ns. Kept: the 54 ns before the first operator and the 7
  // after the last; four calls of 8, 12, 12 and 12 ns (the Python before each included).
  builder b;
  b.op("gemm", 100, "fc", phase::forward);
  auto& g = b.g;
  auto slice = [&](std::string_view name, time_ns d, name_id op, std::string_view layer, cpu_call call) {
    auto t = g.add(cpu_task{call, op, 0, 0}, {.name = name, .duration = d, .resource = b.thread,
                                               .trace_start = b.clock++, .layer = layer,
                                               .phase = phase::weight_update});
    g.add_dependency(b.last_cpu, t, dep_kind::cpu_order);
    b.last_cpu = t;
    return t;
  };
  const auto lead = slice("Optimizer.step#Adam.step", 50, no_name, "", cpu_call::op);
  task_id python0 = no_task;
  for (int p = 0; p < 2; ++p)
    for (std::string_view op : {"aten::mul_", "aten::add_"}) {
      auto py = slice("<built-in method of Tensor>", 4, no_name, "", cpu_call::op);
      if (python0 == no_task) python0 = py;
      const auto layer = std::string(op) + "#" + std::to_string(p);
      slice(op, 3, g.intern(op), layer, cpu_call::op);
      auto l = slice("cudaLaunchKernel", 5, g.intern(op), layer, cpu_call::launch);
      auto k = g.add(gpu_kernel{0, 7, 0, 0}, {.name = "vectorized_elementwise_kernel", .duration = 10,
                                              .resource = b.stream, .trace_start = b.clock++,
                                              .layer = layer, .phase = phase::weight_update});
      g.add_dependency(b.last_gpu, k, dep_kind::stream_order);
      g.add_dependency(l, k, dep_kind::launch);
      b.last_gpu = k;
    }
  const auto tail = slice("Optimizer.step#Adam.step", 7, no_name, "", cpu_call::op);

  std::vector<task_id> cpu;
  for (auto t : tasks<cpu_task>(g) | where(in_phase(phase::weight_update))) cpu.push_back(t);
  const auto split = split_optimizer_cpu(g, cpu);
  CHECK(split.kept == std::vector<task_id>{lead, python0, tail});
  CHECK(split.kept_time == 61);
  CHECK(split.calls == 4);
  CHECK(split.per_call == 12);

  auto rep = apply(g, fused_adam{});
  REQUIRE(rep.applied);
  CHECK(g.contains(lead));
  CHECK(g.contains(tail));
  std::vector<task_id> fused;
  for (auto k : tasks<gpu_kernel>(g) | where(name_matches("^fused_adam$"))) fused.push_back(k);
  REQUIRE(fused.size() == 1);
  CHECK(g.duration(fused[0]) == 14); // 0.35 x 40
  const auto call = launch_of(g, fused[0]);
  CHECK(g.duration(call) == 24); // two calls at the median, 12 ns
  CHECK(prev_on_resource(g, call) == python0);
  CHECK(prev_on_resource(g, tail) == call);
  CHECK(rep.value("optimizer CPU time per step") == "105 ns -> 85 ns");
  REQUIRE(!rep.notes.empty());
  CHECK(rep.notes[0] == "the optimizer's Python around its operators stays (61 ns per step: gathering parameters "
                        "and state, which a fused step runs too); 4 operator calls per step become 2 launching the "
                        "fused kernel, at 12 ns each (the median of the step's calls)");
  // Lead [10,64), the call [64,88) launches the fused kernel after the GEMM: [110,124);
  // the tail [88,95).
  auto r = replay(g);
  CHECK(r.start[fused[0]] == 110);
  CHECK(r.end[tail] == 95);
  CHECK(r.makespan == 124);
  // apex's FusedAdam makes one call.
  CHECK(from_params<fused_adam>(pass_params::parse("fused_adam", "ops=1")).ops == 1);
  CHECK_THROWS_AS(from_params<fused_adam>(pass_params::parse("fused_adam", "ops=0")), usage_error);
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
  CHECK(from_params<fused_adam>(pass_params::parse("fused_adam", "traffic=0.5")).traffic == 0.5);
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
    REQUIRE(rep.notes.size() == 2);
    CHECK(rep.notes[1].find("the trace's optimizer is SGD") != std::string::npos);
    CHECK(rep.notes[1].find("give traffic= for SGD's fused kernel") != std::string::npos);
  }
  SUBCASE("Adam: applied without a note on the optimizer") {
    mlp m;
    m.b.cpu("Optimizer.step#AdamW.step", 5, "", phase::weight_update);
    auto rep = apply(m.b.g, fused_adam{});
    CHECK(rep.applied);
    for (auto& n : rep.notes) CHECK(n.find("the trace's optimizer is") == std::string::npos);
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
