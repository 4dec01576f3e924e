// Defines the steps of parameter-server training as the simulation takes them: step_template, step_op, op_resource, tensor_info, check_steps.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PS_STEPS_HPP
#define DAYDREAM_PS_STEPS_HPP

#include <daydream/config.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::ps {

/// What an operation of a step runs on. Each worker has its own WORKER (its
/// computation) and, per server, its own PS (the server applying this worker's update,
/// as in Li et al., where server computation is not shared among workers); DOWNLINK
/// and UPLINK transfers share the network.
enum class op_resource : std::uint8_t {
  downlink, ///< parameters from a server to the worker (bytes)
  worker,   ///< the worker's computation (duration)
  uplink,   ///< gradients from the worker to a server (bytes)
  server,   ///< the server applying the update (duration)
};

/// How an op_resource reads ("downlink").
inline constexpr std::string_view to_string(op_resource r) noexcept {
  switch (r) {
  case op_resource::downlink: return "downlink";
  case op_resource::worker: return "worker";
  case op_resource::uplink: return "uplink";
  case op_resource::server: return "server";
  }
  return "?";
}

/// One operation of a step.
struct step_op {
  op_resource res = op_resource::worker;
  double duration = 0;       ///< ns, for worker and server operations
  double bytes = 0;          ///< for downlink and uplink operations
  std::uint32_t tensor = 0;  ///< downlink, uplink, server: the tensor (its server is the assignment's)
  std::vector<std::uint32_t> after = {}; ///< operations of the same step that must end first
};

/// One profiled step: its operations and their dependencies.
struct step_template {
  std::int32_t iteration = 0; ///< the trace's iteration it came from
  std::vector<step_op> ops;
};

/// A tensor exchanged with the servers every step.
struct tensor_info {
  std::string name;           ///< its layer, or "tensor N"
  double bytes = 0;           ///< its size
  std::uint32_t trace_rank = 0; ///< place in the trace's order (the order the gradients were produced)
  std::uint32_t use_rank = 0;   ///< place in the next forward's consumption order (TicTac's)
};

/// Throws daydream::error naming the step and operation when `steps` cannot be
/// simulated with `tensors`: no step, an empty step, a dependency that does not exist,
/// a cycle, a negative or non-finite size or duration, a tensor out of range.
inline void check_steps(const std::vector<step_template>& steps, std::size_t tensors) {
  if (steps.empty()) throw error("daydream ps: no step to simulate");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    auto& st = steps[s];
    auto where = [&](std::size_t i) {
      return "daydream ps: step " + std::to_string(s) + " (iteration " + std::to_string(st.iteration) +
             "), operation " + std::to_string(i) + ": ";
    };
    if (st.ops.empty()) throw error("daydream ps: step " + std::to_string(s) + " has no operation");
    std::vector<std::uint32_t> indeg(st.ops.size(), 0);
    std::vector<std::vector<std::uint32_t>> succ(st.ops.size());
    for (std::size_t i = 0; i < st.ops.size(); ++i) {
      auto& o = st.ops[i];
      if (!(o.duration >= 0) || !std::isfinite(o.duration)) throw error(where(i) + "the duration must be finite and not negative");
      if (!(o.bytes >= 0) || !std::isfinite(o.bytes)) throw error(where(i) + "the size must be finite and not negative");
      if (o.res != op_resource::worker && o.tensor >= tensors)
        throw error(where(i) + "tensor " + std::to_string(o.tensor) + " does not exist (" + std::to_string(tensors) + " tensors)");
      for (auto a : o.after) {
        if (a >= st.ops.size() || a == i) throw error(where(i) + "depends on operation " + std::to_string(a) + ", which is not another operation of the step");
        succ[a].push_back(static_cast<std::uint32_t>(i));
        ++indeg[i];
      }
    }
    std::vector<std::uint32_t> ready;
    for (std::uint32_t i = 0; i < indeg.size(); ++i)
      if (!indeg[i]) ready.push_back(i);
    std::size_t seen = 0;
    while (!ready.empty()) {
      auto i = ready.back();
      ready.pop_back();
      ++seen;
      for (auto j : succ[i])
        if (--indeg[j] == 0) ready.push_back(j);
    }
    if (seen != st.ops.size()) throw error("daydream ps: step " + std::to_string(s) + ": its dependencies form a cycle");
  }
}

} // namespace daydream::ps

#endif
