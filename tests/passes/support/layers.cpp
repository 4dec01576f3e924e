// Tests of layer_instances and layer_filter.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/passes/support/layers.hpp>
#include "../builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("layer instances group forward and backward tasks and estimate the stash") {
  mlp m;
  auto ls = layer_instances(m.b.g);
  REQUIRE(ls.size() == 2);
  CHECK(m.b.g.str(ls[0].layer) == "fc1");
  CHECK(ls[0].forward_gpu == std::vector<task_id>{m.fc1_f.kernel});
  CHECK(ls[0].backward_cpu == std::vector<task_id>{m.fc1_b.call});
  CHECK(ls[0].stash_bytes == 1000);
  CHECK(m.b.g.str(ls[1].layer) == "relu");
  CHECK(ls[1].stash_bytes == 400);
  CHECK(ls[1].stashes());
  CHECK(layer_filter("fc.")("fc1"));
  CHECK_FALSE(layer_filter("fc")("fc1")); // the whole name must match
  CHECK(layer_filter()("anything"));
  CHECK(layer_filter(".*relu.*")("ReLU_0")); // case is ignored: module names as PyTorch writes them
  CHECK(layer_filter("batchnorm2d_0")("BatchNorm2d_0"));
  CHECK_THROWS_AS(layer_filter("(("), daydream::usage_error);
}
