// Tests daydream/analysis.hpp: breakdowns and critical paths that stay within their iteration and add up.
// SPDX-License-Identifier: MIT
#include <daydream/analysis.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <string_view>

using namespace daydream;

namespace {

constexpr time_ns us = 1000;

struct builder {
  graph g;
  resource_id thread = g.add_resource({"thread 1", resource_kind::cpu_thread});
  resource_id stream = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  resource_id link = g.add_resource({"nic0", resource_kind::link, sharing::fair, 0, -1, 1e9});
  task_id cpu(std::string_view name, time_ns d, std::int32_t it, cpu_call call = cpu_call::op,
              phase p = phase::forward, std::string_view layer = {}) {
    return g.add(cpu_task{call}, {.name = name, .duration = d, .resource = thread, .layer = layer, .phase = p,
                                  .iteration = it});
  }
  task_id kernel(std::string_view name, time_ns d, std::int32_t it, phase p, std::string_view layer) {
    return g.add(gpu_kernel{}, {.name = name, .duration = d, .resource = stream, .layer = layer, .phase = p,
                                .iteration = it});
  }
  task_id transfer(std::string_view name, time_ns d, std::int32_t it) {
    return g.add(comm_task{comm_op::all_reduce, 1000}, {.name = name, .duration = d, .resource = link,
                                                        .phase = phase::backward, .iteration = it});
  }
};

/// Two iterations: launches, two kernels, an all-reduce overlapping the second kernel, a
/// sync; then a second iteration that starts when the sync returns.
struct two_iterations : builder {
  task_id c0, c1, k0, k1, a0, c2, c3, k2, c4;
  two_iterations() {
    c0 = cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch, phase::forward, "Linear_0");
    c1 = cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch, phase::backward, "Linear_1");
    k0 = kernel("gemm", 100 * us, 0, phase::forward, "Linear_0");
    k1 = kernel("gemm_bwd", 50 * us, 0, phase::backward, "Linear_1");
    a0 = transfer("allreduce", 80 * us, 0);
    c2 = cpu("cudaDeviceSynchronize", 5 * us, 0, cpu_call::sync, phase::other);
    c3 = cpu("cudaLaunchKernel", 10 * us, 1, cpu_call::launch, phase::forward, "Linear_0");
    k2 = kernel("gemm", 100 * us, 1, phase::forward, "Linear_0");
    c4 = cpu("cudaDeviceSynchronize", 5 * us, 1, cpu_call::sync, phase::other);
    g.add_dependency(c0, c1, dep_kind::cpu_order);
    g.add_dependency(c1, c2, dep_kind::cpu_order);
    g.add_dependency(c2, c3, dep_kind::cpu_order);
    g.add_dependency(c3, c4, dep_kind::cpu_order);
    g.add_dependency(c0, k0, dep_kind::launch);
    g.add_dependency(c1, k1, dep_kind::launch);
    g.add_dependency(k0, k1, dep_kind::stream_order);
    g.add_dependency(k1, k2, dep_kind::stream_order);
    g.add_dependency(c3, k2, dep_kind::launch);
    g.add_dependency(k0, a0, dep_kind::control);
    g.add_dependency(a0, c2, dep_kind::sync);
    g.add_dependency(k1, c2, dep_kind::sync);
    g.add_dependency(k2, c4, dep_kind::sync);
  }
};

time_ns sum(const std::array<time_ns, 5>& a) { return std::accumulate(a.begin(), a.end(), time_ns(0)); }

} // namespace

