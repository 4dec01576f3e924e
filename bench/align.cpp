// Benchmarks clock alignment by linear program (GLPK) on generated jobs: ranks x collectives, one clock per host, offsets of up to 3 ms.
// SPDX-License-Identifier: MIT
//
// Arguments: ranks, ranks per host, collectives. Counters: the LP's rows (after row
// generation) against the full LP's, simplex rounds, and the worst error of a recovered
// offset (us) against the injected one.
#include <daydream/align/lp.hpp>
#include <daydream/job/graph.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

using namespace daydream;

namespace {

struct generated {
  alignment_input in;
  std::vector<time_ns> error; // per rank: its clock's error (the offset that aligns it, + rank 0's)
};

// Each rank launches its part of a collective up to 400 us after the collective's time;
// every part completes 5-80 us after the last launch, with up to 2 us of jitter.
generated make_job(std::int32_t ranks, std::int32_t per_host, std::size_t n) {
  std::mt19937_64 rng(42);
  auto uni = [&](time_ns lo, time_ns hi) { return std::uniform_int_distribution<time_ns>(lo, hi)(rng); };
  generated g;
  const std::int32_t hosts = (ranks + per_host - 1) / per_host;
  std::vector<time_ns> host_error(static_cast<std::size_t>(hosts));
  for (auto& e : host_error) e = uni(-3'000'000, 3'000'000);
  g.in.same_host.resize(static_cast<std::size_t>(hosts));
  for (std::int32_t r = 0; r < ranks; ++r) {
    g.in.ranks.push_back(r);
    g.error.push_back(host_error[std::size_t(r / per_host)]);
    g.in.same_host[std::size_t(r / per_host)].push_back(r);
  }
  time_ns t = 10'000'000;
  std::vector<time_ns> start(static_cast<std::size_t>(ranks));
  for (std::size_t c = 0; c < n; ++c) {
    for (auto& s : start) s = t + uni(0, 400'000);
    const time_ns last = *std::max_element(start.begin(), start.end());
    const time_ns transfer = uni(5'000, 80'000);
    std::vector<collective_part> parts;
    parts.reserve(std::size_t(ranks));
    for (std::int32_t r = 0; r < ranks; ++r) {
      const auto k = std::size_t(r);
      parts.push_back({r, no_task, start[k] - g.error[k], last + transfer + uni(0, 2'000) - g.error[k]});
    }
    g.in.collectives.push_back(std::move(parts));
    t = last + transfer + uni(100'000, 3'000'000);
  }
  return g;
}

void lp_alignment(benchmark::State& state) {
  const auto g = make_job(std::int32_t(state.range(0)), std::int32_t(state.range(1)), std::size_t(state.range(2)));
  lp_alignment_report rep;
  for (auto _ : state) {
    rep = glpk_alignment_report(g.in);
    benchmark::DoNotOptimize(rep);
  }
  double worst = 0;
  for (std::size_t r = 0; r < g.error.size(); ++r)
    worst = std::max(worst, std::abs(double(rep.result.offset.at(std::int32_t(r)) - (g.error[r] - g.error[0]))));
  state.counters["rows"] = double(rep.rows);
  state.counters["full_rows"] = double(rep.full_rows);
  state.counters["rounds"] = rep.rounds;
  state.counters["clocks"] = double(rep.clocks);
  state.counters["violations"] = double(rep.result.violations);
  state.counters["worst_error_us"] = worst / 1e3;
}

} // namespace

BENCHMARK(lp_alignment)
    ->ArgNames({"ranks", "per_host", "collectives"})
    ->Args({8, 1, 1000})
    ->Args({16, 8, 1000})
    ->Args({128, 8, 1000})
    ->Args({128, 8, 3000})
    ->Args({128, 1, 3000})
    ->Unit(benchmark::kMillisecond);
