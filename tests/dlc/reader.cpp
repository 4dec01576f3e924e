// Tests io::parse_dlc / load_dlc / load_dlc_job: Figure 8, the hand-built job, hostile files.
// SPDX-License-Identifier: MIT
#include "dlc_data.hpp"

#include <daydream/io/dlc.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace daydream::io;

TEST_CASE("dlc reader: the paper's Figure 8 fragment parses completely") {
  auto f = load_dlc(dlc_test::figure8());
  CHECK(f.header.num_workers == 2);
  CHECK(f.header.num_servers == 1);
  CHECK(f.header.hostname == "GPU-1-12");
  CHECK(f.header.worker_ids == std::vector<std::int32_t>{0, 1});
  CHECK(f.header.server_ids == std::vector<std::int32_t>{2});
  CHECK(f.rank == 0);
  CHECK(f.is_worker());
  CHECK(f.node_name() == "worker 0");
  // 68 records: 4 connection set-ups, 32 initialization records and 32 of the first iteration.
  CHECK(f.report.records == 68);
  CHECK(f.report.setup == 4);
  CHECK(f.report.usable == 64);
  CHECK(f.report.unusable_total() == 0);
  CHECK(f.report.problems.empty());
  // Ids 16 and 24 appear twice, and each pair is out of time order: kept, counted.
  CHECK(f.report.duplicate_ids == 2);
  CHECK(f.report.out_of_order == 2);
  std::size_t init = 0, first = 0, many = 0;
  for (auto& r : f.records) {
    (r.iteration == 0 ? init : first) += 1;
    if (r.form == dlc_dep_form::many) {
      ++many;
      // (3-s0.): every Pull_Recv_Worker of the initialization (operation number 3).
      CHECK(r.op == dlc_op::push_send_worker);
      REQUIRE(r.deps.size() == 8);
      for (auto d : r.deps) CHECK(f.records[d].op == dlc_op::pull_recv_worker);
    }
  }
  CHECK(init == 32);
  CHECK(first == 32);
  CHECK(many == 8);
  // id 36: 6-4-s0, the first push of the iteration.
  auto& r = f.records[32];
  CHECK(r.id == 36);
  CHECK(r.op == dlc_op::push_send_worker);
  CHECK(r.key == 6);
  CHECK(r.op_num == 4);
  CHECK(r.peer == 2);
  CHECK(r.length == 20033);
  CHECK(r.num_pp == 21);
  CHECK(r.time_us == 1516622729LL * 1000000 + 812819);
  CHECK(r.line == 43);
}

TEST_CASE("dlc reader: the hand-built job is one job of three nodes") {
  auto job = load_dlc_job(dlc_test::small_job());
  CHECK(job.workers == 2);
  CHECK(job.servers == 1);
  REQUIRE(job.files.size() == 3);
  CHECK(job.files[0].rank == 0);
  CHECK(job.files[1].rank == 1);
  CHECK(job.files[2].rank == 2);
  CHECK(job.files[2].node_name() == "server 0");
  for (auto& f : job.files) {
    CHECK(f.report.unusable_total() == 0);
    CHECK(f.report.setup == 1);
  }
  CHECK(job.files[0].records.size() == 20); // 4 initialization + 8 per iteration
  CHECK(job.files[2].records.size() == 40);
  // The server numbers operations from -2 (initialization) as the workers do here.
  auto& s = job.files[2].records;
  CHECK(s[0].op == dlc_op::pull_recv_server);
  CHECK(s[0].op_num == 0);
  CHECK(s[0].iteration == 0);
  // Synchronous confirmation: one-to-many on both workers' pushes of the key.
  std::size_t confirmations = 0;
  for (auto& r : s)
    if (r.op == dlc_op::push_send_server) {
      ++confirmations;
      CHECK(r.form == dlc_dep_form::many);
      CHECK(r.deps.size() == 2);
    }
  CHECK(confirmations == 8);
  CHECK(job.file_of(1) == &job.files[1]);
  CHECK(job.file_of(7) == nullptr);
}

