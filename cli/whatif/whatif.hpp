// Declares the what-if command (daydream whatif, daydream-whatif): its options and its run.
// SPDX-License-Identifier: MIT
//
//   trace.json(.gz), profile.sqlite --load_trace--> graph --replay--> baseline (vs measured), every steady-state iteration
//                                      |
//                                      +--copy--> pass chain --replay--> scenario, ...
//
// Defined in whatif.cpp (one trace), sweep.cpp (--vary) and job.cpp (several traces or a
// directory: the job mode).
#ifndef DAYDREAM_CLI_WHATIF_WHATIF_HPP
#define DAYDREAM_CLI_WHATIF_WHATIF_HPP

#include <daydream/fwd.hpp>
#include <daydream/replay_result.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace CLI { class App; }
namespace daydream::passes { template <class Graph> class registry; }

namespace whatif_cmd {

/// What the job mode reads from the command line.
struct job_cli {
  std::vector<std::string> traces;       ///< files or directories
  std::vector<std::int32_t> ranks;       ///< --rank: explicit ranks, file by file
  std::vector<std::int32_t> on_ranks;    ///< --on-rank: ranks single-GPU passes apply to (empty: all)
  bool representative = false;           ///< --representative
  std::string transfer = "trace";        ///< --transfer trace|cluster
  std::string comm = "coarse";           ///< --comm coarse|fine
  std::string cluster;                   ///< --cluster KEY=VALUE,...
  /// --align: `lp` (clock offsets from GLPK's LP, daydream/align/lp.hpp) or `none` (clocks
  /// as recorded); empty: `lp` when the program is built with GLPK, else `none`.
  std::string align;
  /// --drop-missing-deps: Chakra ETs' dependencies on nodes a file does not have are left
  /// out (counted in a warning) instead of an error.
  bool drop_missing_deps = false;
  /// --max-memory: the memory the job mode may use ("20G"); empty: 90% of what the system
  /// says is available. Beyond it the ranks' graphs are freed as they are joined (no
  /// scenarios), or, when the job graph would not fit either, one rank answers as the
  /// representative worker (job_memory.hpp).
  std::string max_memory;
};

/// The options of the what-if command.
struct options {
  std::string trace;                 ///< the trace: Kineto JSON or an Nsight Systems SQLite export
  /// The trace arguments as given: one trace (then `trace`), or every rank of a job
  /// (several files or a directory: the job mode, job.cpp).
  std::vector<std::string> traces;
  job_cli job;                       ///< job-mode options (--rank, --on-rank, --representative, ...)
  std::int32_t iteration = -1;       ///< one iteration to analyse; -1: every steady-state one
  /// --step-annotation: a regular expression naming the annotations that mark the steps
  /// (io::ingest_options::step_annotation); empty: ProfilerStep#N.
  std::string step_annotation;
  /// --nvtx-step: the same for an Nsight Systems export, whose NVTX ranges it names.
  std::string nvtx_step;
  std::vector<std::string> specs;    ///< scenarios; empty: every applicable bundled pass
  bool json = false;
  bool critical = false;
  std::string timeline, report;
  std::string dlc;                   ///< directory for the DLC files of parameter-server scenarios (docs/dlc.md)
  std::string chakra;                ///< directory for every scenario's Chakra ETs (docs/formats.md)
  std::int64_t batch = 0;            ///< samples per worker and step; 0: unknown
  daydream::replay_options replay;
  bool progress = false;             ///< progress messages on stderr
  /// Sweep mode: the axes of the grid ("workers=8,16,64"); every --pass at every combination.
  std::vector<std::string> vary;
  std::string csv;                   ///< sweep mode: also write the table as CSV here ("-": stdout)
};

/// Adds the what-if options to `app` (the `whatif` subcommand or daydream-whatif itself);
/// the help lists the passes of `reg`.
void add_options(CLI::App& app, options& o, const daydream::passes::registry<daydream::graph>& reg);

/// add_options() listing the bundled passes (daydream::passes::bundled()).
void add_options(CLI::App& app, options& o);

/// Runs the what-if analysis with the passes of `reg` and prints it on `out`. Throws
/// daydream::usage_error for what the user asked wrongly (exit status 2) and
/// daydream::error for bad input (1).
int run(const options& o, std::FILE* out, std::FILE* err, const daydream::passes::registry<daydream::graph>& reg);

/// run() with the bundled passes (daydream::passes::bundled()).
int run(const options& o, std::FILE* out, std::FILE* err);

/// Whether this program can align a job's clocks by LP (built with GLPK).
bool have_lp_alignment() noexcept;

} // namespace whatif_cmd

#endif
