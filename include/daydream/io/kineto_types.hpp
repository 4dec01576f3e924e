// Defines the vocabulary of io::kineto_trace that the ingest stages fill: io::module_node (a
// module of the traced model) and io::iteration_source (what the iterations were found from).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_KINETO_TYPES_HPP
#define DAYDREAM_IO_KINETO_TYPES_HPP

#include <daydream/task.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace daydream::io {

/// What a trace's iterations were found from.
enum class iteration_source : std::uint8_t {
  none,            ///< nothing: the trace has no events in the graph
  profiler_steps,  ///< ProfilerStep#N markers (torch.profiler.schedule / prof.step())
  optimizer_steps, ///< optimizer steps (`Optimizer.step#...`): no step markers
  whole_trace,     ///< neither: the whole trace is one iteration, numbered 0; where one
                   ///< training step ends cannot be told
  annotations,     ///< the annotations ingest_options::step_annotation matches (numbered 1, 2, ...)
};

/// A module of the traced model, as the profiler's `nn.Module: NAME` Python events nest.
///
/// Names are the ones the profiler writes (`TransformerBlock_3`: the class and the
/// instance's ordinal), which name the same module in every iteration and on every
/// thread, so a module is one node however often it runs; its parent is the module
/// enclosing its first call (a module shared by several parents, such as one rotary
/// embedding used by every attention block, sits under the first).
struct module_node {
  std::string name;                   ///< without the "nn.Module:" prefix
  std::int32_t parent = -1;           ///< index into kineto_trace::modules; -1 for a top-level module
  std::vector<std::uint32_t> children; ///< in the order of their first call
  std::uint32_t calls = 0;            ///< `nn.Module:` events of this name, on every thread
  time_ns first_call = 0;             ///< start of its first call (trace clock)
};

} // namespace daydream::io

#endif
