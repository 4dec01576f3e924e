// The what-if command's parts that its translation units share (whatif.cpp, sweep.cpp,
// job.cpp): loading a trace into an analysis, the sweep mode, the job mode.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_INTERNAL_HPP
#define DAYDREAM_CLI_WHATIF_INTERNAL_HPP

#include "output.hpp"
#include "whatif.hpp"

#include <daydream/registry/registry.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

namespace whatif_cmd {

/// Loads the trace of `o` into `trace` and fills what every analysis of it needs: the
/// iterations, their measured times, the memory model and the baseline replay.
void prepare(const options& o, daydream::io::kineto_trace& trace, analysis& a, std::FILE* err);

/// The sweep mode of run(): every chain of `o.specs` (default: the applicable bundled passes
/// that take one of the varied keys) at every point of the grid of `o.vary` (sweep.cpp).
int run_sweep_mode(const options& o, std::FILE* out, std::FILE* err, const daydream::passes::registry<graph>& reg);

/// Whether the trace arguments make a job: several files, a directory, or a Chakra
/// execution trace (chakra_source.hpp).
bool is_job(const std::vector<std::string>& traces);

/// Runs the what-if analysis of a job (job.cpp). `specs` as for one trace; empty: the job
/// scenarios no_straggler, network:scale=2 and collective:algorithm=tree.
int run_job(const job_cli& cli, const std::vector<std::string>& specs_in, bool json, const std::string& timeline,
            const std::string& report, std::int32_t iteration, const daydream::replay_options& ro, bool progress,
            std::FILE* out, std::FILE* err, const daydream::passes::registry<graph>& reg);

/// The reason a bundled pass does not apply to `g`, for the not-applicable list.
template <class Entry> std::string not_applicable_reason(const Entry& e, const graph& g) {
  if constexpr (requires { e.not_applicable_reason(g); }) {
    auto why = e.not_applicable_reason ? e.not_applicable_reason(g) : std::string();
    if (!why.empty()) return why;
  }
  (void)g;
  return fmt::format("the trace lacks what it needs (run it with --pass {} for details)", e.name);
}

} // namespace whatif_cmd

#endif
