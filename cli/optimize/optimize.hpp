// Declares the optimize command (daydream optimize): its options and its run; the search is
// dPRO's optimizer (daydream/optimize/), defined in optimize.cpp.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_OPTIMIZE_OPTIMIZE_HPP
#define DAYDREAM_CLI_OPTIMIZE_OPTIMIZE_HPP

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace optimize_cmd {

/// The options of the optimize command.
struct options {
  std::vector<std::string> traces;   ///< one trace, or the traces of a job's ranks
  std::string memory_budget;         ///< "16GiB"; empty: none
  std::string time_budget = "30s";   ///< wall-clock budget of the search
  std::string workers, machines, workers_per_machine, bandwidth, latency, nvlink, pcie, ps;
  std::string algorithm = "ring";
  std::string model_bytes;           ///< total gradient bytes when the trace has no sizes
  std::vector<std::string> strategies; ///< strategy names; empty: all
  std::int32_t iteration = -1;       ///< the iteration to optimize; -1: the median steady-state one
  std::int64_t batch = 0;            ///< samples per worker and step, for samples/s
  bool json = false;
};

/// Adds the optimize options to `app`.
void add_options(CLI::App& app, options& o);

/// Runs the command: the search on every MPI rank when the program runs under mpirun
/// (built with MPI), else in this process; prints the plan (text or JSON) on `out` on rank
/// 0. Returns the exit status.
int run(const options& o, std::FILE* out);

} // namespace optimize_cmd

#endif
