// Real jobs end to end: the bundled 8-rank DLRM job (every rank within 2% of its measured iteration; the same whatever the loading threads, and joined rank by rank) and two sampled ranks of a 128-rank job as a partial job.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/job.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/replay.hpp>

#include <doctest/doctest.h>
#include <support/compare.hpp>
#include <support/corpus.hpp>
#include <support/temp_dir.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

using namespace daydream;

TEST_CASE("the 8-rank DLRM job: every rank's iteration within 2% of its measured one") {
  auto j = io::load_job(daydream::testing::dlrm_8rank_job());
  REQUIRE(j.world_size == 8);
  REQUIRE(j.ranks.size() == 8);
  CHECK(!j.partial());
  auto m = match_collectives(j);
  // 5 SendRecv (all-to-all) and 3 all-reduce kernels per rank, on one NCCL stream.
  CHECK(m.groups == std::vector<std::string>{"stream 84"});
  REQUIRE(m.collectives.size() == 8);
  auto a = no_alignment(make_alignment_input(j, m));
  auto jg = build_job_graph(j, m, a);
  auto res = analyse_job(j, jg);
  REQUIRE(res.ranks.size() == 8);
  for (std::size_t k = 0; k < res.ranks.size(); ++k) {
    auto& rr = res.ranks[k];
    const double err = double(rr.predicted - rr.measured) / double(rr.measured);
    // The same rank alone with its collectives at their transfer time (no waiting for others).
    auto alone = representative_graph(j, m, a, job_model_options{}, k);
    const auto t_alone = iteration_time(alone, replay(alone), res.iteration);
    std::printf("DLRM rank %d: measured %.3f ms, predicted %.3f ms (%+.2f%%), alone without waiting %.3f ms (%+.1f%%), "
                "compute %.3f transfer %.3f wait %.3f other %.3f\n",
                rr.rank, rr.measured / 1e6, rr.predicted / 1e6, 100 * err, t_alone / 1e6,
                100.0 * double(t_alone - rr.measured) / double(rr.measured), rr.compute / 1e6, rr.transfer / 1e6,
                rr.wait / 1e6, rr.other / 1e6);
    CHECK(std::fabs(err) < 0.02);
    CHECK(rr.compute + rr.transfer + rr.wait + rr.other == rr.predicted);
  }
  std::printf("DLRM straggler: %s\n", res.straggler.reason.c_str());
  CHECK(res.straggler.rank >= 0);
}

TEST_CASE("two sampled ranks of a 128-rank job load as a partial job") {
  auto dir = std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" / "hta_sampled_128rank";
  REQUIRE(std::filesystem::is_directory(dir));
  auto j = io::load_job({dir});
  CHECK(j.world_size == 128);
  REQUIRE(j.ranks.size() == 2);
  CHECK(j.partial());
  CHECK(j.missing().size() == 126);
  REQUIRE(!j.notes.empty());
  CHECK(j.notes[0].find("2 of 128 ranks traced") != std::string::npos);
  // The traces were down-sampled (events dropped at random): each rank kept a different
  // subset of its NCCL kernels, so the 6th on stream 84 is an all-to-all on one rank and an
  // all-reduce on the other. Matching refuses to guess, naming both files.
  CHECK_THROWS_WITH_AS(match_collectives(j), doctest::Contains("sampled_rank-1.json.gz): the ranks' collectives do not match"),
                       error);
  auto m = match_collectives_or_none(j);
  CHECK(m.collectives.empty());
  CHECK(m.unmatched.find("collective #6 on stream 84 is all_to_all") != std::string::npos);
  auto jg = build_job_graph(j, m, no_alignment(make_alignment_input(j, m)));
  auto res = analyse_job(j, jg);
  REQUIRE(res.ranks.size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    auto& rr = res.ranks[k];
    const double err = double(rr.predicted - rr.measured) / double(rr.measured);
    std::printf("128-rank job, rank %d: measured %.3f ms, predicted %.3f ms (%+.2f%%)\n", rr.rank, rr.measured / 1e6,
                rr.predicted / 1e6, 100 * err);
    // Unjoined, each rank replays as it does alone.
    auto g = j.ranks[k].g;
    auto r = replay(g);
    std::vector<time_ns> alone;
    for (auto i : res.iterations) alone.push_back(iteration_time(g, r, i));
    CHECK(rr.per_iteration == alone);
  }
  CHECK(res.straggler.rank == -1);
}

