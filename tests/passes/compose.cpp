// Tests of pass composition: pipelines of single-GPU passes, their policy and their laws.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/passes/amp.hpp>
#include <daydream/passes/fused_adam.hpp>
#include <daydream/passes/vdnn.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("passes compose: amp then fused_adam, and a pipeline keeps vdnn's policy") {
  mlp m;
  apply(m.b.g, amp{.memory = 2, .overhead = 0, .casts = false, .scaler = false} | fused_adam{});
  // k4 ends at 170; the fused kernel takes 0.35 x (30 + 30) = 21 ns (amp leaves the
  // FP32 optimizer's kernels as they are).
  CHECK(makespan(m.b.g) == 191);
  // With GradScaler, the fused kernel comes after the unscale's sync (25080, as in
  // tests/passes/amp.cpp): the two operator calls that launch it [25080, 25100) (the
  // step's calls cost 10 ns each), the kernel [25100, 25121).
  mlp s;
  apply(s.b.g, amp{.memory = 2, .overhead = 0, .casts = false} | fused_adam{});
  CHECK(makespan(s.b.g) == 25'121);
  static_assert(std::is_same_v<pass_policy_t<decltype(amp{} | vdnn{})>, priority_policy>);
  static_assert(std::is_same_v<pass_policy_t<decltype(vdnn{} | amp{})>, priority_policy>);
}

TEST_CASE("a pipeline of amp, fused_adam and vdnn obeys the pass laws") {
  testing::check_pass_laws(amp{} | fused_adam{} | vdnn{}, pass_fixtures(), {.allow_refusal = false});
}
