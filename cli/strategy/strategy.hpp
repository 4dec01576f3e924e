// Declares the strategy command (daydream strategy): hybrid parallel strategies (dp x tp x
// pp, ZeRO, re-computation) of the model in one GPU's trace on a described cluster
// (Proteus; daydream/strategy/), defined in strategy.cpp.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_STRATEGY_STRATEGY_HPP
#define DAYDREAM_CLI_STRATEGY_STRATEGY_HPP

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace strategy_cmd {

/// The options of the strategy command.
struct options {
  std::string trace;
  std::string cluster;                 ///< PRESET or NODESxDEVICES[:key=value,...]
  std::vector<std::string> strategies; ///< strategy specs, or strategy tree files (FILE.json)
  bool show_tree = false;              ///< print the model's strategy tree and stop
  bool grid = false;                   ///< every dp x tp x pp x micro for the device count
  std::uint32_t devices = 0;           ///< devices of the grid; 0: the cluster's
  std::string zero = "0", recompute = "none", schedule = "1f1b"; ///< of the grid's strategies
  double global_batch = 0;             ///< samples per iteration over all replicas; 0: dp x batch
  double batch = 1;                    ///< samples in the traced iteration
  std::string model_bytes;             ///< parameter bytes when the trace has no gradient sizes
  std::int32_t iteration = -1;         ///< the traced iteration to read; -1: a steady one
  double overlap = 1.0;                ///< Proteus' overlap factor
  double optimizer_bytes = 12;         ///< optimizer state per parameter
  std::string timeline;                ///< Chrome-trace file of the strategies; empty: none
  bool json = false;
};

/// Adds the strategy options to `app`.
void add_options(CLI::App& app, options& o);

/// Runs the command (the strategies spread over the MPI ranks under mpirun) and prints the
/// ranking on `out` on rank 0. Returns the exit status.
int run(const options& o, std::FILE* out);

} // namespace strategy_cmd

#endif
