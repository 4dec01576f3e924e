// Tests of slack.hpp: how much each task can grow before the makespan does.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/replay.hpp>
#include <daydream/slack.hpp>
#include <daydream/task.hpp>
#include <daydream/update.hpp>
#include <support/launch_chain.hpp>
#include <support/random_dag.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace daydream;

TEST_CASE("slack is the latest end minus the end, over dependencies and program order") {
  testing::launch_chain m;
  auto r = replay(m.g);
  REQUIRE(r.makespan == 47);
  REQUIRE(r.start[m.launch_relu] == 7); // after launch sgemm and its 2 ns gap
  // Only the launch of relu is off the critical path: relu waits for sgemm until 35.
  CHECK(slack(m.g, r) == std::vector<time_ns>{0, 23, 0, 0, 0});

  SUBCASE("growing a task by its slack leaves the makespan; one more nanosecond does not") {
    set_duration(m.g, m.launch_relu, 5 + 23);
    CHECK(replay(m.g).makespan == 47);
    set_duration(m.g, m.launch_relu, 5 + 24);
    CHECK(replay(m.g).makespan == 48);
  }
  SUBCASE("the gap after a task counts against the next one on its resource") {
    // relu's launch no longer waits: with a 30 ns gap after it, the sync is bound by
    // the thread (12 + 30 = 42 < 45: still by relu), and the launch's slack shrinks to 3.
    set_gap(m.g, m.launch_relu, 30);
    auto r2 = replay(m.g);
    CHECK(r2.makespan == 47);
    CHECK(slack(m.g, r2) == std::vector<time_ns>{0, 3, 0, 0, 0});
  }
  SUBCASE("removed tasks have slack -1 and a replay of another graph is refused") {
    m.g.erase(m.sync);
    auto r3 = replay(m.g);
    CHECK(slack(m.g, r3) == std::vector<time_ns>{0, 23, 0, 0, -1});
    CHECK_THROWS_AS(slack(m.g, replay_result{}), error);
  }
}

TEST_CASE("property: the critical path has no slack and no task has negative slack") {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    CAPTURE(seed);
    auto g = testing::random_dag(seed, {.tasks = 40});
    auto r = replay(g);
    auto s = slack(g, r);
    for (task_id t = 0; t < g.id_bound(); ++t) CHECK(s[t] >= 0);
    for (auto step : r.critical_path()) CHECK(s[step.task] == 0);
  }
}
