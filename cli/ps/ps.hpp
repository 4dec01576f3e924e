// Declares the ps command (daydream ps): asynchronous parameter-server training throughput
// for any number of workers from one worker's trace (daydream/ps/), defined in ps.cpp.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_PS_PS_HPP
#define DAYDREAM_CLI_PS_PS_HPP

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace ps_cmd {

/// The options of the ps command.
struct options {
  std::string trace;
  std::string workers = "1-16";     ///< "1-16", "1,2,4,8", "1,2,4-8"
  std::uint32_t servers = 1;
  std::string bandwidth = "10Gbps";
  std::string window = "28MB";
  bool no_flow_control = false;
  std::string order = "trace";
  std::string sharing = "max_min";
  std::string alpha = "0";          ///< time per MB of overhead
  std::string beta = "0";           ///< time per transfer of overhead
  std::string update_scale = "1";
  std::string compute_scale = "1";  ///< what-if: a k times larger batch
  std::string model_bytes;          ///< when the trace has no gradient sizes
  std::vector<std::string> server_map; ///< "REGEX=K": layers matching REGEX on server K
  std::uint32_t steps = 1000;
  std::uint32_t warmup = 50;
  std::uint64_t seed = 1;
  std::int64_t batch = 0;           ///< samples per worker and step; 0: unknown
  std::string timeline;             ///< Perfetto (Chrome JSON) file of the largest W's first steps
  std::uint32_t timeline_steps = 5;
  std::string dlc;                  ///< directory for the SketchDLC traces of the largest W's first steps
  bool stagger = false;             ///< start worker w at w/W of a free-network step
  bool json = false;
};

/// Adds the ps options to `app`.
void add_options(CLI::App& app, options& o);

/// Parses "1-16", "1,2,4,8" or "1,2,4-8" into ascending distinct numbers; throws
/// daydream::usage_error naming the bad part.
std::vector<std::uint32_t> parse_workers(const std::string& spec);

/// Runs the command; returns the exit status.
int run(const options& o, std::FILE* out);

} // namespace ps_cmd

#endif
