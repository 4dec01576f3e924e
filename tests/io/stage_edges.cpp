// Tests the task, edge, sync and accounting stages, each run on the output of the stages before it.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_accounting.hpp>
#include <daydream/io/detail/kineto_cuts.hpp>
#include <daydream/io/detail/kineto_edges.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_layers.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_syncs.hpp>
#include <daydream/io/detail/kineto_tasks.hpp>
#include <daydream/io/detail/kineto_threads.hpp>

#include "stages.hpp"
#include "trace_text.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

using namespace daydream;
using namespace daydream::io::detail;
using namespace daydream::testing;
using namespace daydream::testing::trace_text;

namespace {
/// The stages up to the tasks (1-13), kept for the stage under test.
struct upto_tasks {
  std::unique_ptr<decoded> src;
  build_settings s;
  warning_log warnings;
  thread_table tt;
  gpu_links L;
  iteration_table its;
  flat_events F;
  backward_map B;
  graph g;
  thread_plan P;
  task_map T;
  explicit upto_tasks(const std::string& json) : src(decode(json)) {
    auto& d = src->d;
    tt = group_threads(d);
    L = link_gpu_ops(d, tt);
    its = find_iterations(d, warnings);
    F = flatten_threads(d, tt, L, its);
    B = resolve_backward_layers(d, tt, F);
    layer_namer layers(d, F, B, g);
    P = cut_threads(d, tt, L, F, its, layers, s);
    T = make_tasks(d, tt, L, F, P, its, g, warnings);
  }
  const decoded_trace& d() const { return src->d; }
  task_id gpu(std::string_view name) const { return T.gpu_task[gpu_named(src->d, name)]; }
  /// The task of the last slice of cpu event `e`.
  task_id last_piece(std::uint32_t e) { return tt.threads[src->d.cpu[e].thread].slices[T.pieces_of(e).second].task; }
};
bool has_edge(const edge_list& E, task_id a, task_id b, dep_kind k) {
  for (auto& e : E.list)
    if (e.from == a && e.to == b && e.kind == k) return true;
  return false;
}
} // namespace

TEST_CASE("tasks and edges: one task per slice and op, program order, launches") {
  upto_tasks p(trace({
      X("cpu_op", "aten::mm", 1, 1, "0", "30"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
      X("kernel", "gemm", 0, 7, "20", "40", gpu(1)),
      X("kernel", "orphan", 0, 7, "70", "5", gpu(9)),
  }));
  // [anchor] origin, mm, launch, mm; two kernels
  CHECK(p.g.size() == 6);
  CHECK(p.T.unlinked == 1);
  REQUIRE(p.warnings.kept.size() == 1);
  CHECK(p.warnings.kept[0].find("1 GPU operations have no matching runtime call") == 0);
  auto E = add_structural_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s);
  const auto launch = p.last_piece(cpu_named(p.d(), "cudaLaunchKernel"));
  CHECK(has_edge(E, launch, p.gpu("gemm"), dep_kind::launch));
  CHECK(has_edge(E, p.gpu("gemm"), p.gpu("orphan"), dep_kind::stream_order));
  CHECK(E.gpu_ready[gpu_named(p.d(), "gemm")] == 15'000);
  // the kernel starts 5 us after its launch returned: launch latency, no gap; the orphan
  // waited 10 us after gemm for something the trace does not show: a gap
  set_durations_and_gaps(p.d(), p.tt, p.L, p.P, p.T, E, p.s, p.g);
  CHECK(p.g.gap(p.gpu("gemm")) == 10'000);
}

TEST_CASE("syncs: a stream sync waits for the op launched last on its stream; its slice lasts from that op's end") {
  upto_tasks p(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("cuda_runtime", "cudaStreamSynchronize", 1, 1, "10", "100", corr(2)),
      X("kernel", "k", 0, 7, "8", "90", gpu(1)),
  }));
  auto E = add_structural_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s);
  auto R = add_sync_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s, E);
  const auto sync = p.last_piece(cpu_named(p.d(), "cudaStreamSynchronize"));
  CHECK(has_edge(E, p.gpu("k"), sync, dep_kind::sync));
  CHECK(R.backpressure == 0);
  set_durations_and_gaps(p.d(), p.tt, p.L, p.P, p.T, E, p.s, p.g);
  CHECK(p.g.duration(sync) == 12'000); // 110 - 98: the call's own time after the kernel ended
}

TEST_CASE("syncs: cudaStreamWaitEvent after cudaEventRecord makes the next op on the waiting stream wait") {
  upto_tasks p(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)),
      X("cuda_runtime", "cudaEventRecord", 1, 1, "6", "2", corr(2)),
      X("cuda_runtime", "cudaStreamWaitEvent", 1, 1, "9", "2", corr(3)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "12", "5", corr(4)),
      X("kernel", "producer", 0, 7, "5", "50", gpu(1, 7)),
      X("kernel", "consumer", 0, 8, "55", "10", gpu(4, 8)),
  }));
  auto E = add_structural_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s);
  auto R = add_sync_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s, E);
  CHECK(R.cross_stream == 1);
  CHECK(has_edge(E, p.gpu("producer"), p.gpu("consumer"), dep_kind::sync));
  CHECK(E.gpu_ready[gpu_named(p.d(), "consumer")] == 55'000);
}

TEST_CASE("memory and accounting: device memory is charged to the slice at its time; every event is counted") {
  upto_tasks p(trace({
      X("cpu_op", "aten::empty", 1, 1, "0", "10"),
      X("cpu_op", "aten::zeros", 1, 1, "20", "0"),                 // zero-length: counted as such
      memory(1, 1, "5", 512, 1536, 1),
      memory(1, 1, "6", 64, 64, 0),                                // CPU memory: counted
  }));
  auto E = add_structural_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s);
  auto R = add_sync_edges(p.d(), p.tt, p.L, p.F, p.P, p.T, p.s, E);
  set_durations_and_gaps(p.d(), p.tt, p.L, p.P, p.T, E, p.s, p.g);
  auto M = charge_memory(p.d(), p.tt, p.P, p.g);
  CHECK(M.at_start == 1024);
  CHECK(M.peak == 1536);
  REQUIRE(M.used.size() == 1);
  commit_edges(E, p.g, p.warnings);
  std::map<std::string, std::size_t> ignored;
  auto in = account(p.d(), {p.tt, p.F, p.its, p.L, p.B, p.T, M, R}, ignored);
  CHECK(in == 2);
  CHECK(ignored.at("zero-duration CPU event") == 1);
  CHECK(ignored.at("cpu memory event") == 1);
  // a memory event no task took is counted by reason
  auto lost = M;
  lost.used.clear();
  CHECK(account(p.d(), {p.tt, p.F, p.its, p.L, p.B, p.T, lost, R}, ignored) == 1);
  CHECK(ignored.at("memory event outside any CPU activity") == 1);
  // counts that do not add up to the trace's events are an internal error, not a silent drop
  auto more = p.d();
  more.events += 1;
  CHECK_THROWS_WITH_AS(account(more, {p.tt, p.F, p.its, p.L, p.B, p.T, M, R}, ignored),
                       doctest::Contains("covers 4 of 5 events"), daydream::error);
}
