// Tests the iteration stage alone: ProfilerStep markers, optimizer steps, none.
// SPDX-License-Identifier: MIT
#include <daydream/io/detail/kineto_iterations.hpp>

#include "stages.hpp"
#include "trace_text.hpp"

#include <doctest/doctest.h>

using namespace daydream;
using namespace daydream::io::detail;
using namespace daydream::testing;
using namespace daydream::testing::trace_text;

TEST_CASE("iterations: ProfilerStep markers, a duplicate skipped and an overlapping one ignored with a warning") {
  auto t = decode(trace({
      X("user_annotation", "ProfilerStep#7", 1, 1, "100", "50"),
      X("user_annotation", "ProfilerStep#7", 1, 1, "100", "50"),   // the same marker twice
      X("user_annotation", "ProfilerStep#8", 1, 1, "150", "50"),
      X("user_annotation", "ProfilerStep#9", 1, 1, "190", "30"),   // starts inside #8
      X("cpu_op", "aten::add", 1, 1, "160", "10"),
  }));
  warning_log w;
  auto its = find_iterations(t->d, w);
  REQUIRE(its.list.size() == 2);
  CHECK(its.list[0].number == 7);
  CHECK(its.list[0].begin == 100'000);
  CHECK(its.list[0].end == 150'000);
  CHECK(its.list[1].marker == "ProfilerStep#8");
  CHECK(its.marker_events.size() == 2);
  REQUIRE(w.kept.size() == 1);
  CHECK(w.kept[0] == "ProfilerStep#9 overlaps the previous step; ignored as a marker");
  CHECK(its.at(99'999) == -1);
  CHECK(its.at(100'000) == 7);
  CHECK(its.at(150'000) == 8);
  CHECK(its.at(200'000) == -1);
}

TEST_CASE("iterations: without step markers, optimizer steps end iterations") {
  // iteration 1: from the thread's first event to the first event after step 1 ended;
  // iteration 2: from there to the end of step 2
  auto t = decode(trace({
      X("cpu_op", "aten::mm", 1, 1, "0", "20"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "30", "10"),
      X("cpu_op", "aten::mm", 1, 1, "55", "20"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "80", "10"),
  }));
  warning_log w;
  auto its = find_iterations(t->d, w);
  REQUIRE(its.list.size() == 2);
  CHECK(its.list[0].number == 1);
  CHECK(its.list[0].begin == 0);
  CHECK(its.list[0].end == 55'000);
  CHECK(its.list[1].begin == 55'000);
  CHECK(its.list[1].end == 90'000);
  CHECK(its.list[1].marker == "Optimizer.step#SGD.step");
  CHECK(w.kept.empty());
}

TEST_CASE("iterations: a trace with neither markers nor optimizer steps is one iteration, the whole trace") {
  auto t = decode(trace({X("cpu_op", "aten::mm", 1, 1, "0", "20")}));
  warning_log w;
  auto its = find_iterations(t->d, w);
  CHECK(its.source == io::iteration_source::whole_trace);
  REQUIRE(its.list.size() == 1);
  CHECK(its.list[0].number == 0);
  CHECK(its.at(-5) == 0); // everything belongs to it (its bounds are the graph's span, set later)
  CHECK(its.at(10'000) == 0);
  auto none = decode(trace({}));
  auto empty = find_iterations(none->d, w);
  CHECK(empty.list.empty());
  CHECK(empty.source == io::iteration_source::none);
  CHECK(empty.at(0) == -1);
}

TEST_CASE("iterations: a step annotation marks the steps, numbered in trace order, instead of ProfilerStep") {
  // An inference engine's decode steps, one of them nested in another, and a ProfilerStep
  // that the step annotation overrides.
  auto t = decode(trace({
      X("user_annotation", "ProfilerStep#3", 1, 1, "0", "400"),
      X("user_annotation", "step[DECODE bs=16]", 1, 1, "10", "100"),
      X("user_annotation", "step[DECODE bs=16]", 1, 1, "20", "10"),  // inside the one before
      X("user_annotation", "step[PREFILL bs=2]", 1, 1, "120", "50"),
      X("user_annotation", "step[DECODE bs=16]", 1, 1, "200", "100"),
      X("cpu_op", "aten::mm", 1, 1, "30", "20"),
  }));
  warning_log w;
  auto its = find_iterations(t->d, w, "step\\[DECODE");
  CHECK(its.source == io::iteration_source::annotations);
  REQUIRE(its.list.size() == 2);
  CHECK(its.list[0].number == 1);
  CHECK(its.list[0].begin == 10'000);
  CHECK(its.list[0].end == 110'000);
  CHECK(its.list[0].marker == "step[DECODE bs=16] #1");
  CHECK(its.list[1].number == 2);
  CHECK(its.list[1].begin == 200'000);
  CHECK(its.at(150'000) == -1); // the prefill step is no decode step
  REQUIRE(w.kept.size() == 1);
  CHECK(w.kept[0] ==
        "1 annotations matching the step annotation 'step\\[DECODE' overlap the step before them; ignored as markers");
  REQUIRE(its.marker_events.size() == 2);
  CHECK(its.is_marker(its.marker_events[0]));
  CHECK_FALSE(its.is_marker(0)); // ProfilerStep#3 is not a marker here
  // A pattern that matches nothing, and one that is no regular expression, are errors.
  CHECK_THROWS_WITH_AS(find_iterations(t->d, w, "step\\[EXTEND"),
                       "daydream: no annotation matches the step annotation 'step\\[EXTEND' (the trace's annotations "
                       "include ProfilerStep#3, step[DECODE bs=16], step[PREFILL bs=2])",
                       daydream::error);
  CHECK_THROWS_WITH_AS(find_iterations(t->d, w, "step[DECODE"), doctest::Contains("is not a regular expression"),
                       daydream::error);
}
