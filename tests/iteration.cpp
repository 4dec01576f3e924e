// Tests of iteration.hpp: iteration spans and times of a replay.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

using namespace daydream;

using testing::builder;
using testing::check_span;

TEST_CASE("iteration_time measures from one iteration's first start to the next one's") {
  builder b;
  auto thr = b.add_thread();
  auto a = b.cpu("a", 10, thr, 2);
  auto c = b.cpu("b", 5, thr);
  auto d = b.cpu("c", 10, thr);
  auto e = b.cpu("d", 3, thr);
  b.dep(a, c, dep_kind::cpu_order);
  b.dep(c, d, dep_kind::cpu_order);
  b.dep(d, e, dep_kind::cpu_order);
  b.g.set_iteration(d, 1);
  b.g.set_iteration(e, 1);
  auto x = b.cpu("setup", 1, no_resource);
  b.g.set_iteration(x, -1); // outside any iteration: ignored
  auto r = replay(b.g);
  check_span(r, c, 12, 17);
  check_span(r, d, 17, 27);
  auto spans = iteration_spans(b.g, r);
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].iteration == 0);
  CHECK(spans[0].begin == 0);
  CHECK(spans[0].end == 17);
  CHECK(spans[0].last_end == 17);
  CHECK(spans[0].tasks == 2);
  CHECK(spans[1].begin == 17);
  CHECK(spans[1].end == 30);
  CHECK(iteration_time(b.g, r, 0) == 17);
  CHECK(iteration_time(b.g, r, 1) == 13);
  CHECK(iteration_time(b.g, r, 2) == -1);
}

TEST_CASE("iteration queries refuse a replay of another graph instead of reading past it") {
  builder b;
  auto thr = b.add_thread();
  b.cpu("a", 10, thr);
  auto r = replay(b.g);
  CHECK(iteration_time(b.g, r, 0) == 10);
  b.cpu("added later", 5, thr); // r no longer covers every task id
  CHECK_THROWS_WITH_AS(iteration_time(b.g, r, 0),
                       "daydream: iteration_spans: the replay result covers 1 task ids, the graph "
                       "has 2; it is not a replay of this graph (replay the graph again after "
                       "changing it)",
                       error);
  CHECK_THROWS_AS(iteration_spans(b.g, replay_result{}), error);
  CHECK(iteration_time(b.g, replay(b.g), 0) == 15); // a fresh replay: both tasks, one thread
}
