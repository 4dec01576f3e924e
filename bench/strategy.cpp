// Benchmarks of daydream strategy: compile + simulate one 32-device strategy, a 100-strategy grid, and reading a model from a trace.
// SPDX-License-Identifier: MIT
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compile.hpp>
#include <daydream/strategy/grid.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#ifdef DAYDREAM_BENCH_HAVE_IO
#  include <daydream/io/kineto.hpp>
#endif

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {

namespace ds = daydream::strategy;

// A GPT-2 XL-sized model (Radford et al. 2019: 48 blocks, hidden 1600), each block recorded
// as two layers (attention, MLP); times of the order of a V100 at micro-batch 8 x 1024
// tokens, parameters fp32, activations fp16.
ds::model_profile gpt2_xl() {
  ds::model_profile m;
  const std::uint64_t h = 1600, bsh = 8 * 1024 * h * 2;
  for (int b = 0; b < 48; ++b) {
    ds::layer_profile attn{"block" + std::to_string(b) + ".attn", 9'000'000, 2'000'000, 18'000'000, 3'000'000,
                           4 * h * h * 4, 4 * bsh, bsh, h};
    ds::layer_profile mlp{"block" + std::to_string(b) + ".mlp", 12'000'000, 1'500'000, 24'000'000, 2'500'000,
                          8 * h * h * 4, 3 * bsh, bsh, 4 * h};
    m.layers.push_back(attn);
    m.layers.push_back(mlp);
  }
  m.update = 60'000'000;
  m.other = 5'000'000;
  m.batch = 8;
  return m;
}

void strategy_32_devices(benchmark::State& state) {
  const auto m = gpt2_xl();
  const auto c = ds::cluster_spec::parse("proteus-v100");
  const auto s = ds::strategy_spec::parse("dp=4,tp=2,pp=4,micro=16,zero=1");
  ds::simulate_options o;
  o.overlap_slowdown = 1.1;
  for (auto _ : state) {
    auto e = ds::simulate_strategy(s, c, m, o);
    benchmark::DoNotOptimize(e.predicted);
  }
  state.counters["graph_tasks"] = double(ds::compile(s, c, m, o).g.size());
}
BENCHMARK(strategy_32_devices)->Unit(benchmark::kMillisecond);

void strategy_grid_100(benchmark::State& state) {
  const auto m = gpt2_xl();
  const auto c = ds::cluster_spec::parse("proteus-v100");
  std::vector<ds::strategy_spec> specs;
  for (std::uint32_t zero : {0u, 1u, 2u, 3u})
    for (auto& s : ds::grid(32, m, ds::strategy_spec::parse("zero=" + std::to_string(zero))))
      if (specs.size() < 100) specs.push_back(s);
  for (auto _ : state)
    for (auto& s : specs) {
      auto e = ds::simulate_strategy(s, c, m);
      benchmark::DoNotOptimize(e.predicted);
    }
  state.counters["strategies"] = double(specs.size());
}
BENCHMARK(strategy_grid_100)->Unit(benchmark::kMillisecond);

#ifdef DAYDREAM_BENCH_HAVE_IO
void strategy_profile_resnet50(benchmark::State& state) {
  auto t = daydream::io::load_kineto(std::string(DAYDREAM_SOURCE_DIR) + "/examples/traces/resnet50_v100.json.gz");
  ds::profile_options po;
  po.iteration = t.default_iteration();
  po.model_bytes = 102e6;
  for (auto _ : state) {
    auto m = ds::profile_model(t.g, po);
    benchmark::DoNotOptimize(m.iteration);
  }
}
BENCHMARK(strategy_profile_resnet50)->Unit(benchmark::kMillisecond);
#endif

} // namespace