TEST_CASE("the critical path of an iteration ends where the next iteration starts, and its parts add up") {
  two_iterations f;
  auto r = replay(f.g);
  REQUIRE(r.start[f.c3] == 195 * us);
  auto path = iteration_critical_path(f.g, r, 0);
  std::vector<task_id> tasks;
  for (auto& s : path) tasks.push_back(s.task);
  CHECK(tasks == std::vector<task_id>{f.c0, f.k0, f.a0, f.c2});

  auto b = breakdown(f.g, r, 0);
  CHECK(b.begin == 0);
  CHECK(b.end == 195 * us);
  CHECK(b.duration == 195 * us);
  CHECK(b.critical == std::array<time_ns, 5>{15 * us, 100 * us, 80 * us, 0, 0});
  CHECK(b.critical_launch == 10 * us);
  CHECK(b.bound == bound_by::gpu);
  // busy time: unions within the span
  CHECK(b.cpu_by_phase[0] == 10 * us);  // c0
  CHECK(b.cpu_by_phase[1] == 10 * us);  // c1
  CHECK(b.cpu_by_phase[3] == 5 * us);   // c2
  CHECK(b.gpu_by_phase[0] == 100 * us);
  CHECK(b.gpu_by_phase[1] == 50 * us);
  CHECK(b.comm_by_phase[1] == 80 * us);
  CHECK(b.gpu_busy == 150 * us);
  CHECK(b.gpu_busy_by_phase == std::array<time_ns, 4>{100 * us, 50 * us, 0, 0});
  CHECK(b.comm_busy == 80 * us);
  CHECK(b.comm_overlapped == 50 * us); // a0 runs 110..190, k1 110..160
  REQUIRE(b.busy.size() == 3);
  CHECK(b.busy[0] == std::pair{f.stream, 150 * us});
  CHECK(b.busy[1] == std::pair{f.link, 80 * us});
  CHECK(b.busy[2] == std::pair{f.thread, 25 * us});
  CHECK(b.critical_by_layer.front().first == std::pair{std::string("Linear_0"), phase::forward});
  CHECK(b.critical_by_layer.front().second == 110 * us);

  // The last iteration ends with its last task; the chain stops at its begin.
  auto b1 = breakdown(f.g, r, 1);
  CHECK(b1.begin == 195 * us);
  CHECK(b1.duration == 115 * us);
  CHECK(b1.critical == std::array<time_ns, 5>{15 * us, 100 * us, 0, 0, 0});
  CHECK(iteration_critical_path(f.g, r, 7).empty());
}

TEST_CASE("a CPU thread's gaps between traced tasks on the critical path are CPU time, launch latency is idle") {
  builder f;
  auto c0 = f.cpu("aten::mm", 10 * us, 0);
  set_gap(f.g, c0, 20 * us); // untraced Python after it
  auto c1 = f.cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch);
  auto k = f.kernel("gemm", 50 * us, 0, phase::forward, "Linear_0");
  set_gap(f.g, c1, 0);
  auto c2 = f.cpu("aten::mm", 10 * us, 1);
  f.g.add_dependency(c0, c1, dep_kind::cpu_order);
  f.g.add_dependency(c1, k, dep_kind::launch);
  f.g.add_dependency(c1, c2, dep_kind::cpu_order);
  f.g.add_dependency(k, c2, dep_kind::sync);
  auto r = replay(f.g);
  REQUIRE(r.start[c1] == 30 * us);
  REQUIRE(r.start[c2] == 90 * us);
  auto b = breakdown(f.g, r, 0);
  CHECK(b.duration == 90 * us);
  CHECK(b.critical == std::array<time_ns, 5>{40 * us, 50 * us, 0, 0, 0});
  CHECK(b.critical_cpu_gaps == 20 * us);
  CHECK(b.bound == bound_by::gpu);
}

