// Tests of the vdnn pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/vdnn.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/semantics/memory.hpp>
#include <daydream/passes/vdnn.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("vdnn offloads after the forward, prefetches one layer ahead, trading time for memory") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto v = vdnn{.bandwidth = 10e9}; // 10 B/ns: fc1's 1000 B take 100 ns, relu's 400 B 40 ns
  apply(g, v);
  std::vector<task_id> off, pre;
  for (auto c : tasks<memcpy_task>(g)) (c.payload().direction == copy_kind::d2h ? off : pre).push_back(c);
  REQUIRE(off.size() == 2);
  REQUIRE(pre.size() == 2);
  CHECK(g.duration(off[0]) == 100);
  CHECK(g.duration(pre[1]) == 40);
  CHECK(g.resource_at(g.resource_of(off[0])).kind == resource_kind::copy_engine);
  CHECK(g.resource_of(off[0]) != g.resource_of(pre[0]));
  CHECK(g.has_dependency(off[0], m.relu_f.kernel));  // the stream waits for fc1's offload
  CHECK(g.has_dependency(pre[0], m.fc1_b.kernel));   // fc1's backward waits for its prefetch
  CHECK(g.has_dependency(m.relu_f.kernel, pre[0]));  // prefetched once relu's backward may start
  // CPU: L1 M1 L2 M2 N1 N2 L3 L4 L5 L6. d2h: O1 [20,120), O2 [130,170). k1 [10,130)
  // k2 [130,170). Both prefetches are ready at 170; the policy serves relu's first:
  // P2 [170,210), P1 [210,310). k3 [210,250), k4 [310,550), k5, k6: 610.
  auto r = replay(g, policy_of(v));
  CHECK(r.start[pre[1]] == 170);
  CHECK(r.start[pre[0]] == 210);
  CHECK(r.makespan == 610);
  CHECK(r.peak_memory == 1000); // from 1400
  // In trace order fc1's prefetch would go first and relu's backward would wait: 650.
  CHECK(replay(g).makespan == 650);
}

TEST_CASE("vdnn on a slow link: offloads stall the forward") {
  mlp m;
  auto& g = m.b.g;
  apply(g, vdnn{.bandwidth = 1e9, .layers = "fc1"}); // 1000 ns for fc1's 1000 B
  // O1 [20,1020); k2 waits for it: [1020,1060); P1 starts after k2 (relu's backward may
  // start) [1060,2060); k3 [1060,1100); k4 [2060,2300); k5, k6: 2360.
  CHECK(replay(g, priority_policy{}).makespan == 2360);
  auto p = from_params<vdnn>(pass_params::parse("vdnn", "bandwidth=16GB/s,lookahead=2,layers=conv.*"));
  CHECK(p.bandwidth == 16e9);
  CHECK(p.lookahead == 2);
}

TEST_CASE("vdnn obeys the pass laws") {
  testing::check_pass_laws(vdnn{}, pass_fixtures(), {.allow_refusal = false});
}
