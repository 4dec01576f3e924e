// The strategy model on the bundled real traces: the model read from a trace, dp=tp=pp=1
// against the trace's own replay, and laws every strategy's prediction keeps.
// SPDX-License-Identifier: MIT
#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/semantics/gradients.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/grid.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

namespace ds = daydream::strategy;

namespace {

struct loaded {
  daydream::io::kineto_trace trace;
  ds::model_profile model;
  std::int32_t iteration = 0;
};

loaded load(const char* rel, double model_bytes) {
  loaded l;
  l.trace = daydream::io::load_kineto(daydream::testing::bundled(rel));
  l.iteration = l.trace.default_iteration();
  ds::profile_options po;
  po.iteration = l.iteration;
  po.model_bytes = model_bytes;
  l.model = ds::profile_model(l.trace.g, po);
  return l;
}

} // namespace

TEST_CASE("real traces: the model holds the iteration's gradients, and dp=tp=pp=1 predicts its replay") {
  for (auto [rel, model_bytes] : {std::pair<const char*, double>{"dlrm_v100_rank0.json.gz", 0},
                                  std::pair<const char*, double>{"resnet50_v100.json.gz", 102e6}}) {
    const std::string name = rel;
    CAPTURE(name);
    auto l = load(rel, model_bytes);
    REQUIRE(l.model.layers.size() > 10);
    auto grads = daydream::passes::find_gradients(l.trace.g, {}, model_bytes);
    CHECK(l.model.param_bytes() == grads.bytes(l.iteration));
    CHECK(l.model.param_bytes() > 0);
    const auto replayed = daydream::iteration_time(l.trace.g, daydream::replay(l.trace.g), l.iteration);
    CHECK(l.model.iteration == replayed);
    CHECK(l.model.other + l.model.compute() + l.model.update == replayed);
    auto e = ds::simulate_strategy(ds::strategy_spec{}, ds::cluster_spec::parse("1x1"), l.model);
    CHECK(e.predicted == replayed);
  }
}

TEST_CASE("real trace: an inference trace has no gradients, and model_bytes is spread over its layers") {
  // BERT-small inference: no AccumulateGrad to spread model_bytes over; the layers share it,
  // so a strategy's data-parallel traffic and parameter memory are not 0 (docs/strategy.md's
  // tree-file example runs on this trace).
  auto none = load("tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz", 0);
  CHECK(none.model.param_bytes() == 0);
  auto l = load("tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz", 116e6);
  CHECK(l.model.param_bytes() == 116'000'000);
  const auto n = l.model.layers.size();
  REQUIRE(n > 0);
  for (auto& layer : l.model.layers) CHECK(layer.param_bytes >= 116'000'000 / n);
  CHECK(l.model.gradient_source == "model_bytes spread over the layers");
  bool noted = false;
  for (auto& note : l.model.notes) noted |= note.find("is spread evenly over its") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("real trace: every strategy of the 8-device grid keeps the laws") {
  auto l = load("dlrm_v100_rank0.json.gz", 0);
  const auto c = ds::cluster_spec::parse("proteus-v100");
  for (auto& s : ds::grid(8, l.model)) {
    const std::string spec = s.to_string();
    CAPTURE(spec);
    auto e = ds::simulate_strategy(s, c, l.model);
    // The breakdown of the busiest stage adds up; no stage computes more than the one GPU did.
    CHECK(e.compute + e.tp_comm + e.dp_exposed + e.update + e.other + e.bubble == e.predicted);
    CHECK(e.predicted > 0);
    CHECK(e.samples_per_s == doctest::Approx(8.0 / (double(e.predicted) / 1e9)));
    // ZeRO never adds memory, and stage 3 moves 1.5x the bytes of plain data parallelism.
    if (s.dp > 1) {
      auto z = s;
      z.zero = 3;
      auto e3 = ds::simulate_strategy(z, c, l.model);
      CHECK(e3.peak_memory <= e.peak_memory);
      CHECK(e3.comm.dp + e3.comm.zero == doctest::Approx(1.5 * e.comm.dp));
    }
  }
}

TEST_CASE("real traces with [memory] events: one GPU's predicted memory is the recorded peak, and strategies start "
          "from it") {
  for (const char* rel : {"ground_truth/h100-80gb-hbm3/resnet50_fp32.json.gz",
                          "ground_truth/h100-80gb-hbm3/gpt2_bf16.json.gz"}) {
    const std::string name = rel;
    CAPTURE(name);
    auto trace = daydream::io::load_kineto(daydream::testing::bundled(rel));
    REQUIRE(trace.info.memory_peak > 0);
    ds::profile_options po;
    po.iteration = trace.default_iteration();
    po.recorded_peak = double(trace.info.memory_peak);
    auto m = ds::profile_model(trace.g, po);
    CHECK(m.recorded_peak == double(trace.info.memory_peak));
    // The activations are what the [memory] events show each layer keeping, not the
    // tensor-size estimate (which counts weights and whole input sets: ResNet-50 8.4 GB
    // against 5.9 GB held, above the recorded peak of the whole step).
    double held = 0;
    for (auto& l : m.layers) {
      CHECK(l.held_bytes >= 0);
      held += double(l.held());
    }
    CHECK(held > 0);
    CHECK(held < double(trace.info.memory_peak));
    const auto c = ds::cluster_spec::parse("dgx-h100");
    auto one = ds::simulate_strategy(ds::strategy_spec{}, c, m);
    CHECK(one.peak_memory == doctest::Approx(double(trace.info.memory_peak)).epsilon(1e-9));
    // Data parallelism keeps a replica's memory; ZeRO-2 and a two-stage pipeline lower it.
    auto dp8 = ds::simulate_strategy(ds::strategy_spec::parse("dp=8"), c, m);
    CHECK(dp8.peak_memory == doctest::Approx(one.peak_memory));
    CHECK(ds::simulate_strategy(ds::strategy_spec::parse("dp=8,zero=2"), c, m).peak_memory < dp8.peak_memory);
    CHECK(ds::simulate_strategy(ds::strategy_spec::parse("pp=2,micro=4"), c, m).peak_memory < one.peak_memory);
    // Without the recorded peak the model is the sum of its named parts.
    po.recorded_peak = -1;
    auto bare = ds::profile_model(trace.g, po);
    auto e = ds::simulate_strategy(ds::strategy_spec{}, c, bare);
    CHECK(e.memory[0].recorded_rest == 0);
    CHECK(e.peak_memory == doctest::Approx(e.memory[0].params + e.memory[0].gradients + e.memory[0].optimizer +
                                           e.memory[0].activations));
  }
}
