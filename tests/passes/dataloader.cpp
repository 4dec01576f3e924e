// Tests of the dataloader pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/dataloader.hpp>
#include <daydream/replay.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/passes/dataloader.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

namespace {

// n iterations on thread 1 and stream 7, each: the fetch F (a DataLoader __next__ of
// `load` ns; with `collate`, split into 10 + the collation op + the rest), a launch L
// (5 ns) and its kernel K (20 ns). Baseline replay: F0 [0,40) L0 [40,45) K0 [45,65),
// F1 [45,85) ...: 45 ns an iteration (the last one too: its CPU work, 45, is longer than
// its kernel's 20), the GPU idle while the batch loads.
struct loader_step {
  graph g;
  resource_id thread = g.add_resource({"thread 1", resource_kind::cpu_thread});
  resource_id stream = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  std::vector<task_id> fetch, launch, kernel, collate;
  task_id last_cpu = no_task, last_gpu = no_task;

  explicit loader_step(int n, std::string iter = "_SingleProcessDataLoaderIter", time_ns load = 40,
                       bool with_collate = false) {
    const std::string next = "enumerate(DataLoader)#" + iter + ".__next__";
    time_ns clock = 0;
    auto cpu = [&](cpu_task payload, std::string_view name, time_ns d, phase ph, int it) {
      auto t = g.add(payload, {.name = name, .duration = d, .resource = thread, .trace_start = clock,
                               .phase = ph, .iteration = it});
      if (last_cpu != no_task) g.add_dependency(last_cpu, t, dep_kind::cpu_order);
      last_cpu = t;
      clock += d;
      return t;
    };
    for (int i = 0; i < n; ++i) {
      if (with_collate) {
        fetch.push_back(cpu(cpu_task{}, next, 10, phase::other, i));
        collate.push_back(cpu(cpu_task{cpu_call::op, g.intern("aten::stack")}, "aten::stack", load - 20,
                              phase::other, i));
        cpu(cpu_task{}, next, 10, phase::other, i);
      } else {
        fetch.push_back(cpu(cpu_task{}, next, load, phase::other, i));
      }
      auto l = cpu(cpu_task{cpu_call::launch}, "cudaLaunchKernel", 5, phase::forward, i);
      auto k = g.add(gpu_kernel{0, 7, 0, 0}, {.name = "volta_sgemm_128x64_nn", .duration = 20,
                                              .resource = stream, .trace_start = clock,
                                              .phase = phase::forward, .iteration = i});
      if (last_gpu != no_task) g.add_dependency(last_gpu, k, dep_kind::stream_order);
      g.add_dependency(l, k, dep_kind::launch);
      last_gpu = k;
      launch.push_back(l);
      kernel.push_back(k);
    }
  }
};

std::vector<time_ns> iteration_times(const graph& g) {
  std::vector<time_ns> out;
  auto r = replay(g);
  for (auto& s : iteration_spans(g, r)) out.push_back(s.duration());
  return out;
}

} // namespace

TEST_CASE("dataloader: two workers deliver a batch every L/2, the main thread waits for each") {
  loader_step s(4);
  auto& g = s.g;
  CHECK(iteration_times(g) == std::vector<time_ns>{45, 45, 45, 45});
  auto rep = apply(g, dataloader{.workers = 2, .handoff = 1, .contention = 0});
  CHECK(rep.applied);
  // Worker 0 loads batch 0 (20 = 1/2 of 40 left at the start) then batch 2 [20,60);
  // worker 1 batch 1 (all 40) then batch 3 [40,80). Each fetch waits for its batch:
  // F0 [20,21) L0 [21,26) K0 [26,46); F1 [40,41) K1 [46,66); F2 [60,61) K2 [66,86);
  // F3 [80,81) L3 [81,86) K3 [86,106).
  auto r = replay(g);
  CHECK(r.start[s.fetch[0]] == 20);
  CHECK(r.end[s.fetch[0]] == 21);
  CHECK(r.start[s.fetch[1]] == 40);
  CHECK(r.start[s.fetch[2]] == 60);
  CHECK(r.start[s.fetch[3]] == 80);
  CHECK(r.start[s.kernel[3]] == 86);
  CHECK(r.makespan == 106);
  // Every iteration takes L/W = 20: loading is the bound (the last one's kernel, 20 ns,
  // outlasts its CPU work, 6 ns).
  auto times = iteration_times(g);
  CHECK(times == std::vector<time_ns>{20, 20, 20, 20});
  CHECK(g.resource_count() == 4); // two worker resources added
  CHECK(g.resource_at(2).name == "dataloader worker 0 (thread 1)");
}

TEST_CASE("dataloader: when the workers keep up, a fetch costs only the handoff") {
  loader_step s(4);
  auto& g = s.g;
  apply(g, dataloader{.workers = 8, .handoff = 1, .contention = 0});
  // Batches 0..3 are ready at 5, 10, 15, 20 (j+1)/8 of 40. F0 [5,6) L0 [6,11);
  // F1 ready at 11 >= 10: [11,12) L1 [12,17); F2 [17,18) L2 [18,23); F3 [23,24).
  auto r = replay(g);
  CHECK(r.start[s.fetch[0]] == 5);
  CHECK(r.start[s.fetch[1]] == 11);
  CHECK(r.start[s.fetch[2]] == 17);
  CHECK(r.start[s.fetch[3]] == 23);
  for (std::size_t i = 1; i < 4; ++i) CHECK(r.start[s.fetch[i]] == r.end[s.launch[i - 1]]); // no wait
  CHECK(r.end[s.fetch[3]] - r.start[s.fetch[3]] == 1);
}