TEST_CASE("a step whose training thread loads its own batch is input-bound, not CPU-bound") {
  // Each iteration: the main thread fetches a batch in DataLoader.__next__ (60 us), then
  // launches a 20 us kernel (10 us); the next fetch starts when the launch returns. Of the
  // 70 us step, 60 us wait for the input.
  builder f;
  const char* fetch = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  auto d0 = f.cpu(fetch, 60 * us, 0, cpu_call::op, phase::other);
  auto l0 = f.cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch);
  auto k0 = f.kernel("gemm", 20 * us, 0, phase::forward, "Linear_0");
  auto d1 = f.cpu(fetch, 60 * us, 1, cpu_call::op, phase::other);
  f.g.add_dependency(d0, l0, dep_kind::cpu_order);
  f.g.add_dependency(l0, k0, dep_kind::launch);
  f.g.add_dependency(l0, d1, dep_kind::cpu_order);
  auto r = replay(f.g);
  auto b = breakdown(f.g, r, 0);
  CHECK(b.duration == 70 * us);
  CHECK(b.critical[0] == 70 * us);
  CHECK(b.critical_input == 60 * us);
  CHECK(b.bound == bound_by::input);
  CHECK(to_string(b.bound) == "input");
  // With the fetch shorter than the rest of the thread's work, the step is CPU-bound.
  builder h;
  auto e0 = h.cpu(fetch, 10 * us, 0, cpu_call::op, phase::other);
  auto m0 = h.cpu("aten::mm", 50 * us, 0);
  auto e1 = h.cpu(fetch, 10 * us, 1, cpu_call::op, phase::other);
  h.g.add_dependency(e0, m0, dep_kind::cpu_order);
  h.g.add_dependency(m0, e1, dep_kind::cpu_order);
  auto c = breakdown(h.g, replay(h.g), 0);
  CHECK(c.critical_input == 10 * us);
  CHECK(c.bound == bound_by::cpu);
}

TEST_CASE("a step whose GPU falls behind is broken down over the steady-state step, not the shorter span") {
  // The CPU launches three 50 us kernels in 30 us and starts the next iteration: the span
  // is 30 us, the stream works 150 us in it, so the step is 150 us (steady_steps), and the
  // breakdown is of that step: its critical path adds up to it, GPU-bound.
  builder f;
  auto c0 = f.cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch);
  auto c1 = f.cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch);
  auto c2 = f.cpu("cudaLaunchKernel", 10 * us, 0, cpu_call::launch);
  auto d0 = f.cpu("aten::mm", 10 * us, 1);
  task_id prev = no_task;
  for (auto c : {c0, c1, c2}) {
    auto k = f.kernel("gemm", 50 * us, 0, phase::forward, "Linear_0");
    f.g.add_dependency(c, k, dep_kind::launch);
    if (prev != no_task) f.g.add_dependency(prev, k, dep_kind::stream_order);
    prev = k;
  }
  f.g.add_dependency(c0, c1, dep_kind::cpu_order);
  f.g.add_dependency(c1, c2, dep_kind::cpu_order);
  f.g.add_dependency(c2, d0, dep_kind::cpu_order);
  auto r = replay(f.g);
  REQUIRE(iteration_time(f.g, r, 0) == 30 * us);
  auto b = breakdown(f.g, r, 0);
  CHECK(b.duration == 150 * us);
  CHECK(b.critical[0] == 30 * us);
  CHECK(b.critical[1] == 120 * us);
  CHECK(sum(b.critical) == b.duration);
  CHECK(b.bound == bound_by::gpu);
  CHECK(b.gpu_by_phase[0] == 140 * us); // the kernels from 10 us to the window's end
  for (auto& [res, t] : b.busy) CHECK(t <= b.duration);
}

TEST_CASE("busy time never exceeds the iteration: concurrent transfers on a shared link count once") {
  two_iterations f;
  // A second all-reduce beside a0: on the fair link both take twice as long.
  auto a1 = f.transfer("allreduce", 80 * us, 0);
  f.g.add_dependency(f.k0, a1, dep_kind::control);
  f.g.add_dependency(a1, f.c2, dep_kind::sync);
  auto r = replay(f.g);
  REQUIRE(r.end[a1] - r.start[a1] == 160 * us);
  auto b = breakdown(f.g, r, 0);
  CHECK(b.duration == 275 * us);
  CHECK(b.comm_by_phase[1] == 160 * us); // the sum of durations would be 320
  CHECK(b.comm_busy == 160 * us);
  for (auto& [res, t] : b.busy) CHECK(t <= b.duration);
  CHECK(sum(b.critical) == b.duration);
  CHECK(b.bound == bound_by::communication);
}

