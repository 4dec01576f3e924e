// The fine level of a job's communication: collectives as chunk transfers on the links of a machine hierarchy, with exact hand-computed times (one ring, two groups sharing NICs, NVLink versus NIC), the algorithms' schedules against the cost formulas, and the link-capacity bound on random jobs.
// SPDX-License-Identifier: MIT
#include <daydream/net/collective_steps.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/net/network.hpp>
#include <daydream/replay.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace daydream;

namespace {

// One collective of a rank: its operation, bytes, and the compute time before it.
struct coll {
  comm_op op = comm_op::all_reduce;
  std::uint64_t bytes = 0;
  std::int32_t stream = 84; // its process group
};

// A rank: a compute kernel of `compute` ns on stream 7, then each collective on its own
// stream waiting for it (a stream wait), then an optimizer kernel waiting for them all.
rank_trace make_rank(std::int32_t rank, std::int32_t world, time_ns compute, const std::vector<coll>& cs) {
  rank_trace rt;
  rt.rank = rank;
  rt.world_size = world;
  rt.file = "rank" + std::to_string(rank);
  auto& g = rt.g;
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, rank, rank, 0});
  std::map<std::int32_t, resource_id> streams;
  auto k = g.add(gpu_kernel{.device = rank, .stream = 7},
                 {.name = "gemm", .duration = compute, .resource = st, .trace_start = 0, .iteration = 1});
  std::vector<task_id> parts;
  for (auto& c : cs) {
    auto [it, fresh] = streams.try_emplace(c.stream, no_resource);
    if (fresh)
      it->second = g.add_resource({"stream " + std::to_string(c.stream), resource_kind::gpu_stream, sharing::exclusive,
                                   rank, rank, 0});
    auto t = g.add(comm_task{.op = c.op, .bytes = c.bytes, .group_size = std::uint32_t(world), .device = rank,
                             .stream = c.stream},
                   {.name = "ncclKernel", .duration = 1'000, .resource = it->second, .trace_start = compute + 10,
                    .iteration = 1});
    g.add_dependency(k.id, t.id, dep_kind::sync);
    parts.push_back(t.id);
  }
  auto o = g.add(gpu_kernel{.device = rank, .stream = 7},
                 {.name = "adam", .duration = 0, .resource = st, .trace_start = compute + 20, .iteration = 1});
  g.add_dependency(k.id, o.id, dep_kind::stream_order);
  for (auto p : parts) g.add_dependency(p, o.id, dep_kind::sync);
  rt.measured[1] = compute;
  rt.steady = {1};
  return rt;
}

job make_job(std::int32_t world, const std::vector<coll>& cs, time_ns compute = 1'000'000) {
  job j;
  j.world_size = world;
  for (std::int32_t r = 0; r < world; ++r) j.ranks.push_back(make_rank(r, world, compute, cs));
  return j;
}

struct replayed {
  job_graph jg;
  replay_result r;
};

replayed replay_job(const job& j, const job_model_options& o) {
  auto m = match_collectives(j);
  auto jg = build_job_graph(j, m, no_alignment(make_alignment_input(j, m)), o);
  auto r = replay(jg.g);
  return {std::move(jg), std::move(r)};
}

// The time from collective c's barrier (every rank arrived) to the end of its kernel on the
// rank at `part` (the kernels' ends on all ranks must agree for the callers below).
time_ns collective_time(const replayed& x, std::size_t c, std::size_t part = 0) {
  const auto& mc = x.jg.collectives.at(c);
  return x.r.end[mc.parts.at(part)] - x.r.end[mc.barrier];
}

cluster make_cluster(std::uint32_t machines, std::uint32_t per, double nic_bytes_per_ns, double nic_latency,
                     double nvlink_bytes_per_ns = 0, double nvlink_latency = 0) {
  cluster c;
  c.machines = machines;
  c.workers_per_machine = per;
  c.network = {nic_bytes_per_ns * 1e9, nic_latency};
  if (nvlink_bytes_per_ns > 0) c.nvlink = {nvlink_bytes_per_ns * 1e9, nvlink_latency};
  return c;
}

} // namespace

