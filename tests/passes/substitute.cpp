// Tests of the substitute pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/launch.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/substitute.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/substitute.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("substitute fuses two layers into one kernel per phase") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  substitute s{.layers = "fc1|relu",
               .kernels = {{"fused_fc_relu", phase::forward, 130}, {"fused_fc_relu_grad", phase::backward, -1, 0.5}}};
  auto rep = s(g);
  for (auto t : {m.fc1_f.kernel, m.relu_f.call, m.relu_b.kernel, m.fc1_b.call}) CHECK_FALSE(g.contains(t));
  std::vector<task_id> ks;
  for (auto k : tasks<gpu_kernel>(g) | where(name_matches("^fused"))) ks.push_back(k);
  REQUIRE(ks.size() == 2);
  CHECK(g.duration(ks[0]) == 130);
  CHECK(g.duration(ks[1]) == 140); // 0.5 x (40 + 240)
  CHECK(g.layer(ks[0]) == "fc1");
  // CPU: two launches [0,20) then the optimizer's [20,40). F [10,140) B [140,280)
  // k5 [280,310) k6 [310,340).
  auto r = replay(g);
  CHECK(r.makespan == 340);
  CHECK(r.peak_memory == 1400); // the fused kernels carry the layers' allocations
  CHECK(rep.value("tasks removed") == "8");
  check_invariants(g);
}

TEST_CASE("substitute from parameters: one fused kernel per phase with the replaced time") {
  mlp m;
  auto s = from_params<substitute>(pass_params::parse("substitute", "layers=fc1|relu,name=fc_relu,forward=100ns"));
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].name == "fc_relu_forward");
  CHECK(s.kernels[0].duration == 100);
  CHECK(s.kernels[1].duration == -1);
  apply(m.b.g, s);
  // F [10,110), B (40 + 240 = 280) [110,390), k5, k6: 450
  CHECK(makespan(m.b.g) == 450);
  CHECK_THROWS_AS(from_params<substitute>(pass_params::parse("substitute", "")), daydream::error);
}

TEST_CASE("substitute fuses each run of consecutive selected layers separately") {
  // CPU bound: launches take 100 ns, kernels 10 ns. Layers a, b, c with two ops each in
  // the forward and one each in the backward (c, b, a): 9 launches, the last kernel
  // ends at 910. Selecting a and c gives runs [a], [c] forward and [c], [a] backward;
  // each becomes one launch and one kernel: 7 launches, the last kernel [700,710).
  builder b;
  for (auto l : {"a", "b", "c"})
    for (int i = 0; i < 2; ++i) b.op("volta_sgemm_128x64_tn", 10, l, phase::forward, 0, 0, "aten::mm", 100);
  for (auto l : {"c", "b", "a"}) b.op("volta_sgemm_128x64_nt", 10, l, phase::backward, 0, 0, "aten::mm", 100);
  CHECK(makespan(b.g) == 910);
  auto s = from_params<substitute>(pass_params::parse("substitute", "layers=a|c"));
  pass_report rep;
  apply(b.g, [&](graph& g) { rep = s(g); });
  CHECK(makespan(b.g) == 710);
  CHECK(rep.at("runs replaced").value.count == 4);
  CHECK(rep.value("kernels inserted") == "4");
  int fused = 0;
  for (auto k : tasks<gpu_kernel>(b.g) | where(name_matches("^fused_forward$"))) fused += b.g.duration(k) == 20;
  CHECK(fused == 2);
}

