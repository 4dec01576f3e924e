// Clock alignment by linear program (GLPK) on hand-built inputs: exact optima computed by hand, injected clock offsets recovered, shared host clocks, inconsistent data, and properties on random jobs.
// SPDX-License-Identifier: MIT
#include <daydream/align/lp.hpp>
#include <daydream/job/graph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

using namespace daydream;

namespace {

constexpr time_ns us = 1'000;
constexpr time_ns ms = 1'000'000;

// A generated job: true (common) times of every collective, then each rank's recorded
// times on its host's clock, which is `clock_error` of its host behind the true clock
// (recorded = true - error, so the offset that aligns a rank is its host's error).
struct generated {
  alignment_input in;
  std::map<std::int32_t, time_ns> error; // rank -> its clock's error
};

// `ranks` ranks on `hosts` hosts (rank r on host r * hosts / ranks), `n` collectives.
// Each rank launches its part of collective c at T_c + a skew of up to `skew`; every part
// completes `transfer` after the last launch, plus a jitter of up to `jitter`.
generated make_job(std::uint32_t seed, std::int32_t ranks, std::int32_t hosts, std::size_t n, time_ns max_error,
                   time_ns skew = 400 * us, time_ns jitter = 2 * us, bool declare_hosts = true) {
  std::mt19937_64 rng(seed);
  auto uni = [&](time_ns lo, time_ns hi) { return std::uniform_int_distribution<time_ns>(lo, hi)(rng); };
  generated g;
  std::vector<time_ns> host_error(static_cast<std::size_t>(hosts));
  for (auto& e : host_error) e = uni(-max_error, max_error);
  std::vector<std::vector<std::int32_t>> on_host(static_cast<std::size_t>(hosts));
  for (std::int32_t r = 0; r < ranks; ++r) {
    const auto h = std::size_t(r * hosts / ranks);
    g.in.ranks.push_back(r);
    g.error[r] = host_error[h];
    on_host[h].push_back(r);
  }
  if (declare_hosts)
    for (auto& v : on_host)
      if (v.size() > 1) g.in.same_host.push_back(v);
  time_ns t = 10 * ms;
  for (std::size_t c = 0; c < n; ++c) {
    std::vector<time_ns> start(static_cast<std::size_t>(ranks));
    for (auto& s : start) s = t + uni(0, skew);
    const time_ns last = *std::max_element(start.begin(), start.end());
    const time_ns transfer = uni(5 * us, 80 * us);
    std::vector<collective_part> parts;
    for (std::int32_t r = 0; r < ranks; ++r) {
      const time_ns end = last + transfer + uni(0, jitter);
      parts.push_back({r, no_task, start[std::size_t(r)] - g.error[r], end - g.error[r]});
    }
    g.in.collectives.push_back(std::move(parts));
    t = last + transfer + uni(100 * us, 3 * ms);
  }
  return g;
}

// The offset that aligns rank r to rank 0's clock.
time_ns expected(const generated& g, std::int32_t r) { return g.error.at(r) - g.error.at(0); }

} // namespace

TEST_CASE("lp alignment: two clocks, the exact optimum is the median of the completion differences") {
  // Rank 1's parts complete 10, 20 and 60 us after rank 0's on its own clock; both
  // started long before. The total spread |d - x| summed is least at the median, x = 20 us:
  // rank 1's offset is -20 us, the spreads are 10, 0 and 40 us.
  alignment_input in;
  in.ranks = {0, 1};
  const time_ns d[] = {10 * us, 20 * us, 60 * us};
  for (int c = 0; c < 3; ++c) {
    const time_ns t = (c + 1) * ms;
    in.collectives.push_back({{0, no_task, t, t + 500 * us}, {1, no_task, t + d[c], t + 500 * us + d[c]}});
  }
  auto rep = glpk_alignment_report(in);
  auto& a = rep.result;
  CHECK(a.aligned);
  CHECK(a.offset.at(0) == 0);
  CHECK(a.offset.at(1) == -20 * us);
  CHECK(a.violations == 0);
  CHECK(a.residual_ns == doctest::Approx(50.0 * us / 3));
  CHECK(rep.objective_ns == doctest::Approx(50.0 * us));
  CHECK(rep.violation_ns == doctest::Approx(0.0));
  CHECK(rep.clocks == 2);
  CHECK(rep.collectives == 3);
  CHECK(rep.full_rows == 3 * 6 + 3);
  CHECK(a.method.find("GLPK") != std::string::npos);
  // As a clock_aligner.
  clock_aligner f = [](const alignment_input& x) { return glpk_alignment(x); };
  CHECK(f(in).offset.at(1) == -20 * us);
}

