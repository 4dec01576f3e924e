// Tests io/chakra.hpp: the write -> read round trip on the bundled corpus, ASTRA-sim's public ETs, hostile ETs.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/distributed.hpp>
#include <daydream/io/chakra.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/ddp.hpp>

#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace pb = ::ChakraProtoMsg;
using daydream::task_id;

/// The live tasks of `g`, in id order.
std::vector<task_id> live(const daydream::graph& g) {
  std::vector<task_id> v;
  g.for_each_task([&](task_id t) { v.push_back(t); });
  return v;
}

/// Writes `g` as one NPU, reads it back, and requires the same replay, task by task.
void require_round_trip(const daydream::graph& g, const std::string& what) {
  CAPTURE(what);
  auto ex = daydream::io::write_chakra(g, {.npus = 1});
  REQUIRE(ex.files.size() == 1);
  CHECK(ex.dropped_dependencies == 0);
  auto back = daydream::io::parse_chakra(ex.files[0].bytes, what);
  CHECK(back.warnings.empty());
  REQUIRE(back.g.size() == g.size());
  CHECK(back.g.dependency_count() == g.dependency_count());
  auto a = daydream::replay(g), b = daydream::replay(back.g);
  CHECK(a.makespan == b.makespan);
  CHECK(a.peak_memory == b.peak_memory);
  auto la = live(g), lb = live(back.g);
  std::size_t differ = 0;
  for (std::size_t k = 0; k < la.size(); ++k) {
    differ += a.start[la[k]] != b.start[lb[k]] || a.end[la[k]] != b.end[lb[k]];
    if (k % 97 == 0) {
      CHECK(g.name(la[k]) == back.g.name(lb[k]));
      CHECK(g.iteration(la[k]) == back.g.iteration(lb[k]));
      CHECK(g.layer(la[k]) == back.g.layer(lb[k]));
    }
  }
  CHECK(differ == 0);
}

std::string frame(const google::protobuf::MessageLite& m) {
  std::string s;
  daydream::io::detail::chakra::put_message(s, m);
  return s;
}

pb::Node coll(std::uint64_t id, std::int64_t size) {
  pb::Node n;
  n.set_id(id);
  n.set_name("all_reduce");
  n.set_type(pb::COMM_COLL_NODE);
  auto* a = n.add_attr();
  a->set_name("comm_type");
  a->set_int64_val(pb::ALL_REDUCE);
  a = n.add_attr();
  a->set_name("comm_size");
  a->set_int64_val(size);
  return n;
}

std::string et_head(const std::string& version) {
  pb::GlobalMetadata m;
  m.set_version(version);
  return frame(m);
}

std::filesystem::path astra(const std::string& op) {
  return std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" / "chakra" / "astra_sim" / op;
}

} // namespace

TEST_CASE("write -> read of bundled traces replays to the same times, task by task") {
  for (auto rel : {"resnet50_v100.json.gz", "dlrm_v100_rank0.json.gz",
                   "hta_micro_a100/cuda_event_sync_multi_stream_trace.json.gz",
                   "param_dlrm_8rank_v100/worker1_step_12.1694128201556.pt.trace.json.gz"}) {
    const auto p = daydream::testing::bundled(rel);
    auto t = daydream::io::load_kineto(p);
    REQUIRE(t.g.size() > 10);
    require_round_trip(t.g, rel);
  }
}

