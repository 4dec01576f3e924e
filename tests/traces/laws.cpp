// Checks the prediction laws (passes/daydream/laws/prediction_laws.hpp) on every trace of the corpus: the bundled one and the extra traces when present.
// SPDX-License-Identifier: MIT
#include <daydream/io/kineto.hpp>
#include <daydream/laws/prediction_laws.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

using namespace daydream;

namespace {

// The corpus is checked in four shards, each a test case of its own, so that a parallel
// test run (ctest -j) spreads the checker's work over its cores: the traces sorted by file
// size, largest first, dealt round-robin. Run together (one process), the shards add up
// their counts and the last prints the table.
constexpr std::size_t shards = 4;

struct law_counts {
  std::array<std::size_t, 4> checked{}, broken{};
  std::size_t traces = 0, shards_run = 0;
};

law_counts& totals() {
  static law_counts t;
  return t;
}

void check_shard(std::size_t shard) {
  auto corpus = testing::corpus();
  std::stable_sort(corpus.begin(), corpus.end(), [](auto& a, auto& b) {
    return std::filesystem::file_size(a.file) > std::filesystem::file_size(b.file);
  });
  law_counts mine;
  for (std::size_t k = shard; k < corpus.size(); k += shards) {
    auto& entry = corpus[k];
    const std::string name = entry.name;
    auto t = io::load_kineto(entry.file);
    if (t.g.size() == 0) continue;
    INFO("trace: " << name);
    auto g = t.g;
    std::vector<std::int32_t> its;
    std::vector<time_ns> measured;
    if (t.iterations.empty()) {
      g.for_each_task([&](task_id u) { g.set_iteration(u, 0); });
      its = {0};
      measured = {t.info.end - t.info.begin};
    } else {
      its = t.steady_state_iterations();
      for (auto i : its) measured.push_back(t.measured(i));
    }
    const auto rep = laws::check_laws(g, its, measured, name);
    ++mine.traces;
    for (auto& c : rep.cases) {
      ++mine.checked[static_cast<std::size_t>(c.which)];
      if (c.held) continue;
      ++mine.broken[static_cast<std::size_t>(c.which)];
      FAIL_CHECK((std::string(to_string(c.which)) + " broken by " + c.scenario + ": " + c.detail));
    }
  }
  // A second run over extra traces alone (DAYDREAM_SKIP_BUNDLED=1) has those only.
  if (testing::skip_bundled()) CHECK(mine.traces > 0);
  else CHECK(mine.traces > 30 / shards);
  auto& all = totals();
  for (std::size_t k = 0; k < 4; ++k) {
    all.checked[k] += mine.checked[k];
    all.broken[k] += mine.broken[k];
  }
  all.traces += mine.traces;
  if (++all.shards_run < shards) return;
  std::printf("| law | cases checked | violations |\n|---|---:|---:|\n");
  for (std::size_t k = 0; k < all.checked.size(); ++k)
    std::printf("| `%s` | %zu | %zu |\n", std::string(to_string(laws::law(k))).c_str(), all.checked[k],
                all.broken[k]);
  std::printf("(%zu traces)\n", all.traces);
}

} // namespace

// The table of docs/accuracy.md ("Prediction laws") is the output of the four shards run
// together:
//   build/tests/traces/test_traces --test-case='*prediction laws*' --success=false | sed -n '/^| law/,$p'
TEST_CASE("the prediction laws hold on every trace of the corpus, shard 1 of 4 (prints the count of cases per law)") {
  check_shard(0);
}
TEST_CASE("the prediction laws hold on every trace of the corpus, shard 2 of 4") { check_shard(1); }
TEST_CASE("the prediction laws hold on every trace of the corpus, shard 3 of 4") { check_shard(2); }
TEST_CASE("the prediction laws hold on every trace of the corpus, shard 4 of 4") { check_shard(3); }

TEST_CASE("steady state: a step is never shorter than its busiest resource's work") {
  // One iteration whose CPU part takes 10 ns and whose link carries 100 ns of transfers:
  // the replayed span is 10 (the next iteration starts), the steady-state step 100.
  graph g;
  auto cpu = g.add_resource({"thread", resource_kind::cpu_thread});
  auto link = g.add_resource({"link", resource_kind::link});
  std::vector<task_id> c, x;
  for (std::int32_t it = 0; it < 3; ++it) {
    c.push_back(g.add(cpu_task{}, {.name = "step", .duration = 10, .resource = cpu, .iteration = it}).id);
    x.push_back(g.add(comm_task{}, {.name = "all_reduce", .duration = 100, .resource = link, .iteration = it}).id);
    g.add_dependency(c.back(), x.back(), dep_kind::comm);
    if (it > 0) g.add_dependency(c[std::size_t(it) - 1], c.back(), dep_kind::cpu_order);
    if (it > 0) g.add_dependency(x[std::size_t(it) - 1], x.back(), dep_kind::stream_order);
  }
  auto r = replay(g);
  CHECK(iteration_time(g, r, 1) == 10);
  auto steps = steady_steps(g, r, {0, 1});
  REQUIRE(steps.size() == 2);
  CHECK(steps[1].span == 10);
  CHECK(steps[1].work == 100);
  CHECK(steps[1].busiest == link);
  CHECK(steps[1].backlogged());
  CHECK(steps[1].step() == 100);
  auto rep = laws::check_laws(g, {1}, {}, "hand-built");
  for (auto& cs : rep.cases) CHECK_MESSAGE(cs.held, cs.detail);
}
