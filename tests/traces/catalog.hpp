// Defines the per-iteration accuracy rows used by the trace tests and the accuracy table.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_TRACES_CATALOG_HPP
#define DAYDREAM_TESTS_TRACES_CATALOG_HPP

#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <support/corpus.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace daydream::tests {

using daydream::testing::kineto_traces;

/// One iteration of one trace: what the trace measured and what the unmodified graph
/// replays to.
struct accuracy_row {
  std::int32_t iteration = -1;
  time_ns measured = -1;
  time_ns replayed = -1;
  bool steady = false; ///< covered by the 2% check (kineto_trace::steady_state_iterations)
  double error() const { return measured > 0 ? double(replayed - measured) / double(measured) : 0.0; }
};

/// The accuracy rows of every iteration of `t` replayed as `r`.
inline std::vector<accuracy_row> accuracy(const io::kineto_trace& t, const replay_result& r) {
  std::vector<accuracy_row> rows;
  auto steady = t.steady_state_iterations();
  auto spans = iteration_spans(t.g, r);
  for (auto& it : t.iterations) {
    accuracy_row row;
    row.iteration = it.number;
    row.measured = t.measured(it.number);
    for (auto& s : spans)
      if (s.iteration == it.number) row.replayed = s.duration();
    row.steady = std::find(steady.begin(), steady.end(), it.number) != steady.end();
    rows.push_back(row);
  }
  return rows;
}

} // namespace daydream::tests

#endif