TEST_CASE("a data-parallel what-if is written as one identical ET per worker, and read back as a job") {
  auto t = daydream::io::load_kineto(daydream::testing::bundled("resnet50_v100.json.gz"));
  daydream::passes::ddp d;
  d.cluster.machines = 4;
  d.model_bytes = 100e6;
  daydream::apply(t.g, d);
  std::size_t colls = 0;
  t.g.for_each<daydream::comm_task>([&](auto) { ++colls; });
  REQUIRE(colls > 0);
  auto ex = daydream::io::write_chakra(t.g);
  REQUIRE(ex.files.size() == 4);
  CHECK(ex.copies);
  for (auto& f : ex.files) {
    CHECK(f.collectives == colls);
    CHECK(f.nodes == t.g.size());
    CHECK(f.name == "daydream." + std::to_string(f.npu) + ".et");
  }
  // Every COMM_COLL node says its collective as ASTRA-sim reads it.
  auto fr = daydream::io::detail::chakra::frames(ex.files[2].bytes, "x");
  std::size_t seen = 0;
  for (std::size_t k = 1; k < fr.size(); ++k) {
    pb::Node n;
    REQUIRE(n.ParseFromArray(fr[k].bytes.data(), int(fr[k].bytes.size())));
    if (n.type() != pb::COMM_COLL_NODE) continue;
    ++seen;
    namespace c = daydream::io::detail::chakra;
    CHECK(c::int_attr(n.attr(), "comm_type", -1) == pb::ALL_REDUCE);
    CHECK(c::find_attr(n.attr(), "comm_size")->value_case() == pb::AttributeProto::kInt64Val);
    CHECK(c::int_attr(n.attr(), "comm_size", 0) > 0);
    CHECK(!c::string_attr(n.attr(), "pg_name").empty());
    CHECK(c::int_attr(n.attr(), "is_cpu_op", 1) == 0);
  }
  CHECK(seen == colls);

  // Read back as a job: the collectives match across the four NPUs.
  auto dir = std::filesystem::temp_directory_path() / "daydream_chakra_ddp4";
  std::filesystem::remove_all(dir);
  daydream::io::write_chakra_files(t.g, dir);
  auto j = daydream::io::load_chakra_job({dir});
  REQUIRE(j.ranks.size() == 4);
  CHECK(j.world_size == 4);
  auto m = daydream::match_collectives(j);
  CHECK(m.collectives.size() == colls);
  for (auto& c : m.collectives) CHECK(c.parts.size() == 4);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ASTRA-sim's microbenchmark ETs are read: one 1 MiB collective per NPU, matched across the 4 NPUs") {
  struct want { const char* op; daydream::comm_op c; };
  for (auto w : {want{"all_reduce", daydream::comm_op::all_reduce}, want{"all_gather", daydream::comm_op::all_gather},
                 want{"all_to_all", daydream::comm_op::all_to_all},
                 want{"reduce_scatter", daydream::comm_op::reduce_scatter}}) {
    CAPTURE(w.op);
    const auto dir = astra(w.op);
    REQUIRE(std::filesystem::is_directory(dir));
    auto one = daydream::io::read_chakra(dir / (std::string(w.op) + ".2.et"));
    CHECK(one.npu == 2);
    CHECK(one.version == "0.0.4");
    CHECK(one.warnings.empty());
    REQUIRE(one.g.size() == 1);
    auto h = one.g.as<daydream::comm_task>(0);
    REQUIRE(h);
    CHECK(one.g.payload(h).op == w.c);
    CHECK(one.g.payload(h).bytes == 1u << 20);
    CHECK(daydream::io::is_chakra_file(dir / (std::string(w.op) + ".0.et")));
    auto j = daydream::io::load_chakra_job({dir});
    REQUIRE(j.ranks.size() == 4);
    auto m = daydream::match_collectives(j);
    REQUIRE(m.collectives.size() == 1);
    CHECK(m.collectives[0].parts.size() == 4);
    CHECK(m.collectives[0].bytes == 1u << 20);
  }
  CHECK_FALSE(daydream::io::is_chakra_file(daydream::testing::bundled("resnet50_v100.json.gz")));
}

