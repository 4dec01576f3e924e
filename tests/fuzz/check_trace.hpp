// Defines what the fuzz targets of the trace readers check on every trace a reader accepts.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_FUZZ_CHECK_TRACE_HPP
#define DAYDREAM_TESTS_FUZZ_CHECK_TRACE_HPP

#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace daydream::fuzzing {

/// Reports a finding of fuzz target `target` and aborts (libFuzzer saves the input).
[[noreturn]] inline void fail(const char* target, const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s: %s\n", target, what, detail.c_str());
  std::abort();
}

/// Checks what a successful read promises: every input record (`unit`: "events", "rows")
/// in the graph or counted, the graph's invariants, a replay of every task, and
/// iterations measured no shorter than nothing. Returns the replay.
inline replay_result check_trace(const char* target, const io::kineto_trace& t, const char* unit) {
  const auto& rep = t.report;
  if (rep.in_graph + rep.ignored_total() != rep.events)
    fail(target, "accounting",
         std::to_string(rep.in_graph) + " in the graph + " + std::to_string(rep.ignored_total()) + " ignored != " +
             std::to_string(rep.events) + " " + unit);
  try {
    check_invariants(t.g);
  } catch (const error& e) {
    fail(target, "a loaded graph breaks an invariant", e.what());
  }
  replay_result r;
  try {
    r = replay(t.g);
  } catch (const error& e) {
    fail(target, "a loaded graph does not replay", e.what());
  }
  if (r.tasks != t.g.size()) fail(target, "replay", "not every task was replayed");
  for (auto& it : t.iterations) {
    (void)iteration_time(t.g, r, it.number);
    if (t.measured(it.number) < 0 || it.work_end < it.trace_begin)
      fail(target, "iterations", "iteration " + std::to_string(it.number) + " is measured negative");
  }
  return r;
}

} // namespace daydream::fuzzing

#endif
