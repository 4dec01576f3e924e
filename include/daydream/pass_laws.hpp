// Defines check_pass_laws: the laws every pass must obey, checked on graphs of the user's choosing, and what it finds.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASS_LAWS_HPP
#define DAYDREAM_PASS_LAWS_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/graph_difference.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>

#include <concepts>
#include <cstddef>
#include <exception>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace daydream {

/// A graph a pass's laws are checked on, and the name violations give it. Any type with
/// the members `name` and `graph` serves as well.
template <class Graph = graph> struct pass_law_fixture {
  std::string name; ///< shown in violations and refusals
  Graph graph;      ///< the input of the pass
};

/// How strict check_pass_laws is.
struct pass_law_options {
  /// Whether the pass may refuse a fixture (throw daydream::error, leaving it unchanged):
  /// a pass that needs something a fixture lacks (a link, a layer) may refuse it.
  bool allow_refusal = true;
  /// Whether the replay after the pass uses the pass's own policy (policy_of(pass)).
  bool use_pass_policy = true;
};

/// One law a pass broke on one fixture.
struct pass_law_violation {
  int law = 0;         ///< the law's number, as check_pass_laws lists them (2 to 6)
  std::string fixture; ///< the fixture's name ("empty graph" and "no tasks" for law 2's)
  std::string what;    ///< what went wrong
};

/// What check_pass_laws found.
struct pass_law_report {
  std::string pass;                      ///< the pass's name (pass_traits)
  std::size_t applied = 0;               ///< fixtures the pass accepted
  std::size_t refused = 0;               ///< fixtures the pass refused (daydream::error), empty graphs included
  std::vector<std::string> refusals;     ///< "<fixture>: <message>" for each refusal
  std::vector<pass_law_violation> violations; ///< every law broken, fixture by fixture
  /// Whether the pass broke no law.
  bool ok() const noexcept { return violations.empty(); }
  /// The violations, one line each ("law 4, fixture 'resnet-like': 2 dependencies not
  /// respected by the replay"); empty when there are none.
  std::string describe() const {
    std::string s;
    for (const auto& v : violations)
      s += "pass '" + pass + "', law " + std::to_string(v.law) + ", fixture '" + v.fixture + "': " + v.what + "\n";
    return s;
  }
};



/// Checks the laws every pass must obey on every graph of `fixtures` (a range of elements
/// with members `name` and `graph`, such as pass_law_fixture), and returns what it found; it
/// asserts nothing, so that any test framework, or a program, can report the violations.
///
/// 1. the pass is a pass: `pass_for<Pass, Graph>` (checked at compile time);
/// 2. an empty graph (without and with the first fixture's resources) stays empty: the
///    pass is accepted and adds no task and no dependency;
/// 3. on each fixture, apply(g, pass) either succeeds and the graph keeps every invariant
///    (check_invariants: no cycle, consistent adjacency), or it is refused with
///    daydream::error and the graph is exactly as it was (a refusal breaks the law when
///    `options.allow_refusal` is false);
/// 4. after the pass the replay terminates (with the pass's policy, unless
///    `options.use_pass_policy` is false), every live task is replayed (started, ended,
///    not shorter than its duration), every dependency is respected (a task starts after
///    its predecessors end), and no removed task is;
/// 5. every task of the input is accounted for: it is still there with the same kind, or
///    it was removed (ids are not reused; a pass that compacts the graph is exempt);
/// 6. the pass is deterministic: applied to two copies it gives the same graph.
///
/// Costs, per fixture, two copies of it, two runs of the pass and one replay.
///
///     std::vector<daydream::pass_law_fixture<>> fixtures{{"my step", step}};
///     auto laws = daydream::check_pass_laws(my_pass{}, fixtures);
///     if (!laws.ok()) std::cerr << laws.describe();
template <class Pass, class Fixtures>
  requires requires(const Fixtures& f) {
    std::begin(f)->name;
    std::begin(f)->graph;
    std::end(f);
  }
