// Tests the GPU-link stage alone: streams, launch links by correlation id and by launch flow.
// SPDX-License-Identifier: MIT
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_threads.hpp>

#include "stages.hpp"
#include "trace_text.hpp"

#include <doctest/doctest.h>

using namespace daydream;
using namespace daydream::io::detail;
using namespace daydream::testing;
using namespace daydream::testing::trace_text;

TEST_CASE("GPU links: ops are grouped by stream in start order and linked to their calls by correlation id") {
  auto t = decode(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(2)),
      X("cuda_runtime", "cudaMemcpyAsync", 1, 1, "30", "5", corr(3)),
      X("kernel", "late", 0, 7, "60", "10", gpu(2)),       // later in the file, later start
      X("kernel", "early", 0, 7, "40", "10", gpu(1)),
      X("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 8, "50", "4", gpu(3, 8)),
  }));
  auto& d = t->d;
  auto threads = group_threads(d);
  auto L = link_gpu_ops(d, threads);
  REQUIRE(L.streams.size() == 2);
  CHECK(L.streams[0].stream == 7);
  REQUIRE(L.streams[0].ops.size() == 2);
  CHECK(d.gpu[L.streams[0].ops[0]].name == "early");
  CHECK(d.gpu[L.streams[0].ops[1]].name == "late");
  CHECK(L.op_stream[gpu_named(d, "late")] == 0);
  CHECK(L.op_stream[gpu_named(d, "Memcpy HtoD (Pageable -> Device)")] == 1);
  // each op to its call, each call to its op (CSR)
  const auto first = cpu_named(d, "cudaLaunchKernel", 10), second = cpu_named(d, "cudaLaunchKernel", 20);
  CHECK(L.launch_of[gpu_named(d, "early")] == first);
  CHECK(L.launch_of[gpu_named(d, "late")] == second);
  CHECK(L.launches(first));
  CHECK(L.ops_list[L.ops_begin[second]] == gpu_named(d, "late"));
  CHECK(L.sem[cpu_named(d, "cudaMemcpyAsync")] == call_semantics::async_copy);
  // launch times along the stream: running maximum of the calls' starts
  CHECK(L.streams[0].launch_max == std::vector<time_ns>{10'000, 20'000});
  CHECK(L.last_launched_before(L.streams[0], 20'000) == gpu_named(d, "early"));
  CHECK(L.first_launched_after(L.streams[0], 10'000) == gpu_named(d, "late"));
  CHECK(L.stream_index(0, 8) == 1);
  CHECK(L.stream_index(3, 8) == no_index);
}

TEST_CASE("GPU links: a launch flow links an op whose correlation id matches no call") {
  // The kernel's correlation id (99) has no runtime call; the flow (id 5, the call's
  // correlation) joins the call at 10 us to the kernel on device 0, stream 7, at 40 us.
  auto t = decode(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(5)),
      X("kernel", "k", 0, 7, "40", "10", gpu(99)),
      flow('s', "ac2g", 5, 1, 1, "10"),
      flow('f', "ac2g", 5, 0, 7, "40"),
  }));
  auto& d = t->d;
  auto threads = group_threads(d);
  auto L = link_gpu_ops(d, threads);
  CHECK(L.launch_of[0] == cpu_named(d, "cudaLaunchKernel"));
  REQUIRE(L.flow_pair.size() == 1);
  CHECK(L.flow_pair[0].op == 0);
}

TEST_CASE("GPU links: a launch flow that contradicts the correlation id is counted, not used") {
  // The kernel belongs to the call at 10 us by correlation id; the flow starts at the
  // call at 20 us instead.
  auto t = decode(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "20", "5", corr(2)),
      X("kernel", "k", 0, 7, "40", "10", gpu(1)),
      flow('s', "ac2g", 1, 1, 1, "20"),
      flow('f', "ac2g", 1, 0, 7, "40"),
  }));
  auto& d = t->d;
  auto threads = group_threads(d);
  auto L = link_gpu_ops(d, threads);
  CHECK(L.launch_of[0] == cpu_named(d, "cudaLaunchKernel", 10));
  CHECK(L.flow_pair.empty());
  CHECK(L.flow_state[0] == 3);
  CHECK(L.flow_state[1] == 3);
}

TEST_CASE("GPU links: threads of Python frames only are ignored; runtime calls are indexed by start") {
  auto t = decode(trace({
      X("python_function", "train.py(10): step", 1, 2, "0", "100"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "30", "5", corr(2)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "10", "5", corr(1)),
  }));
  auto& d = t->d;
  auto threads = group_threads(d);
  REQUIRE(threads.threads.size() == 2);
  CHECK(threads.threads[threads.find({1, 2})].ignored);
  CHECK(!threads.threads[threads.find({1, 1})].ignored);
  CHECK(threads.find({7, 7}) == no_index);
  auto& rt = threads.runtime[threads.find({1, 1})];
  REQUIRE(rt.size() == 2);
  CHECK(d.cpu[rt[0]].ts == 10'000);
  CHECK(threads.runtime_at(d, {1, 1}, 30'000) == cpu_named(d, "cudaLaunchKernel", 30));
  CHECK(threads.runtime_at(d, {1, 1}, 31'000) == no_index);
}

TEST_CASE("GPU links: ops of one graph launch that overlap on their stream go on lanes; others keep one") {
  // A graph launch (correlation 1) runs a, b and c at once on stream 7 and d after them;
  // then a kernel of its own launch (2) starts 5 us before d ends: it takes the lowest
  // free lane (the edge stage makes it follow d); the graph's ops of 1 us overlap stay on
  // one lane.
  auto t = decode(trace({
      X("cuda_runtime", "cudaGraphLaunch", 1, 1, "10", "5", corr(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "16", "5", corr(2)),
      X("kernel", "a", 0, 7, "20", "100", gpu(1)),
      X("kernel", "b", 0, 7, "20", "50", gpu(1)),
      X("kernel", "c", 0, 7, "30", "100", gpu(1)),
      X("kernel", "b2", 0, 7, "71", "10", gpu(1)),  // b ended at 70: lane 1 is free
      X("kernel", "d", 0, 7, "130", "10", gpu(1)),
      X("kernel", "early", 0, 7, "135", "10", gpu(2)),
      X("kernel", "other", 0, 8, "20", "10", gpu(2, 8)),
  }));
  auto& d = t->d;
  auto threads = group_threads(d);
  auto L = link_gpu_ops(d, threads);
  auto& st = L.streams[L.op_stream[gpu_named(d, "a")]];
  REQUIRE(st.lanes() == 3);
  auto lane = [&](const char* name) { return st.lane_at(L.op_pos[gpu_named(d, name)]); };
  CHECK(lane("a") == 0);
  CHECK(lane("b") == 1);
  CHECK(lane("c") == 2);
  CHECK(lane("b2") == 1);
  CHECK(lane("d") == 0);
  CHECK(lane("early") == 1);
  CHECK(L.laned_ops == 4);
  CHECK(st.lane_prev(L.op_pos[gpu_named(d, "b2")]) == L.op_pos[gpu_named(d, "b")]);
  CHECK(st.lane_prev(L.op_pos[gpu_named(d, "d")]) == L.op_pos[gpu_named(d, "a")]);
  CHECK(L.streams[L.op_stream[gpu_named(d, "other")]].lanes() == 1);
}
