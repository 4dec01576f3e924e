// Tests of fidelity.hpp: where a graph departs from its trace, by kind, along the trace's critical path.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/fidelity.hpp>
#include <daydream/graph.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <support/print.hpp>
#include <support/small_graphs.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using namespace daydream;

using testing::builder;
using testing::two_launches;

namespace {

/// The replayed span of iteration 0 (here its GPU work: the kernels outlast the launches).
time_ns replayed(const graph& g) { return iteration_time(g, replay(g), 0); }

} // namespace

TEST_CASE("two kernels that overlap on one stream in the trace: the replay serializes them, by the overlap") {
  // Two launches, then kernel b starts 60 us before kernel a ends (a CUDA graph's parallel
  // branches recorded on one stream). The GPU's work: 5..145 us in the trace, 5..205 us
  // in the replay.
  two_launches t("branch_a", 100'000, 5'000, "branch_b", 100'000, 45'000);
  auto& b = t.b;
  const auto k2 = t.k2;
  CHECK(replayed(b.g) == 200'000);

  auto causes = trace_divergence(b.g, 0);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].kind == divergence::stream_overlap);
  CHECK(divergence_sign(causes[0].kind) == 1);
  CHECK(causes[0].time == 60'000);
  CHECK(causes[0].tasks == 1);
  CHECK(causes[0].largest == task_id(k2));
  CHECK(describe(b.g, causes[0]) ==
        "1 GPU operation starts before the previous one on its stream ends (0.060 ms of overlap, at `branch_b`): "
        "the replay runs a stream's work one at a time (kernels of several streams recorded as one, or a CUDA "
        "graph's parallel branches)");
  CHECK(replay_error_note(b.g, 0, 205'000, 145'000) ==
        "the replay of iteration 0 differs from the trace by +41.38% (replayed 0.205 ms, measured 0.145 ms): along "
        "the trace's critical path, 1 GPU operation starts before the previous one on its stream ends (0.060 ms of "
        "overlap, at `branch_b`): the replay runs a stream's work one at a time (kernels of several streams recorded "
        "as one, or a CUDA graph's parallel branches)");
  // Within the tolerance: nothing to say.
  CHECK(replay_error_note(b.g, 0, 146'000, 145'000).empty());
  CHECK(replay_error_note(b.g, 0, 146'000, 145'000, 0.001) != "");
}

