// Tests the strategy program's timeline in process: one process per device of each strategy,
// its computation, feature and gradient queues as tracks, every span on one of them.
// SPDX-License-Identifier: MIT
#include <strategy/strategy.hpp>

#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

TEST_CASE("daydream strategy --timeline: one process per device, its queues as tracks") {
  const std::string trace = std::string(DAYDREAM_EXAMPLE_TRACES) + "/dlrm_v100_rank0.json.gz";
  REQUIRE(std::filesystem::exists(trace));
  const auto path = std::filesystem::temp_directory_path() / "daydream_strategy_timeline_test.json";
  strategy_cmd::options o;
  o.trace = trace;
  o.cluster = "2x4:nvlink=150GB/s,nic=100Gbps";
  o.strategies = {"dp=2,tp=2,pp=2,micro=2", "dp=4,pp=2,micro=4,zero=1"};
  o.timeline = path.string();
  std::FILE* out = std::tmpfile();
  REQUIRE(out);
  CHECK(strategy_cmd::run(o, out) == 0);
  std::fclose(out);

  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(path.string());
  std::map<std::int64_t, std::string> process;           // pid -> name
  std::map<std::int64_t, std::set<std::string>> threads; // pid -> track names
  std::map<std::int64_t, std::set<std::int64_t>> used;   // pid -> tids of spans
  std::size_t spans = 0;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"].get_string();
    const std::int64_t pid = e["pid"].get_int64();
    if (ph == "M") {
      const std::string_view what = e["name"].get_string();
      if (what == "process_name") process[pid] = std::string(e["args"]["name"].get_string().value());
      if (what == "thread_name") threads[pid].insert(std::string(e["args"]["name"].get_string().value()));
    } else {
      CHECK(ph == "X");
      CHECK(e["dur"].get_double().value() >= 0);
      used[pid].insert(e["tid"].get_int64());
      ++spans;
    }
  }
  // 8 devices per strategy, each one process named after its strategy, device, stage and machine.
  REQUIRE(process.size() == 16);
  int first = 0, second = 0;
  for (auto& kv : process) {
    const auto pid = kv.first;
    const std::string& name = kv.second;
    CAPTURE(name);
    first += name.rfind("dp=2,tp=2,pp=2,micro=2: device ", 0) == 0;
    second += name.rfind("dp=4,tp=1,pp=2,micro=4,zero=1: device ", 0) == 0;
    CHECK(threads[pid] == std::set<std::string>{"computation", "feature queue", "gradient queue"});
    CHECK(used[pid].count(1) == 1); // every device computes
    CHECK(used[pid].count(3) == 1); // and reduces its gradients (dp > 1)
  }
  CHECK(first == 8);
  CHECK(second == 8);
  CHECK(process.begin()->second == "dp=2,tp=2,pp=2,micro=2: device 0 (stage 0, machine 0)");
  CHECK(process.rbegin()->second == "dp=4,tp=1,pp=2,micro=4,zero=1: device 7 (stage 1, machine 1)");
  CHECK(spans > 0);
  std::filesystem::remove(path);
}
