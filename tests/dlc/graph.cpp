// Tests io::build_dlc_graph and the what-ifs: exact replay of recorded times, and the transfer model.
// SPDX-License-Identifier: MIT
#include "dlc_data.hpp"

#include <daydream/io/dlc_analysis.hpp>
#include <daydream/io/dlc_graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>

#include <doctest/doctest.h>

using namespace daydream::io;

namespace {
/// Records whose replayed time is not their recorded one.
std::size_t deviations(const dlc_job& job, const dlc_graph& d, const daydream::replay_result& r) {
  std::size_t bad = 0;
  for (std::size_t f = 0; f < job.files.size(); ++f)
    for (std::size_t i = 0; i < job.files[f].records.size(); ++i)
      bad += d.replayed_us(r, f, i) != job.files[f].records[i].time_us;
  return bad;
}
daydream::time_ns makespan(const dlc_graph& d) { return daydream::replay(d.g).makespan; }
} // namespace

TEST_CASE("dlc graph: replaying the hand-built job gives every record its recorded time") {
  auto job = load_dlc_job(dlc_test::small_job());
  auto d = build_dlc_graph(job);
  daydream::check_invariants(d.g);
  // 40 sends (one per message) with their node time, 40 transfers (every message has
  // both ends), and 8 joins: a worker's pushes of an iteration wait on its answers of the
  // previous one (2 workers x 2 iterations), and the confirmations of a key on both
  // workers' pushes (2 keys x 2 iterations). (A receive whose send is in the job waits
  // for the transfer only.)
  CHECK(d.joins == 8);
  CHECK(d.g.size() == 88);
  CHECK(d.transfers.size() == 40);
  CHECK(d.clock_skewed == 0);
  for (auto& x : d.transfers) CHECK(!x.round_trip);
  CHECK(d.origin_us == 1000LL * 1000000);
  auto r = daydream::replay(d.g);
  CHECK(deviations(job, d, r) == 0);
  CHECK(r.makespan == 403'000); // worker 0's last answer of iteration 2
  // The fastest transfer per byte: the 1004-byte answer in 20 us.
  CHECK(d.recorded_per_byte_ns == doctest::Approx(20000.0 / 1004));
  // The retimed job of the unmodified replay is the job.
  auto same = retime_dlc_job(job, d, r);
  for (std::size_t f = 0; f < job.files.size(); ++f)
    for (std::size_t i = 0; i < job.files[f].records.size(); ++i) {
      CHECK(same.files[f].records[i].time_us == job.files[f].records[i].time_us);
      if (job.files[f].records[i].form == dlc_dep_form::one)
        CHECK(same.files[f].records[i].d_time_us == job.files[f].records[i].d_time_us);
    }
}

TEST_CASE("dlc graph: Figure 8 alone replays exactly through round trips") {
  auto job = load_dlc_job({dlc_test::figure8()});
  auto d = build_dlc_graph(job);
  daydream::check_invariants(d.g);
  CHECK(d.transfers.size() == 32); // every receive: the server's file is missing
  for (auto& x : d.transfers) CHECK(x.round_trip);
  auto r = daydream::replay(d.g);
  CHECK(deviations(job, d, r) == 0);
  CHECK(r.makespan == (836906 - 481409) * 1000LL);
}

TEST_CASE("dlc graph: what-ifs follow the parameter-server transfer model") {
  auto job = load_dlc_job(dlc_test::small_job());
  auto base = build_dlc_graph(job);
  const auto t0 = makespan(base);
  auto with = [&](dlc_what_if w) {
    auto d = base;
    apply_dlc_what_if(d, w);
    return makespan(d);
  };
  CHECK(with({}) == t0);
  // Faster networks never slow the job; slower ones never speed it up.
  const auto t2 = with({.bandwidth_scale = 2});
  const auto t4 = with({.bandwidth_scale = 4});
  const auto thalf = with({.bandwidth_scale = 0.5});
  CHECK(t2 < t0);
  CHECK(t4 <= t2);
  CHECK(thalf > t0);
  // 2 workers on 1 server: the server's NIC bounds (a byte costs W/S / B). Two servers
  // halve that, as doubling the bandwidth does; four workers double it, as halving does.
  CHECK(with({.servers = 2}) == t2);
  CHECK(with({.workers = 4}) == thalf);
  CHECK(with({.workers = 4, .servers = 2}) == t0);
  // The recorded NICs are max(1, W/S) / per_byte: an absolute bandwidth of twice that is 2x.
  const double b0 = 2 * 1e9 / base.recorded_per_byte_ns;
  CHECK(with({.worker_bandwidth = 2 * b0, .server_bandwidth = 2 * b0}) == t2);
  // The identity keeps the recorded durations; a what-if changes only the bytes' part.
  auto d = base;
  apply_dlc_what_if(d, {.bandwidth_scale = 2});
  for (auto& x : d.transfers) {
    CHECK(d.g.duration(x.task) == std::llround(x.fixed_ns + double(x.bytes) * base.recorded_per_byte_ns / 2));
    CHECK(d.g.duration(x.task) <= x.recorded_ns);
  }
  CHECK_THROWS_AS(with({.bandwidth_scale = 0}), daydream::usage_error);
  CHECK_THROWS_AS(with({.bandwidth_scale = 1e-300}), daydream::usage_error); // would overflow the clock
  // A recorded bandwidth given: 2 workers on 1 server, a byte costs 2 / B0.
  auto given = build_dlc_graph(job, {.recorded_bandwidth = 1e9});
  CHECK(given.recorded_per_byte_ns == doctest::Approx(2.0));
  CHECK(makespan(given) == t0);
  // A cluster's what-if: its NIC, its servers' NICs, its worker and server counts.
  daydream::cluster c;
  c.machines = 2;
  c.parameter_servers = 1;
  c.network.bandwidth = b0 / 2;
  auto w = dlc_what_if::from_cluster(c);
  CHECK(w.workers == 2);
  CHECK(w.servers == 1);
  CHECK(with(w) == thalf);
}

TEST_CASE("dlc graph: the analysis of a what-if is the analysis of its retimed job") {
  auto job = load_dlc_job(dlc_test::small_job());
  auto d = build_dlc_graph(job);
  apply_dlc_what_if(d, {.bandwidth_scale = 4});
  auto r = daydream::replay(d.g);
  auto fast = retime_dlc_job(job, d, r);
  auto a = analyze_dlc(fast);
  CHECK(a.d_time_mismatches.empty());
  // Faster transfers shorten the communication phase.
  auto b = analyze_dlc(job);
  CHECK(a.phase3.mean < b.phase3.mean);
  // Every retimed record still follows its dependencies (the reader would accept it).
  for (auto& f : fast.files)
    for (auto& rec : f.records)
      for (auto j : rec.deps) CHECK(f.records[j].time_us <= rec.time_us);
}

TEST_CASE("dlc graph: a send that depends on a later line of the same time comes after it on its node") {
  // Lines 5 and 6 are sends of one time; line 5's id_dep names line 6. The node's program
  // order follows the dependency, not the file: no cycle, and every record replays exactly.
  const std::string text =
      "== num_workers:= 1 num_servers:= 1 worker_hostname:= t Worker_ID:= 0, Server_ID:= 1,\n"
      "id\tsrc\tdst\tlength\tnum_pp\toperation\top_id\tdep_type\td_time\ttime_sec\ttime_usec\tid_dep\n"
      "0\t0\t1\t25\t0\tOP:= SendCom_To_Servers\n"
      "1\t0\t1\t28\t2\tOP:= Pull_Send_Worker\t0-0-s0\t0\t0\t1000\t0\t-1\n"
      "2\t0\t1\t28\t4\tOP:= Pull_Send_Worker\t1-2-s0\t2\t0\t1000\t10\t0-2-s0\n"
      "3\t0\t1\t28\t2\tOP:= Pull_Send_Worker\t0-2-s0\t2\t0\t1000\t10\t0-0-s0\n";
  auto f = parse_dlc(text, "same_time.dlc");
  REQUIRE(f.records.size() == 3);
  REQUIRE(f.records[1].deps == std::vector<std::size_t>{2});
  auto job = make_dlc_job({f});
  auto d = build_dlc_graph(job);
  daydream::check_invariants(d.g);
  auto r = daydream::replay(d.g);
  CHECK(deviations(job, d, r) == 0);
}