TEST_CASE("collective_transfers: each algorithm alone takes its cost formula (on one uniform link)") {
  const link_spec l{2e9, 700}; // 2 bytes/ns: a chunk of an even byte count takes whole ns
  for (std::uint32_t p = 2; p <= 9; ++p) {
    CAPTURE(p);
    auto h = link_hierarchy::of(make_cluster(1, p, 1, 0), p);
    h.intra = l;
    std::vector<std::int32_t> ranks;
    for (std::uint32_t r = 0; r < p; ++r) ranks.push_back(std::int32_t(r));
    const double bytes = 2.0 * 2520 * 1000; // divisible by 2p for p <= 9
    auto t = [&](comm_op op, all_reduce_algorithm a = all_reduce_algorithm::ring) {
      return uncontended_time(collective_transfers(op, bytes, p, a), ranks, h);
    };
    CHECK(collective_transfers(comm_op::all_reduce, bytes, p).size() == 2 * (p - 1) * p);
    for (auto op : {comm_op::all_reduce, comm_op::reduce_scatter, comm_op::all_gather, comm_op::broadcast,
                    comm_op::reduce, comm_op::all_to_all, comm_op::other})
      for (auto a : {all_reduce_algorithm::ring, all_reduce_algorithm::tree, all_reduce_algorithm::halving_doubling})
        CHECK(collective_transfer_count(op, p, a) == collective_transfers(op, bytes, p, a).size());
    CHECK(t(comm_op::all_reduce) == ring_all_reduce_time(bytes, p, l));
    CHECK(t(comm_op::reduce_scatter) == reduce_scatter_time(bytes, p, l));
    CHECK(t(comm_op::all_gather) == all_gather_time(bytes, p, l));
    CHECK(t(comm_op::all_to_all) == all_to_all_time(bytes, p, l));
    CHECK(t(comm_op::broadcast) == broadcast_time(bytes, p, l));
    if ((p & (p - 1)) == 0) {
      CHECK(t(comm_op::all_reduce, all_reduce_algorithm::tree) == tree_all_reduce_time(bytes, p, l));
      CHECK(t(comm_op::all_reduce, all_reduce_algorithm::halving_doubling) ==
            halving_doubling_all_reduce_time(bytes, p, l));
    }
    // Every participant sends and receives the same bytes in a ring all-reduce: 2(p-1)/p of the message.
    std::vector<double> sent(p, 0), received(p, 0);
    for (auto& x : collective_transfers(comm_op::all_reduce, bytes, p)) {
      sent[x.from] += x.bytes;
      received[x.to] += x.bytes;
    }
    for (std::uint32_t r = 0; r < p; ++r) {
      CHECK(sent[r] == doctest::Approx(2.0 * (p - 1) / p * bytes));
      CHECK(received[r] == doctest::Approx(sent[r]));
    }
  }
  CHECK(collective_transfers(comm_op::all_reduce, 100, 1).empty());
  // Tree all-reduce of 4: reduce 1->0, 3->2, then 2->0; broadcast 0->1... hand-listed.
  auto tree = collective_transfers(comm_op::all_reduce, 8, 4, all_reduce_algorithm::tree);
  std::vector<collective_transfer> want{{0, 1, 0, 8}, {0, 3, 2, 8}, {1, 2, 0, 8}, {2, 0, 1, 8}, {3, 0, 2, 8}, {3, 1, 3, 8}};
  CHECK(tree == want);
}

TEST_CASE("uncontended_time without the list of a ring's transfers equals the one with it (random hierarchies)") {
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    const std::uint32_t per = 1 + rng() % 4, machines = 1 + rng() % 4;
    auto c = make_cluster(machines, per, 1 + rng() % 5, double(rng() % 3000), double(1 + rng() % 20), double(rng() % 500));
    auto h = link_hierarchy::of(c, per * machines);
    // A random placement of a random subset, in rank order.
    for (auto& m : h.machine) m = std::uint32_t(rng() % machines);
    std::vector<std::int32_t> ranks;
    for (std::uint32_t r = 0; r < per * machines; ++r)
      if (rng() % 3) ranks.push_back(std::int32_t(r));
    const double bytes = double(rng() % 10'000'000);
    const auto p = std::uint32_t(ranks.size());
    for (auto op : {comm_op::all_reduce, comm_op::reduce_scatter, comm_op::all_gather, comm_op::all_to_all})
      for (auto a : {all_reduce_algorithm::ring, all_reduce_algorithm::tree, all_reduce_algorithm::halving_doubling})
        CHECK(uncontended_time(op, bytes, ranks, h, a) == uncontended_time(collective_transfers(op, bytes, p, a), ranks, h));
  }
}

