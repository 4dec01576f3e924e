// Defines write_scenario_chakra: the Chakra ETs of a what-if scenario's graph (daydream export --chakra, daydream whatif --chakra).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_EXPORT_SCENARIO_CHAKRA_HPP
#define DAYDREAM_CLI_EXPORT_SCENARIO_CHAKRA_HPP

#include <daydream/config.hpp>
#include <daydream/fwd.hpp>
#include <daydream/task.hpp>
#if DAYDREAM_HAVE_CHAKRA
#include <daydream/io/chakra.hpp>
#endif

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace export_cmd {

/// Whether this program reads and writes Chakra execution traces (built with protobuf).
inline constexpr bool have_chakra =
#if DAYDREAM_HAVE_CHAKRA
    true;
#else
    false;
#endif

/// The usage error of a program built without protobuf.
inline daydream::usage_error no_chakra(const std::string& who) {
  return daydream::usage_error(who + ": Chakra execution traces need protobuf, which this program was built without "
                                     "(install protobuf-compiler and libprotobuf-dev, or run scripts/install-deps.sh, "
                                     "and rebuild)");
}

/// What write_scenario_chakra wrote.
struct chakra_files {
  std::int32_t npus = 0;
  std::size_t nodes = 0, collectives = 0, dropped = 0;
  bool copies = false;
  std::vector<std::filesystem::path> files;
};

/// Writes the Chakra ETs of `g` into `dir` (io::write_chakra_files): one per NPU, `npus`
/// as chakra_write_options::npus; `measured` and `steady` the recorded iterations' times
/// and the ones to analyse, for a trace written as recorded; `world` the job's NPUs when `g`
/// is one rank of it.
inline chakra_files write_graph_chakra([[maybe_unused]] const std::filesystem::path& dir,
                                       [[maybe_unused]] const daydream::graph& g, [[maybe_unused]] std::int32_t npus,
                                       [[maybe_unused]] const std::string& prefix, [[maybe_unused]] const std::string& who,
                                       [[maybe_unused]] const std::map<std::int32_t, daydream::time_ns>& measured = {},
                                       [[maybe_unused]] const std::vector<std::int32_t>& steady = {},
                                       [[maybe_unused]] std::int32_t world = 0) {
#if DAYDREAM_HAVE_CHAKRA
  chakra_files out;
  auto w = daydream::io::write_chakra_files(g, dir, {.npus = npus, .prefix = prefix, .world = world, .measured = measured, .steady = steady});
  out.npus = std::int32_t(w.files.size());
  for (auto& f : w.files) {
    out.nodes += f.nodes;
    out.collectives += f.collectives;
  }
  out.dropped = w.dropped_dependencies;
  out.copies = w.copies;
  out.files = std::move(w.paths);
  return out;
#else
  throw no_chakra(who);
#endif
}

} // namespace export_cmd

#endif
