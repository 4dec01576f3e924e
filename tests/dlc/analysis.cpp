// Tests io::analyze_dlc: Figure 8 against the paper (Table 6, Table 5), the hand-built job by hand.
// SPDX-License-Identifier: MIT
#include "dlc_data.hpp"

#include <daydream/io/dlc_analysis.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace daydream::io;

TEST_CASE("dlc analysis: Figure 8 (LeNet-5, worker 0)") {
  auto job = load_dlc_job({dlc_test::figure8()});
  auto a = analyze_dlc(job);
  // Every one-to-one d_time checks out: 24 initialization and 24 training records.
  CHECK(a.d_time_checked == 48);
  CHECK(a.d_time_mismatches.empty());
  // Message sizes equal the paper's Table 6.
  struct row { std::int64_t key; std::uint64_t ps, pr, ls, lr; };
  const row table6[] = {{7, 73, 19, 28, 76},         {1, 113, 19, 28, 116},       {3, 233, 19, 28, 236},
                        {0, 2033, 19, 28, 2036},     {5, 2033, 19, 28, 2036},     {6, 20033, 19, 28, 20036},
                        {2, 100033, 19, 28, 100036}, {4, 1600033, 19, 28, 1600036}};
  REQUIRE(a.message_sizes.size() == 8);
  for (auto& t : table6) {
    CAPTURE(t.key);
    auto& m = a.message_sizes[std::size_t(t.key)];
    CHECK(m.key == t.key);
    CHECK(m.push_send == t.ps);
    CHECK(m.push_recv == t.pr);
    CHECK(m.pull_send == t.ls);
    CHECK(m.pull_recv == t.lr);
    CHECK(!m.varies);
  }
  // Data volume of the iteration: 1.72 MB pushed (Table 5).
  REQUIRE(a.volume.size() == 2);
  CHECK(a.volume[1].iteration == 1);
  CHECK(a.volume[1].push == 1724584);
  CHECK(a.volume[1].pull_response == 1724608);
  CHECK(a.volume[1].push_ack == 8 * 19);
  CHECK(a.volume[1].pull_request == 8 * 28);
  // Phases of the iteration, by hand from the fragment: the last initialization
  // Pull_Recv_Worker is id 33 (745385), the pushes run from id 36 (812819) to id 45
  // (819475), the pulls end with id 67 (836906) and begin with id 54 (824158).
  REQUIRE(a.iterations.size() == 1);
  auto& it = a.iterations[0];
  CHECK(it.rank == 0);
  CHECK(it.iteration == 1);
  CHECK(it.phase1_us == 812819 - 745385);
  CHECK(it.phase2_us == 819475 - 812819);
  CHECK(it.phase3_us == 836906 - 812819);
  CHECK(it.computation_us == 819475 - 745385);
  CHECK(it.wait_us == 836906 - 824158);
  CHECK(it.overlap_ratio == doctest::Approx(6656.0 / (67434 + 24087)));
  CHECK(it.pushes == 8);
  CHECK(it.pulls == 8);
  // No server file: no server overheads.
  CHECK(a.search.count == 0);
  CHECK(a.update.count == 0);
  CHECK(a.sync.count == 0);
}

