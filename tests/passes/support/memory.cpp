// Tests of the tensor-size activation memory model.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/support/memory.hpp>
#include "../builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("the activation memory estimate allocates in the forward and frees in the backward") {
  mlp m;
  auto& g = m.b.g;
  CHECK_FALSE(has_memory_accounting(g));
  CHECK(replay(g).peak_memory == 0);
  auto rep = estimate_activation_memory(g);
  CHECK(g.mem_delta(m.fc1_f.kernel) == 1000);
  CHECK(g.mem_delta(m.relu_f.kernel) == 400);
  CHECK(g.mem_delta(m.relu_b.kernel) == -400);
  CHECK(g.mem_delta(m.fc1_b.kernel) == -1000);
  // k1 at 10: 1000; k2 at 130: 1400; k3 at 170: 1000; k4 at 210: 0.
  CHECK(replay(g).peak_memory == 1400);
  CHECK(rep.items.front().second == "2");
  // A memory model already there is kept unless asked otherwise.
  g.set_mem_delta(m.opt1.kernel, 5);
  estimate_activation_memory(g);
  CHECK(g.mem_delta(m.opt1.kernel) == 5);
  estimate_activation_memory(g, {.overwrite = true});
  CHECK(g.mem_delta(m.opt1.kernel) == 0);
  CHECK(replay(g).peak_memory == 1400);
}

TEST_CASE("an inference layer frees its stash once its last forward kernel has ended") {
  builder b;
  auto a = b.op("volta_sgemm_128x64_tn", 100, "fc1", phase::forward, 0, 800, "aten::addmm");
  auto c = b.op("volta_sgemm_128x64_tn", 100, "fc2", phase::forward, 0, 300, "aten::addmm");
  estimate_activation_memory(b.g);
  CHECK(b.g.mem_delta(a.kernel) == 800);
  // fc1 is released when fc2 starts; fc2, the last kernel, allocates and releases at once.
  CHECK(b.g.mem_delta(c.kernel) == -800);
  CHECK(replay(b.g).peak_memory == 800);
}
