// Tests of the sensitivity profile (passes/daydream/sensitivity) on hand-built graphs with
// hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/sensitivity/sensitivity.hpp>
#include "builder.hpp"
#include <support/compare.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::testing::pass_graphs;
namespace ds = daydream::sensitivity;

TEST_CASE("sensitivity: each layer 2x faster, the step it saves, and the graph as it was") {
  // Baseline 510 (builder.hpp). fc1's GEMMs 60 and 120: 330. relu's kernels 20 each:
  // k3 ends 170, k4 410, k5 440, k6 470. The optimizer's (no layer) 15 each: 480.
  mlp m;
  const graph before = m.b.g;
  auto p = ds::profile_of(m.b.g, {});
  CHECK(p.baseline == 510);
  CHECK(p.gpu_time == 500);
  CHECK(p.groups == 3);
  REQUIRE(p.rows.size() == 3);
  CHECK(p.rows[0].key == "fc1");
  CHECK(p.rows[0].predicted == 330);
  CHECK(p.rows[0].saved == 180);
  CHECK(p.rows[0].gpu_share == doctest::Approx(0.72));
  CHECK(p.rows[1].key == "relu");
  CHECK(p.rows[1].saved == 40);
  CHECK(p.rows[2].key == "(no layer)");
  CHECK(p.rows[2].saved == 30);
  CHECK(p.rows[2].tasks == 2);
  CHECK(testing::graph_difference(before, m.b.g).empty());
}

TEST_CASE("sensitivity: most of the GPU time, none of the step, off the critical path") {
  // Launch-bound: launches of 100 ns, kernels of 10 ns; layer a holds four kernels, b the last.
  builder b;
  for (int i = 0; i < 5; ++i) b.op("elementwise_kernel", 10, i < 4 ? "a" : "b", phase::forward, 0, 0, "", 100);
  // The step is the CPU's 500 ns of launches (the last kernel's 10 ns after the last
  // launch is no part of a loop's step): no kernel's speed changes it.
  auto p = ds::profile_of(b.g, {0}, {.factor = 5});
  CHECK(p.baseline == 500);
  REQUIRE(p.rows.size() == 2);
  CHECK(p.rows[0].key == "a");
  CHECK(p.rows[0].gpu_share == doctest::Approx(0.8));
  CHECK(p.rows[0].saved == 0);
  CHECK(p.rows[1].key == "b");
  CHECK(p.rows[1].saved == 0);
}

TEST_CASE("sensitivity: by kernel family and by kernel, the longest groups when top is given") {
  mlp m;
  auto fam = ds::profile_of(m.b.g, {}, {.by = ds::grouping::family});
  REQUIRE(fam.rows.size() == 3);
  CHECK(fam.rows[0].key == "gemm/conv");
  CHECK(fam.rows[0].saved == 180);
  auto top = ds::profile_of(m.b.g, {}, {.by = ds::grouping::kernel, .top = 1});
  CHECK(top.groups == 5);
  REQUIRE(top.rows.size() == 1);
  CHECK(top.rows[0].key == "volta_sgemm_128x64_nt"); // 240 ns, the longest name
  CHECK(top.rows[0].saved == 120);
  CHECK(ds::parse_grouping("class") == ds::grouping::family);
  CHECK_THROWS_AS(ds::parse_grouping("module"), usage_error);
  CHECK_THROWS_AS(ds::profile_of(m.b.g, {}, {.factor = 0}), usage_error);
}