pass_law_report check_pass_laws(const Pass& pass, const Fixtures& fixtures, const pass_law_options& options = {}) {
  using Graph = std::remove_cvref_t<decltype(std::begin(fixtures)->graph)>;
  static_assert(pass_for<Pass, Graph>,
                "daydream::check_pass_laws(pass, fixtures): the pass is not callable on the fixtures' graph type "
                "(law 1: a pass takes the graph by reference, `operator()(graph& g) const`).");
  pass_law_report rep;
  rep.pass = std::string(pass_traits<Pass>::name);
  auto broke = [&](int law, const std::string& fixture, std::string what) {
    rep.violations.push_back({law, fixture, std::move(what)});
  };
  auto run = [&](Graph& g, const std::string& where) -> bool {
    try {
      apply(g, pass);
      return true;
    } catch (const error& e) {
      ++rep.refused;
      rep.refusals.push_back(where + ": " + e.what());
      return false;
    }
  };

  // Law 2: an empty graph is a no-op, without and with resources.
  auto empty_stays_empty = [&](const Graph& empty, const std::string& where) {
    Graph g = empty;
    if (!run(g, where)) broke(2, where, "the pass refused it: " + rep.refusals.back());
    else if (g.size() != 0 || g.dependency_count() != 0)
      broke(2, where, "the pass added " + std::to_string(g.size()) + " tasks and " +
                          std::to_string(g.dependency_count()) + " dependencies");
  };
  empty_stays_empty(Graph{}, "empty graph");
  if (std::begin(fixtures) != std::end(fixtures)) {
    Graph empty;
    const Graph& first = std::begin(fixtures)->graph;
    for (resource_id r = 0; r < first.resource_count(); ++r) empty.add_resource(first.resource_at(r));
    empty_stays_empty(empty, "no tasks");
  }

  for (const auto& fx : fixtures) {
    const std::string name = fx.name;
    const Graph& before = fx.graph;
    Graph g = before;
    if (!run(g, name)) {
      // Law 3: a refused pass leaves the graph exactly as it was.
      if (auto diff = graph_difference(before, g); !diff.empty())
        broke(3, name, "a refused pass changed the graph: " + diff);
      if (!options.allow_refusal) broke(3, name, "the pass refused: " + rep.refusals.back());
      continue;
    }
    ++rep.applied;

    // Law 3: invariants hold.
    try {
      check_invariants(g);
    } catch (const std::exception& e) {
      broke(3, name, std::string("an invariant is broken after the pass: ") + e.what());
    }

    // Law 4: the replay terminates and accounts for every task.
    try {
      const replay_result r = options.use_pass_policy ? replay(g, policy_of(pass)) : replay(g);
      if (r.tasks != g.size())
        broke(4, name, "the replay ran " + std::to_string(r.tasks) + " of " + std::to_string(g.size()) + " tasks");
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
      if (bad_tasks) broke(4, name, std::to_string(bad_tasks) + " tasks not replayed or replayed too short");
      if (bad_edges) broke(4, name, std::to_string(bad_edges) + " dependencies not respected by the replay");
      if (ghosts) broke(4, name, std::to_string(ghosts) + " removed tasks replayed");
      if (r.makespan < 0) broke(4, name, "a negative makespan");
    } catch (const std::exception& e) {
      broke(4, name, std::string("the replay after the pass failed: ") + e.what());
    }

    // Law 5: every input task is accounted for (unless the pass compacted the graph).
    if (g.id_bound() >= before.id_bound()) {
      std::size_t changed_kind = 0, revived = 0;
      for (task_id t = 0; t < before.id_bound(); ++t) {
        changed_kind += before.contains(t) && g.contains(t) && before.kind_name(t) != g.kind_name(t);
        revived += !before.contains(t) && g.contains(t);
      }
      if (changed_kind) broke(5, name, std::to_string(changed_kind) + " tasks changed kind under the same id");
      if (revived) broke(5, name, std::to_string(revived) + " removed ids came back to life");
    }

    // Law 6: deterministic.
    Graph again = before;
    try {
      apply(again, pass);
      if (auto diff = graph_difference(g, again); !diff.empty())
        broke(6, name, "the pass is not deterministic: " + diff);
    } catch (const std::exception& e) {
      broke(6, name, std::string("the pass accepted the fixture once and refused it the second time: ") + e.what());
    }
  }
  return rep;
}

} // namespace daydream

#endif
