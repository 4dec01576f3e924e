// Defines the --step-annotation option the single-trace commands share (io::ingest_options::step_annotation).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_STEP_ANNOTATION_HPP
#define DAYDREAM_CLI_STEP_ANNOTATION_HPP

#include <daydream/config.hpp>
#include <daydream/io/kineto.hpp>

#include <CLI/CLI.hpp>

#include <regex>
#include <string>
#include <string_view>

namespace program {

/// Adds `--step-annotation REGEX` to `app`, stored in `re`.
inline void add_step_annotation(CLI::App& app, std::string& re) {
  app.add_option("--step-annotation", re,
                 "a regular expression (ECMAScript, searched) naming the annotations that mark the steps, instead "
                 "of ProfilerStep#N: 'step\\[DECODE' for the decode steps of vLLM and SGLang traces");
}

/// The ingest options of `--step-annotation re` (empty: ProfilerStep#N). A bad expression is
/// a usage error naming `command`, raised before any trace is read.
inline daydream::io::ingest_options step_annotation_ingest(std::string_view command, const std::string& re) {
  daydream::io::ingest_options io;
  if (re.empty()) return io;
  try {
    std::regex check(re, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw daydream::usage_error(std::string(command) + ": --step-annotation '" + re +
                                "' is not a regular expression: " + e.what());
  }
  io.step_annotation = re;
  return io;
}

} // namespace program

#endif