TEST_CASE("dlc reader: a job refuses files that disagree or repeat a node") {
  auto a = load_dlc(dlc_test::data("small/worker_0.dlc"));
  auto b = a;
  b.path = "copy.dlc";
  CHECK_THROWS_WITH_AS(make_dlc_job({a, b}), doctest::Contains("both hold the records of worker 0"), daydream::error);
  b.header.num_workers = 3;
  CHECK_THROWS_WITH_AS(make_dlc_job({a, b}), doctest::Contains("copy.dlc: the header says 3 workers"), daydream::error);
  CHECK_THROWS_AS(make_dlc_job({}), daydream::error);
}

namespace {
dlc_file hostile(const std::string& name) { return load_dlc(dlc_test::data("hostile/" + name)); }
std::string first_problem(const dlc_file& f) { return f.report.problems.empty() ? "" : f.report.problems.front(); }
} // namespace

TEST_CASE("dlc reader: hostile files give reasons with file and line") {
  SUBCASE("truncated") {
    auto f = hostile("truncated.dlc");
    CHECK(f.report.usable == 1);
    CHECK(f.report.unusable.at("truncated record") == 1);
    CHECK(first_problem(f).find("truncated.dlc:3: truncated record") != std::string::npos);
  }
  SUBCASE("bad op_id") {
    auto f = hostile("bad_op_id.dlc");
    CHECK(f.report.usable == 1);
    CHECK(f.report.unusable.at("bad op_id") == 3);
    CHECK(first_problem(f).find("bad_op_id.dlc:3: bad op_id: '0-x-s0'") != std::string::npos);
  }
  SUBCASE("unknown operation") {
    auto f = hostile("unknown_operation.dlc");
    CHECK(f.report.unusable.at("unknown operation") == 1);
    CHECK(first_problem(f).find(":3: unknown operation: 'Push_Teleport_Worker'") != std::string::npos);
  }
  SUBCASE("huge numbers are unusable, never accepted") {
    auto f = hostile("huge_numbers.dlc");
    CHECK(f.report.usable == 0);
    CHECK(f.rank == -1);
    CHECK(f.report.unusable.at("number out of range") == 5);
    CHECK(first_problem(f).find("length 99999999999999999999 does not fit 64 bits") != std::string::npos);
  }
  SUBCASE("dangling id_dep, and what depends on it") {
    auto f = hostile("dangling_dep.dlc");
    CHECK(f.report.usable == 1);
    CHECK(f.report.unusable.at("dangling id_dep") == 1);
    CHECK(f.report.unusable.at("depends on an unusable record") == 1);
    CHECK(first_problem(f).find(":3: dangling id_dep: id_dep names 9-0-s0") != std::string::npos);
  }
  SUBCASE("a dependency cycle") {
    auto f = hostile("cycle.dlc");
    CHECK(f.report.usable == 0);
    CHECK(f.report.unusable.at("dependency cycle") == 6);
  }
  SUBCASE("files that are not DLC traces") {
    CHECK_THROWS_WITH_AS(hostile("empty.dlc"), doctest::Contains("empty.dlc: not a DLC trace: no header"), daydream::error);
    CHECK_THROWS_WITH_AS(hostile("garbage.dlc"), doctest::Contains("garbage.dlc:"), daydream::error);
    CHECK_THROWS_WITH_AS(hostile("header_then_garbage.dlc"), doctest::Contains("binary data before the first record"),
                         daydream::error);
    CHECK_THROWS_WITH_AS(load_dlc("no/such/file.dlc"), doctest::Contains("no/such/file.dlc: cannot open"), daydream::error);
  }
}

