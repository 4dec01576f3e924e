// Tests the what-if program's job mode in process: several traces or a directory are one job,
// and its --json keeps the contract (job.world_size, job.ranks[...], job.alignment, job.straggler,
// per-rank predicted_us in every scenario).
// SPDX-License-Identifier: MIT
#include <support/corpus.hpp>

#include "captured.hpp"

#include <whatif/whatif.hpp>

#include <daydream/config.hpp>

#include <doctest/doctest.h>
#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using programs_test::num;
using programs_test::slurp;

namespace {

std::string run_json(whatif_cmd::options o) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  REQUIRE(out);
  REQUIRE(err);
  o.json = true;
  CHECK(whatif_cmd::run(o, out, err) == 0);
  slurp(err);
  return slurp(out);
}

// The bundled 8-rank DLRM job: rank 0 with the examples, ranks 1-7 in one directory.
std::vector<std::string> dlrm_job() {
  return {daydream::testing::bundled("dlrm_v100_rank0.json.gz").string(),
          (std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" / "param_dlrm_8rank_v100").string()};
}

} // namespace

TEST_CASE("whatif job mode: the JSON contract on the 8-rank DLRM job") {
  whatif_cmd::options o;
  o.traces = dlrm_job();
  o.job.representative = true;
  auto text = run_json(o);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  auto job = root["job"];
  CHECK(int64_t(job["world_size"]) == 8);
  simdjson::dom::array ranks = job["ranks"];
  REQUIRE(ranks.size() == 8);
  std::int64_t expect = 0;
  double slowest = 0;
  for (auto r : ranks) {
    CHECK(int64_t(r["rank"]) == expect++);
    CHECK(std::string_view(r["file"]).find(".json.gz") != std::string_view::npos);
    const double meas = num(r["measured_us"]), base = num(r["baseline_us"]);
    CHECK(std::fabs(base - meas) / meas < 0.02);
    // LP alignment by default: the ranks share one machine, their offsets are microseconds.
    CHECK(std::fabs(num(r["clock_offset_us"])) < 50.0);
    const double parts = num(r["compute_us"]) + num(r["transfer_us"]) + num(r["wait_us"]) + num(r["other_us"]);
    CHECK(std::fabs(parts - base) < 0.01);
    slowest = std::max(slowest, base);
  }
  CHECK(num(root["baseline_us"]) == slowest);
  auto al = job["alignment"];
  CHECK(num(al["residual_us"]) >= 0);
  CHECK(int64_t(al["violations"]) >= 0);
  if (whatif_cmd::have_lp_alignment()) {
    CHECK(bool(al["aligned"]));
    CHECK(std::string_view(al["method"]).find("GLPK") != std::string_view::npos);
    CHECK(int64_t(al["violations"]) <= int64_t(al["unaligned_violations"]));
    CHECK(num(al["residual_us"]) <= num(al["unaligned_residual_us"]));
  }
  auto st = job["straggler"];
  CHECK(int64_t(st["rank"]) == 7);
  CHECK(std::string_view(st["reason"]).find("rank 7 arrived last") != std::string_view::npos);
  CHECK(num(job["representative"]["predicted_us"]) > 0);
  simdjson::dom::array scen = root["scenarios"];
  REQUIRE(scen.size() == 3);
  for (auto s : scen) {
    simdjson::dom::array per = s["ranks"];
    REQUIRE(per.size() == 8);
    double mx = 0;
    for (auto r : per) {
      mx = std::max(mx, num(r["predicted_us"]));
      // A scenario's parts add up to each rank's prediction, as the baseline's do.
      const double parts = num(r["compute_us"]) + num(r["transfer_us"]) + num(r["wait_us"]) + num(r["other_us"]);
      CHECK(std::fabs(parts - num(r["predicted_us"])) < 0.01);
    }
    CHECK(num(s["predicted_us"]) == mx);
  }
  CHECK(std::string_view(scen.at(0)["name"]) == "no_straggler");
}

TEST_CASE("whatif job mode: a partial job says so; a single-GPU pass runs on the chosen ranks") {
  whatif_cmd::options o;
  o.traces = {(std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" / "hta_sampled_128rank").string()};
  o.specs = {"fused_adam"};
  o.job.on_ranks = {1};
  auto text = run_json(o);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  CHECK(int64_t(root["job"]["world_size"]) == 128);
  CHECK(bool(root["job"]["partial"]));
  simdjson::dom::array warnings = root["warnings"];
  bool said = false;
  for (auto w : warnings) said = said || std::string_view(w).find("2 of 128 ranks traced") != std::string_view::npos;
  CHECK(said);
  simdjson::dom::array scen = root["scenarios"];
  REQUIRE(scen.size() == 1);
  simdjson::dom::array per = scen.at(0)["ranks"];
  REQUIRE(per.size() == 2);
  simdjson::dom::array ranks = root["job"]["ranks"];
  // fused_adam on rank 1 only: rank 0 (not joined to rank 1: its collectives do not match)
  // is unchanged, rank 1's optimizer is replaced.
  CHECK(bool(scen.at(0)["applied"]));
  CHECK(num(per.at(0)["predicted_us"]) == num(ranks.at(0)["baseline_us"]));
  CHECK(num(per.at(1)["predicted_us"]) != num(ranks.at(1)["baseline_us"]));
}

TEST_CASE("whatif job mode: --align none keeps the recorded clocks; a bad --align is a usage error") {
  whatif_cmd::options o;
  o.traces = dlrm_job();
  o.specs = {"no_straggler"};
  o.job.align = "none";
  auto text = run_json(o);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  auto al = root["job"]["alignment"];
  CHECK(!bool(al["aligned"]));
  CHECK(num(al["residual_us"]) == num(al["unaligned_residual_us"]));
  CHECK(int64_t(al["violations"]) == int64_t(al["unaligned_violations"]));
  simdjson::dom::array ranks = root["job"]["ranks"];
  for (auto r : ranks) CHECK(num(r["clock_offset_us"]) == 0.0);
  o.job.align = "exact";
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  CHECK_THROWS_WITH_AS(whatif_cmd::run(o, out, err), doctest::Contains("--align must be lp or none"), daydream::usage_error);
  std::fclose(out);
  std::fclose(err);
}

TEST_CASE("whatif job mode: options for a job given one trace are a usage error") {
  whatif_cmd::options o;
  o.traces = {daydream::testing::bundled("dlrm_v100_rank0.json.gz").string()};
  o.job.representative = true;
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  CHECK_THROWS_AS(whatif_cmd::run(o, out, err), daydream::usage_error);
  std::fclose(out);
  std::fclose(err);
}

TEST_CASE("whatif job mode: --comm fine replays the DLRM job's collectives as chunk transfers, every rank reported") {
  whatif_cmd::options o;
  o.traces = dlrm_job();
  o.job.comm = "fine";
  o.job.cluster = "machines=1,workers_per_machine=8,nvlink=150GB/s";
  auto text = run_json(o);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  auto job = root["job"];
  CHECK(std::string_view(job["collectives"]["communication"]) == "fine");
  // 3 ring all-reduces (2 x 7 steps) and 5 pairwise all-to-alls (7 rounds) of 8 ranks.
  CHECK(int64_t(job["collectives"]["chunk_transfers"]) == 8 * (3 * 14 + 5 * 7));
  simdjson::dom::array ranks = job["ranks"];
  REQUIRE(ranks.size() == 8);
  for (auto r : ranks) {
    const double meas = num(r["measured_us"]), base = num(r["baseline_us"]);
    CHECK(std::fabs(base - meas) / meas < 0.02);
  }
  simdjson::dom::array scen = root["scenarios"];
  REQUIRE(scen.size() == 3);
  for (auto s : scen) {
    simdjson::dom::array per = s["ranks"];
    CHECK(per.size() == 8);
  }
  o.job.comm = "finest";
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  CHECK_THROWS_AS(whatif_cmd::run(o, out, err), daydream::usage_error);
  std::fclose(out);
  std::fclose(err);
}

namespace {

// The job mode's output on the DLRM job with `args`, paths relative to the source tree.
std::string dlrm_output(whatif_cmd::options o) {
  o.traces = dlrm_job();
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  REQUIRE(out);
  REQUIRE(err);
  CHECK(whatif_cmd::run(o, out, err) == 0);
  slurp(err);
  auto text = slurp(out);
  const std::string root = (std::filesystem::path(DAYDREAM_SOURCE_DIR) / "").string();
  for (std::size_t at; (at = text.find(root)) != std::string::npos;) text.erase(at, root.size());
  return text;
}

std::string golden(const std::string& name) {
  auto p = std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "programs" / "golden" / name;
  std::FILE* f = std::fopen(p.string().c_str(), "rb");
  if (!f) throw std::runtime_error("golden output missing: " + p.string());
  return slurp(f);
}

// The lines of `text` from the one starting with `from` to the one starting with `to`.
std::string lines_between(const std::string& text, const std::string& from, const std::string& to) {
  auto a = text.find("\n" + from);
  auto b = text.find("\n" + to, a == std::string::npos ? 0 : a);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  return text.substr(a, text.find('\n', b + 1) - a);
}

} // namespace

TEST_CASE("whatif job mode: the job tables of the bundled DLRM job, byte for byte (tests/programs/golden)") {
  whatif_cmd::options o;
  CHECK(dlrm_output(o) == golden("dlrm_job.txt"));
  o.json = true;
  o.job.representative = true;
  CHECK(dlrm_output(o) == golden("dlrm_job_representative.json"));
  o.job.representative = false;
  o.job.comm = "fine";
  CHECK(dlrm_output(o) == golden("dlrm_job_fine.json"));
}

TEST_CASE("whatif job mode: beyond --max-memory, the same per-rank table without the scenarios; then one rank answers") {
  // The ranks' graphs do not fit beside the job graph: each freed as it is joined; the
  // per-rank table, the job's iteration and the straggler as with every graph kept.
  whatif_cmd::options o;
  o.job.max_memory = "8M";
  auto text = dlrm_output(o);
  CHECK(text.starts_with("warning: the scenarios are not run: they rebuild the job from every rank's graph"));
  CHECK(lines_between(text, " rank", "critical path") == lines_between(golden("dlrm_job.txt"), " rank", "critical path"));
  CHECK(text.find("no_straggler                                -        -  refused: not run") != std::string::npos);
  // The job graph does not fit either: the representative worker answers, and says so.
  o.job.max_memory = "1M";
  o.json = true;
  text = dlrm_output(o);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(text);
  CHECK(std::string_view(root["answered_by"]).starts_with("representative worker: rank 0 alone"));
  CHECK(std::string_view(root["warnings"].at(0)).find("answered by the representative worker") != std::string_view::npos);
  CHECK(int64_t(root["job"]["world_size"]) == 8);
  CHECK(simdjson::dom::array(root["job"]["ranks"]).size() == 0);
  CHECK(int64_t(root["job"]["representative"]["rank"]) == 0);
  // Rank 0 alone as recorded: its step as measured, to within 2%.
  CHECK(std::fabs(num(root["baseline_us"]) - num(root["measured_us"])) / num(root["measured_us"]) < 0.02);
  CHECK(num(root["baseline_us"]) == num(root["job"]["representative"]["predicted_us"]));
  // A size that is not one is a usage error.
  o.job.max_memory = "lots";
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  o.traces = dlrm_job();
  CHECK_THROWS_WITH_AS(whatif_cmd::run(o, out, err), doctest::Contains("--max-memory must be a positive size"),
                       daydream::usage_error);
  std::fclose(out);
  std::fclose(err);
}
