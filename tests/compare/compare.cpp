// Tests of compare(): hand-built traces with exact answers, the bundled before/after pairs and their manifest.
// SPDX-License-Identifier: MIT
#include <daydream/compare/compare.hpp>
#include <daydream/compare/validation.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>

#include <doctest/doctest.h>
#include <support/corpus.hpp>
#include <programs/trace_builder.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

using namespace daydream;

namespace {

io::kineto_trace parse(const std::string& name, const programs_test::trace_spec& s) {
  return io::parse_kineto(programs_test::training_trace(s), name);
}

const compare_row& row(const comparison& c, const std::string& key) {
  for (auto& r : c.rows)
    if (r.key == key) return r;
  FAIL("no row " << key);
  return c.rows.front();
}

bool mentions(const comparison& c, const std::string& text) {
  for (auto& e : c.explanations)
    if (e.find(text) != std::string::npos) return true;
  return false;
}

} // namespace

TEST_CASE("compare: a plain diff of two traces puts BEFORE in the predicted column") {
  // Each step: 30 us of CPU around one GEMM; BEFORE's GEMM takes 100 us, AFTER's 50 us.
  auto before = parse("before.json", {.kernel_us = {100, 100, 100, 100, 100}});
  auto after = parse("after.json", {.kernel_us = {50, 50, 50, 50, 50}});
  auto c = compare(before, after);
  CHECK(c.spec.empty());
  CHECK(std::isnan(c.error)); // no prediction, no error
  CHECK(c.before_measured == 130'000);
  CHECK(c.predicted == 130'000);
  CHECK(c.measured == 80'000);
  CHECK(c.predicted_iterations == 3); // steps 2..4: not the first, not the last
  CHECK(row(c, "step").measured_us == doctest::Approx(80));
  CHECK(row(c, "gemm/conv").before_us == doctest::Approx(100));
  CHECK(row(c, "gemm/conv").measured_us == doctest::Approx(50));
  CHECK(row(c, "gemm/conv").delta_us() == doctest::Approx(-50));
  CHECK(c.kernels.matched == doctest::Approx(1));
  CHECK(c.kernels.only_measured == 0);
  CHECK(mentions(c, "gemm/conv kernels: 50 us per step in AFTER, 100 us in BEFORE"));
}

TEST_CASE("compare: a prediction that is right is within 2%, and says so") {
  auto before = parse("before.json", {.kernel_us = {100, 100, 100, 100, 100}});
  auto after = parse("after.json", {.kernel_us = {50, 50, 50, 50, 50}});
  // GEMMs twice as fast, nothing else: the prediction the AFTER trace confirms.
  const std::string spec = "amp:compute=2,memory=1,overhead=0,casts=false,scaler=false";
  auto p = predict(before, passes::bundled().make_chain(spec), spec);
  auto c = compare(before, after, p);
  CHECK(c.spec == spec);
  CHECK(c.predicted == doctest::Approx(80'000).epsilon(0.01));
  CHECK(std::fabs(c.error) < 0.02);
  CHECK(mentions(c, "the prediction is within 2% of AFTER"));
  CHECK(row(c, "gemm/conv").predicted_us == doctest::Approx(50));
  REQUIRE(c.reports.size() == 1);
  CHECK(c.reports.front().applied);
}

TEST_CASE("compare: operators AFTER has and the prediction lacks are named, with their CPU time") {
  auto before = parse("before.json", {.kernel_us = {100, 100, 100, 100, 100}});
  // AFTER: the same steps, each with an extra 40 us aten::to on the CPU thread.
  auto text = programs_test::training_trace({.kernel_us = {100, 100, 100, 100, 100}});
  std::string extra;
  for (int k = 0; k < 5; ++k)
    extra += ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::to\", \"pid\": 1, \"tid\": 1, \"ts\": " +
             std::to_string(k * 130 + 0) + ".5, \"dur\": 1.5}";
  text.insert(text.rfind(']'), extra);
  auto after = io::parse_kineto(text, "after.json");
  auto c = compare(before, after);
  CHECK(c.operators.only_measured == doctest::Approx(1));
  CHECK(mentions(c, "AFTER has 1 more runs of aten::to per step than BEFORE"));
}

TEST_CASE("compare on the bundled DataLoader pair: num_workers 0 predicted as 4 workers, within 5%") {
  auto zero = io::load_kineto(testing::bundled("kineto_resnet50_v100_legacy/num_workers_0.steps5-8.json.gz"));
  auto four = io::load_kineto(testing::bundled("kineto_resnet50_v100_legacy/num_workers_4.steps5-8.json.gz"));
  const std::string spec = "dataloader:workers=4";
  auto c = compare(zero, four, predict(zero, passes::bundled().make_chain(spec), spec));
  MESSAGE("dataloader pair: predicted ", c.predicted, " ns, measured ", c.measured, " ns, error ", c.error);
  CHECK(std::fabs(c.error) < 0.05);
  CHECK(c.before_measured > c.measured); // the workers help
  // Without the contention model the prediction is 6% optimistic, and compare says why:
  // the same operators take longer on the CPU in AFTER.
  const std::string alone = "dataloader:workers=4,contention=0";
  auto o = compare(zero, four, predict(zero, passes::bundled().make_chain(alone), alone));
  CHECK(o.error < -0.05);
  CHECK(mentions(o, "operators that run as often in both take +"));
  // Shares never exceed the step: busy rows are unions within it.
  for (auto& r : c.rows)
    if (r.kind == "busy" && r.key != "gpu time") CHECK(r.measured_us <= row(c, "step").measured_us * 1.0001);
}

TEST_CASE("the manifest of tests/data lists every bundled pair, and each compares") {
  const auto manifest = std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" / "pairs.json";
  REQUIRE(std::filesystem::is_regular_file(manifest));
  auto pairs = read_pairs(manifest);
  REQUIRE(pairs.size() >= 2);
  std::vector<validation_row> rows;
  for (auto& p : pairs) {
    INFO("pair " << p.name);
    REQUIRE(p.skipped.empty());
    REQUIRE(std::filesystem::is_regular_file(p.before));
    REQUIRE(std::filesystem::is_regular_file(p.after));
    CHECK_FALSE(p.differs.empty());
    CHECK_FALSE(p.license.empty());
    auto before = io::load_kineto(p.before);
    auto after = io::load_kineto(p.after);
    validation_row r;
    r.pair = p;
    r.result = p.spec.empty() ? compare(before, after)
                              : compare(before, after, predict(before, passes::bundled().make_chain(p.spec), p.spec));
    CHECK(r.result->measured > 0);
    rows.push_back(std::move(r));
  }
  auto md = validation_markdown(rows, "daydream compare --manifest tests/data/pairs.json");
  for (auto& p : pairs) CHECK(md.find("| " + p.name + " |") != std::string::npos);
  // Every row has as many cells as the header, and the GPU time of each pair is its
  // comparison's "gpu time" row.
  auto cells = [](std::string_view line) { return std::count(line.begin(), line.end(), '|'); };
  const auto header = md.substr(0, md.find('\n'));
  for (auto& p : pairs) {
    auto at = md.find("| " + p.name + " |");
    CHECK(cells(std::string_view(md).substr(at, md.find('\n', at) - at)) == cells(header));
  }
  for (auto& r : rows) {
    const auto gpu = validation_gpu_time(*r.result); // (predicted, measured)
    CHECK(gpu.second > 0);
    if (!r.pair.spec.empty()) CHECK(gpu.first > 0);
  }
}

TEST_CASE("the validation table shows the steps timed without the profiler, when the manifest gives them") {
  auto path = programs_test::write_file("unprofiled.json", R"({"pairs": [
      {"name": "timed", "skipped": "out of time", "measured_without_profiler_ms": {"before": 40.25, "after": 37.5}},
      {"name": "half", "skipped": "failed", "measured_without_profiler_ms": {"before": 12.0, "after": null}},
      {"name": "none", "skipped": "failed"}]})");
  auto ps = read_pairs(path);
  REQUIRE(ps.size() == 3);
  CHECK(ps[0].unprofiled_before_ms == 40.25);
  CHECK(ps[0].unprofiled_after_ms == 37.5);
  CHECK(ps[1].unprofiled_before_ms == 12.0);
  CHECK_FALSE(ps[1].unprofiled_after_ms);
  CHECK_FALSE(ps[2].unprofiled_before_ms);
  std::vector<validation_row> rows;
  for (auto& p : ps) rows.push_back({p, std::nullopt, ""});
  auto md = validation_markdown(rows, "x");
  CHECK(md.find("| 40.25 ms -> 37.50 ms |") != std::string::npos);
  CHECK(md.find("| 12.00 ms -> - |") != std::string::npos);
  CHECK(md.find("without profiler: BEFORE -> AFTER") != std::string::npos);
}

TEST_CASE("a manifest entry without traces is an error naming the file and the entry") {
  auto path = programs_test::write_file("pairs.json", R"({"pairs": [{"name": "x", "before": "a.json"}]})");
  CHECK_THROWS_WITH_AS(read_pairs(path), doctest::Contains("pair 'x' names no"), daydream::error);
  auto skipped = programs_test::write_file("skipped.json", R"({"gpu": "H100", "pairs": [{"name": "y", "skipped": "out of time"}]})");
  auto ps = read_pairs(skipped);
  REQUIRE(ps.size() == 1);
  CHECK(ps[0].skipped == "out of time");
  CHECK(ps[0].gpu == "H100");
}