TEST_CASE("a kernel that waits for nothing the graph has: the replay is shorter by the wait, and launch latency") {
  // Kernel a starts 3 us after its launch returns (launch latency); kernel b starts 32 us
  // after kernel a ends with its launch long returned and no gap kept: a wait the trace
  // does not record. The GPU's work: 8..100 us in the trace, 5..65 us in the replay.
  two_launches t("gemm", 50'000, 8'000, "add", 10'000, 90'000);
  auto& b = t.b;
  const auto k1 = t.k1, k2 = t.k2;
  CHECK(replayed(b.g) == 60'000);

  auto causes = trace_divergence(b.g, 0);
  REQUIRE(causes.size() == 2);
  CHECK(causes[0].kind == divergence::gpu_wait);
  CHECK(causes[0].time == 32'000);
  CHECK(causes[0].largest == task_id(k2));
  CHECK(causes[1].kind == divergence::launch_latency);
  CHECK(causes[1].time == 3'000);
  CHECK(causes[1].largest == task_id(k1));
  CHECK(divergence_sign(divergence::gpu_wait) == -1);

  const auto note = replay_error_note(b.g, 0, 65'000, 100'000);
  CHECK(note ==
        "the replay of iteration 0 differs from the trace by -35.00% (replayed 0.065 ms, measured 0.100 ms): along "
        "the trace's critical path, 1 GPU operation starts later than its launch, stream and dependencies allow "
        "(0.032 ms, at `add`): a wait the trace does not record (another process or an untraced thread using the "
        "GPU, an event between streams); 1 GPU operation starts a few microseconds after its launch returns, on an "
        "idle stream (0.003 ms in all, at `gemm`): launch latency, which the replay leaves out");
  // Against a step far longer than these waits explain, it says so.
  CHECK(replay_error_note(b.g, 0, 65'000, 200'000).find("; these explain less than half of the difference") !=
        std::string::npos);
  // A later start beyond the launch latency the options allow is a wait, not latency.
  auto strict = trace_divergence(b.g, 0, {.tolerance = 1'000, .launch_latency = 2'000});
  REQUIRE(strict.size() == 1);
  CHECK(strict[0].kind == divergence::gpu_wait);
  CHECK(strict[0].time == 35'000);
  CHECK(strict[0].tasks == 2);
}

TEST_CASE("a call that waits for the GPU and CPU calls that overlap on a thread") {
  builder b;
  auto thr = b.add_thread();
  auto s = b.add_stream("stream 7");
  // A launch, a synchronize that begins at once and returns 5 us after the kernel ends (its
  // graph duration is that remainder), and the next call right after: the graph models
  // this exactly, so nothing diverges.
  auto l1 = b.cpu("cudaLaunchKernel", 5'000, thr, 0, cpu_call::launch, 0);
  auto k1 = b.kernel("gemm", 50'000, s, 5'000);
  auto sync = b.cpu("cudaDeviceSynchronize", 5'000, thr, 0, cpu_call::sync, 5'000);
  auto next = b.cpu("aten::add", 10'000, thr, 0, cpu_call::op, 60'000);
  b.dep(l1, k1, dep_kind::launch);
  b.dep(l1, sync, dep_kind::cpu_order);
  b.dep(k1, sync, dep_kind::sync);
  b.dep(sync, next, dep_kind::cpu_order);
  CHECK(replayed(b.g) == 70'000);
  CHECK(trace_divergence(b.g, 0).empty());
  CHECK(replay_error_note(b.g, 0, 70'000, 70'000).empty());
  // A measured step the replay misses by more than 2% with no cause on the path.
  CHECK(replay_error_note(b.g, 0, 70'000, 80'000) ==
        "the replay of iteration 0 differs from the trace by -12.50% (replayed 0.070 ms, measured 0.080 ms): no task "
        "on the trace's critical path starts earlier or later than the graph allows, so the difference lies in where "
        "the step is measured (the step marker against the work it holds)");

  // Two calls on one thread that overlap by 6 us (two threads recorded under one id).
  builder c;
  auto t2 = c.add_thread();
  auto a = c.cpu("worker_a", 10'000, t2, 0, cpu_call::op, 0);
  auto d = c.cpu("worker_b", 10'000, t2, 0, cpu_call::op, 4'000);
  c.dep(a, d, dep_kind::cpu_order);
  auto causes = trace_divergence(c.g, 0);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].kind == divergence::thread_overlap);
  CHECK(causes[0].time == 6'000);
  CHECK(to_string(causes[0].kind) == "thread_overlap");
}

TEST_CASE("trace_divergence of an iteration without tasks, and only the iteration asked for") {
  builder b;
  auto thr = b.add_thread();
  auto x = b.cpu("a", 10'000, thr, 0, cpu_call::op, 0);
  auto y = b.cpu("b", 10'000, thr, 0, cpu_call::op, 2'000);  // overlaps a by 8 us
  auto z = b.cpu("c", 10'000, thr, 0, cpu_call::op, 9'000);  // overlaps b by 3 us
  b.dep(x, y, dep_kind::cpu_order);
  b.dep(y, z, dep_kind::cpu_order);
  b.g.set_iteration(z, 1);
  CHECK(trace_divergence(b.g, 2).empty());
  auto first = trace_divergence(b.g, 0);
  REQUIRE(first.size() == 1);
  CHECK(first[0].time == 8'000);
  CHECK(first[0].largest == task_id(y));
  // c is where iteration 1 begins: how it waited for iteration 0 is not iteration 1's.
  CHECK(trace_divergence(b.g, 1).empty());
}
