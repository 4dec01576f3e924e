// Tests of reschedule.hpp: priorities and the selection policies that read them.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/reschedule.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

using namespace daydream;

TEST_CASE("reschedule sets the priority that priority policies read") {
  graph g;
  auto t = g.add(cpu_task{}, {.name = "t"});
  CHECK(g.priority(t) == default_priority);
  reschedule(g, t, as_soon_as_ready);
  CHECK(g.priority(t) == std::numeric_limits<std::int64_t>::min());
  reschedule(g, t, 3);
  CHECK(g.priority(t) == 3);
  priority_policy p;
  CHECK(p.key(g, t, 100) == priority_key{3, 100, 0});
  trace_order_policy o;
  CHECK(o.key(g, t, 100) == priority_key{100, 0, 0});
  remove(g, t);
  CHECK_THROWS_AS(reschedule(g, t, 1), error);
}
