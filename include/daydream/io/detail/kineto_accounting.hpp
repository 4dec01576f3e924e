// Defines the accounting stage of Kineto ingestion: every event of the trace is in the graph or counted by reason.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_ACCOUNTING_HPP
#define DAYDREAM_IO_DETAIL_KINETO_ACCOUNTING_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/kineto_cuts.hpp>
#include <daydream/io/detail/kineto_edges.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_layers.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_syncs.hpp>
#include <daydream/io/detail/kineto_tasks.hpp>
#include <daydream/io/detail/kineto_threads.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// What the stages did with each kind of event, for accounting.
struct accounting_input {
  const thread_table& threads;
  const flat_events& flat;
  const iteration_table& iterations;
  const gpu_links& links;
  const backward_map& backward;
  const task_map& tasks;
  const memory_charges& memory;
  const sync_result& syncs;
  /// Per flow event: 1 for a launch flow, 0 for a fwdbwd one; read instead of d.flows
  /// when the builder released that table early (nullptr: read d.flows).
  const std::vector<std::uint8_t>* flow_is_launch = nullptr;
  /// Per CPU event, its cpu_event_state when the builder took them before releasing the
  /// flattened attributes (nullptr: computed here).
  const std::vector<std::uint8_t>* cpu_state = nullptr;
};

enum : std::uint8_t { cpu_in_graph = 0, cpu_on_python_thread = 1, cpu_zero_duration = 2 };

/// Per CPU event: in the graph when some slice covers it (as the innermost event or as
/// an enclosing one, giving the slice its op, layer, phase or iteration), else why not.
/// Final once the slices are cut (stage 12).
inline std::vector<std::uint8_t> cpu_event_states(const decoded_trace& d, const thread_table& threads,
                                                  const flat_events& flat, const iteration_table& iterations) {
  std::vector<std::uint8_t> state(d.cpu.size(), cpu_zero_duration);
  for (auto e : iterations.marker_events) state[e] = cpu_in_graph;
  for (std::uint32_t e = 0; e < d.cpu.size(); ++e) {
    auto& x = d.cpu[e];
    if (threads.threads[x.thread].ignored) state[e] = cpu_on_python_thread;
    else if (flat.ends[e] > x.ts || flat.attr[e].sliced) state[e] = cpu_in_graph;
  }
  return state;
}

/// Stage 19: counts every event of the trace as in the graph or ignored by reason, and
/// checks that the counts add up to the trace's events (an internal error if not).
/// Returns the number in the graph; `ignored` gets the decoder's reasons and these.
inline std::size_t account(const decoded_trace& d, const accounting_input& in, std::map<std::string, std::size_t>& ig) {
  ig = d.ignored;
  std::size_t n = 0;
  // CPU events.
  std::vector<std::uint8_t> own;
  if (!in.cpu_state) own = cpu_event_states(d, in.threads, in.flat, in.iterations);
  const auto& state = in.cpu_state ? *in.cpu_state : own;
  for (auto st : state) {
    if (st == cpu_on_python_thread) ++ig["python_function on a thread without operators or runtime calls"];
    else if (st == cpu_zero_duration) ++ig["zero-duration CPU event"];
    else ++n;
  }
  n += d.gpu.size();
  // Launch and fwdbwd flows.
  const std::size_t flows = in.flow_is_launch ? in.flow_is_launch->size() : d.flows.size();
  std::vector<std::uint8_t> in_flow(flows, 0);
  for (auto& p : in.links.flow_pair) if (in.tasks.gpu_task[p.op] != no_task) in_flow[p.s] = in_flow[p.f] = 1;
  for (std::uint32_t i = 0; i < flows; ++i) {
    if (in.flow_is_launch ? (*in.flow_is_launch)[i] != 0 : d.flows[i].cat == ecat::launch_flow) {
      if (in_flow[i]) ++n;
      else if (in.links.flow_state[i] == 2) ++ig["launch flow whose end points match no event"];
      else if (in.links.flow_state[i] == 3) ++ig["launch flow contradicting the correlation id"];
      else ++ig["flow without partner"];
    } else {
      if (in.backward.fwd_state[i] == 1) ++n;
      else if (in.backward.fwd_state[i] == 2) ++ig["fwdbwd flow whose end points match no event"];
      else ++ig["flow without partner"];
    }
  }
  // Memory.
  std::vector<std::uint8_t> mem_in(d.memory.size(), 0);
  for (auto i : in.memory.used) mem_in[i] = 1;
  for (std::uint32_t i = 0; i < d.memory.size(); ++i) {
    if (mem_in[i]) ++n;
    else if (d.memory[i].device_type == 0) ++ig["cpu memory event"];
    else if (!is_device_memory(d.memory[i])) ++ig["memory event of a non-GPU device"];
    else ++ig["memory event outside any CPU activity"];
  }
  // cuda_sync records.
  for (std::uint32_t i = 0; i < d.syncs.size(); ++i) {
    if (in.syncs.state[i] == 1) ++n;
    else if (in.syncs.state[i] == 2) ++ig["cuda_sync of a non-blocking call (cudaEventQuery)"];
    else if (in.syncs.state[i] == 3) ++ig["cuda_sync with nothing to wait for"];
    else ++ig["cuda_sync without a matching runtime call"];
  }
  std::size_t total = n;
  for (auto& [k, v] : ig) total += v;
  if (total != d.events)
    throw error("daydream: internal error: ingest accounting covers " + std::to_string(total) + " of " +
                std::to_string(d.events) + " events");
  return n;
}

//! @endcond

} // namespace daydream::io::detail

#endif
