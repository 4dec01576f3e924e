// Tests ingest of multi-stream traces: compute and communication kernels overlapping on three streams, joined by event waits.
// SPDX-License-Identifier: MIT
#include <daydream/io/kineto.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>

#include "trace_text.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using namespace daydream;
namespace dio = daydream::io;
using namespace daydream::testing::trace_text;

namespace {

task_id named(const graph& g, std::string_view name) {
  task_id found = no_task;
  g.for_each_task([&](task_id t) {
    if (found == no_task && g.name(t) == name) found = t;
  });
  REQUIRE_MESSAGE(found != no_task, "no task named " << name);
  return found;
}

std::string wait_record(int c, int stream, int wait_stream, int record) {
  return "{\"correlation\": " + std::to_string(c) + ", \"cuda_sync_kind\": \"Stream Wait Event\", \"stream\": " +
         std::to_string(stream) + ", \"wait_on_stream\": " + std::to_string(wait_stream) +
         ", \"wait_on_cuda_event_record_corr_id\": " + std::to_string(record) + ", \"device\": 0}";
}

/// A mixture-of-experts layer on three streams (times in us):
///   stream 7 (compute):  gate [5,105)   expert_mlp [105,205)          combine [305,355)
///   stream 20 (comm):                   dispatch [105,305)  (waits for gate; a custom
///                                                            all-to-all kernel, not NCCL)
///   stream 21 (shared):  shared_expert [29,229)  (independent, overlaps everything)
/// combine waits for dispatch (event recorded on stream 20 after it); the host then
/// synchronizes the device. Events are recorded after the launch of an op on another
/// stream, so only the cuda_sync records say which stream each event is on.
std::string moe_trace(bool records) {
  std::string s = "{\"traceEvents\": [";
  auto add = [&](const std::string& e) { s += (s.back() == '[' ? "" : ",\n") + e; };
  add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(1)));
  add(X("kernel", "gate", 0, 7, "5", "100", gpu(1, 7)));
  add(X("cuda_runtime", "cudaEventRecord", 1, 1, "6", "2", corr(2)));        // on stream 7
  add(X("cuda_runtime", "cudaStreamWaitEvent", 1, 1, "9", "2", corr(3)));    // stream 20 waits
  if (records) add(X("cuda_sync", "Stream Wait Event", 0, 20, "10", "1", wait_record(3, 20, 7, 2)));
  add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, "12", "5", corr(4)));
  add(X("kernel", "dispatch_all_to_all", 0, 20, "105", "200", gpu(4, 20)));
  add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, "18", "5", corr(5)));
  add(X("kernel", "expert_mlp", 0, 7, "105", "100", gpu(5, 7)));
  add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, "24", "5", corr(6)));
  add(X("kernel", "shared_expert", 0, 21, "29", "200", gpu(6, 21)));
  add(X("cuda_runtime", "cudaEventRecord", 1, 1, "30", "2", corr(7)));       // on stream 20
  add(X("cuda_runtime", "cudaStreamWaitEvent", 1, 1, "33", "2", corr(8)));   // stream 7 waits
  if (records) add(X("cuda_sync", "Stream Wait Event", 0, 7, "34", "1", wait_record(8, 7, 20, 7)));
  add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, "36", "5", corr(9)));
  add(X("kernel", "combine", 0, 7, "305", "50", gpu(9, 7)));
  add(X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, "42", "318", corr(10)));
  s += "]}";
  return s;
}

} // namespace