TEST_CASE("lp alignment: injected offsets of +-3 ms on two hosts are recovered within a few microseconds") {
  // 4 ranks, 2 hosts (0,1 and 2,3), 50 collectives with up to 400 us launch skew and
  // transfers of 5 to 80 us: the last arriver's start is close to every part's end.
  auto g = make_job(7, 4, 2, 50, 3 * ms);
  REQUIRE(expected(g, 2) != 0);
  auto none = no_alignment(g.in);
  auto rep = glpk_alignment_report(g.in);
  auto& a = rep.result;
  CHECK(rep.clocks == 2);
  CHECK(a.offset.at(0) == 0);
  CHECK(a.offset.at(1) == 0);
  CHECK(a.offset.at(2) == a.offset.at(3));
  for (std::int32_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(std::abs(a.offset.at(r) - expected(g, r)) <= 3 * us);
  }
  CHECK(a.violations == 0);
  CHECK(none.violations > 0);
  CHECK(a.residual_ns < none.residual_ns);
  CHECK(a.residual_ns <= 2.0 * us); // only the jitter is left
  // Row generation kept the LP small: far fewer rows than every part's.
  CHECK(rep.rows < rep.full_rows);
}

TEST_CASE("lp alignment: ranks of one host share a clock unless told otherwise") {
  auto g = make_job(11, 4, 2, 50, 3 * ms);
  lp_alignment_options o;
  o.share_host_clocks = false;
  auto rep = glpk_alignment_report(g.in, o);
  CHECK(rep.clocks == 4);
  // Each rank solved alone still lands on its host's offset.
  for (std::int32_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(std::abs(rep.result.offset.at(r) - expected(g, r)) <= 3 * us);
  }
  // Declared hosts make one offset variable per host.
  auto shared = glpk_alignment_report(g.in);
  CHECK(shared.clocks == 2);
  CHECK(shared.result.offset.at(0) == shared.result.offset.at(1));
  CHECK(shared.result.offset.at(2) == shared.result.offset.at(3));
}

TEST_CASE("lp alignment: beyond max_collectives the LP takes evenly spaced ones; the quality covers all") {
  auto g = make_job(5, 6, 3, 90, 3 * ms);
  lp_alignment_options o;
  o.max_collectives = 20;
  auto rep = glpk_alignment_report(g.in, o);
  CHECK(rep.spanning == 90);
  CHECK(rep.collectives == 20);
  CHECK(rep.result.method.find("(evenly spaced, of 90)") != std::string::npos);
  for (std::int32_t r = 0; r < 6; ++r) {
    CAPTURE(r);
    CHECK(std::abs(rep.result.offset.at(r) - expected(g, r)) <= 3 * us);
  }
  // The residual is alignment_quality's over all 90.
  CHECK(rep.result.residual_ns == alignment_quality(g.in, rep.result.offset).first);
  CHECK(rep.result.violations == 0);
  o.max_collectives = 0;
  CHECK(glpk_alignment_report(g.in, o).collectives == 90);
}

TEST_CASE("lp alignment: 64 ranks on 8 hosts with offsets up to 3 ms") {
  auto g = make_job(3, 64, 8, 60, 3 * ms);
  auto a = glpk_alignment(g.in);
  std::size_t off = 0;
  for (std::int32_t r = 0; r < 64; ++r) off += std::abs(a.offset.at(r) - expected(g, r)) > 3 * us;
  CHECK(off == 0);
  CHECK(a.violations == 0);
}

TEST_CASE("lp alignment: data no offset can make causal still solves, and the violations are reported") {
  // Collective 1: rank 0 runs [0, 10] us, rank 1 [100, 110] us; collective 2 the other way
  // round. With x = rank 1's offset, causality needs x <= -90 us for the first and
  // x >= 90 us for the second. For x in [-90, 90] us the violations add up to 180 us and the
  // spreads to 200 us (anywhere else more): the optimum is 1000 * 180 us + 200 us.
  alignment_input in;
  in.ranks = {0, 1};
  in.collectives.push_back({{0, no_task, 0, 10 * us}, {1, no_task, 100 * us, 110 * us}});
  in.collectives.push_back({{0, no_task, 100 * us, 110 * us}, {1, no_task, 0, 10 * us}});
  auto rep = glpk_alignment_report(in);
  CHECK(rep.objective_ns == doctest::Approx(1000.0 * 180 * us + 200 * us));
  CHECK(rep.violation_ns == doctest::Approx(180.0 * us));
  CHECK(rep.spread_ns == doctest::Approx(200.0 * us));
  CHECK(rep.result.violations >= 1);
  CHECK(std::abs(rep.result.offset.at(1)) <= 90 * us);
  CHECK(rep.result.aligned);
}

