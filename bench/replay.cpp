// Benchmarks the replay kernel, critical path, unroll, timeline export and the graph primitives.
// SPDX-License-Identifier: MIT
#include "workloads.hpp"

#include <daydream/daydream.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <support/reference_replay.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace daydream;
namespace db = daydream::bench;

// Graphs are built once per (size, workers) and shared by every benchmark that uses
// them; the large ones are dropped before another large one is built. Workers 0: the
// default of shape_for (1 up to 10^4 tasks, 16 at 10^5, 128 at 10^6, 1024 beyond).
const graph& workload(std::size_t tasks, std::uint32_t workers = 0) {
  static std::map<std::pair<std::size_t, std::uint32_t>, std::unique_ptr<graph>> cache;
  const auto key = std::make_pair(tasks, workers);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  if (tasks >= 1'000'000)
    for (auto i = cache.begin(); i != cache.end();)
      i = i->first.first >= 1'000'000 ? cache.erase(i) : std::next(i);
  auto g = std::make_unique<graph>(db::make_training_graph(db::shape_for(tasks, workers)));
  return *cache.emplace(key, std::move(g)).first->second;
}

void set_counters(benchmark::State& state, const graph& g, std::size_t items_per_iteration) {
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(items_per_iteration));
  state.counters["tasks"] = double(g.size());
  state.counters["deps"] = double(g.dependency_count());
}

// ---- building ----

void build(benchmark::State& state) {
  auto shape = db::shape_for(std::size_t(state.range(0)));
  std::size_t tasks = 0;
  for (auto _ : state) {
    auto g = db::make_training_graph(shape);
    tasks = g.size();
    benchmark::DoNotOptimize(g.core().duration.data());
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(tasks));
  state.counters["tasks"] = double(tasks);
}
BENCHMARK(build)->RangeMultiplier(10)->Range(1'000, 1'000'000)->Unit(benchmark::kMillisecond);

// Bytes of core memory per task, measured on the graph's own arrays (capacity, not size).
void memory(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  db::memory_use m{};
  for (auto _ : state) {
    m = db::measure_memory(g);
    benchmark::DoNotOptimize(m);
  }
  const double n = double(g.size());
  state.counters["tasks"] = n;
  state.counters["deps_per_task"] = double(g.dependency_count()) / n;
  state.counters["task_columns_B"] = double(m.task_columns) / n;
  state.counters["edges_B"] = double(m.edges) / n;
  state.counters["core_B"] = double(m.task_columns + m.edges) / n;
  state.counters["payloads_B"] = double(m.payloads) / n;
  state.counters["total_B"] = double(m.total()) / n;
}
BENCHMARK(memory)->Arg(1'000'000)->Iterations(1);

// ---- replay ----

template <class Policy> void replay_with(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  time_ns makespan = 0;
  for (auto _ : state) {
    auto r = daydream::replay(g, Policy{});
    makespan = r.makespan;
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
  state.counters["makespan_ms"] = double(makespan) / 1e6;
}
void replay_trace_order(benchmark::State& state) { replay_with<trace_order_policy>(state); }
void replay_priority(benchmark::State& state) { replay_with<priority_policy>(state); }
BENCHMARK(replay_trace_order)->RangeMultiplier(10)->Range(1'000, 10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(replay_priority)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// The worker graphs the replay and the traversal are timed on: 10^6 tasks as 1, 16, 128
// or 1024 workers, and 10^7 as 1024.
void worker_graphs(benchmark::internal::Benchmark* b) {
  b->ArgsProduct({{1'000'000}, {1, 16, 128, 1024}})
      ->Args({10'000'000, 1024})
      ->ArgNames({"tasks", "workers"})
      ->Unit(benchmark::kMillisecond);
}

// One million tasks as 1, 16, 128 or 1024 workers: the cost per task grows with the
// number of resources busy at once (the event queue has one entry per resource).
void replay_workers(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)), std::uint32_t(state.range(1)));
  for (auto _ : state) {
    auto r = daydream::replay(g);
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
  state.counters["resources"] = double(g.resource_count());
}
BENCHMARK(replay_workers)->Apply(worker_graphs);

// replay_workers into one result reused between iterations (replay_into), as topo_order
// keeps its buffers: the result arrays are neither allocated nor cleared again.
void replay_workers_reuse(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)), std::uint32_t(state.range(1)));
  replay_result r;
  for (auto _ : state) {
    daydream::replay_into(g, r);
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
  state.counters["resources"] = double(g.resource_count());
}
BENCHMARK(replay_workers_reuse)->Apply(worker_graphs);

