// Tests of validate.hpp: the invariant checks and what they name.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/validate.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

using namespace daydream;

TEST_CASE("check_invariants names what is broken") {
  graph g;
  auto a = g.add(cpu_task{}, {.name = "a", .duration = 1});
  auto b = g.add(cpu_task{}, {.name = "b", .duration = 1});
  g.add_dependency(a, b, dep_kind::data);
  CHECK_NOTHROW(check_invariants(g));
  SUBCASE("a negative duration") {
    g.core().duration[b] = -5;
    CHECK_THROWS_WITH_AS(check_invariants(g), doctest::Contains("#1 \"b\" has a negative duration"), error);
  }
  SUBCASE("a degree count out of step") {
    g.core().n_in[b] = 3;
    CHECK_THROWS_WITH_AS(check_invariants(g), doctest::Contains("degree counts"), error);
  }
  SUBCASE("a missing resource") {
    g.core().res[a] = 4;
    CHECK_THROWS_WITH_AS(check_invariants(g), doctest::Contains("missing resource"), error);
  }
  SUBCASE("a live-edge count out of step") {
    g.core().live_edges = 2;
    CHECK_THROWS_WITH_AS(check_invariants(g), doctest::Contains("dependencies"), error);
  }
}