TEST_CASE("fine level: one ring all-reduce alone takes the ring formula, as the coarse level does") {
  // 4 ranks on 4 machines, NICs of 1 byte/ns and 1 us; 4 MB: chunks of 1 MB take 1 ms.
  // By hand: 2 (4-1) steps x (1 us + 1 ms) = 6.006 ms.
  auto j = make_job(4, {{comm_op::all_reduce, 4'000'000}});
  job_model_options o;
  o.transfer = job_model_options::transfer_source::cluster;
  o.cluster = make_cluster(4, 1, 1, 1'000);
  REQUIRE(ring_all_reduce_time(4e6, 4, o.cluster.network) == 6'006'000);
  auto coarse = replay_job(j, o);
  o.communication = communication_level::fine;
  auto fine = replay_job(j, o);
  REQUIRE(fine.jg.collectives.size() == 1);
  CHECK(fine.jg.collectives[0].transfers == 2 * 3 * 4);
  CHECK(fine.jg.collectives[0].transfer == 6'006'000);
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(collective_time(fine, 0, k) == 6'006'000);
    CHECK(collective_time(coarse, 0, k) == 6'006'000);
  }
  CHECK(fine.r.makespan == coarse.r.makespan);
  // The analysis splits the rank's time the same way: 1 ms compute, 6.006 ms transfer.
  auto res = analyse_job(j, fine.jg);
  for (auto& rr : res.ranks) {
    CHECK(rr.compute == 1'000'000);
    CHECK(rr.transfer == 6'006'000);
    CHECK(rr.wait == 0);
  }
  // Calibrated from the trace (the last rank's kernel: 1 us), the fine level scales its
  // transfers so that the collective alone takes that time, as the coarse level does.
  o.transfer = job_model_options::transfer_source::trace;
  auto cal = replay_job(j, o);
  CHECK(std::abs(collective_time(cal, 0) - 1'000) <= 6); // six steps, each rounded to the ns
  // Without a recorded size on links without latency nothing scales: the calibrated time is
  // spread over the six steps as latency (1000 / 6 = 167 ns each).
  auto unsized = make_job(4, {{comm_op::all_reduce, 0}});
  o.cluster = make_cluster(4, 1, 1, 0);
  CHECK(collective_time(replay_job(unsized, o), 0) == 6 * 167);
}

TEST_CASE("fine level: two process groups sharing NICs take the max-min fair-share time") {
  // Two ranks on two machines, NICs of 1 byte/ns, no latency. Group A (stream 84) all-reduces
  // 2 MB, group B (stream 85) 6 MB, at once: ring steps of 1 MB and 3 MB chunks, two each.
  // By hand, per direction: A's and B's first chunks share the NIC (0.5 byte/ns each), A's
  // ends at 2 ms; A's second chunk shares with B's first until 4 ms (A done: 4 ms); B's first
  // chunk has 1 MB left, alone: 5 ms; its second alone: 8 ms. Alone: A 2 ms, B 6 ms.
  auto j = make_job(2, {{comm_op::all_reduce, 2'000'000, 84}, {comm_op::all_reduce, 6'000'000, 85}});
  job_model_options o;
  o.transfer = job_model_options::transfer_source::cluster;
  o.cluster = make_cluster(2, 1, 1, 0);
  o.communication = communication_level::fine;
  auto x = replay_job(j, o);
  REQUIRE(x.jg.collectives.size() == 2);
  CHECK(x.jg.collectives[0].transfer == 2'000'000);
  CHECK(x.jg.collectives[1].transfer == 6'000'000);
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(collective_time(x, 0, k) == 4'000'000);
    CHECK(collective_time(x, 1, k) == 8'000'000);
  }
  // The same steps in the max-min fair network model (network.hpp): NIC out of machine 0 and
  // NIC in of machine 1 in each flow's path, driven step by step.
  network net;
  const link_id out0 = net.add_link(1), in1 = net.add_link(1);
  const link_id path[] = {out0, in1};
  std::vector<network::completion> done;
  auto a1 = net.start(path, 1e6), b1 = net.start(path, 3e6);
  // Handles events until flow f has ended (a flow's first event is when it begins
  // sending); returns its end. Flow ids are reused once reported, so ends are taken at once.
  auto run_until = [&](flow_id f) {
    for (;;) {
      REQUIRE(std::isfinite(net.next_event()));
      net.advance_to(net.next_event(), done);
      for (auto& c : done)
        if (c.flow == f) {
          done.clear();
          return c.time;
        }
      done.clear();
    }
  };
  const double a1_end = run_until(a1);
  auto a2 = net.start(path, 1e6);
  const double a2_end = run_until(a2);
  const double b1_end = run_until(b1);
  auto b2 = net.start(path, 3e6);
  const double b2_end = run_until(b2);
  CHECK(a1_end == doctest::Approx(2e6));
  CHECK(a2_end == doctest::Approx(4e6));
  CHECK(b1_end == doctest::Approx(5e6));
  CHECK(b2_end == doctest::Approx(8e6));
  CHECK(double(collective_time(x, 0)) == doctest::Approx(a2_end));
  CHECK(double(collective_time(x, 1)) == doctest::Approx(b2_end));
  // At the coarse level each takes its own time: no sharing.
  o.communication = communication_level::coarse;
  auto c = replay_job(j, o);
  CHECK(collective_time(c, 0) == 2'000'000);
  CHECK(collective_time(c, 1) == 6'000'000);
}

TEST_CASE("fine level: a ring over NVLink inside machines and NICs between them runs at the bottleneck link") {
  // 2 machines x 2 GPUs. NVLink 10 bytes/ns, 0.1 us; NIC 1 byte/ns, 1 us. 4 MB all-reduce:
  // 1 MB chunks take 0.1 ms on NVLink, 1 ms on a NIC. The ring 0-1-2-3 crosses a NIC at
  // 1->2 and 3->0; every step waits for them: 6 x (1 us + 1 ms) = 6.006 ms, the ring formula
  // on the bottleneck link (what the coarse level's ring_link gives).
  auto j = make_job(4, {{comm_op::all_reduce, 4'000'000}});
  job_model_options o;
  o.transfer = job_model_options::transfer_source::cluster;
  o.cluster = make_cluster(2, 2, 1, 1'000, 10, 100);
  o.communication = communication_level::fine;
  auto x = replay_job(j, o);
  CHECK(collective_time(x, 0) == 6'006'000);
  CHECK(ring_all_reduce_time(4e6, 4, o.cluster.ring_link()) == 6'006'000);
  CHECK(x.jg.g.find_resource("rank 0: link out") != no_resource);
  CHECK(x.jg.g.find_resource("machine 1: NIC in") != no_resource);
  // One machine of 4: NVLink only, 6 x (0.1 us + 0.1 ms) = 0.6006 ms.
  o.cluster = make_cluster(1, 4, 1, 1'000, 10, 100);
  CHECK(collective_time(replay_job(j, o), 0) == 600'600);
  // Placement by host: ranks 0,2 on one host, 1,3 on another: every ring step crosses a NIC,
  // and two GPUs share each NIC in each direction: 6 x (1 us + 2 ms).
  for (std::size_t k = 0; k < 4; ++k) j.ranks[k].host = k % 2 ? "b" : "a";
  o.cluster = make_cluster(2, 2, 1, 1'000, 10, 100);
  CHECK(job_link_hierarchy(j, o).machine == std::vector<std::uint32_t>{0, 1, 0, 1});
  CHECK(collective_time(replay_job(j, o), 0) == 6 * (1'000 + 2'000'000));
  // An all-to-all (pairwise, 1 MB to each peer) on the block placement: round 2 sends 0->2
  // and 1->3 through machine 0's one NIC (2 ms), rounds 1 and 3 one transfer per NIC (1 ms):
  // 3.003 ms + 1 ms shared. With a NIC per GPU nothing is shared: the formula, 3.003 ms.
  for (auto& r : j.ranks) r.host.clear();
  auto a2a = make_job(4, {{comm_op::all_to_all, 4'000'000}});
  CHECK(collective_time(replay_job(a2a, o), 0) == 4'003'000);
  o.cluster.nic_per_gpu = true;
  CHECK(collective_time(replay_job(a2a, o), 0) == 3'003'000);
  CHECK(all_to_all_time(4e6, 4, o.cluster.network) == 3'003'000);
}

TEST_CASE("fine level: a partial job's missing ranks take part in the ring; placements are checked") {
  // World 4, ranks 0 and 1 traced: the ring still has 4 participants (2 and 3 modelled as
  // copies that arrive at the barrier), so it takes the ring formula of 4: 6.006 ms.
  auto full = make_job(4, {{comm_op::all_reduce, 4'000'000}});
  job j;
  j.world_size = 4;
  j.ranks.push_back(std::move(full.ranks[0]));
  j.ranks.push_back(std::move(full.ranks[1]));
  REQUIRE(j.partial());
  job_model_options o;
  o.transfer = job_model_options::transfer_source::cluster;
  o.cluster = make_cluster(4, 1, 1, 1'000);
  o.communication = communication_level::fine;
  auto x = replay_job(j, o);
  CHECK(x.jg.collectives.at(0).transfers == 2 * 3 * 4);
  CHECK(collective_time(x, 0, 0) == 6'006'000);
  CHECK(collective_time(x, 0, 1) == 6'006'000);
  CHECK(x.jg.g.find_resource("machine 3: NIC out") != no_resource);
  // The critical path runs through the collective as the job's own stretch (rank -1).
  auto res = analyse_job(j, x.jg);
  bool sync = false;
  for (auto& c : res.critical) sync = sync || (c.rank == -1 && c.time == 6'006'000);
  CHECK(sync);
  o.machine_of_rank = {0, 0, 1};
  CHECK_THROWS_WITH_AS(build_job_graph(j, match_collectives(j), alignment_result{}, o),
                       doctest::Contains("machine_of_rank places 3 rank(s), the job has 4"), error);
  o.machine_of_rank = {0, 0, 1, 1};
  CHECK(job_link_hierarchy(j, o).machine == std::vector<std::uint32_t>{0, 0, 1, 1});
}

TEST_CASE("fine level: every link carries at most its bandwidth (random jobs)") {
  std::mt19937 rng(15);
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    const std::uint32_t per = 1 + rng() % 3, machines = 1 + rng() % 3;
    const auto world = std::int32_t(per * machines);
    if (world < 2) continue;
    std::vector<coll> cs;
    const int n = 1 + int(rng() % 4);
    const comm_op ops[] = {comm_op::all_reduce, comm_op::all_gather, comm_op::reduce_scatter, comm_op::all_to_all,
                           comm_op::broadcast};
    for (int c = 0; c < n; ++c) cs.push_back({ops[rng() % 5], 1'000 * (1 + rng() % 5000), 84 + std::int32_t(rng() % 3)});
    job j;
    j.world_size = world;
    for (std::int32_t r = 0; r < world; ++r) j.ranks.push_back(make_rank(r, world, 1'000 + 7'000 * (rng() % 5), cs));
    job_model_options o;
    o.transfer = job_model_options::transfer_source::cluster;
    o.cluster = make_cluster(machines, per, 1 + rng() % 3, 500, 5 + rng() % 10, 100);
    o.cluster.nic_per_gpu = rng() % 2;
    o.communication = communication_level::fine;
    if (rng() % 2) o.algorithm = all_reduce_algorithm::tree;
    auto x = replay_job(j, o);
    // Per link: its transfers' work (bytes / bandwidth) fits between its first start and
    // last end, and the job takes at least the busiest link's work.
    std::map<resource_id, std::pair<time_ns, time_ns>> span;
    std::map<resource_id, double> bytes;
    std::map<resource_id, std::size_t> chunks;
    x.jg.g.for_each<comm_task>([&](handle<comm_task> h) {
      auto res = x.jg.g.resource_of(h.id);
      if (res == no_resource || x.jg.g.resource_at(res).kind != resource_kind::link) return;
      auto [it, fresh] = span.try_emplace(res, x.r.start[h.id], x.r.end[h.id]);
      it->second.first = std::min(it->second.first, x.r.start[h.id]);
      it->second.second = std::max(it->second.second, x.r.end[h.id]);
      bytes[res] += double(x.jg.g.payload(h).bytes);
      ++chunks[res];
    });
    REQUIRE(!span.empty());
    for (auto& [res, s] : span) {
      const double work = bytes[res] / x.jg.g.resource_at(res).bandwidth * 1e9;
      const double rounding = double(chunks[res]); // each chunk's duration is rounded to the ns
      CHECK(double(s.second - s.first) >= work - rounding);
      CHECK(double(x.r.makespan) >= work - rounding);
    }
    // And no collective is faster than alone (its slowest rank).
    for (std::size_t c = 0; c < x.jg.collectives.size(); ++c) {
      time_ns slowest = 0;
      for (std::size_t k = 0; k < x.jg.collectives[c].parts.size(); ++k) slowest = std::max(slowest, collective_time(x, c, k));
      CHECK(slowest >= x.jg.collectives[c].transfer);
    }
  }
}
