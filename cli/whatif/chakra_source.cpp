// Defines the what-if command's reading of Chakra execution traces (whatif a.0.et a.1.et ... or a directory of them).
// SPDX-License-Identifier: MIT
#include "chakra_source.hpp"

#include <daydream/config.hpp>
#include <daydream/io/job.hpp>
#if DAYDREAM_HAVE_CHAKRA
#include <daydream/io/chakra.hpp>
#endif

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace whatif_cmd {

bool is_chakra_source([[maybe_unused]] const std::vector<std::string>& traces) {
#if DAYDREAM_HAVE_CHAKRA
  if (traces.empty()) return false;
  std::filesystem::path first = traces.front();
  if (std::filesystem::is_directory(first)) {
    auto files = daydream::io::chakra_files({first});
    if (files.empty()) return false;
    first = files.front();
  }
  return daydream::io::is_chakra_file(first);
#else
  return false;
#endif
}

daydream::job load_job_source(const std::vector<std::filesystem::path>& paths, const daydream::io::job_options& jo,
                              bool drop_missing_deps, [[maybe_unused]] std::vector<std::string>& warnings) {
#if DAYDREAM_HAVE_CHAKRA
  std::vector<std::string> names;
  for (auto& p : paths) names.push_back(p.string());
  if (is_chakra_source(names)) {
    if (!jo.ranks.empty())
      throw daydream::usage_error("daydream whatif: --rank is for Kineto traces; an execution trace's NPU is its "
                                  "`npu` attribute or the N of NAME.N.et");
    return daydream::io::load_chakra_job(paths, &warnings, {.drop_missing_dependencies = drop_missing_deps});
  }
#endif
  if (drop_missing_deps)
    throw daydream::usage_error("daydream whatif: --drop-missing-deps is for Chakra execution traces");
  return daydream::io::load_job(paths, jo);
}

} // namespace whatif_cmd
