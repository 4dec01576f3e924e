// Tests of measure_rate and size_rate: new kernel durations from comparable kernels.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/semantics/estimate.hpp>
#include "../builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("comparable kernels give a time per byte, scaled to a new size") {
  mlp m;
  auto r = measure_rate(m.b.g);
  CHECK(r.samples == 1); // the relu kernel: 40 ns over 400 bytes (threshold_backward has no sizes)
  CHECK(r.ns_per_byte() == doctest::Approx(0.1));
  CHECK(r.estimate(1000, 1e9) == 100);
  CHECK(size_rate{}.estimate(1000, 1e12) == 1); // fallback: 1000 B at 1 TB/s
  CHECK(launch_tensor_bytes(m.b.g, m.fc1_f.kernel) == 1000);
}