TEST_CASE("dlc analysis: the hand-built job, by hand") {
  // tests/data/dlc/small (README.md): pulls of the initialization end at 38 us (worker 0)
  // and 39 us (worker 1); each worker computes 100 + 10 w us to its key-1 push and
  // 130 + 10 w us to its key-0 push; a push takes 10 (key 0) or 20 (key 1) us, the
  // server confirms 7 us after the key's last push arrived, the confirmation takes 5 us,
  // the worker asks 2 us later, the request takes 5 us, the search 3 us and the answer
  // 10 or 20 us.
  auto job = load_dlc_job(dlc_test::small_job());
  auto a = analyze_dlc(job);
  CHECK(a.d_time_mismatches.empty());
  // Workers: 2 initialization answers, then 3 one-to-one records per key and iteration;
  // the server: 4 initialization answers, then a request and an answer per key, worker and iteration.
  CHECK(a.d_time_checked == 2 * (2 + 3 * 2 * 2) + 4 + 2 * 2 * 2 * 2);
  REQUIRE(a.iterations.size() == 4);
  // worker 0, iteration 1: pushes 138 (key 1), 168 (key 0); both keys' last push reaches
  // the server at 169 and 189 (worker 1's), so the answers arrive at 211 and 221.
  auto& w0 = a.iterations[0];
  CHECK(w0.rank == 0);
  CHECK(w0.iteration == 1);
  CHECK(w0.phase1_us == 138 - 38);
  CHECK(w0.phase2_us == 168 - 138);
  CHECK(w0.phase3_us == 221 - 138);
  CHECK(w0.computation_us == 130);
  CHECK(w0.wait_us == 10);
  CHECK(w0.overlap_ratio == doctest::Approx(30.0 / 183));
  // worker 0, iteration 2: pushes at 221 + 100 and 221 + 130, answers at 393 and 403.
  CHECK(a.iterations[1].phase1_us == 100);
  CHECK(a.iterations[1].phase3_us == 403 - 321);
  // worker 1: pushes 149 and 179 after 39; answers at the same times as worker 0's.
  auto& w1 = a.iterations[2];
  CHECK(w1.rank == 1);
  CHECK(w1.phase1_us == 110);
  CHECK(w1.phase2_us == 30);
  CHECK(w1.phase3_us == 221 - 149);
  CHECK(w1.computation_us == 140);
  CHECK(a.computation.min == 130);
  CHECK(a.computation.max == 140);
  CHECK(a.computation.mean == doctest::Approx(135));
  CHECK(a.wait.count == 4);
  CHECK(a.wait.min == 10);
  CHECK(a.wait.max == 10);
  // Server overheads: search 3 us (2 workers x 2 keys x 3 iterations), update 7 us
  // (2 confirmations x 2 keys x 2 iterations), synchronization: worker 1 pushes 11 us
  // after worker 0 in iteration 1 (169 - 158, 189 - 178) and 10 us in iteration 2.
  CHECK(a.search.count == 12);
  CHECK(a.search.min == 3);
  CHECK(a.search.max == 3);
  CHECK(a.update.count == 8);
  CHECK(a.update.mean == doctest::Approx(7));
  CHECK(a.sync.count == 4);
  CHECK(a.sync.min == 10);
  CHECK(a.sync.max == 11);
  CHECK(a.sync.mean == doctest::Approx(10.5));
  // The distribution: 11 and 10 for key 0 (iterations 1 and 2), the same for key 1.
  CHECK(a.sync.percentile(0.5) == 10);
  CHECK(a.sync.percentile(0.9) == 11);
  CHECK(a.sync.percentile(1) == 11);
  CHECK(a.sync.histogram(2) == std::vector<std::size_t>{2, 2});
  CHECK(a.sync.histogram(4) == std::vector<std::size_t>{2, 0, 0, 2});
  CHECK(a.search.histogram(3) == std::vector<std::size_t>{12, 0, 0}); // all equal: the first bin
  CHECK(dlc_stat{}.histogram().empty());
  CHECK(dlc_stat{}.percentile(0.5) == 0);
  REQUIRE(a.sync_by_key.size() == 2);
  CHECK(a.sync_by_key.at(0).mean == doctest::Approx(10.5));
  CHECK(a.search_by_key.at(1).count == 6);
  // Message sizes and the volume of worker 0's first iteration.
  REQUIRE(a.message_sizes.size() == 2);
  CHECK(a.message_sizes[0].push_send == 100);
  CHECK(a.message_sizes[0].pull_recv == 104);
  CHECK(a.message_sizes[1].push_send == 1000);
  CHECK(a.message_sizes[1].push_recv == 19);
  CHECK(a.message_sizes[1].pull_send == 28);
  CHECK(a.message_sizes[1].pull_recv == 1004);
  bool found = false;
  for (auto& v : a.volume)
    if (v.rank == 0 && v.iteration == 1) {
      found = true;
      CHECK(v.push == 1100);
      CHECK(v.push_ack == 38);
      CHECK(v.pull_request == 56);
      CHECK(v.pull_response == 1108);
    }
  CHECK(found);
}

TEST_CASE("dlc analysis: a wrong d_time is reported with file and line, and the JSON has the contract's fields") {
  const std::string text = "== num_workers:= 1 num_servers:= 1\n"
                           "0 0 1 10 1 OP:= Push_Send_Worker 0-2-s0 0 0 100 0 -1\n"
                           "1 1 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 7 100 5 0-2-s0\n";
  auto job = make_dlc_job({parse_dlc(text, "w.dlc")});
  auto a = analyze_dlc(job);
  REQUIRE(a.d_time_mismatches.size() == 1);
  CHECK(a.d_time_mismatches[0].file == "w.dlc");
  CHECK(a.d_time_mismatches[0].line == 3);
  CHECK(a.d_time_mismatches[0].d_time_us == 7);
  CHECK(a.d_time_mismatches[0].actual_us == 5);
  json_writer w;
  write_dlc_analysis_json(w, job, a);
  const auto& s = w.str();
  for (const char* k : {"\"p50\":", "\"p90\":", "\"nodes\":", "\"rank\":", "\"role\":\"worker\"", "\"file\":\"w.dlc\"", "\"records\":2",
                        "\"unusable\":{}", "\"iterations\":", "\"overheads\":", "\"computation_us\":", "\"search_us\":",
                        "\"update_us\":", "\"sync_us\":", "\"wait_us\":", "\"message_sizes\":",
                        "\"d_time_mismatches\":1"})
    CHECK_MESSAGE(s.find(k) != std::string::npos, k);
}