// The event-driven kernel on the same graphs, the chained pass bypassed
// (detail::replay_flat_impl: what replay() runs on a graph whose threads and streams are
// not chains of dependencies), its result reused as in replay_workers_reuse.
void replay_events(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)), std::uint32_t(state.range(1)));
  trace_order_policy policy;
  auto key = [&](task_id t, time_ns ready) { return policy.key(g, t, ready); };
  replay_result r;
  for (auto _ : state) {
    daydream::detail::replay_flat_impl<false>(g.core(), key, {}, r);
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
  state.counters["resources"] = double(g.resource_count());
}
BENCHMARK(replay_events)->Apply(worker_graphs);

// The event-driven kernel with an overlap slowdown: every dispatch is a queue event of its
// own, and the running kernels of a node are re-timed when its transfers start and end.
void replay_overlap(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)), std::uint32_t(state.range(1)));
  replay_options o;
  o.overlap_slowdown = 1.2;
  replay_result r;
  for (auto _ : state) {
    daydream::replay_into(g, r, trace_order_policy{}, o);
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
  state.counters["resources"] = double(g.resource_count());
}
BENCHMARK(replay_overlap)->Apply(worker_graphs);

// The floor any replay stands on: Kahn's topological traversal of the same graphs as
// replay_workers, every live task and every dependency touched once (a counter per task
// from the core's in-degrees, the out-lists walked as the replay's records are built
// from them), no resources and no times. Its buffers are kept between iterations, as
// the replay keeps its working memory per thread.
void topo_order(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)), std::uint32_t(state.range(1)));
  db::kahn_traversal k;
  for (auto _ : state) {
    if (k.run(g) != g.size()) state.SkipWithError("the graph has a cycle");
    benchmark::DoNotOptimize(k.order().data());
  }
  set_counters(state, g, g.size());
  state.counters["resources"] = double(g.resource_count());
}
BENCHMARK(topo_order)->Apply(worker_graphs);