TEST_CASE("lp alignment: clocks that share no collective with the reference are reported") {
  alignment_input in;
  in.ranks = {0, 1, 2, 3};
  // 0-1 share collectives, 2-3 share collectives; nothing links the pairs.
  in.collectives.push_back({{0, no_task, 0, 100 * us}, {1, no_task, 50 * us, 130 * us}});
  in.collectives.push_back({{2, no_task, 0, 100 * us}, {3, no_task, 20 * us, 150 * us}});
  auto rep = glpk_alignment_report(in);
  CHECK(rep.unconnected == std::vector<std::int32_t>{2, 3});
  CHECK(rep.result.offset.at(0) == 0);
  CHECK(rep.result.offset.at(1) == -30 * us);
  CHECK(rep.result.offset.at(2) == 0); // its component's reference
  CHECK(rep.result.offset.at(3) == -50 * us);
  CHECK(rep.result.method.find("share no collective") != std::string::npos);
}

TEST_CASE("lp alignment: nothing to align") {
  alignment_input in;
  in.ranks = {0, 1};
  auto a = glpk_alignment(in);
  CHECK(a.offset.at(0) == 0);
  CHECK(a.offset.at(1) == 0);
  CHECK(a.residual_ns == 0);
  CHECK(a.violations == 0);
  // One shared clock: the collective says nothing about offsets.
  in.same_host = {{0, 1}};
  in.collectives.push_back({{0, no_task, 0, 100 * us}, {1, no_task, 50 * us, 130 * us}});
  auto rep = glpk_alignment_report(in);
  CHECK(rep.collectives == 0);
  CHECK(rep.result.offset.at(1) == 0);
  CHECK(rep.result.residual_ns == 30 * us);
}

TEST_CASE("lp alignment: bad input is refused") {
  alignment_input in;
  in.ranks = {0, 1};
  in.collectives.push_back({{0, no_task, 100, 50}, {1, no_task, 0, 100}});
  CHECK_THROWS_WITH_AS(glpk_alignment(in), doctest::Contains("rank 0's part of a collective ends"), error);
  in.collectives[0][0].end = 150;
  lp_alignment_options o;
  o.causality_weight = -1;
  CHECK_THROWS_WITH_AS(glpk_alignment(in, o), doctest::Contains("causality_weight must be >= 0"), error);
  // A host naming a rank that no collective or rank list has still gets an offset.
  in.same_host = {{1, 5}};
  auto a = glpk_alignment(in);
  CHECK(a.offset.at(5) == a.offset.at(1));
}

TEST_CASE("lp alignment property: random jobs end causal, with no more spread than the true clocks") {
  std::mt19937 pick(2024);
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    const auto ranks = std::int32_t(2 + pick() % 11);
    const auto hosts = std::int32_t(1 + pick() % std::uint32_t(ranks));
    const auto n = std::size_t(3 + pick() % 40);
    const time_ns skew = time_ns(1 + pick() % 2000) * us;
    const time_ns jitter = time_ns(pick() % 30) * us;
    const bool declare = pick() % 2 == 0;
    auto g = make_job(seed, ranks, hosts, n, 5 * ms, skew, jitter, declare);
    CAPTURE(seed);
    CAPTURE(ranks);
    CAPTURE(hosts);
    CAPTURE(n);
    auto none = no_alignment(g.in);
    std::map<std::int32_t, time_ns> truth;
    for (std::int32_t r = 0; r < ranks; ++r) truth[r] = expected(g, r);
    const auto best = alignment_quality(g.in, truth);
    REQUIRE(best.second == 0);
    auto rep = glpk_alignment_report(g.in);
    auto& a = rep.result;
    CHECK(a.offset.at(0) == 0);
    CHECK(a.violations == 0);
    // The LP minimizes the spread among causal offsets, which the true ones are
    // (rounding to whole ns moves each collective's spread by at most 1 ns).
    CHECK(a.residual_ns <= best.first + 1.0);
    CHECK(a.residual_ns <= none.residual_ns + 1.0);
    CHECK(rep.objective_ns <= double(n) * best.first + 1.0);
    // Ranks of a declared host share their offset.
    if (declare)
      for (auto& h : g.in.same_host)
        for (auto r : h) CHECK(a.offset.at(r) == a.offset.at(h.front()));
  }
}
