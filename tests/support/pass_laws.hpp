// Defines testing::check_pass_laws: the laws every pass must obey, checked on a set of fixture graphs.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_PASS_LAWS_HPP
#define DAYDREAM_TESTS_SUPPORT_PASS_LAWS_HPP

#include <daydream/config.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>
#include <support/compare.hpp>
#include <support/fixtures.hpp>

#include <doctest/doctest.h>

#include <exception>
#include <string>
#include <vector>

namespace daydream::testing {

/// What check_pass_laws saw, for further checks by the caller.
struct law_summary {
  std::size_t applied = 0;             ///< fixtures the pass accepted
  std::size_t refused = 0;             ///< fixtures the pass refused (daydream::error)
  std::vector<std::string> refusals;   ///< "<fixture>: <message>" for each refusal
};

/// How strict check_pass_laws is.
struct law_options {
  /// Whether the pass may refuse a fixture (throw daydream::error, leaving it unchanged).
  /// A pass that needs something a fixture lacks (a link, a layer) may refuse it.
  bool allow_refusal = true;
  /// Whether replaying after the pass uses the pass's own policy (policy_of(pass)).
  bool use_pass_policy = true;
};

/// Checks the laws every pass must obey, as doctest assertions, on every fixture:
///
/// 1. the pass is a pass: `pass_for<Pass, Graph>` (a compile-time check);
/// 2. an empty graph (without and with resources) stays empty: the pass is accepted and
///    adds no task and no dependency;
/// 3. on each fixture, apply(g, pass) either succeeds and the graph keeps every
///    invariant (check_invariants: no cycle, consistent adjacency), or it is refused with
///    daydream::error and the graph is exactly as it was (refusal allowed unless
///    `options.allow_refusal` is false);
/// 4. after the pass the replay terminates (with the pass's policy), every live task is
///    replayed (started, ended, not shorter than its duration), every dependency is
///    respected (a task starts after its predecessors end), and no removed id is;
/// 5. every task of the input is accounted for: it is still there with the same kind,
///    or it was removed (ids are not reused; a pass that compacts is exempt);
/// 6. the pass is deterministic: applied to two copies it gives the same graph.
///
/// Call it from every pass test:
///
///     TEST_CASE("amp obeys the pass laws") {
///       daydream::testing::check_pass_laws(daydream::passes::amp{},
///                                          daydream::testing::standard_fixtures());
///     }
template <class Pass, class Graph>
law_summary check_pass_laws(const Pass& pass, const std::vector<fixture<Graph>>& fixtures,
                            const law_options& options = {}) {
  static_assert(pass_for<Pass, Graph>, "check_pass_laws: the pass is not callable on this graph type");
  law_summary sum;
  const std::string pass_name(pass_traits<Pass>::name);
  INFO("pass: " << pass_name);

  auto run = [&](Graph& g, const std::string& where) -> bool {
    try {
      apply(g, pass);
      return true;
    } catch (const error& e) {
      ++sum.refused;
      sum.refusals.push_back(where + ": " + e.what());
      return false;
    }
  };

  // Law 2: an empty graph is a no-op.
  {
    Graph empty;
    INFO("fixture: empty graph");
    Graph g = empty;
    CHECK_MESSAGE(run(g, "empty graph"), "the pass refused an empty graph");
    CHECK(g.size() == 0);
    CHECK(g.dependency_count() == 0);
  }
  if (!fixtures.empty()) {
    Graph empty;
    for (resource_id r = 0; r < fixtures.front().graph.resource_count(); ++r)
      empty.add_resource(fixtures.front().graph.resource_at(r));
    INFO("fixture: no tasks, the resources of " << fixtures.front().name);
    Graph g = empty;
    CHECK_MESSAGE(run(g, "no tasks"), "the pass refused a graph without tasks");
    CHECK(g.size() == 0);
    CHECK(g.dependency_count() == 0);
  }

  for (const auto& fx : fixtures) {
    INFO("fixture: " << fx.name);
    const Graph& before = fx.graph;
    Graph g = before;
    const bool ok = run(g, fx.name);
    if (!ok) {
      // Law 3: a refused pass leaves the graph exactly as it was.
      auto diff = graph_difference(before, g, true);
      CHECK_MESSAGE(diff.empty(), "a refused pass changed the graph: " << diff);
      if (!options.allow_refusal) FAIL_CHECK("the pass refused: " << sum.refusals.back());
      continue;
    }
    ++sum.applied;

    // Law 3: invariants hold.
    CHECK_NOTHROW(check_invariants(g));

    // Law 4: the replay terminates and accounts for every task.
    replay_result r;
    bool replayed = false;
    try {
      if (options.use_pass_policy) r = replay(g, policy_of(pass));
      else r = replay(g);
      replayed = true;
    } catch (const std::exception& e) {
      FAIL_CHECK("replay after the pass failed: " << e.what());
    }
    if (replayed) {
      CHECK(r.tasks == g.size());
      std::size_t bad_tasks = 0, bad_edges = 0, ghosts = 0;
      for (task_id t = 0; t < g.id_bound(); ++t) {
        if (!g.contains(t)) {
          ghosts += r.start[t] != -1;
          continue;
        }
        if (r.start[t] < 0 || r.end[t] - r.start[t] < g.duration(t)) ++bad_tasks;
        for (auto d : g.successors(t))
          if (r.start[d.to] < r.end[t]) ++bad_edges;
      }
      CHECK_MESSAGE(bad_tasks == 0, bad_tasks << " tasks not replayed or replayed too short");
      CHECK_MESSAGE(bad_edges == 0, bad_edges << " dependencies not respected by the replay");
      CHECK_MESSAGE(ghosts == 0, ghosts << " removed tasks replayed");
      CHECK(r.makespan >= 0);
    }

    // Law 5: every input task is accounted for.
    if (g.id_bound() >= before.id_bound()) {
      std::size_t changed_kind = 0;
      for (task_id t = 0; t < before.id_bound(); ++t)
        if (before.contains(t) && g.contains(t) && before.kind_name(t) != g.kind_name(t)) ++changed_kind;
      CHECK_MESSAGE(changed_kind == 0, changed_kind << " tasks changed kind under the same id");
      std::size_t revived = 0;
      for (task_id t = 0; t < before.id_bound(); ++t) revived += !before.contains(t) && g.contains(t);
      CHECK_MESSAGE(revived == 0, revived << " removed ids came back to life");
    }

    // Law 6: deterministic.
    Graph again = before;
    try {
      apply(again, pass);
      auto diff = graph_difference(g, again, true);
      CHECK_MESSAGE(diff.empty(), "the pass is not deterministic: " << diff);
    } catch (const std::exception& e) {
      FAIL_CHECK("the pass accepted the fixture once and refused it the second time: " << e.what());
    }
  }
  return sum;
}

} // namespace daydream::testing

#endif
