// Declares the export command (daydream export --chakra DIR TRACE...): a trace, a what-if of it, or a job's traces as Chakra execution traces.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_EXPORT_EXPORT_CMD_HPP
#define DAYDREAM_CLI_EXPORT_EXPORT_CMD_HPP

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace export_cmd {

/// The options of `daydream export`.
struct options {
  std::vector<std::string> traces; ///< one Kineto trace, or every rank of a job (files or a directory)
  std::string chakra;              ///< --chakra DIR: write Chakra ETs (one per NPU) into DIR
  std::string pass;                ///< --pass SPEC: a what-if of the one trace, written instead of the trace
  std::int32_t npus = 0;           ///< --npus N: NPUs to write for one trace (0: its own, or its collectives' group)
  std::string prefix = "daydream"; ///< --prefix: files are PREFIX.N.et
  bool json = false;
};

/// Adds the options of `daydream export` to `app`.
void add_options(CLI::App& app, options& o);

/// Runs `daydream export`, printing what it wrote on `out`. Throws daydream::usage_error
/// (exit 2) and daydream::error (exit 1).
int run(const options& o, std::FILE* out);

} // namespace export_cmd

#endif
