// Tests of graph_difference.hpp: the first difference between two graphs, in words.
// SPDX-License-Identifier: MIT
#include <daydream/graph_difference.hpp>
#include <daydream/update.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

using namespace daydream;

TEST_CASE("graph_difference names the first difference, and nothing for equal graphs") {
  testing::two_launches t("a", 100, 5, "b", 100, 105);
  const graph same = t.b.g;
  CHECK(graph_difference(t.b.g, same).empty());
  graph slower = t.b.g;
  set_duration(slower, t.k2, 200);
  CHECK(graph_difference(t.b.g, slower) == "task #3: durations differ");
  graph renamed = t.b.g;
  renamed.set_name(t.k1, "c");
  CHECK(graph_difference(t.b.g, renamed) == "task #2: names differ");
  graph fewer = t.b.g;
  fewer.remove_dependency(t.k1, t.k2);
  CHECK(graph_difference(t.b.g, fewer) == "dependency counts differ: 4 vs 3");
}

TEST_CASE("graph_difference compares adjacency in order, or as sets") {
  testing::two_launches t("a", 100, 5, "b", 100, 105);
  graph reordered = t.b.g;
  // The second kernel's dependencies in: its launch (task #1), then the kernel before it;
  // the launch's removed and added again, so it comes last.
  reordered.remove_dependency(1, t.k2);
  reordered.add_dependency(1, t.k2, dep_kind::launch);
  CHECK(graph_difference(t.b.g, reordered, false).empty());
  CHECK_FALSE(graph_difference(t.b.g, reordered, true).empty());
}
