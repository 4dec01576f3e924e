// Tests of the recompute pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/report.hpp>
#include <daydream/semantics/memory.hpp>
#include <daydream/passes/recompute.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("recompute re-runs a layer's forward before its backward and drops its stash") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto rep = recompute{.layers = "fc1"}(g);
  auto copy = prev_on_resource(g, m.fc1_b.kernel);
  REQUIRE(copy != m.relu_b.kernel);
  CHECK(g.name(copy) == "volta_sgemm_128x64_tn");
  CHECK(g.phase_of(copy) == phase::backward);
  CHECK(g.duration(copy) == 120);
  auto call = launch_of(g, copy);
  REQUIRE(call != no_task);
  CHECK(next_on_resource(g, call) == m.fc1_b.call);
  // CPU: L1 L2 L3 L1' L4 L5 L6. GPU: k1 [10,130) k2 [130,170) k3 [170,210)
  // k1' [210,330) k4 [330,570) k5 [570,600) k6 [600,630).
  auto r = replay(g);
  CHECK(r.makespan == 630);
  // memory: 1000, 400 (fc1 dropped when k2 starts), 0, 1000, 0.
  CHECK(r.peak_memory == 1000);
  CHECK(rep.value("tasks copied") == "2");
  CHECK(rep.at("tasks copied").value == report_value::of_count(2));
}

TEST_CASE("recompute obeys the pass laws") {
  testing::check_pass_laws(recompute{}, pass_fixtures(), {.allow_refusal = false});
}