TEST_CASE("dataloader: one worker with one batch ahead overlaps loading with the step only") {
  loader_step s(3);
  auto& g = s.g;
  apply(g, dataloader{.workers = 1, .handoff = 1, .prefetch = 1, .contention = 0});
  // Batch 0 [0,40); F0 [40,41). Batch 1 is requested when F0 returns: [41,81) while the
  // step runs; F1 [81,82). Batch 2 [82,122); F2 [122,123). A period of L + handoff.
  auto r = replay(g);
  CHECK(r.start[s.fetch[0]] == 40);
  CHECK(r.start[s.fetch[1]] == 81);
  CHECK(r.start[s.fetch[2]] == 122);
  CHECK(iteration_times(g) == std::vector<time_ns>{41, 41, 20});
}

TEST_CASE("dataloader: a fetch split around its collation is one fetch, and all of it moves") {
  loader_step s(2, "_SingleProcessDataLoaderIter", 40, true);
  auto& g = s.g;
  auto fs = dataloader_fetches(g);
  REQUIRE(fs.size() == 2);
  CHECK(fs[0].first == s.fetch[0]);
  CHECK(fs[0].span == 40);
  CHECK(g.name(fs[0].last) == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  CHECK(fs[0].last != fs[0].first);
  CHECK_FALSE(fs[0].worker_processes);
  CHECK(fs[1].first == s.fetch[1]);
  apply(g, dataloader{.workers = 1, .handoff = 1, .prefetch = 1, .contention = 0});
  CHECK(g.duration(s.fetch[0]) == 1);
  CHECK(g.duration(s.collate[0]) == 0);
  CHECK(g.duration(fs[0].last) == 0);
  // Same replay as without the split: F0 [40,41), the rest of the fetch takes no time.
  auto r = replay(g);
  CHECK(r.start[s.fetch[0]] == 40);
  CHECK(r.start[s.launch[0]] == 41);
  CHECK(r.start[s.fetch[1]] == 81);
}

TEST_CASE("dataloader says why it changes nothing") {
  SUBCASE("no fetch in the trace") {
    mlp m;
    const auto before = m.b.g.size();
    auto rep = apply(m.b.g, dataloader{});
    CHECK_FALSE(rep.applied);
    CHECK(rep.reason.find("no data loading") != std::string::npos);
    CHECK(m.b.g.size() == before);
    CHECK_FALSE(dataloader::applicable(m.b.g));
  }
  SUBCASE("the trace already loads in worker processes") {
    loader_step s(3, "_MultiProcessingDataLoaderIter");
    auto rep = apply(s.g, dataloader{});
    CHECK_FALSE(rep.applied);
    CHECK(rep.reason.find("already loads in worker processes") != std::string::npos);
    CHECK(s.g.resource_count() == 2);
    CHECK_FALSE(dataloader::applicable(s.g));
    CHECK(dataloader::not_applicable(s.g) == rep.reason);
    // With the load time given, it models the workers.
    auto given = apply(s.g, dataloader{.workers = 2, .load_time = 40, .handoff = 1, .contention = 0});
    CHECK(given.applied);
    CHECK(iteration_times(s.g) == std::vector<time_ns>{20, 20, 20});
  }
}

TEST_CASE("dataloader parameters, and its place in the registry") {
  auto d = from_params<dataloader>(pass_params::parse("dataloader", "workers=6,load_time=40ms,handoff=50us,prefetch=3"));
  CHECK(d.workers == 6);
  CHECK(d.load_time == 40'000'000);
  CHECK(d.handoff == 50'000);
  CHECK(d.prefetch == 3);
  CHECK(d.contention == 0.25);
  CHECK(from_params<dataloader>(pass_params::parse("dataloader", "contention=0")).contention == 0);
  CHECK_THROWS_AS(from_params<dataloader>(pass_params::parse("dataloader", "contention=-1")), usage_error);
  CHECK_THROWS_AS(from_params<dataloader>(pass_params::parse("dataloader", "workers=0")), usage_error);
  CHECK_THROWS_AS(from_params<dataloader>(pass_params::parse("dataloader", "prefetch=0")), usage_error);
  CHECK_THROWS_AS(from_params<dataloader>(pass_params::parse("dataloader", "workers=-3")), usage_error);
  CHECK_THROWS_AS(from_params<dataloader>(pass_params::parse("dataloader", "load_time=fast")), usage_error);
  auto reg = bundled();
  REQUIRE(reg.find("dataloader") != nullptr);
  loader_step s(2);
  CHECK(reg.find("dataloader")->applicable(s.g));
  auto p = reg.make("dataloader:workers=2,handoff=1ns,contention=0");
  auto rep = p.run(s.g);
  CHECK(rep.applied);
  CHECK(iteration_times(s.g) == std::vector<time_ns>{20, 20});
}

TEST_CASE("dataloader obeys the pass laws") {
  auto fx = pass_fixtures();
  fx.push_back({"four fetches on the main thread", loader_step(4).g});
  fx.push_back({"fetches split around collation", loader_step(3, "_SingleProcessDataLoaderIter", 40, true).g});
  testing::check_pass_laws(dataloader{}, fx, {.allow_refusal = false});
  testing::check_pass_laws(dataloader{.workers = 1, .prefetch = 1}, fx, {.allow_refusal = false});
}
