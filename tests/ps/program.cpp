// Tests the ps command in process: the workers list, and the Perfetto timeline it writes.
// SPDX-License-Identifier: MIT
#include "ps/ps.hpp"

#include <daydream/config.hpp>
#include <daydream/io/dlc.hpp>

#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace {
std::size_t occurrences(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto p = s.find(part); p != s.npos; p = s.find(part, p + 1)) ++n;
  return n;
}
// ResNet-50 (102.2 MB of gradients) on 1 and 3 workers and 2 servers, 30 steps, the first
// 2 of the largest worker count recorded.
ps_cmd::options short_run() {
  ps_cmd::options o;
  o.trace = daydream::testing::bundled("resnet50_v100.json.gz").string();
  o.model_bytes = "102.2MB";
  o.workers = "1,3";
  o.servers = 2;
  o.steps = 30;
  o.warmup = 5;
  o.timeline_steps = 2;
  o.json = true;
  return o;
}
} // namespace

TEST_CASE("--workers takes ranges and lists, sorted and without repeats") {
  CHECK(ps_cmd::parse_workers("1-4") == std::vector<std::uint32_t>{1, 2, 3, 4});
  CHECK(ps_cmd::parse_workers("8,1,2,4-5,2") == std::vector<std::uint32_t>{1, 2, 4, 5, 8});
  CHECK_THROWS_WITH_AS(ps_cmd::parse_workers("0"), doctest::Contains("at least 1"), daydream::usage_error);
  CHECK_THROWS_WITH_AS(ps_cmd::parse_workers("4-2"), doctest::Contains("empty range '4-2'"), daydream::usage_error);
  CHECK_THROWS_AS(ps_cmd::parse_workers(""), daydream::usage_error);
  CHECK_THROWS_AS(ps_cmd::parse_workers("1,,2"), daydream::usage_error);
}

TEST_CASE("the timeline has one process per worker and per server, and every transfer of the first steps") {
  auto o = short_run();
  const auto path = std::filesystem::temp_directory_path() / "daydream_ps_timeline_test.json";
  o.timeline = path.string();
  std::FILE* out = std::tmpfile();
  REQUIRE(out);
  CHECK(ps_cmd::run(o, out) == 0);
  std::fclose(out);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  std::filesystem::remove(path);
  // 3 workers and 2 servers (the largest W of the list).
  CHECK(occurrences(s, "\"process_name\"") == 5);
  CHECK(s.find("\"server 1\"") != s.npos);
  CHECK(s.find("\"worker 2\"") != s.npos);
  // 161 tensors pulled and pushed in each of the first 2 steps of 3 workers: every
  // transfer is one chunk (0.63 MB < the window), except those of the last step that
  // the simulation stopped in.
  CHECK(occurrences(s, "\"name\":\"pull ") >= 3 * 161);
  CHECK(occurrences(s, "\"name\":\"push ") >= 3 * 161);
  CHECK(occurrences(s, "\"name\":\"update ") >= 3 * 161);
  CHECK(s.front() == '{');
  CHECK(s.find("\"traceEvents\":[") != s.npos);
}

TEST_CASE("--dlc writes the simulated steps as SketchDLC traces that read back whole and agree with the simulation") {
  auto o = short_run();
  const auto dir = std::filesystem::temp_directory_path() / "daydream_ps_dlc_test";
  std::filesystem::remove_all(dir);
  o.dlc = dir.string();
  std::FILE* out = std::tmpfile();
  REQUIRE(out);
  CHECK(ps_cmd::run(o, out) == 0);
  std::fclose(out);
  std::vector<std::filesystem::path> files;
  for (auto name : {"worker_0.dlc", "worker_1.dlc", "worker_2.dlc", "server_0.dlc", "server_1.dlc"}) {
    CAPTURE(name);
    REQUIRE(std::filesystem::exists(dir / name));
    files.push_back(dir / name);
  }
  auto job = daydream::io::load_dlc_job(files);
  CHECK(job.workers == 3);
  CHECK(job.servers == 2);
  for (auto& f : job.files) {
    CAPTURE(f.path);
    CHECK(f.report.unusable_total() == 0);
    CHECK(f.report.usable == f.report.records);
  }
  // Every worker pushes each of the 161 gradients in its first step (iteration 1), and
  // the 161 pushes add up to the model; a push is confirmed once the server has applied it.
  auto msgs = daydream::io::dlc_messages(job);
  std::map<std::int32_t, std::pair<std::size_t, std::uint64_t>> first_pushes; // worker -> (count, bytes)
  for (auto& m : msgs) {
    if (m.kind != daydream::io::dlc_message::push || m.iteration != 1) continue;
    ++first_pushes[m.worker].first;
    first_pushes[m.worker].second += m.bytes;
    CHECK(m.received >= m.sent);
  }
  REQUIRE(first_pushes.size() == 3);
  for (auto& wp : first_pushes) {
    CAPTURE(wp.first);
    CHECK(wp.second.first == 161);
    CHECK(double(wp.second.second) == doctest::Approx(102.2e6).epsilon(1e-4));
  }
  std::filesystem::remove_all(dir);
}
