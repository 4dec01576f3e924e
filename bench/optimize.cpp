// Benchmarks of the strategy search: search time and candidates replayed per second, on synthetic models and the bundled DLRM trace; under mpirun on every rank.
// SPDX-License-Identifier: MIT
//
//   daydream_bench_optimize                      one process
//   mpirun -np 2 daydream_bench_optimize         two ranks (rank 0 reports)
#include "../cli/optimize/mpi.hpp"

#include <daydream/daydream.hpp>
#include <daydream/optimize/evaluator.hpp>
#include <daydream/optimize/search.hpp>
#include <daydream/optimize/strategies.hpp>
#include <daydream/registry/cluster_params.hpp>
#ifdef DAYDREAM_BENCH_HAVE_IO
#  include <daydream/io/kineto.hpp>
#endif

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace daydream;
namespace opt = daydream::optimize;

const opt::evaluator* ev = nullptr; // the MPI session's, set by main

// A model of `n` layers on one stream (forward, backward in reverse, optimizer), random
// kernel times (0.1-3 ms) and gradient sizes (0.05-16 MB), fixed seed.
opt::problem synthetic(std::size_t n) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<time_ns> dur(100'000, 3'000'000);
  std::uniform_int_distribution<std::uint64_t> size(50'000, 16'000'000);
  graph g;
  auto s = g.add_resource({"stream 7", resource_kind::gpu_stream});
  time_ns at = 0;
  task_id prev = no_task;
  auto add = [&](time_ns d, const std::string& layer, phase ph) {
    auto k = g.add(gpu_kernel{}, {.name = "k", .duration = d, .resource = s, .trace_start = at, .layer = layer, .phase = ph});
    at += d;
    if (prev != no_task) g.add_dependency(prev, k, dep_kind::stream_order);
    prev = k;
  };
  passes::layer_bytes sizes;
  for (std::size_t i = 0; i < n; ++i) add(dur(rng) / 3, "layer" + std::to_string(i), phase::forward);
  for (std::size_t i = n; i-- > 0;) add(dur(rng), "layer" + std::to_string(i), phase::backward);
  add(500'000, "", phase::weight_update);
  for (std::size_t i = 0; i < n; ++i) sizes.push_back({"layer" + std::to_string(i), size(rng)});
  return opt::make_problem(g, 0, cluster_from_params(pass_params::parse("bench", "workers=16,bandwidth=10Gbps")),
                           "synthetic", sizes);
}

void run_search(benchmark::State& state, const opt::problem& p) {
  opt::search_options o;
  o.time_budget_s = 1e9; // converge: the same work on every rank and every run
  std::size_t evaluated = 0;
  double seconds = 0;
  for (auto _ : state) {
    auto res = opt::search(p, opt::bundled_strategies().entries(), o, *ev);
    evaluated += res.evaluated;
    seconds += res.seconds;
    benchmark::DoNotOptimize(res.best_time);
  }
  state.counters["candidates"] = benchmark::Counter(double(evaluated) / double(state.iterations()));
  state.counters["candidates/s"] = benchmark::Counter(seconds > 0 ? double(evaluated) / seconds : 0);
  state.counters["ranks"] = benchmark::Counter(double(ev->ranks));
}

void BM_search_synthetic(benchmark::State& state) {
  auto p = synthetic(std::size_t(state.range(0)));
  run_search(state, p);
}
// Fixed iterations: every rank runs the same searches, so their collectives match.
BENCHMARK(BM_search_synthetic)->Arg(12)->Arg(48)->Arg(160)->Iterations(2)->Unit(benchmark::kMillisecond);

#ifdef DAYDREAM_BENCH_HAVE_IO
void BM_search_dlrm(benchmark::State& state) {
  auto t = io::load_kineto(std::string(DAYDREAM_SOURCE_DIR) + "/examples/traces/dlrm_v100_rank0.json.gz");
  auto its = t.steady_state_iterations();
  auto p = opt::make_problem(t.g, its.at(its.size() / 2),
                             cluster_from_params(pass_params::parse("bench", "workers=64,bandwidth=10Gbps")), "dlrm");
  run_search(state, p);
}
BENCHMARK(BM_search_dlrm)->Iterations(2)->Unit(benchmark::kMillisecond);
#endif

// Prints nothing: the reporter of ranks other than 0.
class silent_reporter : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

} // namespace

int main(int argc, char** argv) {
  optimize_cmd::mpi_session mpi;
  ev = &mpi.evaluator();
  benchmark::Initialize(&argc, argv);
  if (ev->rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    silent_reporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}
