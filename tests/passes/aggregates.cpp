// A compile test: every bundled pass is an aggregate configured with designated initializers and size literals.
// SPDX-License-Identifier: MIT
#include <daydream/net/cluster.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/ddp.hpp>
#include <daydream/registry/specs/tensor_fusion.hpp>
#include <daydream/units.hpp>
#include <daydream/passes/all.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>

using namespace daydream;
using namespace daydream::literals;
namespace dp = daydream::passes;

// Aggregates: no base classes, no constructors; their members are named where they are set.
static_assert(std::is_aggregate_v<dp::amp> && std::is_aggregate_v<dp::blueconnect> && std::is_aggregate_v<dp::compile> &&
              std::is_aggregate_v<dp::cuda_graphs> && std::is_aggregate_v<dp::dataloader> &&
              std::is_aggregate_v<dp::ddp> && std::is_aggregate_v<dp::dgc> && std::is_aggregate_v<dp::fused_adam> &&
              std::is_aggregate_v<dp::gist> && std::is_aggregate_v<dp::grad_accum> && std::is_aggregate_v<dp::p3> &&
              std::is_aggregate_v<dp::precision> && std::is_aggregate_v<dp::recompute> &&
              std::is_aggregate_v<dp::reconstruct_bn> && std::is_aggregate_v<dp::speedup> &&
              std::is_aggregate_v<dp::substitute> && std::is_aggregate_v<dp::tensor_fusion> &&
              std::is_aggregate_v<dp::tensor_partition> && std::is_aggregate_v<dp::tictac> &&
              std::is_aggregate_v<dp::vdnn>);

TEST_CASE("the data-parallel passes take designated initializers: the cluster first, then their own members") {
  const cluster c{.machines = 2, .workers_per_machine = 8};
  auto d = dp::ddp{.cluster = c, .bucket_cap = 25_MiB};
  CHECK(d.cluster.workers() == 16);
  CHECK(d.bucket_cap == 26'214'400);
  CHECK(d.first_bucket == 1_MiB); // the default
  auto fused = dp::ddp{.cluster = c, .model_bytes = 100e6, .bucket_cap = 1_GiB, .first_bucket = 1_GiB,
                       .algorithm = all_reduce_algorithm::tree};
  CHECK(fused.algorithm == all_reduce_algorithm::tree);
  auto b = dp::blueconnect{.cluster = c, .first_bucket = 4_MiB};
  CHECK(b.bucket_cap == 25_MiB);
  auto g = dp::dgc{.cluster = c, .ratio = 0.01, .mem_bandwidth = 1e12};
  CHECK(g.compress_passes == 8);
  auto p = dp::p3{.cluster = c, .iterations = 4, .slice = 160_KB};
  static_assert(std::is_same_v<pass_policy_t<dp::p3>, priority_policy>);
  CHECK(p.slice == 160'000);
  auto t = dp::tictac{.cluster = c, .iterations = 2};
  static_assert(std::is_same_v<pass_policy_t<dp::tictac>, priority_policy>);
  CHECK(t.iterations == 2);
  auto h = dp::tensor_fusion{.cluster = c, .cycle_time = 5_ms, .threshold = 64_MiB};
  CHECK(h.cycle_time == 5'000'000);
  CHECK(h.threshold == 64ull << 20);
  auto bp = dp::tensor_partition{.cluster = c, .partition = 4_MB};
  CHECK(bp.partition == 4'000'000);

  SUBCASE("the same pass as the command line builds it") {
    auto from = dp::from_params<dp::ddp>(pass_params::parse("ddp", "machines=2,workers_per_machine=8,bucket_cap=25MiB"));
    CHECK(from.cluster.workers() == d.cluster.workers());
    CHECK(from.bucket_cap == d.bucket_cap);
    CHECK(from.first_bucket == d.first_bucket);
    CHECK(dp::from_params<dp::tensor_fusion>(pass_params::parse("tensor_fusion", "cycle_time=5ms,threshold=64MiB"))
              .threshold == h.threshold);
    CHECK(dp::tensor_partition{}.partition == 4096_KB);
  }
}

TEST_CASE("the single-GPU passes take designated initializers and literals") {
  auto a = dp::amp{.compute = 2.5, .dtype = "bf16", .scaler = false};
  CHECK(a.memory == 1.25);
  CHECK(a.overhead == 2'000);
  auto v = dp::vdnn{.bandwidth = 24e9, .layers = ".*conv.*"};
  CHECK(v.lookahead == 1);
  auto l = dp::dataloader{.workers = 4, .load_time = 800_ms};
  CHECK(l.load_time == 800'000'000);
  auto s = dp::speedup{.klass = "memory_bound", .factor = 3, .duration = 20_us};
  CHECK(s.duration == 20'000);
  CHECK(dp::grad_accum{.k = 4}.k == 4);
  CHECK(dp::recompute{.layers = "layer[34]\\..*"}.layers == "layer[34]\\..*");
  CHECK(dp::gist{.ratio = 1.0 / 32}.bandwidth == 300e9);
}
