// The strategy model on the bundled real traces: the model read from a trace, dp=tp=pp=1
// against the trace's own replay, and laws every strategy's prediction keeps.
// SPDX-License-Identifier: MIT
#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/support/gradients.hpp>
#include <daydream/strategy/cluster_spec.hpp>
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
    auto e = ds::simulate(ds::strategy_spec{}, ds::cluster_spec::parse("1x1"), l.model);
    CHECK(e.predicted == replayed);
  }
}

TEST_CASE("real trace: every strategy of the 8-device grid keeps the laws") {
  auto l = load("dlrm_v100_rank0.json.gz", 0);
  const auto c = ds::cluster_spec::parse("proteus-v100");
  for (auto& s : ds::grid(8, l.model)) {
    const std::string spec = s.to_string();
    CAPTURE(spec);
    auto e = ds::simulate(s, c, l.model);
    // The breakdown of the busiest stage adds up; no stage computes more than the one GPU did.
    CHECK(e.compute + e.tp_comm + e.dp_exposed + e.update + e.other + e.bubble == e.predicted);
    CHECK(e.predicted > 0);
    CHECK(e.samples_per_s == doctest::Approx(8.0 / (double(e.predicted) / 1e9)));
    // ZeRO never adds memory, and stage 3 moves 1.5x the bytes of plain data parallelism.
    if (s.dp > 1) {
      auto z = s;
      z.zero = 3;
      auto e3 = ds::simulate(z, c, l.model);
      CHECK(e3.peak_memory <= e.peak_memory);
      CHECK(e3.comm.dp + e3.comm.zero == doctest::Approx(1.5 * e.comm.dp));
    }
  }
}
