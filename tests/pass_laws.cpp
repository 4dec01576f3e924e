// Tests of pass_laws.hpp: the public law checker finds the laws a pass breaks, without a test framework.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/pass_laws.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <support/fixtures.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

using namespace daydream;

namespace {

// Halves every kernel: obeys every law.
struct law_abiding {
  static constexpr std::string_view name = "law-abiding";
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g)) scale_duration(g, k, 0.5);
  }
};
// Adds a task to any graph, an empty one included (law 2).
struct adds_to_empty {
  static constexpr std::string_view name = "adds-to-empty";
  void operator()(graph& g) const { g.add(cpu_task{}, {.name = "always", .duration = 1}); }
};
// A different result each time it runs (law 6).
struct forgetful {
  static constexpr std::string_view name = "forgetful";
  int* runs;
  void operator()(graph& g) const {
    ++*runs;
    for (auto k : tasks<gpu_kernel>(g)) set_duration(g, k, *runs);
  }
};
// Refuses any graph with kernels.
struct kernel_shy {
  static constexpr std::string_view name = "kernel-shy";
  void operator()(graph& g) const {
    for ([[maybe_unused]] auto k : tasks<gpu_kernel>(g)) throw error("kernels scare me");
  }
};
// Makes every kernel wait for a task that waits for it: a cycle, which apply refuses.
struct loop_maker {
  static constexpr std::string_view name = "loop-maker";
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g)) {
      insert(g, cpu_task{}, {.name = "loop"}, {edge_from(k, dep_kind::data), edge_to(k, dep_kind::data)});
      return;
    }
  }
};

std::vector<pass_law_fixture<>> law_fixtures() {
  std::vector<pass_law_fixture<>> out;
  for (auto& f : testing::standard_fixtures()) out.push_back({f.name, f.graph});
  return out;
}

std::size_t with_kernels(const std::vector<pass_law_fixture<>>& fixtures) {
  std::size_t n = 0;
  for (auto& f : fixtures) n += !f.graph.ids_of<gpu_kernel>().empty();
  return n;
}

} // namespace

TEST_CASE("check_pass_laws finds no violation in a well-behaved pass") {
  const auto fixtures = law_fixtures();
  REQUIRE_FALSE(fixtures.empty());
  auto laws = check_pass_laws(law_abiding{}, fixtures);
  CHECK(laws.ok());
  CHECK(laws.describe().empty());
  CHECK(laws.pass == "law-abiding");
  CHECK(laws.applied == fixtures.size());
  CHECK(laws.refused == 0);
}

TEST_CASE("check_pass_laws reports the laws a pass breaks, by law and fixture") {
  const auto fixtures = law_fixtures();
  SUBCASE("law 2: an empty graph stays empty") {
    auto laws = check_pass_laws(adds_to_empty{}, fixtures);
    REQUIRE(laws.violations.size() == 2);
    CHECK(laws.violations[0].law == 2);
    CHECK(laws.violations[0].fixture == "empty graph");
    CHECK(laws.violations[0].what == "the pass added 1 tasks and 0 dependencies");
    CHECK(laws.violations[1].fixture == "no tasks");
    CHECK(laws.describe().find("pass 'adds-to-empty', law 2, fixture 'empty graph'") == 0);
  }
  SUBCASE("law 6: the same graph gives the same result") {
    int runs = 0;
    auto laws = check_pass_laws(forgetful{&runs}, fixtures);
    REQUIRE_FALSE(laws.ok());
    CHECK(laws.violations.front().law == 6);
    CHECK(laws.violations.front().fixture == fixtures.front().name);
    CHECK(laws.violations.front().what.find("not deterministic") != std::string::npos);
  }
  SUBCASE("law 3: refusals are counted, and break the law only when not allowed") {
    REQUIRE(with_kernels(fixtures) > 0);
    auto allowed = check_pass_laws(kernel_shy{}, fixtures);
    CHECK(allowed.ok());
    CHECK(allowed.refused == with_kernels(fixtures));
    CHECK(allowed.applied == fixtures.size() - with_kernels(fixtures));
    CHECK(allowed.refusals.front().find("kernels scare me") != std::string::npos);
    auto strict = check_pass_laws(kernel_shy{}, fixtures, {.allow_refusal = false});
    CHECK(strict.violations.size() == with_kernels(fixtures));
    CHECK(strict.violations.front().law == 3);
    CHECK(strict.violations.front().what.find("the pass refused") == 0);
  }
  SUBCASE("a pass that closes a cycle is refused by apply, the graph unchanged") {
    auto laws = check_pass_laws(loop_maker{}, fixtures);
    CHECK(laws.ok());
    CHECK(laws.refused == with_kernels(fixtures));
    CHECK(laws.refusals.front().find("cycle") != std::string::npos);
  }
}

TEST_CASE("check_pass_laws takes any fixtures with a name and a graph") {
  using graph_type = daydream::graph;
  struct named {
    std::string name;
    graph_type graph;
  };
  std::vector<named> fixtures{{"one step", testing::training_step({.layers = 1})}};
  auto laws = check_pass_laws(law_abiding{} | law_abiding{}, fixtures, {.use_pass_policy = false});
  CHECK(laws.ok());
  CHECK(laws.applied == 1);
  CHECK(laws.pass == "pipeline");
}
