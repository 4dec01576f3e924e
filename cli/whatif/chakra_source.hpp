// Declares the what-if command's reading of Chakra execution traces: whether the trace arguments are ETs, and the job they make.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_WHATIF_CHAKRA_SOURCE_HPP
#define DAYDREAM_CLI_WHATIF_CHAKRA_SOURCE_HPP

#include <daydream/io/job.hpp>
#include <daydream/job/model.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace whatif_cmd {

/// Whether the trace arguments are Chakra execution traces, by content (the first file,
/// or the first `*.et` of a directory); always false in a program built without protobuf.
bool is_chakra_source(const std::vector<std::string>& traces);

/// The job the trace arguments make: Chakra ETs (io::load_chakra_job, one rank per NPU;
/// what reading them notes goes to `warnings`) when is_chakra_source, else Kineto traces
/// (io::load_job with `jo`). `drop_missing_deps`: io::chakra_read_options::drop_missing_dependencies
/// (a usage error for Kineto traces).
daydream::job load_job_source(const std::vector<std::filesystem::path>& paths, const daydream::io::job_options& jo,
                              bool drop_missing_deps, std::vector<std::string>& warnings);

} // namespace whatif_cmd

#endif
