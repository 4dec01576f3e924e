// Tests the ps command in process: the workers list, and the Perfetto timeline it writes.
// SPDX-License-Identifier: MIT
#include "ps/ps.hpp"

#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {
std::size_t occurrences(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto p = s.find(part); p != s.npos; p = s.find(part, p + 1)) ++n;
  return n;
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
  ps_cmd::options o;
  o.trace = daydream::testing::bundled("resnet50_v100.json.gz").string();
  o.model_bytes = "102.2MB";
  o.workers = "1,3";
  o.servers = 2;
  o.steps = 30;
  o.warmup = 5;
  o.timeline_steps = 2;
  o.json = true;
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