TEST_CASE("the 8-rank DLRM job at the fine level: every rank predicted, within 2% with calibrated transfers") {
  auto j = io::load_job(daydream::testing::dlrm_8rank_job());
  REQUIRE(j.ranks.size() == 8);
  auto m = match_collectives(j);
  auto a = no_alignment(make_alignment_input(j, m));
  // One DGX-1-like machine: 8 V100s on NVLink.
  job_model_options o;
  o.cluster.machines = 1;
  o.cluster.workers_per_machine = 8;
  o.cluster.nvlink = {150e9, 1'000};
  auto coarse = analyse_job(j, build_job_graph(j, m, a, o));
  o.communication = communication_level::fine;
  auto jg = build_job_graph(j, m, a, o);
  std::size_t transfers = 0;
  for (auto& c : jg.collectives) transfers += c.transfers;
  // 3 ring all-reduces of 2 x 7 steps and 5 pairwise all-to-alls of 7 rounds, 8 ranks each.
  CHECK(transfers == 8 * (3 * 14 + 5 * 7));
  auto fine = analyse_job(j, jg);
  REQUIRE(fine.ranks.size() == 8);
  for (std::size_t k = 0; k < 8; ++k) {
    auto& rr = fine.ranks[k];
    const double err = double(rr.predicted - rr.measured) / double(rr.measured);
    const double cerr = double(coarse.ranks[k].predicted - rr.measured) / double(rr.measured);
    std::printf("DLRM fine, rank %d: measured %.3f ms, fine %.3f ms (%+.2f%%), coarse %.3f ms (%+.2f%%), transfer %.3f wait %.3f\n",
                rr.rank, rr.measured / 1e6, rr.predicted / 1e6, 100 * err, coarse.ranks[k].predicted / 1e6, 100 * cerr,
                rr.transfer / 1e6, rr.wait / 1e6);
    CHECK(rr.predicted > 0);
    CHECK(std::fabs(err) < 0.02);
    CHECK(rr.compute + rr.transfer + rr.wait + rr.other == rr.predicted);
    // One NCCL stream: no two collectives run at once, so the fine level adds no sharing
    // to the calibrated transfers (up to rounding each chunk to the ns).
    CHECK(std::llabs(rr.predicted - coarse.ranks[k].predicted) <= 1'000);
  }
  // From the cluster model alone (no calibration), both levels: printed for docs/jobs.md.
  o.transfer = job_model_options::transfer_source::cluster;
  auto fc = analyse_job(j, build_job_graph(j, m, a, o));
  o.communication = communication_level::coarse;
  auto cc = analyse_job(j, build_job_graph(j, m, a, o));
  for (std::size_t k = 0; k < 8; ++k) {
    const double meas = double(fc.ranks[k].measured);
    std::printf("DLRM cluster model, rank %d: fine %.3f ms (%+.2f%%), coarse %.3f ms (%+.2f%%)\n", fc.ranks[k].rank,
                fc.ranks[k].predicted / 1e6, 100 * (double(fc.ranks[k].predicted) - meas) / meas,
                cc.ranks[k].predicted / 1e6, 100 * (double(cc.ranks[k].predicted) - meas) / meas);
    CHECK(fc.ranks[k].predicted > 0);
  }
}

TEST_CASE("the 8-rank DLRM job: the same job whatever the loading threads; joined rank by rank, the same job graph") {
  const auto paths = daydream::testing::dlrm_8rank_job();
  io::job_options one;
  one.threads = 1;
  auto ref = io::load_job(paths, one);
  auto m = match_collectives(ref);
  auto a = no_alignment(make_alignment_input(ref, m));
  auto jg = build_job_graph(ref, m, a);
  for (unsigned threads : {0u, 2u, 3u, 8u}) {
    io::job_options o;
    o.threads = threads;
    auto j = io::load_job(paths, o);
    REQUIRE(j.ranks.size() == ref.ranks.size());
    for (std::size_t k = 0; k < j.ranks.size(); ++k) {
      CHECK(j.ranks[k].rank == ref.ranks[k].rank);
      CHECK(j.ranks[k].file == ref.ranks[k].file);
      CHECK(j.ranks[k].measured == ref.ranks[k].measured);
      CHECK(j.ranks[k].steady == ref.ranks[k].steady);
      CHECK(daydream::testing::graph_difference(j.ranks[k].g, ref.ranks[k].g) == "");
    }
    // Each rank's graph freed as it is joined: the same job graph, the same analysis.
    auto jr = build_job_graph_releasing(j, m, a);
    for (auto& r : j.ranks) CHECK(r.g.size() == 0);
    CHECK(daydream::testing::graph_difference(jr.g, jg.g) == "");
    CHECK(jr.first_task == jg.first_task);
    CHECK(jr.map == jg.map);
    auto res = analyse_job(j, jr), want = analyse_job(ref, jg);
    CHECK(res.predicted == want.predicted);
    CHECK(res.straggler.reason == want.straggler.reason);
    for (std::size_t k = 0; k < res.ranks.size(); ++k) CHECK(res.ranks[k].predicted == want.ranks[k].predicted);
  }
}

TEST_CASE("load_job: a file that cannot be read is named, the first in order, whatever the threads") {
  daydream::testing::temp_dir d{"daydream_job_test_"};
  std::filesystem::copy_file(daydream::testing::bundled("dlrm_v100_rank0.json.gz"), d.p / "a.json.gz");
  d.file("b.json", "");
  d.file("c.json", "{\"traceEvents\": [");
  for (unsigned threads : {1u, 2u, 3u}) {
    io::job_options o;
    o.threads = threads;
    CHECK_THROWS_WITH_AS(io::load_job({d.p}, o), doctest::Contains("b.json: empty file"), daydream::error);
  }
}
