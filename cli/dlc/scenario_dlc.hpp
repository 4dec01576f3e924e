// Defines write_scenario_dlc: the DLC files of a replayed parameter-server scenario (daydream dlc export, daydream whatif --dlc).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_DLC_SCENARIO_DLC_HPP
#define DAYDREAM_CLI_DLC_SCENARIO_DLC_HPP

#include <daydream/net/cluster.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/dlc_writer.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/replay_result.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dlc_cmd {

/// The cluster a scenario describes: the cluster keys (workers=, ps=, ...) of the last
/// pass of `spec` ("amp+p3:workers=4,ps=2").
inline daydream::cluster cluster_of_spec(const std::string& spec) {
  const auto plus = spec.rfind('+');
  const std::string last = plus == std::string::npos ? spec : spec.substr(plus + 1);
  const auto colon = last.find(':');
  auto params = daydream::pass_params::parse(last.substr(0, colon),
                                             colon == std::string::npos ? std::string() : last.substr(colon + 1));
  return daydream::cluster_from_params(params);
}

/// What write_scenario_dlc wrote.
struct scenario_files {
  std::int32_t workers = 0, servers = 0;
  std::size_t messages = 0; ///< 0: the scenario has no parameter-server push and pull; nothing written
  std::vector<std::filesystem::path> files;
};

/// Writes the DLC files (one per worker and server) of scenario `spec` replayed as `r`
/// on `g` into `dir`: the messages of io::ps_messages for the scenario's cluster. Writes
/// nothing when the scenario has no push and pull.
inline scenario_files write_scenario_dlc(const std::filesystem::path& dir, const std::string& spec,
                                         const daydream::graph& g, const daydream::replay_result& r) {
  scenario_files out;
  const auto c = cluster_of_spec(spec);
  out.workers = std::int32_t(c.workers());
  out.servers = std::int32_t(c.servers());
  const auto msgs = daydream::io::ps_messages(g, r, out.workers, out.servers);
  out.messages = msgs.size();
  if (msgs.empty()) return out;
  out.files = daydream::io::write_dlc_files(
      dir, daydream::io::write_dlc(msgs, {.workers = out.workers, .servers = out.servers}));
  return out;
}

/// A directory name for a scenario spec: letters, digits, '-', '_', '.', '=' kept, the
/// rest '_' ("p3:workers=4,ps=2" -> "p3_workers=4_ps=2").
inline std::string scenario_dir_name(const std::string& spec) {
  std::string s;
  for (char ch : spec) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                      ch == '-' || ch == '_' || ch == '.' || ch == '=';
    s.push_back(keep ? ch : '_');
  }
  return s.empty() || s == "." || s == ".." ? "scenario" : s;
}

} // namespace dlc_cmd

#endif
