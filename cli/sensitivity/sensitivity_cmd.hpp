// Declares the sensitivity command (daydream sensitivity): for every layer, kernel family or kernel, the step predicted if it alone were X times faster.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_SENSITIVITY_SENSITIVITY_CMD_HPP
#define DAYDREAM_CLI_SENSITIVITY_SENSITIVITY_CMD_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace CLI { class App; }

namespace sensitivity_cmd {

/// The options of `daydream sensitivity`.
struct options {
  std::string trace;
  double factor = 2.0;       ///< each row's GPU work this many times faster
  std::string by = "layer";  ///< layer, class or kernel
  std::size_t top = 0;       ///< rows, the longest groups first (0: every group; kernel: 30 unless given)
  bool top_given = false;
  std::int32_t iteration = -1; ///< one iteration (-1: every steady-state one)
  bool json = false;
  /// --step-annotation: the annotations that mark the steps (empty: ProfilerStep#N).
  std::string step_annotation;
};

/// Adds the options of `daydream sensitivity` to `app`.
void add_options(CLI::App& app, options& o);

/// Runs `daydream sensitivity`, printing on `out`. Throws daydream::usage_error (exit 2) and
/// daydream::error (exit 1).
int run(const options& o, std::FILE* out);

} // namespace sensitivity_cmd

#endif
