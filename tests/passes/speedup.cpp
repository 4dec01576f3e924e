// Tests of the speedup pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/speedup.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/speedup.hpp>
#include "builder.hpp"
#include <support/compare.hpp>
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("speedup: the GEMMs of a GPU-bound step 2x faster, by name or by class") {
  // Baseline 510 (builder.hpp). GEMMs 60 and 120: launches [0,10) ... [50,60); k1 [10,70),
  // k2 [70,110), k3 [110,150), k4 [150,270), k5 [270,300), k6 [300,330).
  for (auto pass : {speedup{.kernels = "SGEMM"}, speedup{.klass = "gemm"}, speedup{.klass = "compute_bound"}}) {
    mlp m;
    auto rep = apply(m.b.g, pass);
    CHECK(rep.applied);
    CHECK(m.b.g.duration(m.fc1_f.kernel) == 60);
    CHECK(m.b.g.duration(m.fc1_b.kernel) == 120);
    CHECK(m.b.g.duration(m.relu_f.kernel) == 40);
    CHECK(makespan(m.b.g) == 330);
    CHECK(rep.value("GPU tasks selected") == "2");
    CHECK(rep.value("their GPU time") == "360 ns -> 180 ns");
    CHECK(rep.value("share of the trace's GPU time") == "72.0%");
  }
}

TEST_CASE("speedup: layers, phases and a fixed duration; every GPU task when nothing is selected") {
  {
    mlp m;
    auto rep = apply(m.b.g, speedup{.layers = "relu", .phases = "backward", .duration = 5});
    CHECK(m.b.g.duration(m.relu_b.kernel) == 5);
    CHECK(m.b.g.duration(m.relu_f.kernel) == 40);
    CHECK(makespan(m.b.g) == 510 - 35);
    CHECK(rep.value("selection") == "layers='relu', phase='backward', each taking 5 ns");
  }
  {
    mlp m;
    apply(m.b.g, speedup{.factor = 10});
    // Every kernel 10x faster: 12, 4, 4, 24, 3, 3: k1 [10,22), k2 [22,26), k3 [30,34),
    // k4 [40,64), k5 [64,67), k6 [67,70).
    CHECK(makespan(m.b.g) == 70);
  }
}

TEST_CASE("speedup: a kernel off the critical path gains nothing end to end") {
  // Launch-bound: launches take 100 ns, kernels 10 ns. Kernel i runs [100i+100, 100i+110).
  builder b;
  std::vector<builder::op_t> ops;
  for (int i = 0; i < 5; ++i) ops.push_back(b.op("elementwise_kernel", 10, "l", phase::forward, 0, 0, "", 100));
  CHECK(makespan(b.g) == 510);
  auto rep = apply(b.g, speedup{.kernels = "elementwise", .factor = 5});
  CHECK(rep.applied);
  CHECK(b.g.duration(ops[0].kernel) == 2);
  CHECK(makespan(b.g) == 502); // only the last kernel's 8 ns were on the critical path
}

TEST_CASE("speedup: says what it did not find, and neutral settings change nothing") {
  mlp m;
  const graph before = m.b.g;
  auto none = apply(m.b.g, speedup{.kernels = "flash"});
  CHECK_FALSE(none.applied);
  CHECK(none.reason == "no GPU task matches kernels='flash', 2x faster (of 6 GPU tasks in the graph)");
  auto one = apply(m.b.g, speedup{.factor = 1});
  CHECK_FALSE(one.applied);
  CHECK(one.reason == "factor=1: the selected tasks keep their times");
  CHECK(testing::graph_difference(before, m.b.g).empty());
}

TEST_CASE("speedup: parameters are read and checked") {
  auto s = from_params<speedup>(pass_params::parse("speedup", "kernels=flash,class=attention,phase=forward|backward,"
                                                                "factor=1.5,layers=attn.*"));
  CHECK(s.kernels == "flash");
  CHECK(s.klass == "attention");
  CHECK(s.phases == "forward|backward");
  CHECK(s.factor == 1.5);
  CHECK(s.layers == "attn.*");
  CHECK(from_params<speedup>(pass_params::parse("speedup", "duration=2us")).duration == 2000);
  CHECK_THROWS_WITH_AS(from_params<speedup>(pass_params::parse("speedup", "class=gemmm")),
                       doctest::Contains("unknown class 'gemmm'"), usage_error);
  CHECK_THROWS_WITH_AS(from_params<speedup>(pass_params::parse("speedup", "factor=0")),
                       doctest::Contains("factor must be a positive number"), usage_error);
  CHECK_THROWS_WITH_AS(from_params<speedup>(pass_params::parse("speedup", "phase=fwd")),
                       doctest::Contains("unknown phase 'fwd'"), usage_error);
  CHECK_THROWS_WITH_AS(from_params<speedup>(pass_params::parse("speedup", "kernels=(")),
                       doctest::Contains("bad kernels pattern '('"), usage_error);
  CHECK_THROWS_AS(from_params<speedup>(pass_params::parse("speedup", "factr=2")), error);
}

TEST_CASE("speedup obeys the pass laws") {
  testing::check_pass_laws(speedup{}, pass_fixtures(), {.allow_refusal = true});
  testing::check_pass_laws(speedup{.klass = "memory_bound", .factor = 3}, pass_fixtures(), {.allow_refusal = true});
}
