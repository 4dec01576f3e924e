// Defines what `daydream strategy` and Python's dd.strategy read from a trace: the model
// profile's options (the iteration, parameter bytes, batch, recorded peak), the model's
// strategy tree under the trace's module hierarchy, and which --strategy names a tree file.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_STRATEGY_PROFILE_HPP
#define DAYDREAM_CLI_STRATEGY_PROFILE_HPP

#include <daydream/io/kineto.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/tree.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace strategy_cmd {

/// Parameter bytes of a `model_bytes` text ("100MB"); 0 for none.
inline double model_bytes_of(const std::string& text) {
  if (text.empty()) return 0;
  return daydream::pass_params::parse("strategy", "model_bytes=" + text).get_bytes("model_bytes", 0);
}

/// The profile options of `trace` (read from `file`): `iteration` (-1: a steady-state one;
/// a usage error naming `program` if the trace has no such iteration), `model_bytes` and
/// `batch` as given, the trace's recorded memory peak.
inline daydream::strategy::profile_options profile_options_of(const daydream::io::kineto_trace& trace,
                                                              const std::string& program, const std::string& file,
                                                              std::int32_t iteration, double model_bytes, double batch) {
  if (iteration >= 0 && std::none_of(trace.iterations.begin(), trace.iterations.end(),
                                     [&](const auto& it) { return it.number == iteration; }))
    throw daydream::usage_error(fmt::format("{}: {}: no iteration {} (the trace has {})", program, file, iteration,
                                            trace.iterations.size()));
  daydream::strategy::profile_options po;
  po.iteration = iteration >= 0 ? iteration : std::max(0, trace.default_iteration());
  po.model_bytes = model_bytes;
  po.batch = batch;
  if (trace.info.memory_peak >= 0) po.recorded_peak = double(trace.info.memory_peak);
  return po;
}

/// Whether a --strategy names a tree file rather than a spec: it ends in .json or is a file.
inline bool is_tree_file(const std::string& s) {
  std::error_code ec;
  return s.ends_with(".json") || std::filesystem::is_regular_file(s, ec);
}

/// The model's strategy tree under the trace's module hierarchy.
inline daydream::strategy::strategy_tree model_tree(const daydream::strategy::model_profile& m,
                                                    const daydream::io::kineto_trace& t) {
  std::vector<std::string> names;
  std::vector<std::int32_t> parents;
  for (auto& n : t.modules) {
    names.push_back(n.name);
    parents.push_back(n.parent);
  }
  return daydream::strategy::strategy_tree::build(m, names, parents);
}

/// The name of the plan of a tree file: its root spec followed by `+tree(FILE NAME)`.
inline std::string tree_plan_name(const daydream::strategy::strategy_tree& t, const std::string& file) {
  return t.root_spec.to_string() + "+tree(" + std::filesystem::path(file).filename().string() + ")";
}

} // namespace strategy_cmd

#endif