TEST_CASE("hostile ETs: clear errors naming the file and the node") {
  const std::string head = et_head("0.0.4");
  auto fails = [](const std::string& bytes, const std::string& what) {
    CAPTURE(what);
    try {
      (void)daydream::io::parse_chakra(bytes, "bad.0.et");
      FAIL("no error");
    } catch (const daydream::error& e) {
      const std::string m = e.what();
      CAPTURE(m);
      CHECK(m.find("bad.0.et") != std::string::npos);
      CHECK(m.find(what) != std::string::npos);
    }
  };
  SUBCASE("a truncated varint") { fails(head + std::string("\xff\xff", 2), "length prefix (varint) of message 1 is cut off"); }
  SUBCASE("a truncated message") { fails(head + frame(coll(1, 8)).substr(0, 6), "a truncated trace"); }
  SUBCASE("a node depending on a missing id") {
    auto n = coll(1, 8);
    n.add_data_deps(42);
    fails(head + frame(n), "node 1 ('all_reduce') depends on node 42, which the file does not have");
  }
  SUBCASE("a missing id left out on request") {
    auto n = coll(1, 8);
    n.add_data_deps(42);
    auto t = daydream::io::parse_chakra(head + frame(n), "cut.et", {.drop_missing_dependencies = true});
    CHECK(t.g.size() == 1);
    REQUIRE(t.warnings.size() == 1);
    CHECK(t.warnings[0] == "cut.et: 1 dependencies on nodes the file does not have were left out");
  }
  SUBCASE("a cycle, as Chakra's own test trace has one (a control dependency back)") {
    auto a = coll(1, 8), b = coll(2, 8);
    a.add_ctrl_deps(2);
    b.add_data_deps(1);
    fails(head + frame(a) + frame(b), "the dependencies form a cycle: node 1 ('all_reduce') -> node 2 ('all_reduce') -> node 1");
    auto t = daydream::io::parse_chakra(head + frame(a) + frame(b), "cyc.et", {.drop_missing_dependencies = true});
    CHECK(t.g.dependency_count() == 1);
    CHECK(t.g.has_dependency(0, 1));
    REQUIRE(t.warnings.size() == 1);
    CHECK(t.warnings[0] == "cyc.et: 1 control dependencies that closed cycles were left out");
  }
  SUBCASE("a negative comm_size") { fails(head + frame(coll(3, -5)), "node 3 ('all_reduce'): comm_size -5 is negative"); }
  SUBCASE("an overflowing comm_size (written unsigned)") {
    auto n = coll(4, 0);
    n.mutable_attr(1)->set_uint64_val(std::uint64_t(-5));
    fails(head + frame(n), "node 4 ('all_reduce'): comm_size 18446744073709551611 overflows int64");
  }
  SUBCASE("a duplicate id") { fails(head + frame(coll(1, 8)) + frame(coll(1, 8)), "appears twice"); }
  SUBCASE("a dependency on itself") {
    auto n = coll(7, 8);
    n.add_ctrl_deps(7);
    fails(head + frame(n), "node 7 ('all_reduce') depends on itself");
  }
  SUBCASE("an empty file") { fails("", "not a Chakra execution trace"); }
}

TEST_CASE("an unknown schema version is read, with a warning") {
  auto t = daydream::io::parse_chakra(et_head("7.3.0") + frame(coll(0, 1024)), "new.et");
  CHECK(t.g.size() == 1);
  REQUIRE(t.warnings.size() == 1);
  CHECK(t.warnings[0].find("schema version '7.3.0' is not one this reader knows") != std::string::npos);
  auto old = daydream::io::parse_chakra(et_head("1.0.2-chakra.0.0.4") + frame(coll(0, 1024)), "ok.et");
  CHECK(old.warnings.empty());
}