TEST_CASE("three streams with cuda_sync records: the replay is the trace, and what-ifs follow the waits") {
  auto t = dio::parse_kineto(moe_trace(true), "moe");
  auto& g = t.g;
  check_invariants(g);
  CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
  const auto gate = named(g, "gate"), dispatch = named(g, "dispatch_all_to_all"), expert = named(g, "expert_mlp"),
             shared = named(g, "shared_expert"), combine = named(g, "combine"), sync = named(g, "cudaDeviceSynchronize");
  CHECK(g.dependency_kind(gate, dispatch) == dep_kind::sync);
  CHECK(g.dependency_kind(dispatch, combine) == dep_kind::sync);
  CHECK(!g.has_dependency(shared, combine)); // nothing waits for the independent stream but the host
  auto r = replay(g);
  CHECK(r.start[dispatch] == 105'000);
  CHECK(r.start[shared] == 29'000);
  CHECK(r.start[combine] == 305'000);
  CHECK(r.end[sync] == 360'000);
  CHECK(r.makespan == 360'000);
  // A faster all-to-all moves combine, and the end, by exactly the time saved.
  set_duration(g, dispatch, 100'000);
  auto faster = replay(g);
  CHECK(faster.start[combine] == 205'000);
  CHECK(faster.end[sync] == 260'000);
  // A slower gate delays both streams that wait for it; the shared expert is not held up.
  set_duration(g, dispatch, 200'000);
  set_duration(g, gate, 150'000);
  auto slower = replay(g);
  CHECK(slower.start[dispatch] == 155'000);
  CHECK(slower.start[expert] == 155'000);
  CHECK(slower.start[shared] == 29'000);
  CHECK(slower.end[sync] == 410'000);
}

TEST_CASE("three streams without cuda_sync records: a stream wait is inferred from the op that released the waiting stream") {
  // Without records, which stream an event is on is not in the trace. The second event
  // was recorded after the shared expert was launched on stream 21; the candidates are
  // the last ops launched before the record on each other stream: the shared expert
  // (ends 229) and the all-to-all (ends 305). Combine starts at 305: the all-to-all
  // released it, so that is the wait, and what-ifs that move the all-to-all move combine.
  auto t = dio::parse_kineto(moe_trace(false), "moe, no records");
  auto& g = t.g;
  check_invariants(g);
  const auto gate = named(g, "gate"), dispatch = named(g, "dispatch_all_to_all"), combine = named(g, "combine"),
             sync = named(g, "cudaDeviceSynchronize");
  CHECK(g.dependency_kind(gate, dispatch) == dep_kind::sync);
  CHECK(g.dependency_kind(dispatch, combine) == dep_kind::sync);
  CHECK(!g.has_dependency(named(g, "shared_expert"), combine));
  auto r = replay(g);
  CHECK(r.start[combine] == 305'000);
  CHECK(r.end[sync] == 360'000);
  set_duration(g, dispatch, 100'000);
  auto faster = replay(g);
  CHECK(faster.start[combine] == 205'000);
  CHECK(faster.end[sync] == 260'000);
}

namespace {

/// The resource of task `t`'s name.
std::string resource_name(const graph& g, task_id t) { return g.resource_at(g.resource_of(t)).name; }

} // namespace

TEST_CASE("a graph launch whose branches overlap on its stream runs them on lanes, each after what it waited for") {
  // One cudaGraphLaunch (correlation 1) runs a graph's parallel branches on stream 7, as
  // some CUDA versions record them (times in us): branch_a [20,420) alongside branch_b
  // [20,320) and branch_b2 [325,405), which follows branch_b; join_add [420,520) after
  // both branches; then a kernel of its own launch, after [520,540); the host syncs.
  auto json = trace({
      X("cuda_runtime", "cudaGraphLaunch", 1, 1, "10", "5", corr(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "16", "4", corr(2)),
      X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, "22", "520", corr(3)),
      X("kernel", "branch_a", 0, 7, "20", "400", gpu(1)),
      X("kernel", "branch_b", 0, 7, "20", "300", gpu(1)),
      X("kernel", "branch_b2", 0, 7, "325", "80", gpu(1)),
      X("kernel", "join_add", 0, 7, "420", "100", gpu(1)),
      X("kernel", "after", 0, 7, "520", "20", gpu(2)),
  });
  auto t = dio::parse_kineto(json, "graph branches");
  auto& g = t.g;
  check_invariants(g);
  CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
  CHECK(t.report.warnings.empty());
  std::size_t gpu_tasks = 0;
  g.for_each_task([&](task_id x) { gpu_tasks += g.kind_resource(x) == resource_kind::gpu_stream; });
  CHECK(gpu_tasks == 5); // every op of the graph, none dropped
  const auto a = named(g, "branch_a"), b = named(g, "branch_b"), b2 = named(g, "branch_b2"), join = named(g, "join_add"),
             after = named(g, "after"), sync = named(g, "cudaDeviceSynchronize");
  // Lane 0 is the stream; the branch that overlaps it runs on lane 1, a resource of its own.
  CHECK(resource_name(g, a) == "stream 7 (gpu 0)");
  CHECK(resource_name(g, join) == "stream 7 (gpu 0)");
  CHECK(resource_name(g, after) == "stream 7 (gpu 0)");
  CHECK(resource_name(g, b) == "stream 7 lane 1 (gpu 0)");
  CHECK(resource_name(g, b2) == "stream 7 lane 1 (gpu 0)");
  CHECK(g.resource_at(g.resource_of(b)).kind == resource_kind::gpu_stream);
  // Program order on each lane; the join after the other lane's last op that ended by its
  // start; nothing between ops that ran at the same time.
  CHECK(g.dependency_kind(a, join) == dep_kind::stream_order);
  CHECK(g.dependency_kind(join, after) == dep_kind::stream_order);
  CHECK(g.dependency_kind(b, b2) == dep_kind::stream_order);
  CHECK(g.dependency_kind(b2, join) == dep_kind::data);
  CHECK(!g.has_dependency(a, b));
  CHECK(!g.has_dependency(b, a));
  CHECK(!g.has_dependency(a, b2));
  CHECK(!g.has_dependency(b, join));   // implied through branch_b2
  CHECK(!g.has_dependency(b2, after)); // implied through join_add
  // The replay is the trace, 20 us earlier: it starts at the launch (10 us) and leaves
  // out the launch latency (the 10 us to the branches' start).
  auto r = replay(g);
  CHECK(r.start[a] == 0);
  CHECK(r.start[b] == 0);
  CHECK(r.start[b2] == 305'000);
  CHECK(r.start[join] == 400'000);
  CHECK(r.end[after] == 520'000);
  CHECK(r.end[sync] == 522'000);
  // The join waits for both branches: a shorter branch_a leaves it to branch_b2, a longer
  // branch_b2 holds it back.
  auto g2 = g;
  set_duration(g2, a, 100'000);
  CHECK(replay(g2).start[join] == 385'000);
  set_duration(g2, b2, 200'000);
  CHECK(replay(g2).start[join] == 505'000);
}

TEST_CASE("a sync after a graph launch waits for every lane; overlaps of separate launches keep one lane") {
  // Two branches of one graph launch end apart (no join): the stream sync waits for both.
  auto json = trace({
      X("cuda_runtime", "cudaGraphLaunch", 1, 1, "10", "5", corr(1)),
      X("cuda_runtime", "cudaStreamSynchronize", 1, 1, "16", "305", corr(2)),
      X("kernel", "x", 0, 7, "20", "200", gpu(1)),
      X("kernel", "y", 0, 7, "20", "300", gpu(1)),
  });
  auto t = dio::parse_kineto(json, "graph without join");
  auto& g = t.g;
  check_invariants(g);
  const auto x = named(g, "x"), y = named(g, "y"), sync = named(g, "cudaStreamSynchronize");
  CHECK(resource_name(g, x) == "stream 7 (gpu 0)");
  CHECK(resource_name(g, y) == "stream 7 lane 1 (gpu 0)");
  CHECK(g.dependency_kind(x, sync) == dep_kind::sync);
  CHECK(g.dependency_kind(y, sync) == dep_kind::sync);
  CHECK(replay(g).end[sync] == 301'000); // from the launch, without its latency
  set_duration(g, x, 400'000);
  CHECK(replay(g).end[sync] == 401'000);
  // A kernel of a later launch that starts while a lane still runs (3 us before y ends)
  // takes a free lane, but follows y: a stream runs a launch after what was launched before.
  auto later = dio::parse_kineto(trace({
                                     X("cuda_runtime", "cudaGraphLaunch", 1, 1, "10", "5", corr(1)),
                                     X("cuda_runtime", "cudaLaunchKernel", 1, 1, "16", "5", corr(2)),
                                     X("kernel", "x", 0, 7, "20", "200", gpu(1)),
                                     X("kernel", "y", 0, 7, "20", "300", gpu(1)),
                                     X("kernel", "z", 0, 7, "317", "10", gpu(2)),
                                 }),
                                 "a later launch");
  const auto lx = named(later.g, "x"), ly = named(later.g, "y"), lz = named(later.g, "z");
  CHECK(resource_name(later.g, lz) == "stream 7 (gpu 0)");
  CHECK(later.g.dependency_kind(lx, lz) == dep_kind::stream_order);
  CHECK(later.g.dependency_kind(ly, lz) == dep_kind::stream_order);
  CHECK(replay(later.g).start[lz] == replay(later.g).end[ly]);
  // Kernels of two launches that overlap on a stream (a kernel that starts early, 3 us
  // before the one before it ends) stay on one lane, one after the other, as do kernels
  // of one graph launch that overlap by no more than the tolerance (a microsecond).
  auto two = dio::parse_kineto(trace({
                                   X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
                                   X("cuda_runtime", "cudaLaunchKernel", 1, 1, "16", "5", corr(2)),
                                   X("cuda_runtime", "cudaGraphLaunch", 1, 1, "22", "5", corr(3)),
                                   X("kernel", "first", 0, 7, "20", "100", gpu(1)),
                                   X("kernel", "early", 0, 7, "117", "50", gpu(2)),
                                   X("kernel", "g1", 0, 7, "170", "10", gpu(3)),
                                   X("kernel", "g2", 0, 7, "179", "10", gpu(3)),
                               }),
                               "separate launches");
  CHECK(two.g.resource_count() == 2); // the thread and the stream
  CHECK(two.g.dependency_kind(named(two.g, "first"), named(two.g, "early")) == dep_kind::stream_order);
  CHECK(two.g.dependency_kind(named(two.g, "g1"), named(two.g, "g2")) == dep_kind::stream_order);
}