TEST_CASE("dlc reader: every record line is accounted for, and the checks of a record") {
  const std::string h = "== num_workers:= 2 num_servers:= 1\n";
  auto parse = [&](const std::string& body) { return parse_dlc(h + body, "t.dlc"); };
  auto reason = [&](const std::string& line) {
    auto f = parse("0\t0\t2\t10\t1\tOP:= Push_Send_Worker\t0-2-s0\t0\t0\t100\t0\t-1\n" + line + "\n");
    CHECK(f.report.records == 2);
    CHECK(f.report.usable + f.report.setup + f.report.unusable_total() == f.report.records);
    return f.report.unusable.empty() ? std::string("usable") : f.report.unusable.begin()->first;
  };
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "usable");
  CHECK(reason("1 2 0 19 1 OP:=Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "usable");
  CHECK(reason("1 2 0 19 1 OP:= push_recv_worker 0-3-s0 1 5 100 5 0-2-s0") == "usable");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0 extra") == "too many fields");
  CHECK(reason("1 2 0 19 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "truncated record");
  CHECK(reason("1 2 0 19 1 2 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "too many fields");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 2 5 100 5 0-2-s0") == "dep_type does not fit the operation");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 0 5 100 5 0-2-s0") == "dep_type does not fit the operation");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-4-s0 1 5 100 5 0-2-s0") == "bad op_id"); // 4 is a push
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-w1 1 5 100 5 0-2-s0") == "op_id node is not the peer");
  CHECK(reason("1 0 2 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "operation does not fit the ranks");
  CHECK(reason("1 2 1 19 1 OP:= Push_Send_Server 0-3-w1 1 5 100 5 0-2-w1") == "performed by another node");
  CHECK(reason("1 1 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "operation does not fit the ranks");
  CHECK(reason("1 3 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "scheduler record");
  CHECK(reason("1 9 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "number out of range");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 99 5 0-2-s0") == "depends on a later record");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s1") == "bad id_dep");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 (0-2-s0") == "bad id_dep");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 ()") == "bad id_dep");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 (0-2-s0.)") == "usable");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s0 1 -5 100 5 0-2-s0") == "number out of range");
  CHECK(reason("1 2 0 1x 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "bad number");
  CHECK(reason("1 2 0 +-19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "bad number");
  CHECK(reason("1 2 0 +19 1 OP:= Push_Recv_Worker 0-3-s0 1 5 100 5 0-2-s0") == "usable");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-3-s-0 1 5 100 5 0-2-s0") == "bad op_id");
  CHECK(reason("1 2 0 19 1 OP:= Push_Recv_Worker 0-2-s0 1 5 100 5 0-2-s0") == "bad op_id");
  CHECK(reason("1 0 2 19 1 OP:= Push_Send_Worker 0-2-s0 0 0 100 5 -1") == "duplicate op_id");
  CHECK(reason("1 0 2 25 0 OP:= SendCom_To_Servers") == "usable");
  CHECK(reason("what is this") == "not a record");
  CHECK(reason("7 0 2") == "truncated record");
  // Servers number from -2: a negative operation number in op_id and id_dep.
  auto s = parse("0 0 2 10 -15 OP:= Push_Recv_Server 0--2-w0 0 0 100 0 -1\n"
                 "1 2 0 19 -15 OP:= Push_Send_Server 0--1-w0 1 3 100 3 0--2-w0\n");
  CHECK(s.report.usable == 2);
  CHECK(s.rank == 2);
  CHECK(s.records[0].op_num == -2);
  CHECK(s.records[0].iteration == 0);
  CHECK(s.records[1].deps == std::vector<std::size_t>{0});
  // Problems are kept up to max_problems, all are counted.
  std::string many;
  for (int i = 0; i < 50; ++i) many += "junk line\n";
  auto m = parse_dlc(h + "0 0 2 10 1 OP:= Push_Send_Worker 0-2-s0 0 0 100 0 -1\n" + many, "m.dlc", dlc_options{.max_problems = 5});
  CHECK(m.report.problems.size() == 5);
  CHECK(m.report.unusable.at("not a record") == 50);
}