// The reference event loop (tests/support/reference_replay.hpp: one heap event per
// dispatch and per completion), the oracle of the property tests; same results.
void replay_reference(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  trace_order_policy policy;
  for (auto _ : state) {
    auto r = daydream::testing::reference_replay(
        g.core(), [&](task_id t, time_ns ready) { return policy.key(g, t, ready); });
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
}
BENCHMARK(replay_reference)->RangeMultiplier(10)->Range(1'000, 1'000'000)->Unit(benchmark::kMillisecond);

// The critical path of a replay: follow `pred` back from the last task.
void critical_path(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  auto r = daydream::replay(g);
  std::size_t len = 0;
  for (auto _ : state) {
    auto p = r.critical_path();
    len = p.size();
    benchmark::DoNotOptimize(p.data());
  }
  set_counters(state, g, g.size());
  state.counters["path_len"] = double(len);
}
BENCHMARK(critical_path)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// unroll: copies of one iteration of one worker, as many as make `range(0)` tasks.
void unroll(benchmark::State& state) {
  db::training_shape one;
  const auto g = db::make_training_graph(one);
  auto copies = std::uint32_t(std::max<std::size_t>(1, std::size_t(state.range(0)) / g.size()));
  std::size_t tasks = 0;
  for (auto _ : state) {
    auto u = daydream::unroll(g, copies, dep_kind::data);
    tasks = u.graph.size();
    benchmark::DoNotOptimize(u.copy.data());
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(tasks));
  state.counters["tasks"] = double(tasks);
}
BENCHMARK(unroll)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// Timeline export: Chrome-trace JSON of one replay.
void timeline_export(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  auto r = daydream::replay(g);
  std::size_t bytes = 0;
  for (auto _ : state) {
    io::chrome_trace ct;
    ct.add("baseline", g, r);
    auto s = ct.str();
    bytes = s.size();
    benchmark::DoNotOptimize(s.data());
  }
  set_counters(state, g, g.size());
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
}
BENCHMARK(timeline_export)->RangeMultiplier(10)->Range(1'000, 1'000'000)->Unit(benchmark::kMillisecond);

// ---- primitives ----

// select: a lazy view over one kind with a composed predicate, consumed by a count.
void select_where(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  std::size_t n = 0;
  for (auto _ : state) {
    n = 0;
    for (auto t : tasks<gpu_kernel>(g) | where(in_phase(phase::backward) && !in_iteration(0))) {
      benchmark::DoNotOptimize(t.id);
      ++n;
    }
  }
  set_counters(state, g, g.ids_of<gpu_kernel>().size());
  state.counters["selected"] = double(n);
}
BENCHMARK(select_where)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// select over every kind, by name (a regular expression search per task).
void select_name_matches(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  std::size_t n = 0;
  for (auto _ : state) {
    n = 0;
    for (auto t : tasks(g) | where(name_matches("sgemm"))) {
      benchmark::DoNotOptimize(t.id);
      ++n;
    }
  }
  set_counters(state, g, g.size());
  state.counters["selected"] = double(n);
}
BENCHMARK(select_name_matches)->Arg(100'000)->Unit(benchmark::kMillisecond);

// update: scale every backward kernel (what AMP does), on a copy made outside the timing.
void update_scale(benchmark::State& state) {
  graph g = workload(std::size_t(state.range(0)));
  std::size_t n = 0;
  for (auto _ : state) {
    n = 0;
    g.for_each<gpu_kernel>([&](handle<gpu_kernel> k) {
      if (g.phase_of(k) == phase::backward) { scale_duration(g, k, 0.5); ++n; }
    });
  }
  set_counters(state, g, g.ids_of<gpu_kernel>().size());
  state.counters["updated"] = double(n);
}
BENCHMARK(update_scale)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// remove: every forward launch call, bridging its dependencies (the kernel is re-parented).
void remove_launches(benchmark::State& state) {
  const auto& base = workload(std::size_t(state.range(0)));
  std::vector<task_id> victims;
  base.for_each<cpu_task>([&](handle<cpu_task> t) {
    if (base.payload(t).call == cpu_call::launch && base.phase_of(t) == phase::forward) victims.push_back(t);
  });
  for (auto _ : state) {
    state.PauseTiming();
    graph g = base;
    state.ResumeTiming();
    for (auto t : victims) daydream::remove(g, t);
    benchmark::DoNotOptimize(g.size());
  }
  set_counters(state, base, victims.size());
}
BENCHMARK(remove_launches)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// insert: a kernel after every forward kernel, in its stream's program order.
void insert_after_kernels(benchmark::State& state) {
  const auto& base = workload(std::size_t(state.range(0)));
  std::vector<task_id> at;
  base.for_each<gpu_kernel>([&](handle<gpu_kernel> t) {
    if (base.phase_of(t) == phase::forward) at.push_back(t);
  });
  for (auto _ : state) {
    state.PauseTiming();
    graph g = base;
    state.ResumeTiming();
    for (auto t : at)
      insert_after(g, gpu_kernel{}, {.name = "encode", .duration = 2'000, .phase = phase::forward}, t);
    benchmark::DoNotOptimize(g.size());
  }
  set_counters(state, base, at.size());
}
BENCHMARK(insert_after_kernels)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// A kernel together with its CPU launch call, after every forward kernel.
void insert_launched_kernels(benchmark::State& state) {
  const auto& base = workload(std::size_t(state.range(0)));
  std::vector<std::pair<task_id, task_id>> at; // (launch call, kernel)
  base.for_each<gpu_kernel>([&](handle<gpu_kernel> k) {
    if (base.phase_of(k) != phase::forward) return;
    for (auto d : base.predecessors(k))
      if (d.kind == dep_kind::launch) at.push_back({d.from, k});
  });
  for (auto _ : state) {
    state.PauseTiming();
    graph g = base;
    state.ResumeTiming();
    for (auto [call, k] : at)
      insert_launched(g, gpu_kernel{}, {.name = "encode", .duration = 2'000, .phase = phase::forward}, call, k);
    benchmark::DoNotOptimize(g.size());
  }
  set_counters(state, base, at.size());
}
BENCHMARK(insert_launched_kernels)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// The cost of a transaction in apply(): one deep copy of the graph.
void copy_graph(benchmark::State& state) {
  const auto& base = workload(std::size_t(state.range(0)));
  for (auto _ : state) {
    graph g = base;
    benchmark::DoNotOptimize(g.core().duration.data());
  }
  set_counters(state, base, base.size());
}
BENCHMARK(copy_graph)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// check_invariants: what apply() runs after every pass (lists, counts, acyclicity).
void check_invariants(benchmark::State& state) {
  const auto& g = workload(std::size_t(state.range(0)));
  for (auto _ : state) daydream::check_invariants(g);
  set_counters(state, g, g.size());
}
BENCHMARK(check_invariants)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// compact: renumbering after every forward launch call was removed.
void compact(benchmark::State& state) {
  auto base = workload(std::size_t(state.range(0)));
  std::vector<task_id> victims;
  base.for_each<cpu_task>([&](handle<cpu_task> t) {
    if (base.payload(t).call == cpu_call::launch && base.phase_of(t) == phase::forward) victims.push_back(t);
  });
  for (auto t : victims) daydream::remove(base, t);
  for (auto _ : state) {
    state.PauseTiming();
    graph g = base;
    state.ResumeTiming();
    auto map = g.compact();
    benchmark::DoNotOptimize(map.data());
  }
  set_counters(state, base, base.id_bound());
}
BENCHMARK(compact)->RangeMultiplier(10)->Range(10'000, 1'000'000)->Unit(benchmark::kMillisecond);

// ---- the global graph: 1024 workers x about 10^5 tasks ----
// Run on its own with DAYDREAM_BENCH_HUGE=1 (it needs about 20 GB and a few minutes);
// reports the build time, the graph's memory and the peak resident memory of the process.
// CPU time of this thread, in seconds.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

void replay_huge(benchmark::State& state) {
  // 1024 workers of about 10^5 tasks each (102 iterations of 982 tasks), without the
  // activation memory data (8 bytes per task less).
  db::training_shape s;
  s.workers = 1024;
  s.memory = std::getenv("DAYDREAM_BENCH_HUGE_MEMORY") != nullptr;
  s.iterations = std::uint32_t((100'000 + s.tasks_per_iteration() - 1) / s.tasks_per_iteration());
  auto t0 = std::chrono::steady_clock::now();
  auto g = db::make_training_graph(s);
  auto t1 = std::chrono::steady_clock::now();
  auto after_build = db::resident_memory();
  auto m = db::measure_memory(g);
  double first = 0;
  for (auto _ : state) {
    const double c0 = thread_cpu_s();
    auto r = daydream::replay(g);
    first = thread_cpu_s() - c0;
    benchmark::DoNotOptimize(r.end.data());
  }
  auto rss = db::resident_memory();
  // The floor at this size (topo_order's traversal, CPU time), and a second replay, which
  // finds its working memory in place when it is under DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP.
  double traversal = 0;
  {
    db::kahn_traversal k;
    for (int pass = 0; pass < 2; ++pass) { // the second pass finds its buffers in place
      const double c0 = thread_cpu_s();
      k.run(g);
      traversal = thread_cpu_s() - c0;
      benchmark::DoNotOptimize(k.order().data());
    }
  }
  double second = 0;
  {
    const double c0 = thread_cpu_s();
    auto r = daydream::replay(g);
    second = thread_cpu_s() - c0;
    benchmark::DoNotOptimize(r.end.data());
  }
  set_counters(state, g, g.size());
  state.counters["build_s"] = std::chrono::duration<double>(t1 - t0).count();
  state.counters["graph_GiB"] = double(m.total()) / double(1ull << 30);
  state.counters["columns_B_per_task"] = double(m.task_columns) / double(g.size());
  state.counters["edges_B_per_task"] = double(m.edges) / double(g.size());
  state.counters["rss_after_build_GiB"] = double(after_build.current) / double(1ull << 30);
  state.counters["peak_rss_GiB"] = double(rss.peak) / double(1ull << 30);
  state.counters["replay_cpu_s"] = first;
  state.counters["replay2_cpu_s"] = second;
  state.counters["traversal_cpu_s"] = traversal;
}
[[maybe_unused]] const bool huge_registered = [] {
  if (std::getenv("DAYDREAM_BENCH_HUGE"))
    benchmark::RegisterBenchmark("replay_huge/1024x100k", replay_huge)
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  return true;
}();

} // namespace
