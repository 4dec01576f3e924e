// Tests of passes/daydream/whatif: scenarios, throughput and the bound of a step, by hand.
// SPDX-License-Identifier: MIT
#include <daydream/analysis.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/overlay.hpp>
#include <daydream/update.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/whatif/bound.hpp>
#include <daydream/whatif/scenario.hpp>
#include <daydream/whatif/throughput.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace daydream;
namespace dw = daydream::whatif;

namespace {

// One iteration (0): two 5 us launches on thread 1, each launching a 100 us kernel of layer
// fc_1 / fc_2 (testing::two_launches). Replay: K1 [5, 105) us, K2 [105, 205) us. The step
// is the GPU's work, 200 us.
struct two_kernels : testing::two_launches {
  two_kernels() : two_launches("volta_sgemm_128x64_nn", 100'000, 5'000, "volta_sgemm_128x64_nn", 100'000, 105'000) {
    b.g.set_layer(k1, "fc_1");
    b.g.set_layer(k2, "fc_2");
  }
};

} // namespace

TEST_CASE("a scenario is its chain applied to a copy, replayed and measured by its steady step") {
  two_kernels t;
  const std::vector<std::int32_t> its{0};
  auto base = dw::baseline(t.b.g, its, {});
  CHECK(base.name == "baseline");
  CHECK(base.predicted == 200'000);
  CHECK(base.per_iteration == std::vector<time_ns>{200'000});
  CHECK_FALSE(base.peak_memory);
  CHECK(dw::backlog_note(base).empty());
  const auto reg = passes::bundled();
  auto faster = dw::run_scenario(t.b.g, reg.make_chain("speedup:factor=2"), "speedup:factor=2", its,
                                 {.from = dw::memory_model::source::trace, .initial = 1000});
  CHECK(faster.passes == std::vector<std::string>{"speedup"});
  CHECK(faster.predicted == 100'000); // K1 [5, 55) K2 [55, 105) us
  REQUIRE(faster.peak_memory);
  CHECK(*faster.peak_memory == 1000);
  CHECK(faster.applied());
  CHECK(faster.no_result().empty());
  CHECK(faster.workers() == 0);
  CHECK(t.b.g.duration(t.k1) == 100'000); // the graph it was given is unchanged
  // A chain that selects nothing says so, and why.
  auto none = dw::run_scenario(t.b.g, reg.make_chain("speedup:kernels=nomatch,factor=2"), "none", its, {});
  CHECK_FALSE(none.applied());
  CHECK(none.no_result().rfind("no change: ", 0) == 0);
  CHECK(none.predicted == 200'000);
}

TEST_CASE("a scenario's copy is its transaction: its passes run in place, a failure drops the copy") {
  two_kernels t;
  const std::vector<std::int32_t> its{0};
  const auto reg = passes::bundled();
  // A chain of the bundled speedup and a pass that fails after changing the graph.
  auto chain = reg.make_chain("speedup:factor=2");
  REQUIRE(chain.front().run_in_place);
  int guarded = 0, in_place = 0;
  passes::erased_pass<graph> failing;
  failing.name = failing.spec = "fails";
  auto body = [](graph& g) -> pass_report {
    set_duration(g, task_id{0}, 1);
    throw std::runtime_error("cannot");
  };
  failing.run = [&](graph& g) { ++guarded; return apply(g, body, "fails"); };
  failing.run_in_place = [&](graph& g) { ++in_place; return apply_in_place(g, body, "fails"); };
  failing.replay = [](const graph& g, const replay_options& o) { return replay(g, trace_order_policy{}, o); };
  chain.push_back(failing);
  auto s = dw::run_scenario(t.b.g, chain, "speedup:factor=2+fails", its, {});
  CHECK(in_place == 1);
  CHECK(guarded == 0);
  CHECK(s.error == "daydream: pass 'fails' was refused and the graph left unchanged: cannot");
  CHECK(s.g.empty());
  CHECK(t.b.g.duration(t.k1) == 100'000); // the graph it was given is unchanged
  // run_chain keeps each pass a transaction: the graph the passes before left.
  graph h = t.b.g;
  CHECK_THROWS_AS(passes::run_chain(h, chain), error);
  CHECK(guarded == 1);
  CHECK(h.duration(t.k1) == 50'000);
  // A pass without an in-place run (a user's erased pass) runs transactionally.
  chain.back().run_in_place = nullptr;
  graph c = t.b.g;
  CHECK_THROWS_AS(passes::run_chain_in_place(c, chain), error);
  CHECK(guarded == 2);
}

TEST_CASE("throughput counts every worker's samples and compares with one GPU") {
  // One GPU at 100 ms a step, 32 samples a step; 16 workers at 125 ms a step.
  const dw::throughput_baseline one{100'000'000, 1, 32};
  auto t = dw::throughput_of(one, 125'000'000, 16);
  CHECK(t.workers == 16);
  CHECK(t.steps_per_s == doctest::Approx(8));
  REQUIRE(t.samples_per_s);
  CHECK(*t.samples_per_s == doctest::Approx(8 * 32 * 16));
  CHECK(t.vs_baseline == doctest::Approx(12.8));
  REQUIRE(t.vs_one_gpu);
  CHECK(*t.vs_one_gpu == doctest::Approx(12.8));
  REQUIRE(t.scaling_efficiency);
  CHECK(*t.scaling_efficiency == doctest::Approx(0.8));
  // A traced 8-worker job made 2x faster: 2x its throughput; one GPU's is unknown.
  auto job = dw::throughput_of({100'000'000, 8, std::nullopt}, 50'000'000, 0);
  CHECK(job.workers == 8);
  CHECK(job.vs_baseline == doctest::Approx(2));
  CHECK_FALSE(job.vs_one_gpu);
  CHECK_FALSE(job.samples_per_s);
  // No prediction, no throughput.
  CHECK(dw::throughput_of(one, -1, 0).steps_per_s == 0);
}

TEST_CASE("what bounds a step, in words, and its critical path by kind of layer") {
  two_kernels t;
  const auto r = replay(t.b.g);
  const auto b = breakdown(t.b.g, r, 0);
  CHECK(b.duration == 200'000);
  CHECK(dw::explain_bound(t.b.g, b) == "GPU-bound: stream 7 busy 100%; GPU kernels hold 100% of the critical path");
  const auto groups = dw::critical_groups(b);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].layer == "fc");
  CHECK(groups[0].ph == phase::other);
  CHECK(groups[0].instances == 2);
  CHECK(groups[0].time == 200'000);
  // Launches of 150 us make it CPU launch-bound: the CPU's window (300 us) is the step.
  set_duration(t.b.g, 0, 150'000);
  set_duration(t.b.g, 1, 150'000);
  const auto r2 = replay(t.b.g);
  const auto b2 = breakdown(t.b.g, r2, 0);
  CHECK(b2.duration == 300'000);
  CHECK(dw::explain_bound(t.b.g, b2).rfind("CPU launch-bound: thread 1 busy 100%; kernel launch calls hold", 0) == 0);
  iteration_breakdown empty;
  CHECK(dw::explain_bound(t.b.g, empty) == "nothing ran in the iteration");
}

TEST_CASE("a duration overlay replays the shared graph with its durations and gaps, as a copy would") {
  two_kernels t;
  const graph& g = t.b.g;
  const std::vector<std::int32_t> its{0};
  duration_overlay o(g);
  CHECK(&o.base() == &g);
  CHECK_FALSE(o.changed());
  replay_result r;
  replay_into(o, r);
  CHECK(dw::median_step(g, r, its) == 200'000);
  // K1 50 us: K1 [5, 55), K2 [55, 155) us; the graph keeps its 100 us.
  o.set_duration(t.k1, 50'000);
  CHECK(o.duration(t.k1) == 50'000);
  CHECK(g.duration(t.k1) == 100'000);
  replay_into(o, r);
  CHECK(r.start[t.k2] == 55'000);
  CHECK(r.end[t.k2] == 155'000);
  CHECK(dw::median_step(g, r, its) == 150'000);
  // K1 1 us (50 us x 0.02) and 20 us after the first launch: L2 [25, 30), K2 [30, 130), the step 125 us.
  task_id l1 = no_task;
  g.for_each_task([&](task_id u) {
    if (l1 == no_task && g.is<cpu_task>(u)) l1 = u;
  });
  o.scale_duration(t.k1, 0.02);
  o.set_gap(l1, 20'000);
  CHECK(o.gap(l1) == 20'000);
  replay_into(o, r);
  CHECK(r.start[t.k2] == 30'000);
  CHECK(dw::median_step(g, r, its) == 125'000);
  // The graph it stands for replays the same, every field.
  const auto copy = o.materialize();
  CHECK(copy.duration(t.k1) == 1'000);
  CHECK(copy.gap(l1) == 20'000);
  const auto rc = replay(copy);
  CHECK(rc.start == r.start);
  CHECK(rc.end == r.end);
  CHECK(rc.pred == r.pred);
  CHECK(rc.makespan == r.makespan);
  // reset(): the graph's own times again.
  o.reset();
  CHECK_FALSE(o.changed());
  CHECK(o.duration(t.k1) == 100'000);
  CHECK(o.gap(l1) == 0);
  CHECK(dw::median_step(g, replay(o), its) == 200'000);
  // Bad input: a negative time, a task that does not exist.
  CHECK_THROWS_AS(o.set_duration(t.k1, -1), daydream::error);
  CHECK_THROWS_AS(o.set_gap(l1, -1), daydream::error);
  CHECK_THROWS_AS(o.scale_duration(t.k1, -2), daydream::error);
  CHECK_THROWS_AS(o.set_duration(task_id(1000), 5), daydream::error);
}

TEST_CASE("a duration overlay refuses to replay a graph that gained tasks under it") {
  two_kernels t;
  duration_overlay o(t.b.g);
  o.set_duration(t.k1, 50'000);
  t.b.kernel("late", 1'000, t.b.g.resource_of(t.k1));
  replay_result r;
  CHECK_THROWS_WITH_AS(replay_into(o, r), doctest::Contains("make a new overlay"), daydream::error);
}
