// Checks on every bundled trace that a duration_overlay replays exactly as the copied graph with the same durations and gaps: duration-only passes, gaps, the sensitivity profile.
// SPDX-License-Identifier: MIT
#include <daydream/analysis.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/kinds.hpp>
#include <daydream/overlay.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/speedup.hpp>
#include <daydream/replay.hpp>
#include <daydream/sensitivity/sensitivity.hpp>
#include <daydream/update.hpp>
#include <daydream/whatif/scenario.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;

namespace {

// Every field of two replays, and the steady-state steps of `its`, equal.
void check_same_replay(const graph& g, const replay_result& copied, const replay_result& overlaid,
                const std::vector<std::int32_t>& its) {
  CHECK(copied.start == overlaid.start);
  CHECK(copied.end == overlaid.end);
  CHECK(copied.pred == overlaid.pred);
  CHECK(copied.why == overlaid.why);
  CHECK(copied.edge == overlaid.edge);
  CHECK(copied.busy == overlaid.busy);
  CHECK(copied.makespan == overlaid.makespan);
  CHECK(copied.peak_memory == overlaid.peak_memory);
  CHECK(copied.tasks == overlaid.tasks);
  auto a = steady_steps(g, copied, its);
  auto b = steady_steps(g, overlaid, its);
  REQUIRE(a.size() == b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    CHECK(a[k].span == b[k].span);
    CHECK(a[k].work == b[k].work);
    CHECK(a[k].busiest == b[k].busiest);
  }
  CHECK(whatif::median_step(g, copied, its) == whatif::median_step(g, overlaid, its));
  // The graph's side of the steps read once: the same steps for both replays.
  steady_plan plan(g, its);
  for (const auto* r : {&copied, &overlaid}) {
    const auto c = plan.steps(*r);
    REQUIRE(c.size() == a.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(c[k].span == a[k].span);
      CHECK(c[k].work == a[k].work);
      CHECK(c[k].busiest == a[k].busiest);
    }
    CHECK(whatif::median_step(plan, *r) == whatif::median_step(g, copied, its));
  }
}

// The analysed iterations of a trace (every task in iteration 0 when it marks none).
std::vector<std::int32_t> analysed_iterations(io::kineto_trace& t) {
  if (!t.iterations.empty()) return t.steady_state_iterations();
  t.g.for_each_task([&](task_id u) { t.g.set_iteration(u, 0); });
  return {0};
}

} // namespace

TEST_CASE("overlays replay every bundled trace exactly as a copied graph: duration-only passes, gaps, both kernels") {
  auto corpus = testing::bundled_corpus();
  REQUIRE(corpus.size() > 30);
  std::size_t traces = 0;
  for (auto& entry : corpus) {
    auto t = io::load_kineto(entry.file);
    if (t.g.size() == 0) continue;
    INFO("trace: " << entry.name);
    ++traces;
    const auto its = analysed_iterations(t);
    const graph& base = t.g;
    // The chained kernel (no slowdown) and the event-driven one (an overlap slowdown).
    for (const replay_options opt : {replay_options{}, replay_options{.overlap_slowdown = 1.2}}) {
      INFO("overlap_slowdown " << opt.overlap_slowdown);
      duration_overlay o(base);
      replay_result overlaid;
      // Nothing changed: the base's own replay.
      replay_into(o, overlaid, trace_order_policy{}, opt);
      check_same_replay(base, replay(base, trace_order_policy{}, opt), overlaid, its);
      // Duration-only passes: speedup of GEMMs 2x, of every GPU task 3x, of one kernel
      // name to a fixed time; the pass on a copy against its selection on the overlay.
      for (const passes::speedup& p : {passes::speedup{.klass = "gemm"}, passes::speedup{.factor = 3},
                                      passes::speedup{.klass = "elementwise", .duration = 1'000}}) {
        INFO("speedup: " << p.describe());
        graph copy = base;
        apply(copy, p);
        o.reset();
        for (auto u : p.selected(base)) {
          if (p.duration >= 0) o.set_duration(u, p.duration);
          else o.scale_duration(u, 1.0 / p.factor);
        }
        replay_into(o, overlaid, trace_order_policy{}, opt);
        check_same_replay(base, replay(copy, trace_order_policy{}, opt), overlaid, its);
        // The overlay stands for the copied graph.
        CHECK(o.materialize().core().duration == copy.core().duration);
      }
      // Gaps: every CPU task's gap halved, every memcpy 10 us longer.
      graph copy = base;
      o.reset();
      base.for_each_task([&](task_id u) {
        if (base.is<cpu_task>(u)) {
          set_gap(copy, u, base.gap(u) / 2);
          o.set_gap(u, base.gap(u) / 2);
        } else if (base.is<memcpy_task>(u)) {
          set_duration(copy, u, base.duration(u) + 10'000);
          o.set_duration(u, base.duration(u) + 10'000);
        }
      });
      replay_into(o, overlaid, trace_order_policy{}, opt);
      check_same_replay(base, replay(copy, trace_order_policy{}, opt), overlaid, its);
      // Reset: the base again, with the overlay's columns kept.
      o.reset();
      CHECK_FALSE(o.changed());
      replay_into(o, overlaid, trace_order_policy{}, opt);
      check_same_replay(base, replay(base, trace_order_policy{}, opt), overlaid, its);
    }
  }
  CHECK(traces > 30);
}

TEST_CASE("the sensitivity profile on an overlay predicts each row as the copied graph does (every bundled trace)") {
  std::size_t rows = 0;
  for (auto& entry : testing::bundled_corpus()) {
    auto t = io::load_kineto(entry.file);
    if (t.g.size() == 0) continue;
    INFO("trace: " << entry.name);
    const auto its = analysed_iterations(t);
    const auto p = sensitivity::profile_of(t.g, its, {.factor = 2, .top = 3});
    // The layers of the three longest rows, on copies changed as the profile's rows are.
    for (auto& row : p.rows) {
      graph copy = t.g;
      copy.for_each_task([&](task_id u) {
        if (copy.is<cpu_task>(u)) return;
        const std::string layer = copy.layer(u).empty() ? "(no layer)" : std::string(copy.layer(u));
        if (layer == row.key) set_duration(copy, u, static_cast<time_ns>(std::llround(double(copy.duration(u)) / 2)));
      });
      const auto r = replay(copy);
      std::vector<time_ns> steps;
      for (auto& s : steady_steps(copy, r, its))
        if (s.step() >= 0) steps.push_back(s.step());
      CHECK(row.predicted == (steps.empty() ? r.makespan : median_of(steps)));
      ++rows;
    }
  }
  CHECK(rows > 30);
}
