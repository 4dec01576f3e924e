// Tests io::write_dlc and io::ps_messages: round trips of a hand-built job and of P3, TicTac and tensor partition replays.
// SPDX-License-Identifier: MIT
#include "dlc_data.hpp"

#include <daydream/io/dlc_analysis.hpp>
#include <daydream/io/dlc_graph.hpp>
#include <daydream/io/dlc_writer.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/p3.hpp>
#include <daydream/passes/tensor_partition.hpp>
#include <daydream/passes/tictac.hpp>
#include <daydream/registry/specs/p3.hpp>
#include <daydream/registry/specs/tensor_partition.hpp>
#include <daydream/registry/specs/tictac.hpp>
#include <daydream/replay.hpp>

#include <support/fixtures.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace daydream::io;

namespace {

dlc_job read_back(const std::vector<dlc_text>& files) {
  std::vector<dlc_file> parsed;
  for (auto& f : files) parsed.push_back(parse_dlc(f.text, f.name));
  for (auto& f : parsed) {
    CAPTURE(f.path);
    CHECK(f.report.unusable_total() == 0);
    CHECK(f.report.problems.empty());
    CHECK(f.report.out_of_order == 0);
    CHECK(f.report.duplicate_ids == 0);
  }
  return make_dlc_job(std::move(parsed));
}

/// The messages with times floored to microseconds, as a DLC file keeps them.
std::vector<ps_message> floored(std::vector<ps_message> m) {
  for (auto& x : m) {
    x.sent = x.sent / 1000 * 1000;
    x.received = x.received / 1000 * 1000;
  }
  std::sort(m.begin(), m.end(), [](const ps_message& a, const ps_message& b) {
    return std::tie(a.iteration, a.key, a.worker, a.server, a.kind) <
           std::tie(b.iteration, b.key, b.worker, b.server, b.kind);
  });
  return m;
}

std::vector<daydream::time_ns> sorted_durations(const dlc_graph& d) {
  std::vector<daydream::time_ns> v;
  d.g.for_each_task([&](daydream::task_id t) { v.push_back(d.g.duration(t)); });
  std::sort(v.begin(), v.end());
  return v;
}

void check_exact_replay(const dlc_job& job) {
  auto d = build_dlc_graph(job);
  auto r = daydream::replay(d.g);
  std::size_t bad = 0;
  for (std::size_t f = 0; f < job.files.size(); ++f)
    for (std::size_t i = 0; i < job.files[f].records.size(); ++i)
      bad += d.replayed_us(r, f, i) != job.files[f].records[i].time_us;
  CHECK(bad == 0);
  CHECK(d.clock_skewed == 0);
}

} // namespace

TEST_CASE("dlc writer: the hand-built job written and read back is the same job") {
  auto job = load_dlc_job(dlc_test::small_job());
  const std::int64_t epoch = 1000LL * 1000000;
  auto msgs = dlc_messages(job, epoch);
  REQUIRE(msgs.size() == 40);
  for (auto& m : msgs) CHECK((m.sent >= 0 && m.received >= m.sent));
  auto files = write_dlc(msgs, {.workers = 2, .servers = 1, .epoch_us = epoch});
  REQUIRE(files.size() == 3);
  CHECK(files[0].name == "worker_0.dlc");
  CHECK(files[2].name == "server_0.dlc");
  auto back = read_back(files);
  // The same messages, the same dependencies, the same graph.
  CHECK(dlc_messages(back, epoch) == msgs);
  for (std::size_t f = 0; f < job.files.size(); ++f) {
    REQUIRE(back.files[f].records.size() == job.files[f].records.size());
    for (auto& r : job.files[f].records) {
      auto it = std::find_if(back.files[f].records.begin(), back.files[f].records.end(), [&](const dlc_record& b) {
        return b.key == r.key && b.op_num == r.op_num && b.peer == r.peer;
      });
      REQUIRE(it != back.files[f].records.end());
      CHECK(it->op == r.op);
      CHECK(it->time_us == r.time_us);
      CHECK(it->length == r.length);
      CHECK(it->form == r.form);
      CHECK(it->dep_type == r.dep_type);
      CHECK(it->d_time_us == r.d_time_us);
      CHECK(it->deps.size() == r.deps.size());
    }
  }
  auto g1 = build_dlc_graph(job), g2 = build_dlc_graph(back);
  CHECK(g1.g.size() == g2.g.size());
  CHECK(g1.g.dependency_count() == g2.g.dependency_count());
  CHECK(sorted_durations(g1) == sorted_durations(g2));
  check_exact_replay(back);
  // Writing what was read gives the same text.
  auto again = write_dlc(dlc_messages(back, epoch), {.workers = 2, .servers = 1, .epoch_us = epoch});
  for (std::size_t f = 0; f < files.size(); ++f) CHECK(again[f].text == files[f].text);
}

TEST_CASE("dlc writer: asynchronous confirmations are one-to-one") {
  auto job = load_dlc_job(dlc_test::small_job());
  auto msgs = dlc_messages(job, 0);
  auto back = read_back(write_dlc(msgs, {.workers = 2, .servers = 1, .synchronous = false, .epoch_us = 0}));
  std::size_t confirmations = 0;
  for (auto& r : back.files[2].records)
    if (r.op == dlc_op::push_send_server) {
      ++confirmations;
      CHECK(r.form == dlc_dep_form::one);
      CHECK(r.deps.size() == 1);
    }
  CHECK(confirmations == 8);
  CHECK(dlc_messages(back, 0) == msgs);
}

