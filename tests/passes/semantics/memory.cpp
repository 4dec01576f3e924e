// Tests of the tensor-size activation memory model.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/semantics/memory.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/passes/vdnn.hpp>
#include <daydream/pass.hpp>
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
  CHECK(rep.value("layers accounted") == "2");
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

namespace {

/// The MLP with a memory model as a trace's [memory] events give it: charged to the CPU
/// calls that allocate. fc1's forward keeps 800 bytes and relu's 300 (their tensor sizes
/// say 1000 and 400: weights and whole input sets); the backward calls free them.
/// Replay: the calls run in program order at 0, 10, ...: 800, 1100, 800, 0.
mlp traced_memory_mlp() {
  mlp m;
  auto& g = m.b.g;
  g.set_mem_delta(m.fc1_f.call, 800);
  g.set_mem_delta(m.relu_f.call, 300);
  g.set_mem_delta(m.relu_b.call, -300);
  g.set_mem_delta(m.fc1_b.call, -800);
  return m;
}

} // namespace

TEST_CASE("with the trace's [memory] events, a layer's stash is what its forward left allocated, on its CPU calls") {
  auto m = traced_memory_mlp();
  auto& g = m.b.g;
  CHECK(replay(g).peak_memory == 1100);
  auto ls = layer_instances(g);
  REQUIRE(ls.size() == 2);
  CHECK(ls[0].stash_bytes == 1000);
  CHECK(ls[0].stash_measured == 800);
  CHECK(ls[0].stash_on_cpu);
  CHECK(ls[0].stash() == 800);
  CHECK(ls[1].stash() == 300);
  // Without a memory model the stash is the tensor-size estimate.
  mlp bare;
  auto lb = layer_instances(bare.b.g);
  CHECK(lb[0].stash_measured == -1);
  CHECK(lb[0].stash() == 1000);
  // With the estimate, the model charges kernels: the same numbers, on the GPU side.
  estimate_activation_memory(bare.b.g);
  lb = layer_instances(bare.b.g);
  CHECK(lb[0].stash_measured == 1000);
  CHECK_FALSE(lb[0].stash_on_cpu);
}

TEST_CASE("passes that offload, encode or drop activations lower the peak the [memory] events give, by what they hold") {
  // recompute: fc1 is dropped when relu's forward call starts (-800) and allocated again by
  // its re-computed call before fc1's backward; relu's re-computation runs right after
  // its own forward, so it holds its 300 throughout. CPU order and running sum:
  // fc1 +800 (800), relu +300-800 (300), relu copy (300), relu_b -300 (0), fc1 copy +800
  // (800), fc1_b -800 (0): peak 800 from 1100.
  {
    auto m = traced_memory_mlp();
    apply(m.b.g, recompute{});
    CHECK(replay(m.b.g).peak_memory == 800);
  }
  // vdnn of fc1, prefetched right before its own backward: freed once its offload is
  // issued (at relu's forward call: 300), allocated again by the prefetch call after
  // relu's backward has freed relu's (0 -> 800): peak 800.
  {
    auto m = traced_memory_mlp();
    auto v = vdnn{.bandwidth = 10e9, .layers = "fc1", .lookahead = 0};
    apply(m.b.g, v);
    CHECK(replay(m.b.g, policy_of(v)).peak_memory == 800);
  }
  // gist at ratio 0.5: fc1 keeps 400 from its encode to its decode (relu's forward call:
  // 800 + 300 - 400 = 700), relu decodes right after encoding; fc1's decode call
  // allocates 400 more after relu_b freed 300 (400 -> 800): peak 800.
  {
    auto m = traced_memory_mlp();
    apply(m.b.g, gist{.ratio = 0.5});
    CHECK(replay(m.b.g).peak_memory == 800);
  }
}
