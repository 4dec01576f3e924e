// Tests of the grad_accum pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/grad_accum.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/semantics/memory.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("grad_accum on a GPU-bound step: same time, half the activation memory") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto rep = grad_accum{.k = 2}(g);
  CHECK(g.duration(m.fc1_f.kernel) == 60);
  CHECK(g.duration(m.opt1.kernel) == 30); // the update runs once, unchanged
  CHECK(g.size() == 12 + 8);
  // CPU: L1..L4, L1'..L4', L5, L6. GPU: k1 [10,70) k2 [70,90) k3 [90,110) k4 [110,230)
  // k1' [230,290) ... k4' [330,450) k5 [450,480) k6 [480,510).
  auto r = replay(g);
  CHECK(r.makespan == 510);
  CHECK(r.peak_memory == 700);
  CHECK(rep.value("tasks repeated") == "8");
  CHECK(rep.at("tasks repeated").value.count == 8);
  check_invariants(g);
}

TEST_CASE("grad_accum on a CPU-bound step: the CPU overhead is paid k times") {
  // Two iterations: two forward ops, one backward op, one weight update; launches take
  // 100 ns, kernels 30 ns. Baseline iteration: 400 ns. With k = 2: 3 x 2 + 1 launches.
  builder b;
  for (std::int32_t it = 0; it < 2; ++it) {
    b.op("volta_sgemm_128x64_tn", 30, "fc1", phase::forward, it, 0, "aten::addmm", 100);
    b.op("volta_sgemm_128x64_tn", 30, "fc2", phase::forward, it, 0, "aten::addmm", 100);
    b.op("volta_sgemm_128x64_nt", 30, "fc2", phase::backward, it, 0, "aten::mm", 100);
    b.op("multi_tensor_apply_kernel", 30, "", phase::weight_update, it, 0, "aten::_foreach_add_", 100);
  }
  CHECK(iteration_time(b.g, replay(b.g), 0) == 400);
  apply(b.g, grad_accum{.k = 2});
  CHECK(iteration_time(b.g, replay(b.g), 0) == 700);
  CHECK(from_params<grad_accum>(pass_params::parse("grad_accum", "k=4")).k == 4);
  CHECK_THROWS_AS(from_params<grad_accum>(pass_params::parse("grad_accum", "k=0")), daydream::error);
}

TEST_CASE("grad_accum obeys the pass laws") {
  testing::check_pass_laws(grad_accum{.k = 3}, pass_fixtures(), {.allow_refusal = false});
}
