// Tests of the amp pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/params.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/support/memory.hpp>
#include <daydream/passes/support/kernel_classifier.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("amp: a GPU-bound step gets compute kernels 3x and memory kernels 2x faster") {
  mlp m;
  CHECK(makespan(m.b.g) == 510);
  auto rep = amp{}(m.b.g);
  CHECK(m.b.g.duration(m.fc1_f.kernel) == 40);
  CHECK(m.b.g.duration(m.fc1_b.kernel) == 80);
  CHECK(m.b.g.duration(m.relu_f.kernel) == 20);
  CHECK(m.b.g.duration(m.opt1.kernel) == 15);
  CHECK(m.b.g.duration(m.fc1_f.call) == 10); // CPU unchanged
  // k1 [10,50) k2 [50,70) k3 [70,90) k4 [90,170) k5 [170,185) k6 [185,200)
  CHECK(makespan(m.b.g) == 200);
  REQUIRE(rep.items.size() >= 4);
  CHECK(rep.items[0].first == "compute_bound");
  CHECK(rep.items[0].second == "2 kernels, 360 ns -> 120 ns");
  CHECK(rep.items[1].second == "4 kernels, 140 ns -> 70 ns");
  CHECK(rep.notes.empty());
}

TEST_CASE("amp stores activations in half precision: the activation peak halves") {
  mlp m;
  estimate_activation_memory(m.b.g);
  CHECK(replay(m.b.g).peak_memory == 1400);
  auto rep = amp{}(m.b.g);
  CHECK(m.b.g.mem_delta(m.fc1_f.kernel) == 500);
  CHECK(m.b.g.mem_delta(m.fc1_b.kernel) == -500);
  CHECK(replay(m.b.g).peak_memory == 700);
  CHECK(rep.items[5].second == "1.4 kB -> 700 B");
  apply(m.b.g, amp{.activations = 1});
  CHECK(replay(m.b.g).peak_memory == 700);
}

TEST_CASE("amp halves activations only: weight gradients stay FP32") {
  // The MLP with its activation model, plus the fc1 weight gradient: an AccumulateGrad
  // on the CPU after the six launches allocates 1000 B and keeps it.
  mlp m;
  auto& g = m.b.g;
  estimate_activation_memory(g);
  auto grad = m.b.cpu("torch::autograd::AccumulateGrad", 5, "fc1", phase::backward);
  g.set_mem_delta(grad, 1000);
  // The gradient's CPU task runs at 60 (after the six 10 ns launches), before k2 starts
  // at 130: 1000 (k1) + 1000 (gradient) + 400 (k2) = 2400.
  CHECK(replay(g).peak_memory == 2400);
  auto rep = amp{}(g);
  CHECK(g.mem_delta(grad) == 1000);
  CHECK(g.mem_delta(m.fc1_f.kernel) == 500);
  CHECK(replay(g).peak_memory == 1700); // 500 + 1000 + 200
  CHECK(rep.items[6].first == "weight-gradient allocations (FP32, unchanged)");
  CHECK(rep.items[6].second == "1 kB");
}

TEST_CASE("amp: a CPU-bound step predicts no gain") {
  // Two iterations of three ops; each launch takes 100 ns, each GEMM 30 ns. The GPU waits
  // for the CPU: iteration 1 starts when the CPU is done with iteration 0, at 300 ns.
  builder b;
  for (std::int32_t it = 0; it < 2; ++it)
    for (auto layer : {"fc1", "fc2", "fc3"})
      b.op("volta_sgemm_128x64_tn", 30, layer, phase::forward, it, 0, "aten::addmm", 100);
  auto before = replay(b.g);
  CHECK(iteration_time(b.g, before, 0) == 300);
  apply(b.g, amp{});
  auto after = replay(b.g);
  CHECK(iteration_time(b.g, after, 0) == 300); // shorter kernels, same iteration
  CHECK(after.makespan == before.makespan - 20); // only the very last kernel ends earlier
}

TEST_CASE("amp reports the kernels it could not classify and leaves them alone") {
  builder b;
  auto k = b.op("my_custom_kernel", 90, "x", phase::forward);
  auto rep = amp{}(b.g);
  CHECK(b.g.duration(k.kernel) == 90);
  REQUIRE(rep.items.size() == 6);
  CHECK(rep.items[5].first == "unclassified kernels");
  CHECK(rep.items[5].second == "my_custom_kernel (x1)");
  CHECK(rep.notes.size() == 1);
  CHECK_FALSE(rep.applied); // nothing it knows how to run in half precision
  CHECK(rep.reason.find("compute- or memory-bound") != std::string::npos);
}

TEST_CASE("amp with a replaced classifier and parameters") {
  mlp m;
  kernel_classifier everything_compute;
  everything_compute.add(kernel_class::compute_bound, ".");
  apply(m.b.g, amp{.compute = 2, .classifier = everything_compute});
  CHECK(m.b.g.duration(m.relu_f.kernel) == 20);
  CHECK(m.b.g.duration(m.fc1_f.kernel) == 60);
  auto p = amp::from_params(pass_params::parse("amp", "compute=4,memory=1.5,activations=1"));
  CHECK(p.compute == 4);
  CHECK(p.memory == 1.5);
  CHECK(p.activations == 1);
  CHECK_THROWS_AS(amp::from_params(pass_params::parse("amp", "compute=0")), daydream::error);
  CHECK_THROWS_AS(amp::from_params(pass_params::parse("amp", "compte=2")), daydream::error);
}

TEST_CASE("amp obeys the pass laws") {
  testing::check_pass_laws(amp{}, pass_fixtures(), {.allow_refusal = false});
}
