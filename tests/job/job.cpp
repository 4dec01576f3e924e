// Jobs built by hand with exact answers: loading checks, collective matching, the coarse collective model, the straggler, no_straggler and the representative worker; a 4-rank DDP job whose scenarios add up.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/job.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/registry/cluster_params.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <string>
#include <vector>

using namespace daydream;

namespace {

constexpr time_ns us = 1'000;

// One rank of a data-parallel step: the CPU launches a compute kernel and an all-reduce;
// the all-reduce (on its own stream, 84) waits for the kernel (a stream wait); an
// optimizer kernel waits for the all-reduce. `recorded` is the all-reduce kernel's
// recorded duration (its waiting included); `shift` moves the whole trace in time.
io::kineto_trace make_rank(std::int32_t rank, std::int32_t world, time_ns compute, time_ns recorded,
                           time_ns shift = 0, const char* kernel = "gemm", std::size_t collectives = 1) {
  io::kineto_trace t;
  auto& g = t.g;
  auto thr = g.add_resource({"thread 1", resource_kind::cpu_thread, sharing::exclusive, rank, -1, 0});
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, rank, rank, 0});
  auto nc = g.add_resource({"stream 84", resource_kind::gpu_stream, sharing::exclusive, rank, rank, 0});
  const time_ns t0 = 1'000'000 + shift;
  auto a = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5 * us, .resource = thr,
                                              .trace_start = t0, .phase = phase::backward, .iteration = 1});
  auto k = g.add(gpu_kernel{.device = rank, .stream = 7}, {.name = kernel, .duration = compute, .resource = st,
                                                           .trace_start = t0 + 5 * us, .phase = phase::backward, .iteration = 1});
  g.add_dependency(a.id, k.id, dep_kind::launch);
  task_id prev_cpu = a.id, prev_comm = no_task;
  time_ns at = t0 + 5 * us;
  for (std::size_t c = 0; c < collectives; ++c) {
    auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = 5 * us, .resource = thr,
                                                .trace_start = at, .phase = phase::backward, .iteration = 1});
    g.add_dependency(prev_cpu, l.id, dep_kind::cpu_order);
    auto ar = g.add(comm_task{.op = comm_op::all_reduce, .bytes = 1 << 20, .group_size = std::uint32_t(world),
                              .device = rank, .stream = 84},
                    {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .duration = recorded, .resource = nc,
                     .trace_start = t0 + 5 * us + compute + time_ns(c) * 200 * us, .phase = phase::backward,
                     .iteration = 1});
    g.add_dependency(l.id, ar.id, dep_kind::launch);
    g.add_dependency(k.id, ar.id, dep_kind::sync);
    if (prev_comm != no_task) g.add_dependency(prev_comm, ar.id, dep_kind::stream_order);
    prev_cpu = l.id;
    prev_comm = ar.id;
    at += 5 * us;
  }
  auto o = g.add(gpu_kernel{.device = rank, .stream = 7}, {.name = "adam", .duration = 10 * us, .resource = st,
                                                           .trace_start = t0 + 400 * us, .phase = phase::weight_update,
                                                           .iteration = 1});
  g.add_dependency(k.id, o.id, dep_kind::stream_order);
  g.add_dependency(prev_comm, o.id, dep_kind::sync);
  t.info.rank = rank;
  t.info.world_size = world;
  t.info.backend = "nccl";
  t.info.path = "rank" + std::to_string(rank) + ".json";
  t.iterations.push_back({1, t0, t0 + 500 * us, "ProfilerStep#1", t0 + 500 * us});
  return t;
}

struct built {
  job j;
  collective_matching m;
  alignment_result a;
  job_graph jg;
  job_result res;
};

built run(std::vector<io::kineto_trace> ranks, const job_model_options& o = {}) {
  built b;
  b.j = io::make_job(std::move(ranks));
  b.m = match_collectives(b.j);
  b.a = no_alignment(make_alignment_input(b.j, b.m));
  b.jg = build_job_graph(b.j, b.m, b.a, o);
  b.res = analyse_job(b.j, b.jg);
  return b;
}

// Four ranks; rank 3 computes 400 us instead of 100 us, so the others' all-reduce kernels
// recorded their waiting (350 us) and rank 3's only the transfer (50 us).
std::vector<io::kineto_trace> straggler_job() {
  std::vector<io::kineto_trace> v;
  for (int r = 0; r < 3; ++r) v.push_back(make_rank(r, 4, 100 * us, 350 * us));
  v.push_back(make_rank(3, 4, 400 * us, 50 * us));
  return v;
}
std::vector<io::kineto_trace> even_job() {
  std::vector<io::kineto_trace> v;
  for (int r = 0; r < 4; ++r) v.push_back(make_rank(r, 4, 100 * us, 50 * us));
  return v;
}

} // namespace

