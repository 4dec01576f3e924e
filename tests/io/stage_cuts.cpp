// Tests the cut stages alone: main threads, cuts and markers, merging.
// SPDX-License-Identifier: MIT
#include <daydream/io/detail/kineto_cuts.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_threads.hpp>

#include "stages.hpp"
#include "trace_text.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace daydream;
using namespace daydream::io::detail;
using namespace daydream::testing;
using namespace daydream::testing::trace_text;

TEST_CASE("cuts: a cut splits the slice it falls in; an anchor in idle time becomes a marker") {
  thread_rec th;
  slice a; a.start = 0; a.end = 100; a.ev = 0;
  slice b; b.start = 200; b.end = 300; b.ev = 1;
  th.slices = {a, b};
  th.cuts = {{40, cut_memory}, {150, cut_anchor}, {200, cut_anchor}};
  apply_cuts(th);
  REQUIRE(th.slices.size() == 5);
  CHECK(th.slices[0].end == 40);
  CHECK(th.slices[1].start == 40);
  CHECK(th.slices[1].cut_before);
  CHECK(th.slices[2].marker == mk_anchor);     // idle at 150
  CHECK(th.slices[2].start == 150);
  CHECK(th.slices[3].marker == mk_anchor);     // at b's start, after idle time: a marker too
  CHECK(th.slices[3].start == 200);
  CHECK(th.slices[4].ev == 1);
  // an anchor where the slice before ends needs no marker
  thread_rec c;
  slice x; x.start = 0; x.end = 50; x.ev = 0;
  slice y; y.start = 50; y.end = 90; y.ev = 1;
  c.slices = {x, y};
  c.cuts = {{50, cut_anchor}};
  apply_cuts(c);
  CHECK(c.slices.size() == 2);
  CHECK(th.cuts.empty());
}

TEST_CASE("cuts: the main thread is the one with step markers; merging joins pieces of one operator") {
  auto t = decode(trace({
      X("cpu_op", "aten::busy", 1, 5, "0", "900"),                  // busier, but no markers
      X("user_annotation", "ProfilerStep#1", 1, 1, "0", "100"),
      X("cpu_op", "aten::conv2d", 1, 1, "10", "50"),
      X("python_function", "helper.py(3): f", 1, 1, "20", "10"),    // splits conv2d's time in three
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  auto& its = f.its;
  auto& F = f.F;
  auto M = choose_main_threads(d, tt, its);
  const auto main = tt.find({1, 1});
  CHECK(M.first == main);
  CHECK(tt.threads[main].is_main);
  CHECK(tt.threads[tt.find({1, 5})].main == main);
  CHECK(M.t0 == 0);
  CHECK(M.end == 900'000);
  // slices: step [0,10), conv [10,20), frame [20,30), conv [30,60), step [60,100)
  auto& th = tt.threads[main];
  REQUIRE(th.slices.size() == 5);
  for (auto& s : th.slices) s.iteration = its.at(s.start);
  merge_slices(d, th, F);
  // the Python frame is inside conv2d (same operator): the three pieces become one
  REQUIRE(th.slices.size() == 3);
  CHECK(th.slices[1].start == 10'000);
  CHECK(th.slices[1].end == 60'000);
}

TEST_CASE("cuts: a blocking copy on a busy stream gets a zero-length launch piece at its start") {
  // the stream still runs "busy" (5-45) when the call begins at 10: the copy waits for it
  auto t = decode(trace({
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "0", "5", corr(2)),
      X("kernel", "busy", 0, 7, "5", "40", gpu(2)),
      X("cuda_runtime", "cudaMemcpy", 1, 1, "10", "100", corr(1)),
      X("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 7, "50", "55", gpu(1)),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  auto& L = f.L;
  auto& F = f.F;
  build_settings s;
  std::vector<time_ns> launch_at(d.cpu.size(), no_launch_cut);
  auto blocking = find_blocking_copies(d, tt, L, F, s, launch_at);
  const auto call = cpu_named(d, "cudaMemcpy", 10);
  CHECK(blocking[call] == gpu_named(d, "Memcpy DtoH (Device -> Pageable)"));
  CHECK(launch_at[call] == 10'000);
  REQUIRE(tt.threads[0].cuts.size() == 1);
  apply_cuts(tt.threads[0]);
  auto& sl = tt.threads[0].slices;
  REQUIRE(sl.size() == 3);
  CHECK(sl[1].start == 10'000);  // the launch piece
  CHECK(sl[1].end == 10'000);
  CHECK(sl[2].start == 10'000);  // the wait
  CHECK(sl[2].end == 110'000);
}

TEST_CASE("cuts: a blocking copy on an idle stream is launched where the copy starts") {
  // nothing runs on the stream: the 40 us before the copy are the call's own work
  auto t = decode(trace({
      X("cuda_runtime", "cudaMemcpy", 1, 1, "10", "100", corr(1)),
      X("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 7, "50", "55", gpu(1)),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  auto& L = f.L;
  auto& F = f.F;
  build_settings s;
  std::vector<time_ns> launch_at(d.cpu.size(), no_launch_cut);
  auto blocking = find_blocking_copies(d, tt, L, F, s, launch_at);
  CHECK(blocking[0] == 0);
  CHECK(launch_at[0] == 50'000);
  REQUIRE(tt.threads[0].cuts.size() == 1);
  apply_cuts(tt.threads[0]);
  REQUIRE(tt.threads[0].slices.size() == 2);
  CHECK(tt.threads[0].slices[0].start == 10'000); // the launch piece: the call's own work
  CHECK(tt.threads[0].slices[0].end == 50'000);
  CHECK(tt.threads[0].slices[1].start == 50'000); // the wait
  CHECK(tt.threads[0].slices[1].end == 110'000);
}

TEST_CASE("cuts: a graph launch is launched where its first kernel starts; a kernel launch is not cut") {
  // cudaGraphLaunch (10-110) submits three kernels; the first starts at 30, long before
  // the call returns: the 20 us before it are the call's own work
  auto t = decode(trace({
      X("cuda_runtime", "cudaGraphLaunch", 1, 1, "10", "100", corr(1)),
      X("kernel", "k1", 0, 7, "30", "10", gpu(1)),
      X("kernel", "k2", 0, 7, "45", "10", gpu(1)),
      X("kernel", "k3", 0, 7, "70", "10", gpu(1)),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "120", "10", corr(2)),
      X("kernel", "k4", 0, 7, "125", "10", gpu(2)),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  std::vector<time_ns> launch_at(d.cpu.size(), no_launch_cut);
  find_graph_launches(d, tt, f.L, f.F, launch_at);
  CHECK(launch_at[cpu_named(d, "cudaGraphLaunch", 10)] == 30'000);
  CHECK(launch_at[cpu_named(d, "cudaLaunchKernel", 120)] == no_launch_cut); // one kernel: launched at its end
  REQUIRE(tt.threads[0].cuts.size() == 1);
  apply_cuts(tt.threads[0]);
  auto& sl = tt.threads[0].slices;
  REQUIRE(sl.size() == 3);
  CHECK(sl[0].start == 10'000); // the launch piece
  CHECK(sl[0].end == 30'000);
  CHECK(sl[1].start == 30'000); // the rest of the call
  CHECK(sl[1].end == 110'000);
}
