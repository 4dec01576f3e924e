// Benchmarks a generated distributed job: joining its ranks into one graph, matching the collectives, replaying and explaining it, full versus representative worker, coarse versus fine communication.
// SPDX-License-Identifier: MIT
//
// Sizes are arguments: DAYDREAM_BENCH_JOB="RANKS:TASKS[,RANKS:TASKS...]" replaces the default
// (small) list, e.g. DAYDREAM_BENCH_JOB=1024:100000 for the 1,024 ranks x 10^5 tasks per
// rank (about 10^8 tasks: 16+ GB of memory).
#include "workloads.hpp"

#include <daydream/graph.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/replay.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace daydream;

namespace {

// One rank of a data-parallel job: a CPU thread launching `tasks / 3` kernels on a compute
// stream; every 20th kernel is followed by an all-reduce on the NCCL stream that waits for
// it, and the compute stream waits for the all-reduce 10 kernels later. Rank r's kernels are
// (1 + r mod 7 %) longer, so ranks arrive at different times.
rank_trace make_rank(std::int32_t rank, std::int32_t world, std::size_t tasks) {
  rank_trace rt;
  rt.rank = rank;
  rt.world_size = world;
  rt.file = "rank" + std::to_string(rank);
  auto& g = rt.g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread, sharing::exclusive, rank, -1, 0});
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, rank, 0, 0});
  auto nc = g.add_resource({"stream 84", resource_kind::gpu_stream, sharing::exclusive, rank, 0, 0});
  g.reserve(tasks);
  task_id prev_cpu = no_task, prev_k = no_task, prev_c = no_task;
  std::vector<task_id> pending;
  std::size_t waited = 0; // pending[waited..] are not waited for yet
  time_ns t = 0;
  const double slow = 1.0 + double(rank % 7) / 100.0;
  std::size_t n = 0, kernels = 0;
  while (n + 3 <= tasks) {
    auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 4'000, .resource = thr,
                                                .trace_start = t, .iteration = 1});
    if (prev_cpu != no_task) g.add_dependency(prev_cpu, l.id, dep_kind::cpu_order);
    auto k = g.add(gpu_kernel{}, {.name = "kernel", .duration = time_ns(20'000 * slow), .resource = st,
                                  .trace_start = t + 5'000, .iteration = 1});
    g.add_dependency(l.id, k.id, dep_kind::launch);
    if (prev_k != no_task) g.add_dependency(prev_k, k.id, dep_kind::stream_order);
    if (pending.size() - waited >= 10) g.add_dependency(pending[waited++], k.id, dep_kind::sync);
    prev_cpu = l.id;
    prev_k = k.id;
    n += 2;
    if (++kernels % 20 == 0) {
      auto c = g.add(comm_task{.op = comm_op::all_reduce, .bytes = 1 << 22, .group_size = std::uint32_t(world)},
                     {.name = "ncclKernel_AllReduce", .duration = 50'000, .resource = nc, .trace_start = t + 30'000,
                      .iteration = 1});
      g.add_dependency(k.id, c.id, dep_kind::sync);
      if (prev_c != no_task) g.add_dependency(prev_c, c.id, dep_kind::stream_order);
      prev_c = c.id;
      pending.push_back(c.id);
      ++n;
    }
    t += 5'000;
  }
  rt.measured[1] = t;
  rt.steady = {1};
  return rt;
}

job make_job(std::int32_t ranks, std::size_t tasks) {
  job j;
  j.world_size = ranks;
  for (std::int32_t r = 0; r < ranks; ++r) j.ranks.push_back(make_rank(r, ranks, tasks));
  return j;
}

void full(benchmark::State& state) {
  const auto ranks = std::int32_t(state.range(0));
  const auto tasks = std::size_t(state.range(1));
  auto j = make_job(ranks, tasks);
  std::size_t total = 0;
  for (auto _ : state) {
    auto m = match_collectives(j);
    auto jg = build_job_graph(j, m, no_alignment(make_alignment_input(j, m)));
    auto res = analyse_job(j, jg);
    total = jg.g.size();
    benchmark::DoNotOptimize(res.predicted);
  }
  state.counters["tasks"] = double(total);
  state.counters["tasks/s"] = benchmark::Counter(double(total), benchmark::Counter::kIsIterationInvariantRate);
}

// The job graph of RANKS x TASKS, built once and kept for the benchmarks that follow (the
// rank graphs are freed once joined: at 1024 x 10^5 both would not fit with the replay).
const job_graph& joined(std::int32_t ranks, std::size_t tasks) {
  static std::unique_ptr<job_graph> kept;
  static std::pair<std::int32_t, std::size_t> kept_for{0, 0};
  if (!kept || kept_for != std::pair{ranks, tasks}) {
    kept.reset();
    auto j = make_job(ranks, tasks);
    auto m = match_collectives(j);
    auto a = no_alignment(make_alignment_input(j, m));
    kept = std::make_unique<job_graph>(build_job_graph(j, m, a));
    kept_for = {ranks, tasks};
  }
  return *kept;
}

// replay() of the whole job graph, against its Kahn traversal (traverse_job, same graph):
// the floor of docs/performance.md "Against the traversal floor" at the job's scale.
// Counters: tasks, and the bytes per task of the graph's core: its per-task columns and its
// dependency records.
void replay_job(benchmark::State& state) {
  const auto& jg = joined(std::int32_t(state.range(0)), std::size_t(state.range(1)));
  time_ns makespan = 0;
  for (auto _ : state) {
    auto r = replay(jg.g);
    makespan = r.makespan;
    benchmark::DoNotOptimize(r.end.data());
  }
  const auto mem = bench::measure_memory(jg.g);
  state.counters["tasks"] = double(jg.g.size());
  state.counters["columns_B_per_task"] = double(mem.task_columns) / double(jg.g.size());
  state.counters["edges_B_per_task"] = double(mem.edges) / double(jg.g.size());
  state.counters["makespan_ms"] = double(makespan) / 1e6;
  state.counters["peak_rss_GiB"] = double(bench::resident_memory().peak) / double(1u << 30);
  state.counters["tasks/s"] = benchmark::Counter(double(jg.g.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void traverse_job(benchmark::State& state) {
  const auto& jg = joined(std::int32_t(state.range(0)), std::size_t(state.range(1)));
  bench::kahn_traversal k;
  for (auto _ : state) {
    if (k.run(jg.g) != jg.g.size()) state.SkipWithError("the graph has a cycle");
    benchmark::DoNotOptimize(k.order().data());
  }
  state.counters["tasks"] = double(jg.g.size());
  state.counters["tasks/s"] = benchmark::Counter(double(jg.g.size()), benchmark::Counter::kIsIterationInvariantRate);
}

// The fine level: every all-reduce as its chunk transfers on the links of machines of 8 GPUs
// (NVLink inside, one NIC each), calibrated from the trace; `tree`: as a binomial tree
// (2(p-1) transfers per collective instead of the ring's 2p(p-1)).
void fine(benchmark::State& state, bool tree) {
  const auto ranks = std::int32_t(state.range(0));
  const auto tasks = std::size_t(state.range(1));
  auto j = make_job(ranks, tasks);
  job_model_options o;
  o.communication = communication_level::fine;
  o.cluster.workers_per_machine = std::uint32_t(std::min(ranks, 8));
  o.cluster.machines = std::uint32_t(ranks) / o.cluster.workers_per_machine;
  o.cluster.nvlink = {150e9, 1'000};
  if (tree) o.changed_to = all_reduce_algorithm::tree;
  std::size_t total = 0, transfers = 0;
  for (auto _ : state) {
    auto m = match_collectives(j);
    auto jg = build_job_graph(j, m, no_alignment(make_alignment_input(j, m)), o);
    auto res = analyse_job(j, jg);
    total = jg.g.size();
    transfers = 0;
    for (auto& c : jg.collectives) transfers += c.transfers;
    benchmark::DoNotOptimize(res.predicted);
  }
  state.counters["tasks"] = double(total);
  state.counters["transfers"] = double(transfers);
  state.counters["tasks/s"] = benchmark::Counter(double(total), benchmark::Counter::kIsIterationInvariantRate);
}
void fine_ring(benchmark::State& state) { fine(state, false); }
void fine_tree(benchmark::State& state) { fine(state, true); }

void representative(benchmark::State& state) {
  const auto ranks = std::int32_t(state.range(0));
  const auto tasks = std::size_t(state.range(1));
  // Only the representative rank and the collectives' sizes are needed: one rank's graph,
  // its collectives costed by the cluster model for the whole world.
  auto one = make_rank(0, ranks, tasks);
  job_model_options o;
  o.cluster.machines = std::uint32_t(ranks);
  for (auto _ : state) {
    auto g = representative_graph(one.g, std::uint32_t(ranks), o);
    auto r = replay(g);
    benchmark::DoNotOptimize(r.makespan);
  }
  state.counters["tasks"] = double(one.g.size());
}

void sizes(benchmark::internal::Benchmark* b) {
  if (const char* env = std::getenv("DAYDREAM_BENCH_JOB")) {
    std::string s = env;
    std::size_t at = 0;
    while (at < s.size()) {
      auto end = s.find(',', at);
      auto item = s.substr(at, end == std::string::npos ? std::string::npos : end - at);
      auto colon = item.find(':');
      b->Args({std::stoll(item.substr(0, colon)), std::stoll(item.substr(colon + 1))});
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return;
  }
  b->Args({8, 10'000})->Args({64, 10'000})->Args({256, 1'000});
}

} // namespace

BENCHMARK(full)->Apply(sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(replay_job)->Apply(sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(traverse_job)->Apply(sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(representative)->Apply(sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(fine_ring)->Apply(sizes)->Unit(benchmark::kMillisecond);
BENCHMARK(fine_tree)->Apply(sizes)->Unit(benchmark::kMillisecond);
