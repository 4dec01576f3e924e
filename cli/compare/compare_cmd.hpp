// Declares the compare command (daydream compare): a prediction next to a measured run, or the validation table of before/after pairs.
// SPDX-License-Identifier: MIT
//
#ifndef DAYDREAM_CLI_COMPARE_COMPARE_CMD_HPP
#define DAYDREAM_CLI_COMPARE_COMPARE_CMD_HPP

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace compare_cmd {

/// The options of `daydream compare`.
struct options {
  std::vector<std::string> traces;    ///< BEFORE and AFTER
  std::vector<std::string> specs;     ///< pass chains (joined with '+')
  std::vector<std::string> manifests; ///< validation mode: manifests of pairs
  std::string markdown;               ///< validation mode: write the table here ("-": stdout)
  std::string report;                 ///< an HTML report
  bool json = false;
  std::size_t layers = 30;            ///< layer rows
  /// --step-annotation: the annotations that mark both traces' steps (empty: ProfilerStep#N).
  std::string step_annotation;
};

/// Adds the options of `daydream compare` to `app`.
void add_options(CLI::App& app, options& o);

/// Runs `daydream compare`, printing on `out`. Throws daydream::usage_error (exit 2) and
/// daydream::error (exit 1).
int run(const options& o, std::FILE* out);

} // namespace compare_cmd

#endif
