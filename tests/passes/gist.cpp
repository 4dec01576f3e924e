// Tests of the gist pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/launch.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/gist.hpp>
#include <daydream/replay.hpp>
#include <daydream/select.hpp>
#include <daydream/passes/gist.hpp>
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

TEST_CASE("gist encodes after the forward, decodes before the backward, and lowers the peak") {
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  CHECK(gist::applicable(g));
  auto rep = gist{}(g);
  auto named = [&](std::string_view n) {
    std::vector<task_id> v;
    for (auto k : tasks<gpu_kernel>(g) | where(name_matches(std::string("^") + std::string(n) + "$"))) v.push_back(k);
    return v;
  };
  auto enc = named("gist_encode"), dec = named("gist_decode");
  REQUIRE(enc.size() == 2);
  REQUIRE(dec.size() == 2);
  // fc1 stashes 1000 B, relu 400 B; elementwise kernels run at 0.1 ns/B.
  CHECK(g.duration(enc[0]) == 100);
  CHECK(g.duration(enc[1]) == 40);
  CHECK(prev_on_resource(g, enc[0]) == m.fc1_f.kernel);
  CHECK(next_on_resource(g, dec[0]) == m.fc1_b.kernel);
  CHECK(prev_on_resource(g, launch_of(g, enc[0])) == m.fc1_f.call);
  CHECK(next_on_resource(g, launch_of(g, dec[0])) == m.fc1_b.call);
  CHECK(g.mem_delta(enc[0]) == 500 - 1000);
  CHECK(g.mem_delta(dec[0]) == 1000 - 500);
  // CPU: L1 E1 L2 E2 D2 L3 D1 L4 L5 L6, 10 ns each. GPU: k1 [10,130) enc1 [130,230)
  // k2 [230,270) enc2 [270,310) dec2 [310,350) k3 [350,390) dec1 [390,490)
  // k4 [490,730) k5 [730,760) k6 [760,790).
  auto r = replay(g);
  CHECK(r.makespan == 790);
  CHECK(r.start[dec[0]] == 390);
  // memory: 1000, 500, 900, 700, 900, 500, 1000, 0: the peak drops from 1400 to 1000.
  CHECK(r.peak_memory == 1000);
  CHECK(rep.value("layers encoded") == "2");
  CHECK(rep.at("layers encoded").value == report_value::of_count(2));
  CHECK(rep.value("bytes saved while stashed") == "700 B");
  CHECK(rep.at("bytes saved while stashed").value == report_value::of_bytes(700));
}

TEST_CASE("gist without a memory model still predicts time, and says so") {
  mlp m;
  auto rep = gist{.ratio = 0.25, .layers = "fc1"}(m.b.g);
  CHECK(rep.value("layers encoded") == "1");
  CHECK(rep.value("bytes saved while stashed") == "750 B");
  CHECK(rep.at("bytes saved while stashed").value.value == 750);
  CHECK(rep.notes.size() == 1);
  // enc [130,230), k2 [230,270), k3 [270,310), dec [310,410), k4 [410,650), ... 710
  CHECK(makespan(m.b.g) == 710);
  CHECK(replay(m.b.g).peak_memory == 0);
  auto p = from_params<gist>(pass_params::parse("gist", "ratio=0.125,layers=conv.*,bandwidth=100GB/s"));
  CHECK(p.ratio == 0.125);
  CHECK(p.layers == "conv.*");
  CHECK(p.bandwidth == 100e9);
}

TEST_CASE("gist obeys the pass laws") {
  testing::check_pass_laws(gist{}, pass_fixtures(), {.allow_refusal = false});
}