TEST_CASE("a host ET's dependencies and durations give the replay's times") {
  // cpu op (10 us) -> kernel (20 us) -> all-reduce (30 us); a second kernel (5 us) after the op.
  std::string s = et_head("1.0.1");
  auto node = [](std::uint64_t id, pb::NodeType type, std::uint64_t us, std::vector<std::uint64_t> deps, bool cpu) {
    pb::Node n;
    n.set_id(id);
    n.set_name("n" + std::to_string(id));
    n.set_type(type);
    n.set_duration_micros(us);
    for (auto d : deps) n.add_data_deps(d);
    auto* a = n.add_attr();
    a->set_name("is_cpu_op");
    a->set_bool_val(cpu);
    return n;
  };
  s += frame(node(10, pb::COMP_NODE, 10, {}, true));
  s += frame(node(11, pb::COMP_NODE, 20, {10}, false));
  s += frame(node(12, pb::COMP_NODE, 5, {10}, false));
  auto c = coll(13, 4096);
  c.set_duration_micros(30);
  c.add_data_deps(11);
  s += frame(c);
  auto t = daydream::io::parse_chakra(s, "host.0.et");
  REQUIRE(t.g.size() == 4);
  auto r = daydream::replay(t.g);
  // The two kernels share the NPU's compute stream: 10 + 20 + 5 or 10 + 5 + 20; the
  // all-reduce follows the 20 us kernel.
  CHECK(r.makespan == 10'000 + 20'000 + 5'000 + (r.end[1] > r.end[2] ? 30'000 - 0 : 30'000 - 5'000));
  CHECK(r.end[3] == r.end[1] + 30'000);
}

TEST_CASE("sends and receives whose ranks are known are written as pairs with matching tags") {
  // Rank 0 sends twice to rank 1, which receives twice; a kernel on each rank before.
  daydream::graph g;
  auto s0 = g.add_resource({"rank 0: stream", daydream::resource_kind::gpu_stream, daydream::sharing::exclusive, 0, 0, 0});
  auto s1 = g.add_resource({"rank 1: stream", daydream::resource_kind::gpu_stream, daydream::sharing::exclusive, 1, 1, 0});
  auto k0 = g.add(daydream::gpu_kernel{}, {.name = "k0", .duration = 5'000, .resource = s0});
  auto k1 = g.add(daydream::gpu_kernel{}, {.name = "k1", .duration = 7'000, .resource = s1});
  for (int i = 0; i < 2; ++i) {
    auto snd = g.add(daydream::comm_task{.op = daydream::comm_op::send, .bytes = 4096, .group_size = 2,
                                         .group_ranks = {0, 1}},
                     {.name = "send", .duration = 3'000, .resource = s0});
    auto rcv = g.add(daydream::comm_task{.op = daydream::comm_op::recv, .bytes = 4096, .group_size = 2,
                                         .group_ranks = {0, 1}},
                     {.name = "recv", .duration = 3'000, .resource = s1});
    g.add_dependency(k0.id, snd.id, daydream::dep_kind::stream_order);
    g.add_dependency(k1.id, rcv.id, daydream::dep_kind::stream_order);
    g.add_dependency(snd.id, rcv.id, daydream::dep_kind::comm); // between NPUs: not written
  }
  auto ex = daydream::io::write_chakra(g);
  REQUIRE(ex.files.size() == 2);
  CHECK_FALSE(ex.copies);
  CHECK(ex.dropped_dependencies == 2);
  namespace c = daydream::io::detail::chakra;
  for (auto& f : ex.files) {
    CHECK(f.collectives == 2);
    auto fr = c::frames(f.bytes, f.name);
    std::int64_t tag = 0;
    for (std::size_t k = 1; k < fr.size(); ++k) {
      pb::Node n;
      REQUIRE(n.ParseFromArray(fr[k].bytes.data(), int(fr[k].bytes.size())));
      if (n.type() == pb::COMP_NODE) continue;
      CHECK(n.type() == (f.npu == 0 ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE));
      CHECK(c::int_attr(n.attr(), "comm_src", -1) == 0);
      CHECK(c::int_attr(n.attr(), "comm_dst", -1) == 1);
      CHECK(c::int_attr(n.attr(), "comm_size", -1) == 4096);
      CHECK(c::int_attr(n.attr(), "comm_tag", -1) == tag++);
      CHECK(n.ctrl_deps_size() == 1); // the kernel before it, not the other NPU's send
    }
    CHECK(tag == 2);
  }
  // Read back, each NPU replays its own part: the kernel, then the two transfers.
  auto r1 = daydream::io::parse_chakra(ex.files[1].bytes, ex.files[1].name);
  CHECK(r1.npu == 1);
  CHECK(daydream::replay(r1.g).makespan == 7'000 + 2 * 3'000);
}
