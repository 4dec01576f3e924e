// Declares the `daydream dlc` command: analyse, replay and export SketchDLC communication
// traces (daydream/io/dlc*.hpp), defined in dlc.cpp.
// SPDX-License-Identifier: MIT
//
//   daydream dlc analyze FILES... [--json] [--report FILE]
//   daydream dlc replay FILES... [--bandwidth-scale X] [--bandwidth BW] [--workers N] [--servers N] [--out DIR]
//   daydream dlc export TRACE --pass SPEC [--out DIR]
#ifndef DAYDREAM_CLI_DLC_DLC_HPP
#define DAYDREAM_CLI_DLC_DLC_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace dlc_cmd {

/// The options of the three dlc subcommands.
struct options {
  std::vector<std::string> files;
  bool json = false;
  std::string report;     // HTML
  std::string out;        // DLC directory
  // replay
  double bandwidth_scale = 1;
  std::string bandwidth, ps_bandwidth, recorded_bandwidth;
  std::uint32_t workers = 0, servers = 0;
  // export
  std::string trace;
  std::string pass;
  std::size_t max_rows = 20;
};

/// The dlc subcommands, to ask which one the user ran.
struct commands {
  CLI::App* dlc = nullptr;
  CLI::App* analyze = nullptr;
  CLI::App* replay = nullptr;
  CLI::App* export_ = nullptr;
};

/// Adds `dlc` and its three subcommands to `app`.
commands add_commands(CLI::App& app, options& o);

/// Runs the dlc subcommand the user ran; returns the exit status.
int run(const commands& c, const options& o, std::FILE* out);

} // namespace dlc_cmd

#endif