TEST_CASE("load_job: resources are named and tagged by rank, tasks keep their fields") {
  auto b = run(even_job());
  CHECK(b.j.world_size == 4);
  CHECK(!b.j.partial());
  REQUIRE(b.jg.ranks == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(b.jg.g.resource_at(0).name == "rank 0: thread 1");
  CHECK(b.jg.g.find_resource("rank 3: stream 84") != no_resource);
  std::size_t per_rank = b.j.ranks[0].g.size();
  // Every rank's tasks, plus one barrier per matched collective; no release (same start).
  CHECK(b.jg.g.size() == 4 * per_rank + 1);
  for (std::size_t k = 0; k < 4; ++k)
    for (task_id t = b.jg.first_task[k]; t < b.jg.first_task[k + 1]; ++t) CHECK(b.jg.rank_of(t) == std::int32_t(k));
  CHECK(b.jg.rank_of(b.jg.collectives.at(0).barrier) == -1);
  // The graph's core stores no rank per task: the rank is the resource's node.
  CHECK(sizeof(b.jg.g.core().duration[0]) == sizeof(time_ns));
}

TEST_CASE("load_job refuses what is not one job, naming the files") {
  auto msg = [](std::vector<io::kineto_trace> v, io::job_options o = {}) {
    try {
      (void)io::make_job(std::move(v), o);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  {
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v[1].info.path = "other.json";
    auto m = msg(std::move(v));
    CHECK(m.find("rank0.json and other.json are both rank 0") != std::string::npos);
  }
  {
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v.push_back(make_rank(1, 4, 100 * us, 50 * us));
    auto m = msg(std::move(v));
    CHECK(m.find("rank1.json is of a 4-rank job, rank0.json of a 2-rank job") != std::string::npos);
  }
  {
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v.push_back(make_rank(1, 2, 100 * us, 50 * us));
    v[1].info.rank = -1;
    auto m = msg(std::move(v));
    CHECK(m.find("rank1.json does not say its rank") != std::string::npos);
  }
  {
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v.push_back(make_rank(1, 2, 100 * us, 50 * us));
    v[1].iterations.front().number = 7;
    auto m = msg(std::move(v));
    CHECK(m.find("share no iteration") != std::string::npos);
  }
  {
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v.push_back(make_rank(1, 2, 100 * us, 50 * us));
    v[1].info.backend = "gloo";
    CHECK(msg(std::move(v)).find("different jobs") != std::string::npos);
  }
  {
    // Explicit ranks: traces without distributedInfo, mapped by the user.
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 2, 100 * us, 50 * us));
    v.push_back(make_rank(1, 2, 100 * us, 50 * us));
    for (auto& t : v) t.info.rank = t.info.world_size = -1;
    io::job_options o;
    o.ranks = {1, 0};
    auto j = io::make_job(std::move(v), o);
    CHECK(j.world_size == 2);
    CHECK(j.ranks[0].file == "rank1.json");
    CHECK(j.ranks[0].g.resource_at(0).node == 0);
    io::job_options bad;
    bad.ranks = {0};
    std::vector<io::kineto_trace> w;
    w.push_back(make_rank(0, 2, 100 * us, 50 * us));
    w.push_back(make_rank(1, 2, 100 * us, 50 * us));
    CHECK_THROWS_AS((void)io::make_job(std::move(w), bad), usage_error);
  }
}

TEST_CASE("match_collectives: the k-th collective of a group on every rank; mismatches are refused") {
  std::vector<io::kineto_trace> v;
  v.push_back(make_rank(0, 2, 100 * us, 50 * us, 0, "gemm", 3));
  v.push_back(make_rank(1, 2, 100 * us, 50 * us, 0, "gemm", 3));
  auto j = io::make_job(std::move(v));
  auto m = match_collectives(j);
  REQUIRE(m.collectives.size() == 3);
  CHECK(m.groups == std::vector<std::string>{"stream 84"});
  for (std::uint32_t c = 0; c < 3; ++c) {
    CHECK(m.collectives[c].index == c);
    CHECK(m.collectives[c].parts.size() == 2);
    CHECK(m.collectives[c].op == comm_op::all_reduce);
    CHECK(m.collectives[c].bytes == 1 << 20);
  }
  // Rank 1 issued one collective fewer: reported, not guessed.
  std::vector<io::kineto_trace> w;
  w.push_back(make_rank(0, 2, 100 * us, 50 * us, 0, "gemm", 3));
  w.push_back(make_rank(1, 2, 100 * us, 50 * us, 0, "gemm", 2));
  auto j2 = io::make_job(std::move(w));
  CHECK_THROWS_WITH_AS(match_collectives(j2),
                       doctest::Contains("rank 1 (rank1.json) has 2 collective(s) on stream 84, rank 0 (rank0.json) has 3"),
                       error);
  // Different sizes of an all-reduce.
  std::vector<io::kineto_trace> x;
  x.push_back(make_rank(0, 2, 100 * us, 50 * us));
  x.push_back(make_rank(1, 2, 100 * us, 50 * us));
  x[1].g.for_each<comm_task>([&](handle<comm_task> h) { x[1].g.payload(h).bytes = 4096; });
  auto j3 = io::make_job(std::move(x));
  CHECK_THROWS_WITH_AS(match_collectives(j3), doctest::Contains("1048576 bytes on rank 0 (rank0.json) but 4096 bytes"),
                       error);
}

namespace {
// Sets every collective of `t` to process group `name` of global ranks `ranks`, as
// record_param_comms' metadata says it.
void in_group(io::kineto_trace& t, const std::string& name, std::vector<std::int32_t> ranks) {
  t.g.for_each<comm_task>([&](handle<comm_task> h) {
    t.g.payload(h).group = name;
    t.g.payload(h).group_ranks = ranks;
  });
}
} // namespace

TEST_CASE("match_collectives: process groups from the traces' metadata, each matched among its members") {
  // Two tensor-parallel pairs {0, 1} and {2, 3} on the same stream id: by stream the four
  // ranks would be one group (and their counts would not even agree).
  auto tp_job = [] {
    std::vector<io::kineto_trace> v;
    v.push_back(make_rank(0, 4, 100 * us, 50 * us, 0, "gemm", 2));
    v.push_back(make_rank(1, 4, 100 * us, 50 * us, 0, "gemm", 2));
    v.push_back(make_rank(2, 4, 100 * us, 50 * us, 0, "gemm", 3));
    v.push_back(make_rank(3, 4, 100 * us, 50 * us, 0, "gemm", 3));
    in_group(v[0], "1", {0, 1});
    in_group(v[1], "1", {0, 1});
    in_group(v[2], "2", {2, 3});
    in_group(v[3], "2", {2, 3});
    return v;
  };
  auto j = io::make_job(tp_job());
  auto m = match_collectives(j);
  CHECK(m.method.find("by process group") == 0);
  CHECK(m.groups == std::vector<std::string>{"process group 1", "process group 2"});
  REQUIRE(m.collectives.size() == 5);
  for (std::size_t c = 0; c < 5; ++c) {
    CAPTURE(c);
    const auto& mc = m.collectives[c];
    CHECK(mc.group_size == 2);
    REQUIRE(mc.parts.size() == 2);
    const std::int32_t lo = c < 2 ? 0 : 2;
    CHECK(mc.parts[0].rank == lo);
    CHECK(mc.parts[1].rank == lo + 1);
    CHECK(mc.group_ranks == std::vector<std::int32_t>{lo, lo + 1});
    CHECK(mc.index == (c < 2 ? c : c - 2));
  }
  // The job replays: every rank predicted, each pair waiting only for its partner.
  auto jg = build_job_graph(j, m, no_alignment(make_alignment_input(j, m)));
  auto res = analyse_job(j, jg);
  CHECK(res.ranks.size() == 4);

  // A traced member of a group without its collectives, and a rank running a group that
  // does not list it: refused, naming them.
  auto v = tp_job();
  in_group(v[1], "2", {2, 3});
  auto j2 = io::make_job(std::move(v));
  CHECK_THROWS_WITH_AS(match_collectives(j2),
                       doctest::Contains("rank 1 (rank1.json) runs collectives of process group 2, whose recorded "
                                         "ranks do not include it"),
                       error);
  auto w = tp_job();
  in_group(w[1], "3", {1});
  auto j3 = io::make_job(std::move(w));
  CHECK_THROWS_WITH_AS(match_collectives(j3),
                       doctest::Contains("rank 1 (rank1.json) is a member of process group 1 but its trace has no "
                                         "collective of it"),
                       error);
}

TEST_CASE("ingest: a collective's process group and its ranks are read from record_param_comms") {
  auto t = io::load_kineto(daydream::testing::bundled("hta_nccl_metadata_a100_2rank/nccl_data.json.gz"));
  std::size_t n = 0;
  t.g.for_each<comm_task>([&](handle<comm_task> h) {
    auto& p = t.g.payload(h);
    if (t.g.resource_at(t.g.resource_of(h.id)).kind != resource_kind::gpu_stream) return;
    ++n;
    CHECK(p.group == "0");
    CHECK(p.group_ranks == std::vector<std::int32_t>{0, 1});
  });
  CHECK(n == 21);
}

TEST_CASE("the coarse model: a collective ends on no rank before every rank started it") {
  auto b = run(straggler_job());
  REQUIRE(b.jg.collectives.size() == 1);
  auto& c = b.jg.collectives[0];
  // Calibrated from the last rank to arrive (rank 3, latest start): its 50 us kernel.
  CHECK(c.calibrated_from == 3);
  CHECK(c.transfer == 50 * us);
  const auto& r = b.res.r;
  // Rank 3's kernel ends at 5 + 400 us: the barrier, and every part starts there.
  CHECK(r.end[c.barrier] == 405 * us);
  for (auto p : c.parts) {
    CHECK(r.start[p] == 405 * us);
    CHECK(r.end[p] == 455 * us);
  }
  // Every rank: its GPU work, from its first kernel (5 us) to the optimizer's end (455 +
  // 10 us); its CPU work (10 us of launches) is shorter.
  for (auto& rr : b.res.ranks) {
    CHECK(rr.predicted == 460 * us);
    CHECK(rr.measured == 500 * us);
    CHECK(rr.compute + rr.transfer + rr.wait + rr.other == rr.predicted);
  }
  CHECK(b.res.predicted == 460 * us);
  // Rank 0: computes 100 + 10 us, waits 405 - 105 = 300 us for rank 3, transfers 50 us.
  auto& r0 = b.res.ranks[0];
  CHECK(r0.compute == 110 * us);
  CHECK(r0.wait == 300 * us);
  CHECK(r0.waited_for.at(3) == 300 * us);
  CHECK(r0.transfer == 50 * us);
  CHECK(r0.other == 0);
  auto& r3 = b.res.ranks[3];
  CHECK(r3.wait == 0);
  CHECK(r3.compute == 410 * us);
}

TEST_CASE("the straggler is named with the operations that made it late") {
  auto b = run(straggler_job());
  auto& s = b.res.straggler;
  CHECK(s.rank == 3);
  CHECK(s.caused == 3 * 300 * us);
  CHECK(s.last_arrivals == 1);
  REQUIRE(!s.operations.empty());
  CHECK(s.operations.front().first == "gemm");
  CHECK(s.operations.front().second == 400 * us);
  CHECK(s.reason.find("rank 3 arrived last at 1 of 1") != std::string::npos);
  CHECK(s.reason.find("gemm (400 us)") != std::string::npos);
  // The critical path runs through rank 3, then the synchronization, then a rank's transfer.
  bool through3 = false;
  for (auto& seg : b.res.critical) through3 = through3 || seg.rank == 3;
  CHECK(through3);
  // An even job has no straggler.
  auto e = run(even_job());
  CHECK(e.res.straggler.rank == -1);
  CHECK(e.res.straggler.reason.find("no rank waited") != std::string::npos);
}

TEST_CASE("no_straggler predicts exactly the job without the straggler") {
  auto b = run(straggler_job());
  auto ns = no_straggler(b.j, b.res, {3});
  CHECK(ns.like == 1);
  CHECK(ns.changed > 0);
  CHECK(ns.unmatched == 0);
  job_model_options o;
  o.start_like = ns.start_like;
  auto jg = build_job_graph(ns.j, b.m, b.a, o);
  auto res = analyse_job(ns.j, jg);
  auto e = run(even_job());
  CHECK(e.res.predicted == 100 * us + 50 * us + 10 * us);
  CHECK(res.predicted == e.res.predicted);
  for (std::size_t k = 0; k < 4; ++k) CHECK(res.ranks[k].predicted == e.res.ranks[k].predicted);
  CHECK_THROWS_AS((void)no_straggler(b.j, b.res, {9}), usage_error);
}

TEST_CASE("a rank that starts late makes the others wait, and is named") {
  std::vector<io::kineto_trace> v;
  v.push_back(make_rank(0, 2, 100 * us, 50 * us));
  v.push_back(make_rank(1, 2, 100 * us, 50 * us, 1000 * us));
  auto b = run(std::move(v));
  CHECK(b.jg.release == std::vector<time_ns>{0, 1000 * us});
  CHECK(b.res.r.end[b.jg.collectives[0].barrier] == 1105 * us);
  CHECK(b.res.straggler.rank == 1);
  REQUIRE(!b.res.straggler.operations.empty());
  CHECK(b.res.straggler.operations.front().first.find("started late") != std::string::npos);
  CHECK(b.res.straggler.operations.front().second == 1000 * us);
  // Rank 0 waits 1000 us; rank 1's iteration starts at its release.
  CHECK(b.res.ranks[0].wait == 1000 * us);
  CHECK(b.res.ranks[1].predicted == 160 * us);
  CHECK(b.res.ranks[0].predicted == 1160 * us);
}

TEST_CASE("scenarios: network scale and collective algorithm change the transfer only") {
  job_model_options o;
  o.network_scale = 2;
  auto b = run(even_job(), o);
  // 50 us calibrated: the ring's latency part (2(p-1) alpha) stays, the rest halves.
  const time_ns alpha = ring_all_reduce_time(0, 4, o.cluster.ring_link());
  CHECK(alpha > 0);
  CHECK(b.jg.collectives[0].transfer == alpha + (50 * us - alpha) / 2);
  job_model_options t;
  t.changed_to = all_reduce_algorithm::tree;
  auto c = run(even_job(), t);
  const auto link = t.cluster.ring_link();
  const double ratio = double(tree_all_reduce_time(1 << 20, 4, link)) / double(ring_all_reduce_time(1 << 20, 4, link));
  CHECK(c.jg.collectives[0].transfer == time_ns(std::llround(50'000 * ratio)));
  job_model_options cl;
  cl.transfer = job_model_options::transfer_source::cluster;
  auto d = run(even_job(), cl);
  CHECK(d.jg.collectives[0].transfer == ring_all_reduce_time(1 << 20, 4, cl.cluster.ring_link()));
  CHECK(d.jg.collectives[0].calibrated_from == -1);
  // Every all-reduce algorithm of collective.hpp, halving-doubling too (4 ranks: a power of two).
  job_model_options hd;
  hd.changed_to = all_reduce_algorithm::halving_doubling;
  auto e = run(even_job(), hd);
  const double hd_ratio =
      double(halving_doubling_all_reduce_time(1 << 20, 4, link)) / double(ring_all_reduce_time(1 << 20, 4, link));
  CHECK(e.jg.collectives[0].transfer == time_ns(std::llround(50'000 * hd_ratio)));
  CHECK(collective_cost(comm_op::all_reduce, 1 << 20, 4, link, all_reduce_algorithm::halving_doubling) ==
        halving_doubling_all_reduce_time(1 << 20, 4, link));
}

TEST_CASE("representative worker: equal to the full replay on identical ranks") {
  auto b = run(even_job());
  auto g = representative_graph(b.j, b.m, b.a, job_model_options{}, 0);
  auto r = replay(g);
  CHECK(iteration_time(g, r, 1) == b.res.predicted);
  // From the cluster model alone.
  job_model_options o;
  auto g2 = representative_graph(b.j.ranks[0].g, 4, o);
  auto r2 = replay(g2);
  CHECK(iteration_time(g2, r2, 1) == 100 * us + ring_all_reduce_time(1 << 20, 4, o.cluster.ring_link()) + 10 * us);
}

TEST_CASE("partial job: missing ranks are copies of the traced ones, and it says so") {
  std::vector<io::kineto_trace> v;
  v.push_back(make_rank(0, 8, 100 * us, 50 * us));
  v.push_back(make_rank(1, 8, 100 * us, 50 * us));
  auto b = run(std::move(v));
  CHECK(b.j.partial());
  CHECK(b.j.missing() == std::vector<std::int32_t>{2, 3, 4, 5, 6, 7});
  CHECK(b.j.copy_of(5) == 1);
  CHECK(b.j.copy_of(4) == 0);
  REQUIRE(b.j.notes.size() == 1);
  CHECK(b.j.notes[0].find("2 of 8 ranks traced") != std::string::npos);
  CHECK(b.m.collectives[0].group_size == 8);
  CHECK(b.res.predicted == 160 * us);
}

TEST_CASE("alignment quality: spread of completions and causality violations") {
  alignment_input in;
  in.ranks = {0, 1};
  in.collectives.push_back({{0, 0, 0, 100 * us}, {1, 0, 500 * us, 600 * us}});
  auto a = no_alignment(in);
  CHECK(a.violations == 1);
  CHECK(a.residual_ns == 500 * us);
  auto q = alignment_quality(in, {{0, 0}, {1, -500 * us}});
  CHECK(q.second == 0);
  CHECK(q.first == 0);
}

namespace {
// A 4-rank DDP job as each rank's profiler records it. Every ProfilerStep the CPU launches
// two forward and three backward kernels on stream 7, an all-reduce bucket on stream 84
// after each backward kernel (it waits for that kernel: DDP's buckets, overlapping the
// rest of the backward pass), and the optimizer, which waits for the last bucket; then
// it synchronizes (cudaDeviceSynchronize, 10 us once the optimizer is done) and starts
// the next step. Launches take 10 us each, nine a step, back to back.
//
// Kernels, normal speed: forward 4000 + 6000 us, backward 6000 + 5000 + 4000 us, adam
// 2000 us (27000 us of compute); the buckets transfer 1500, 1500 and 2000 us (25, 25 and
// 40 MiB). `permille(rank, step)` scales a rank's kernels in a step (1000: normal). What the
// trace records is what happened: a bucket's kernel starts when its rank is ready (its
// backward kernel and the previous bucket done) and ends for every rank when the last
// rank is ready plus its transfer, so a rank that waited records its waiting. Rank r's
// clock reads the true time plus clock[r].
constexpr struct { const char* name; time_ns dur; } ddp_kernels[] = {
    {"fwd_linear_1", 4000 * us}, {"fwd_linear_2", 6000 * us}, {"bwd_linear_2", 6000 * us},
    {"bwd_linear_1", 5000 * us}, {"bwd_linear_0", 4000 * us}, {"adam", 2000 * us}};
constexpr time_ns ddp_transfer[] = {1500 * us, 1500 * us, 2000 * us};
constexpr std::uint64_t ddp_bytes[] = {25u << 20, 25u << 20, 40u << 20};
constexpr time_ns ddp_launch = 10 * us, ddp_sync = 10 * us;

template <class Permille>
std::vector<io::kineto_trace> ddp_job(const std::vector<time_ns>& clock, std::int32_t steps, Permille permille) {
  const std::size_t n = clock.size();
  struct state {
    io::kineto_trace t;
    resource_id thr = no_resource, st = no_resource, nc = no_resource;
    task_id cpu = no_task, comp = no_task, comm = no_task; // the last task on each
    time_ns cpu_free = 0, comp_free = 0, comm_free = 0;      // when each is free (true time)
    time_ns step_start = 0;
    std::vector<task_id> kernels, bucket_launches;
    task_id adam_launch = no_task;
  };
  std::vector<state> rs(n);
  for (std::size_t r = 0; r < n; ++r) {
    auto& s = rs[r];
    const auto node = std::int32_t(r);
    s.thr = s.t.g.add_resource({"thread 1", resource_kind::cpu_thread, sharing::exclusive, node, -1, 0});
    s.st = s.t.g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, node, node, 0});
    s.nc = s.t.g.add_resource({"stream 84", resource_kind::gpu_stream, sharing::exclusive, node, node, 0});
    s.t.info.rank = node;
    s.t.info.world_size = std::int32_t(n);
    s.t.info.backend = "nccl";
    s.t.info.path = "rank" + std::to_string(r) + ".json";
  }
  for (std::int32_t i = 1; i <= steps; ++i) {
    for (std::size_t r = 0; r < n; ++r) {
      auto& s = rs[r];
      auto& g = s.t.g;
      const auto node = std::int32_t(r);
      s.step_start = s.cpu_free;
      s.kernels.clear();
      s.bucket_launches.clear();
      auto launch = [&](phase ph) {
        auto l = g.add(cpu_task{cpu_call::launch}, {.name = "cudaLaunchKernel", .duration = ddp_launch, .resource = s.thr,
                                                    .trace_start = s.cpu_free + clock[r], .phase = ph, .iteration = i});
        if (s.cpu != no_task) g.add_dependency(s.cpu, l.id, dep_kind::cpu_order);
        s.cpu = l.id;
        s.cpu_free += ddp_launch;
        return l.id;
      };
      for (std::size_t k = 0; k < 5; ++k) {
        const phase ph = k < 2 ? phase::forward : phase::backward;
        const auto l = launch(ph);
        const time_ns b = std::max(s.cpu_free, s.comp_free), d = ddp_kernels[k].dur * permille(node, i) / 1000;
        auto x = g.add(gpu_kernel{.device = node, .stream = 7}, {.name = ddp_kernels[k].name, .duration = d,
                                                                 .resource = s.st, .trace_start = b + clock[r],
                                                                 .phase = ph, .iteration = i});
        g.add_dependency(l, x.id, dep_kind::launch);
        if (s.comp != no_task) g.add_dependency(s.comp, x.id, dep_kind::stream_order);
        s.comp = x.id;
        s.comp_free = b + d;
        s.kernels.push_back(x.id);
        if (k >= 2) s.bucket_launches.push_back(launch(phase::backward));
      }
      s.adam_launch = launch(phase::weight_update);
    }
    // The buckets: each ends on every rank when the last rank is ready, plus its transfer.
    for (std::size_t b = 0; b < 3; ++b) {
      std::vector<time_ns> ready;
      for (std::size_t r = 0; r < n; ++r) {
        const auto& g = rs[r].t.g;
        const auto bwd = rs[r].kernels[b + 2];
        ready.push_back(std::max(g.trace_start(bwd) - clock[r] + g.duration(bwd), rs[r].comm_free));
      }
      const time_ns end = *std::max_element(ready.begin(), ready.end()) + ddp_transfer[b];
      for (std::size_t r = 0; r < n; ++r) {
        auto& s = rs[r];
        auto& g = s.t.g;
        auto ar = g.add(comm_task{.op = comm_op::all_reduce, .bytes = ddp_bytes[b], .group_size = std::uint32_t(n),
                                  .device = std::int32_t(r), .stream = 84},
                        {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .duration = end - ready[r], .resource = s.nc,
                         .trace_start = ready[r] + clock[r], .phase = phase::backward, .iteration = i});
        g.add_dependency(s.bucket_launches[b], ar.id, dep_kind::launch);
        g.add_dependency(s.kernels[b + 2], ar.id, dep_kind::sync);
        if (s.comm != no_task) g.add_dependency(s.comm, ar.id, dep_kind::stream_order);
        s.comm = ar.id;
        s.comm_free = end;
      }
    }
    for (std::size_t r = 0; r < n; ++r) {
      auto& s = rs[r];
      auto& g = s.t.g;
      const time_ns b = std::max(s.comp_free, s.comm_free), d = ddp_kernels[5].dur * permille(std::int32_t(r), i) / 1000;
      auto o = g.add(gpu_kernel{.device = std::int32_t(r), .stream = 7},
                     {.name = ddp_kernels[5].name, .duration = d, .resource = s.st, .trace_start = b + clock[r],
                      .phase = phase::weight_update, .iteration = i});
      g.add_dependency(s.adam_launch, o.id, dep_kind::launch);
      g.add_dependency(s.comp, o.id, dep_kind::stream_order);
      g.add_dependency(s.comm, o.id, dep_kind::sync);
      s.comp = o.id;
      s.comp_free = b + d;
      // The synchronization: called after the last launch, it returns 10 us after adam.
      auto y = g.add(cpu_task{cpu_call::sync}, {.name = "cudaDeviceSynchronize", .duration = ddp_sync, .resource = s.thr,
                                                .trace_start = s.cpu_free + clock[r], .phase = phase::weight_update,
                                                .iteration = i});
      g.add_dependency(s.cpu, y.id, dep_kind::cpu_order);
      g.add_dependency(o.id, y.id, dep_kind::sync);
      s.cpu = y.id;
      s.cpu_free = s.comp_free + ddp_sync;
      const time_ns b0 = s.step_start + clock[r], e0 = s.cpu_free + clock[r];
      s.t.iterations.push_back({i, b0, e0, "ProfilerStep#" + std::to_string(i), e0, b0});
    }
  }
  std::vector<io::kineto_trace> out;
  for (auto& s : rs) out.push_back(std::move(s.t));
  return out;
}

// Each rank's clock: an epoch base as real traces have, rank 0's, and the others seconds off.
const std::vector<time_ns> ddp_clock{1'712'345'678'901'234'567, 1'712'345'676'555'555'666, 1'712'345'679'888'888'888,
                                     1'712'345'682'901'234'584};

// The job programs' path (cli/whatif/job.cpp): the job, its matched collectives, the
// offsets (here the known ones: rank r's clock + offset r = rank 0's clock), the cluster
// of world-size machines, the baseline over the analysed iterations.
struct ddp_built {
  job j;
  collective_matching m;
  alignment_result a;
  job_model_options o;
  job_graph jg;
  job_result res;
};
template <class Permille> ddp_built ddp_run(Permille permille, std::int32_t steps = 4) {
  ddp_built b;
  b.j = io::make_job(ddp_job(ddp_clock, steps, permille));
  b.m = match_collectives(b.j);
  b.a = no_alignment(make_alignment_input(b.j, b.m));
  for (std::size_t r = 0; r < ddp_clock.size(); ++r) b.a.offset[std::int32_t(r)] = ddp_clock[0] - ddp_clock[r];
  b.o.cluster = cluster_from_params(pass_params::parse("cluster", "workers=4"));
  b.jg = build_job_graph(b.j, b.m, b.a, b.o);
  b.res = analyse_job(b.j, b.jg);
  return b;
}
// A scenario replayed as the job programs do: the baseline's matching, offsets and iterations.
job_result ddp_scenario(const ddp_built& b, const job& j, const job_model_options& o) {
  return analyse_job(j, build_job_graph(j, b.m, b.a, o), b.res.iterations);
}

// The laws of a job's explanation: every rank's compute, transfer, wait and other add up
// to its predicted iteration, which is its time in the focus iteration; the job's
// iteration is the slowest rank's, and the median of its iterations.
void check_laws(const job_result& res) {
  REQUIRE(res.iteration >= 0);
  const auto x = std::size_t(std::find(res.iterations.begin(), res.iterations.end(), res.iteration) - res.iterations.begin());
  REQUIRE(x < res.iterations.size());
  CHECK(res.per_iteration[x] == res.predicted);
  time_ns slowest = -1;
  for (auto& rr : res.ranks) {
    CAPTURE(rr.rank);
    CHECK(rr.compute + rr.transfer + rr.wait + rr.other == rr.predicted);
    CHECK(rr.predicted == rr.per_iteration[x]);
    time_ns waited = 0;
    for (auto& [who, t] : rr.waited_for) waited += t;
    CHECK(waited == rr.wait);
    slowest = std::max(slowest, rr.predicted);
  }
  CHECK(res.predicted == slowest);
}
} // namespace

TEST_CASE("a 4-rank DDP job with a straggler: every job scenario adds up, no_straggler to the exact job without it") {
  // Rank `slow`'s kernels take 1.3x as long: 5200 + 7800 us forward, 7800 + 6500 + 5200 us
  // backward, 2600 us adam (35100 us). Rank 1 as the straggler too: every rank's
  // iteration is then the same (the others wait for it), and the median rank by
  // iteration was the straggler itself, which no_straggler left as it was.
  for (std::int32_t slow : {3, 1}) {
    CAPTURE(slow);
    auto b = ddp_run([&](std::int32_t r, std::int32_t) { return r == slow ? 1300 : 1000; });
    const auto& res = b.res;
    // The offsets are the clocks' differences: every bucket ends at one instant on every rank.
    auto q = alignment_quality(make_alignment_input(b.j, b.m), b.a.offset);
    CHECK(q.first == 0);
    CHECK(q.second == 0);
    REQUIRE(b.m.collectives.size() == 4 * 3);
    // Each bucket's transfer from the straggler's kernel, which waited for nobody.
    for (std::size_t c = 0; c < b.jg.collectives.size(); ++c) {
      CHECK(b.jg.collectives[c].calibrated_from == slow);
      CHECK(b.jg.collectives[c].transfer == ddp_transfer[c % 3]);
    }
    // Four steps: the analysed ones are 2 and 3 (the first and the last left out).
    CHECK(res.iterations == std::vector<std::int32_t>{2, 3});
    CHECK(res.iteration == 2);
    // A step of the straggler from its first launch (S): 10 us launching, its kernels back
    // to back until its last backward kernel ends at S + 10 + 5200 + 7800 + 7800 + 6500 +
    // 5200 = S + 32510; the buckets end at S + 22310, S + 28810 and S + 34510 (each
    // starts when its backward kernel ends: the straggler is the last ready); adam until
    // S + 37110; the synchronization returns at S + 37120, when its next step starts.
    // Every rank: 37120 us.
    //   straggler: compute 32500 + 2600 = 35100, transfer 2000 (the last bucket; the
    //   others overlap its kernels), wait 0, other 20 (the first launch, the sync).
    //   The others, from S - 600 (their adam is 600 us shorter): kernels back to back
    //   until S + 24410; bucket 1 waits from its backward kernel to S + 20810 and
    //   transfers until S + 22310 (under their kernels); bucket 2 waits from S + 22310 to
    //   S + 27310 (kernels until S + 24410: 2900 us waiting), transfers 1500 us; bucket 3
    //   waits from S + 28810 to S + 32510 (3700 us) and transfers 2000 us; adam until
    //   S + 36510, the sync until S + 36520. Compute 25000 + 2000 = 27000, transfer
    //   3500, wait 6600 (for the straggler), other 20.
    CHECK(res.predicted == 37'120 * us);
    CHECK(res.per_iteration == std::vector<time_ns>{37'120 * us, 37'120 * us});
    for (auto& rr : res.ranks) {
      CAPTURE(rr.rank);
      CHECK(rr.predicted == 37'120 * us);
      CHECK(rr.measured == 37'120 * us);
      CHECK(rr.other == 20 * us);
      if (rr.rank == slow) {
        CHECK(rr.compute == 35'100 * us);
        CHECK(rr.transfer == 2'000 * us);
        CHECK(rr.wait == 0);
      } else {
        CHECK(rr.compute == 27'000 * us);
        CHECK(rr.transfer == 3'500 * us);
        CHECK(rr.wait == 6'600 * us);
        CHECK(rr.waited_for.at(slow) == 6'600 * us);
      }
    }
    check_laws(res);
    CHECK(res.straggler.rank == slow);
    // What it caused counts each bucket's whole wait, under the others' kernels too:
    // S + 15410 .. S + 20810, S + 22310 .. S + 27310, S + 28810 .. S + 32510 on three ranks.
    CHECK(res.straggler.caused == 3 * (5'400 + 5'000 + 3'700) * us);

    // The same job with the straggler at normal speed, as its traces record it: a step
    // is 10 + 4000 + 6000 + 6000 + 5000 + 4000 us of launching and kernels, the last
    // bucket's 2000 us (the first two end under the next backward kernels), adam's 2000,
    // the 10 us sync: 29020 us on every rank; compute 27000, transfer 2000, wait 0,
    // other 20.
    auto even = ddp_run([](std::int32_t, std::int32_t) { return 1000; });
    CHECK(even.res.predicted == 29'020 * us);
    for (auto& rr : even.res.ranks) {
      CHECK(rr.predicted == 29'020 * us);
      CHECK(rr.measured == 29'020 * us);
    }
    check_laws(even.res);

    // no_straggler as the job programs run it: the straggler takes the durations of the
    // median of the other ranks (they all took 27000 + 3500 + 20 us of their own: by
    // rank, the middle one) and starts when it does.
    auto ns = no_straggler(b.j, res, {res.straggler.rank});
    CHECK(ns.like == (slow == 1 ? 2 : 1));
    CHECK(ns.changed == 4 * 16); // per step 10 CPU calls and 6 compute kernels; the buckets are the model's
    CHECK(ns.unmatched == 0);
    auto o = b.o;
    o.start_like = ns.start_like;
    auto s = ddp_scenario(b, ns.j, o);
    CHECK(s.predicted == 29'020 * us);
    CHECK(s.predicted == even.res.predicted);
    CHECK(s.per_iteration == even.res.per_iteration);
    for (std::size_t k = 0; k < 4; ++k) {
      CAPTURE(k);
      auto& rr = s.ranks[k];
      CHECK(rr.predicted == 29'020 * us);
      CHECK(rr.compute == 27'000 * us);
      CHECK(rr.transfer == 2'000 * us);
      CHECK(rr.wait == 0);
      CHECK(rr.other == 20 * us);
    }
    CHECK(s.straggler.rank == -1);
    check_laws(s);

    // network:scale=2 and collective:algorithm=tree, the other scenarios the job programs
    // run: the straggler still sets every step, its last bucket's transfer in place of
    // 2000 us (the first two still end before its next backward kernel does).
    const auto link = b.o.cluster.ring_link();
    auto net = b.o;
    net.network_scale = 2;
    auto jn = build_job_graph(b.j, b.m, b.a, net);
    const time_ns alpha = ring_all_reduce_time(0, 4, link);
    for (std::size_t c = 0; c < jn.collectives.size(); ++c)
      CHECK(jn.collectives[c].transfer == alpha + (ddp_transfer[c % 3] - alpha) / 2);
    auto sn = analyse_job(b.j, jn, res.iterations);
    CHECK(sn.predicted == 37'120 * us - 2'000 * us + jn.collectives[2].transfer);
    CHECK(sn.straggler.rank == slow);
    check_laws(sn);
    auto tree = b.o;
    tree.changed_to = all_reduce_algorithm::tree;
    auto jt = build_job_graph(b.j, b.m, b.a, tree);
    for (std::size_t c = 0; c < jt.collectives.size(); ++c) {
      const double bytes = double(ddp_bytes[c % 3]);
      const double ratio = double(tree_all_reduce_time(bytes, 4, link)) / double(ring_all_reduce_time(bytes, 4, link));
      CHECK(jt.collectives[c].transfer == time_ns(std::llround(double(ddp_transfer[c % 3]) * ratio)));
    }
    REQUIRE(jt.collectives[1].transfer < 5'200 * us);
    auto st = analyse_job(b.j, jt, res.iterations);
    CHECK(st.predicted == 37'120 * us - 2'000 * us + jt.collectives[2].transfer);
    check_laws(st);
  }
}

TEST_CASE("a job whose steps differ by rank: every rank is told in the focus iteration, and the parts add up") {
  // Steps of different lengths (110, 90, 120, 100, 80, 110% of the kernels' times), in
  // each another rank 10% or 20% longer (rank r in step i: 1 + ((r + i) mod 3) / 10), rank
  // 3 1.3x on top: the ranks' own medians come from different steps, and the largest of
  // them is not the job's median step.
  auto permille = [](std::int32_t r, std::int32_t i) {
    constexpr std::int64_t step[] = {0, 110, 90, 120, 100, 80, 110};
    return step[i] * (10 + (r + i) % 3) * (r == 3 ? 13 : 10) / 10;
  };
  auto b = ddp_run(permille, 6);
  const auto& res = b.res;
  CHECK(res.iterations == std::vector<std::int32_t>{2, 3, 4, 5});
  check_laws(res);
  bool own_median_elsewhere = false;
  for (auto& rr : res.ranks) own_median_elsewhere = own_median_elsewhere || median_of(rr.per_iteration) != rr.predicted;
  CHECK(own_median_elsewhere);
  for (auto& rr : res.ranks) CHECK(rr.measured == rr.predicted); // the replay is the trace
  auto ns = no_straggler(b.j, res, {res.straggler.rank});
  CHECK(ns.like != res.straggler.rank);
  auto o = b.o;
  o.start_like = ns.start_like;
  auto s = ddp_scenario(b, ns.j, o);
  CHECK(s.predicted < res.predicted);
  check_laws(s);
}