TEST_CASE("dlc writer: messages that cannot be written are refused with the message named") {
  std::vector<ps_message> m{{dlc_message::push, 0, 0, 3, 1, 10, 5000, 2000}};
  CHECK_THROWS_WITH_AS(write_dlc(m, {.workers = 1, .servers = 1}),
                       doctest::Contains("push of key 3, iteration 1, worker 0, server 0: needs a send time"),
                       daydream::error);
  m = {{dlc_message::push, 1, 0, 3, 1, 10, 0, 2000}};
  CHECK_THROWS_WITH_AS(write_dlc(m, {.workers = 1, .servers = 1}), doctest::Contains("no such worker"), daydream::error);
  m = {{dlc_message::push, 0, 0, 3, 1, 10, 0, 2000}, {dlc_message::push, 0, 0, 3, 1, 10, 0, 2000}};
  CHECK_THROWS_WITH_AS(write_dlc(m, {.workers = 1, .servers = 1}), doctest::Contains("is given twice"), daydream::error);
  // The confirmation before the push it confirms.
  m = {{dlc_message::push, 0, 0, 3, 1, 10, 0, 9000}, {dlc_message::push_ack, 0, 0, 3, 1, 0, 4000, 5000}};
  CHECK_THROWS_WITH_AS(write_dlc(m, {.workers = 1, .servers = 1}),
                       doctest::Contains("do not follow the parameter-server protocol"), daydream::error);
  CHECK_THROWS_AS(write_dlc(m, {.workers = 0, .servers = 1}), daydream::error);
}

namespace {

/// Applies `pass` to a 3-layer data-parallel step, replays it with the pass's policy,
/// writes its messages for `workers` workers and `servers` servers, and reads them back.
template <class Pass> void round_trip(const std::string& spec, std::int32_t workers, std::int32_t servers) {
  CAPTURE(spec);
  auto g = daydream::testing::training_step({.layers = 3});
  auto pass = daydream::passes::from_params<Pass>(daydream::pass_params::parse(std::string(Pass::name), spec));
  pass.sizes = {{"layer0", 400'000}, {"layer1", 1'000'000}, {"layer2", 250'000}};
  auto rep = daydream::apply(g, pass);
  REQUIRE(rep.applied);
  auto r = daydream::replay(g, daydream::pass_policy_t<Pass>{});
  auto msgs = ps_messages(g, r, workers, servers);
  REQUIRE(!msgs.empty());
  const std::int64_t epoch = 1'600'000'000'000'000;
  auto files = write_dlc(msgs, {.workers = workers, .servers = servers, .epoch_us = epoch});
  REQUIRE(files.size() == std::size_t(workers + servers));
  auto back = read_back(files);
  CHECK(dlc_messages(back, epoch) == floored(msgs));
  check_exact_replay(back);
  // The analysis of the files agrees with the replay that produced them: worker 0's
  // phase 3 of every iteration is its first push to its last answer, in microseconds.
  auto a = analyze_dlc(back);
  CHECK(a.d_time_mismatches.empty());
  std::size_t checked = 0;
  for (auto& it : a.iterations) {
    if (it.rank != 0) continue;
    daydream::time_ns first_push = INT64_MAX, last_pull = -1, last_push = -1;
    for (auto& m : msgs) {
      if (m.worker != 0 || m.iteration != it.iteration) continue;
      if (m.kind == dlc_message::push) {
        first_push = std::min(first_push, m.sent / 1000);
        last_push = std::max(last_push, m.sent / 1000);
      }
      if (m.kind == dlc_message::pull_response) last_pull = std::max(last_pull, m.received / 1000);
    }
    CHECK(it.phase3_us == last_pull - first_push);
    CHECK(it.phase2_us == last_push - first_push);
    ++checked;
  }
  CHECK(checked >= 1);
}

} // namespace

TEST_CASE("dlc writer: P3, TicTac and tensor partition replays round-trip through DLC files") {
  round_trip<daydream::passes::p3>("workers=2,ps=1,bandwidth=10Gbps,iterations=3", 2, 1);
  round_trip<daydream::passes::p3>("workers=4,ps=2,bandwidth=10Gbps,slice=100kB,iterations=2", 4, 2);
  round_trip<daydream::passes::tictac>("workers=2,bandwidth=25Gbps,iterations=2", 2, 2);
  round_trip<daydream::passes::tensor_partition>("workers=2,bandwidth=25Gbps", 2, 1);
}

TEST_CASE("dlc writer: files on disk") {
  auto job = load_dlc_job(dlc_test::small_job());
  auto dir = std::filesystem::temp_directory_path() / "daydream_dlc_writer_test";
  std::filesystem::remove_all(dir);
  auto paths = write_dlc_files(dir, write_dlc(dlc_messages(job, 0), {.workers = 2, .servers = 1, .epoch_us = 0}));
  REQUIRE(paths.size() == 3);
  auto back = load_dlc_job(paths);
  CHECK(dlc_messages(back, 0) == dlc_messages(job, 0));
  std::filesystem::remove_all(dir);
}