TEST_CASE("substitute's default fusion matches module names as PyTorch writes them") {
  // CPU bound as above: Conv2d_0, BatchNorm2d_0, ReLU_0, Linear_0 forward, then backward
  // in reverse: 8 launches, the last kernel [800,810). The default pattern, ignoring case,
  // fuses BatchNorm2d_0 + ReLU_0 in each phase: 6 launches, the last kernel [600,610).
  builder b;
  for (auto l : {"Conv2d_0", "BatchNorm2d_0", "ReLU_0", "Linear_0"})
    b.op("volta_sgemm_128x64_tn", 10, l, phase::forward, 0, 0, "aten::mm", 100);
  for (auto l : {"Linear_0", "ReLU_0", "BatchNorm2d_0", "Conv2d_0"})
    b.op("volta_sgemm_128x64_nt", 10, l, phase::backward, 0, 0, "aten::mm", 100);
  CHECK(makespan(b.g) == 810);
  CHECK(substitute::applicable(b.g));
  auto s = from_params<substitute>(pass_params::parse("substitute", std::string(pass_spec<substitute>::scenario_params)));
  CHECK(s.layers == substitute::default_fusion);
  pass_report rep;
  apply(b.g, [&](graph& g) { rep = s(g); });
  CHECK(rep.applied);
  CHECK(rep.value("runs replaced") == "2"); // one run per phase
  CHECK(rep.at("tasks removed").value.count == 8); // two launches and two kernels per run
  CHECK(makespan(b.g) == 610);
  for (auto l : {"Conv2d_0", "Linear_0"}) CHECK(layer_filter(".*(conv|linear).*")(l));
  CHECK_FALSE(layer_filter(std::string(substitute::default_fusion))("Conv2d_0"));
}

TEST_CASE("substitute says so when no layer matches") {
  mlp m;
  auto rep = substitute{.layers = "no_such_layer"}(m.b.g);
  CHECK_FALSE(rep.applied);
  CHECK(rep.reason == "no task of the selected layers in the phases given: nothing replaced");
  CHECK(makespan(m.b.g) == 510);
}

TEST_CASE("substitute obeys the pass laws") {
  testing::check_pass_laws(substitute{.layers = "layer0|relu"}, pass_fixtures(), {.allow_refusal = false});
}

TEST_CASE("a fused operator keeps its framework dispatch, and the memory stays on the side that held it") {
  // Forward: a batch norm (300 ns of operator CPU time, then a 50 ns launch) and a ReLU
  // (100 + 50): 500 ns of CPU time for 2 kernels. Fused into one operator, the new call
  // takes the run's CPU time per kernel, 250 ns, not one bare launch. The batch norm's
  // CPU call allocated 800 bytes (a trace's [memory] events charge CPU calls): the fused
  // call allocates them, not the kernel.
  builder b;
  auto bn_cpu = b.cpu("aten::batch_norm", 300, "bn1", phase::forward);
  b.g.set_mem_delta(bn_cpu, 800);
  b.op("bn_fw_tr_1C11_kernel", 40, "bn1", phase::forward, 0, 0, "aten::batch_norm", 50);
  b.cpu("aten::relu", 100, "relu", phase::forward);
  b.op("vectorized_elementwise_kernel<relu>", 20, "relu", phase::forward, 0, 0, "aten::relu", 50);
  b.op("volta_sgemm_128x64_tn", 100, "fc", phase::forward, 0, 0, "aten::mm", 50);
  pass_report rep;
  apply(b.g, [&](graph& g) { rep = substitute{.layers = "bn1|relu", .kernels = {{"fused_forward", phase::forward}}}(g); });
  std::vector<task_id> fused;
  for (auto k : tasks<gpu_kernel>(b.g) | where(name_matches("^fused_forward$"))) fused.push_back(k);
  REQUIRE(fused.size() == 1);
  const auto call = launch_of(b.g, fused[0]);
  REQUIRE(call != no_task);
  CHECK(b.g.duration(call) == 250);
  CHECK(b.g.duration(fused[0]) == 60);
  CHECK(b.g.mem_delta(call) == 800);
  CHECK(b.g.mem_delta(fused[0]) == 0);
  bool said = false;
  for (auto& [k, v] : rep.items) said = said || (k == "CPU time" && v.rfind("500 ns -> 250 ns", 0) == 0);
  CHECK(said);
  // The fc layer's launch follows the fused call: 250 + 50, its kernel after the fused one.
  CHECK(makespan(b.g) == std::max<time_ns>(250 + 50, 250 + 60) + 100);
}