TEST_CASE("a task of the previous iteration running into this one counts, clipped to the span") {
  two_iterations f;
  // k1 is made long enough to run past the sync into iteration 1 (the sync no longer waits for it)
  f.g.remove_dependency(f.k1, f.c2);
  set_duration(f.g, f.k1, 200 * us);
  auto r = replay(f.g);
  REQUIRE(r.end[f.k1] == 310 * us);
  auto b1 = breakdown(f.g, r, 1);
  CHECK(b1.begin == 195 * us);
  CHECK(b1.gpu_by_phase[1] == 115 * us); // k1's last 115 us, inside iteration 1's span
  for (auto& [res, t] : b1.busy) CHECK(t <= b1.duration);
  CHECK(sum(b1.critical) == b1.duration);
}

TEST_CASE("layer_kind drops the instance number of a layer name") {
  CHECK(layer_kind("Linear_3") == "Linear");
  CHECK(layer_kind("aten::conv2d#12") == "aten::conv2d");
  CHECK(layer_kind("encoder.layer.3") == "encoder.layer.3");
  CHECK(layer_kind("fc2") == "fc2");
  CHECK(layer_kind("_7") == "_7");
  CHECK(layer_kind("") == "");
}

TEST_CASE("on the bundled ResNet-50 trace every iteration's breakdown stays within it and adds up") {
  auto t = io::load_kineto(DAYDREAM_EXAMPLE_TRACES "/resnet50_v100.json.gz");
  auto r = replay(t.g);
  REQUIRE(t.iterations.size() == 5);
  for (auto& it : t.iterations) {
    CAPTURE(it.number);
    auto b = breakdown(t.g, r, it.number);
    CHECK(b.duration == steady_steps(t.g, r, {it.number}).front().step()); // the span, or a backlog's work
    CHECK(sum(b.critical) == b.duration);
    for (auto& [res, busy] : b.busy) CHECK(busy <= b.duration);
    for (int p = 0; p < 4; ++p) {
      CHECK(b.cpu_by_phase[p] <= b.duration);
      CHECK(b.gpu_by_phase[p] <= b.duration);
      CHECK(b.comm_by_phase[p] <= b.duration);
    }
    CHECK(std::accumulate(b.gpu_busy_by_phase.begin(), b.gpu_busy_by_phase.end(), time_ns(0)) == b.gpu_busy);
    for (auto& s : iteration_critical_path(t.g, r, it.number)) {
      CHECK(r.end[s.task] > b.begin);
      CHECK(r.end[s.task] <= b.end);
    }
  }
  // GPU-bound: making every kernel 100x faster must shorten the iteration and move the bound.
  auto b = breakdown(t.g, r, 103);
  CHECK(b.bound == bound_by::gpu);
  auto fast = t.g;
  fast.for_each_task([&](task_id k) {
    if (fast.is<gpu_kernel>(k)) set_duration(fast, k, fast.duration(k) / 100);
  });
  auto rf = replay(fast);
  auto bf = breakdown(fast, rf, 103);
  CHECK(bf.duration < b.duration * 9 / 10);
  CHECK(bf.bound != bound_by::gpu);
}

TEST_CASE("on every bundled trace, busy times stay within each steady-state iteration and the critical path adds up") {
  std::size_t traces = 0, iterations = 0;
  for (auto& c : testing::corpus(false)) {
    CAPTURE(c.name);
    io::kineto_trace t;
    try {
      t = io::load_kineto(c.file.string());
    } catch (const daydream::error&) {
      continue; // traces the ingest refuses are tested by their own suite
    }
    ++traces;
    auto r = replay(t.g);
    for (auto i : t.steady_state_iterations()) {
      CAPTURE(i);
      auto b = breakdown(t.g, r, i);
      ++iterations;
      CHECK(b.duration == steady_steps(t.g, r, {i}).front().step());
      CHECK(sum(b.critical) == b.duration);
      for (auto& [res, busy] : b.busy) CHECK(busy <= b.duration);
      for (int p = 0; p < 4; ++p) {
        CHECK(b.gpu_by_phase[p] <= b.duration);
        CHECK(b.comm_by_phase[p] <= b.duration);
        CHECK(b.cpu_by_phase[p] <= b.duration);
      }
      CHECK(b.gpu_busy <= b.duration);
      CHECK(b.comm_overlapped <= b.comm_busy);
    }
  }
  MESSAGE(traces << " traces, " << iterations << " iterations");
  CHECK(traces >= 20);
}
