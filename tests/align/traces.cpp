// Clock alignment by linear program on the bundled 8-rank DLRM job: causal, no more spread than the recorded clocks, every rank still within 2%, and injected clock errors recovered on real data.
// SPDX-License-Identifier: MIT
#include <daydream/align/lp.hpp>
#include <daydream/daydream.hpp>
#include <daydream/io/job.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace daydream;

TEST_CASE("the 8-rank DLRM job aligned by LP: causal, tighter, every rank within 2%") {
  auto j = io::load_job(daydream::testing::dlrm_8rank_job());
  REQUIRE(j.ranks.size() == 8);
  auto m = match_collectives(j);
  REQUIRE(m.collectives.size() == 8);
//! [align a job]
  auto in = daydream::make_alignment_input(j, m);    // per collective, each rank's part on its own clock
  auto none = daydream::no_alignment(in);            // the clocks as recorded, and their quality
  auto rep = daydream::glpk_alignment_report(in);    // the LP: offsets, quality, the solver's numbers
  auto& a = rep.result;                              // or daydream::glpk_alignment(in)
  auto jg = daydream::build_job_graph(j, m, a);      // every rank on its aligned clock
//! [align a job]
  // The traces say nothing about hosts: every rank is its own clock.
  CHECK(rep.clocks == 8);
  CHECK(rep.collectives == 8);
  CHECK(rep.unconnected.empty());
  CHECK(a.aligned);
  CHECK(a.violations <= none.violations);
  CHECK(a.violations == 0);
  CHECK(a.residual_ns <= none.residual_ns);
  std::printf("DLRM alignment: %s; spread %.2f us (recorded clocks %.2f us), violations %zu (%zu), %.3f s\n",
              a.method.c_str(), a.residual_ns / 1e3, none.residual_ns / 1e3, a.violations, none.violations,
              rep.seconds);
  // One machine (one clock really): the offsets stay within the recorded spread.
  for (auto& [r, off] : a.offset) {
    std::printf("DLRM rank %d offset %+.3f us\n", r, off / 1e3);
    CHECK(std::abs(off) < 50'000);
  }
  auto aligned = analyse_job(j, jg);
  auto recorded = analyse_job(j, build_job_graph(j, m, none));
  REQUIRE(aligned.ranks.size() == 8);
  for (std::size_t k = 0; k < 8; ++k) {
    auto& rr = aligned.ranks[k];
    const double err = double(rr.predicted - rr.measured) / double(rr.measured);
    const double err0 = double(recorded.ranks[k].predicted - rr.measured) / double(rr.measured);
    std::printf("DLRM rank %d: measured %.3f ms, predicted %.3f ms aligned (%+.2f%%), %.3f ms recorded clocks (%+.2f%%)\n",
                rr.rank, rr.measured / 1e6, rr.predicted / 1e6, 100 * err, recorded.ranks[k].predicted / 1e6, 100 * err0);
    CHECK(std::fabs(err) < 0.02);
  }
}

TEST_CASE("the 8-rank DLRM job with injected clock errors: the LP takes them out again") {
  auto j = io::load_job(daydream::testing::dlrm_8rank_job());
  auto m = match_collectives(j);
  auto in = make_alignment_input(j, m);
  auto base = glpk_alignment(in);
  // Every rank's clock moved by up to +-3 ms, as if each ran on its own machine.
  const std::map<std::int32_t, time_ns> injected{{0, 0},          {1, 2'700'000},  {2, -1'900'000}, {3, 450'000},
                                                 {4, -3'000'000}, {5, 1'234'567},  {6, -777'777},  {7, 3'000'000}};
  auto moved = in;
  for (auto& c : moved.collectives)
    for (auto& p : c) p.start += injected.at(p.rank), p.end += injected.at(p.rank);
  const auto before = no_alignment(moved);
  std::printf("DLRM with clock errors: %zu violation(s), spread %.1f us before alignment\n", before.violations,
              before.residual_ns / 1e3);
  CHECK(before.violations > 0);
  auto a = glpk_alignment(moved);
  CHECK(a.violations == 0);
  for (auto& entry : a.offset) {
    const std::int32_t r = entry.first;
    const time_ns off = entry.second;
    CAPTURE(r);
    // Moved by e, the rank needs e less offset; the LP's answer on the recorded clocks
    // is the reference (8 collectives leave some freedom: within a few us).
    CHECK(std::abs(off + injected.at(r) - base.offset.at(r)) <= 5'000);
  }
  CHECK(a.residual_ns <= base.residual_ns + 5'000);
  // The replay on those clocks: a rank whose clock is e ahead is a rank offset by e. Without
  // alignment each rank starts and meets the others as its wrong clock says; with it, the
  // LP's offsets (found on the moved clocks) take the errors out.
  alignment_result wrong;
  for (auto& [r, e] : injected) wrong.offset[r] = e;
  alignment_result fixed = a;
  for (auto& [r, e] : injected) fixed.offset[r] += e;
  auto unaligned = analyse_job(j, build_job_graph(j, m, wrong));
  auto aligned = analyse_job(j, build_job_graph(j, m, fixed));
  REQUIRE(aligned.ranks.size() == 8);
  double worst_unaligned = 0;
  for (std::size_t k = 0; k < 8; ++k) {
    auto& rr = aligned.ranks[k];
    const double err = double(rr.predicted - rr.measured) / double(rr.measured);
    const double err0 = double(unaligned.ranks[k].predicted - rr.measured) / double(rr.measured);
    std::printf("DLRM with clock errors, rank %d (%+.3f ms): measured %.3f ms, aligned %.3f ms (%+.2f%%), unaligned "
                "%.3f ms (%+.2f%%)\n",
                rr.rank, injected.at(rr.rank) / 1e6, rr.measured / 1e6, rr.predicted / 1e6, 100 * err,
                unaligned.ranks[k].predicted / 1e6, 100 * err0);
    CHECK(std::fabs(err) < 0.02);
    worst_unaligned = std::max(worst_unaligned, std::fabs(err0));
  }
  CHECK(worst_unaligned > 0.05); // the errors matter: alignment is what removes them
}
