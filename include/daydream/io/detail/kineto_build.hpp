// Defines io::detail::build_graph: Kineto event tables to a daydream::graph, stage by stage.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_BUILD_HPP
#define DAYDREAM_IO_DETAIL_KINETO_BUILD_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_accounting.hpp>
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
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace daydream::io::detail {

/// What build_graph produces.
struct build_output {
  daydream::graph g;
  std::size_t in_graph = 0;
  std::map<std::string, std::size_t> ignored;
  std::size_t unlinked = 0;
  warning_log warnings;
  std::vector<iteration_rec> iterations;
  io::iteration_source iterations_from = io::iteration_source::none;
  std::int64_t memory_at_start = -1; ///< device bytes allocated before the first [memory] event
  std::int64_t memory_peak = -1;     ///< the trace's largest device Total Allocated
  time_ns begin = 0, end = 0;        ///< first start and last end of the graph's tasks (trace clock)
};

/// Empties `v` and gives its memory back.
template <class T> void release(T& v) { T().swap(v); }

/// Builds the task graph of a decoded Kineto trace (see io::load_kineto and
/// docs/ingest.md). Each stage takes what earlier ones produced and returns its own
/// result; the thread table's slices are the one thing several stages refine in turn
/// (flattened, cut, labelled, merged, then given tasks and waits). The per-thread work
/// of stages 4 (flattening), 6-12 (applying the cuts, merging) and 13 (the CPU tasks)
/// goes to `s.threads` threads (parallel_for); the graph is the same whatever their
/// number (name ids included).
///
/// Memory: each table goes as soon as the last stage that reads it is done, so that the
/// peak stays near the finished graph: `d`'s flows after stage 5; the threads' events
/// and cuts, the layer names and the backward roots after stage 12; the flattened
/// attributes but the ends after stage 13; every stage's result after the accounting
/// (which runs before the dependencies are committed), and `d`'s event tables (cpu, gpu,
/// memory, syncs, metas) with them. On return those tables are empty; `d`'s other
/// fields (counts, names, string pool) are kept.
inline void build_graph(decoded_trace& d, const build_settings& s, build_output& out) {
  out.warnings.max = s.max_warnings;
  auto& g = out.g;
  std::vector<edge_req> deps;
  iteration_table iterations;
  std::size_t clamped = 0, backpressure = 0, cross_stream = 0;
  {
    auto threads = group_threads(d);                                   // 1
    auto links = link_gpu_ops(d, threads);                             // 2
    iterations = find_iterations(d, out.warnings, s.step_annotation);  // 3
    auto flat = flatten_threads(d, threads, links, iterations, s.threads); // 4
    auto backward = resolve_backward_layers(d, threads, flat);         // 5
    // Stages 2 and 5 were the last to read the flows; accounting needs their kinds only.
    std::vector<std::uint8_t> flow_is_launch(d.flows.size());
    for (std::size_t i = 0; i < d.flows.size(); ++i) flow_is_launch[i] = d.flows[i].cat == ecat::launch_flow;
    release(d.flows);
    thread_plan plan;
    {
      layer_namer layers(d, flat, backward, g);
      plan = cut_threads(d, threads, links, flat, iterations, layers, s); // 6-12
    }
    // Read by the stages up to the cuts and by the layer names only.
    for (auto& th : threads.threads) {
      release(th.cuts);
      release(th.events);
    }
    release(flat.top_ordinal);
    release(backward.forward_of);
    out.begin = plan.mains.begin;
    out.end = plan.mains.end;
    auto tasks = make_tasks(d, threads, links, flat, plan, iterations, g, out.warnings, s.threads); // 13
    out.unlinked = tasks.unlinked;
    // The stages after 13 read the flattened events' ends only; accounting, whether each
    // was represented.
    const auto cpu_state = cpu_event_states(d, threads, flat, iterations);
    flat.keep_ends_only();
    set_work_ends(iterations, d, threads, tasks, plan.mains, g);                      // 13b
    auto edges = add_structural_edges(d, threads, links, flat, plan, tasks, s);       // 14
    auto syncs = add_sync_edges(d, threads, links, flat, plan, tasks, s, edges);      // 15
    set_durations_and_gaps(d, threads, links, plan, tasks, edges, s, g);               // 16
    auto memory = charge_memory(d, threads, plan, g);                                  // 17
    out.memory_at_start = memory.at_start;
    out.memory_peak = memory.peak;
    // 19, before 18: it reads the stages' results only, which can then go before the
    // dependencies are added to the graph.
    out.in_graph = account(d, {threads, flat, iterations, links, backward, tasks, memory, syncs, &flow_is_launch, &cpu_state},
                           out.ignored);
    clamped = flat.clamped;
    backpressure = syncs.backpressure;
    cross_stream = syncs.cross_stream;
    deps = std::move(edges.list);
  } // every stage's result goes here
  release(d.cpu);
  release(d.gpu);
  release(d.memory);
  release(d.syncs);
  release(d.metas);
  g.core().edges.reserve(deps.size()); // at most one record each: no growth by doubling
  commit_edges(edge_list{std::move(deps), {}}, g, out.warnings);                       // 18
  if (clamped)
    out.warnings.add(std::to_string(clamped) + " CPU events ended after their enclosing event and were clamped to it");
  if (backpressure)
    out.warnings.add(std::to_string(backpressure) + " launch/copy calls blocked until a GPU operation finished "
                     "(launch queue full); they wait for it in the graph");
  if (cross_stream)
    out.warnings.add(std::to_string(cross_stream) + " cudaStreamWaitEvent calls became dependencies between streams");
  out.iterations = std::move(iterations.list);
  out.iterations_from = iterations.source;
  if (g.empty()) {
    out.iterations.clear(); // nothing to measure
    out.iterations_from = io::iteration_source::none;
  }
}

} // namespace daydream::io::detail

#endif
