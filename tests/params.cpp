// Tests of params.hpp: pass parameters with units, and pass reports.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/params.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace daydream;

TEST_CASE("pass_params reads values with units") {
  auto p = pass_params::parse("ddp", "workers=16,bandwidth=25Gbps,bucket=25MB,chunk=64KiB,latency=5us,"
                                     "fused=yes,rate=12.5GB/s,scale=0.5,plain=25");
  CHECK(p.pass() == "ddp");
  CHECK(p.has("workers"));
  CHECK(p.get_int("workers", 1) == 16);
  CHECK(p.get_bandwidth("bandwidth", 0) == doctest::Approx(25e9 / 8));
  CHECK(p.get_bandwidth("rate", 0) == doctest::Approx(12.5e9));
  CHECK(p.get_bandwidth("plain", 0) == doctest::Approx(25e9 / 8)); // a plain number is Gbit/s
  CHECK(p.get_bytes("bucket", 0) == doctest::Approx(25e6));
  CHECK(p.get_bytes("chunk", 0) == doctest::Approx(65536));
  CHECK(p.get_time_ns("latency", 0) == doctest::Approx(5'000));
  CHECK(p.get_bool("fused", false));
  CHECK(p.get_double("scale", 1) == doctest::Approx(0.5));
  CHECK(p.get_double("missing", 7) == 7);
  CHECK_NOTHROW(p.finish());
  CHECK(p.items().size() == 9);

  SUBCASE("more spellings") {
    auto q = pass_params::parse("x", "a=100Gb/s,b=16GiB/s,c=900GBps,d=1.5ms,e=2s,f=300ns,g=7,h=25MiB,i=1GB,j=512");
    CHECK(q.get_bandwidth("a", 0) == doctest::Approx(12.5e9));
    CHECK(q.get_bandwidth("b", 0) == doctest::Approx(16.0 * 1024 * 1024 * 1024));
    CHECK(q.get_bandwidth("c", 0) == doctest::Approx(900e9));
    CHECK(q.get_time_ns("d", 0) == doctest::Approx(1.5e6));
    CHECK(q.get_time_ns("e", 0) == doctest::Approx(2e9));
    CHECK(q.get_time_ns("f", 0) == doctest::Approx(300));
    CHECK(q.get_time_ns("g", 0) == doctest::Approx(7'000)); // a plain number is microseconds
    CHECK(q.get_bytes("h", 0) == doctest::Approx(25.0 * 1024 * 1024));
    CHECK(q.get_bytes("i", 0) == doctest::Approx(1e9));
    CHECK(q.get_bytes("j", 0) == doctest::Approx(512));
    CHECK_NOTHROW(q.finish());
  }
  SUBCASE("unknown keys are rejected by finish(), naming them") {
    auto q = pass_params::parse("amp", "compute=3,memroy=2");
    CHECK(q.get_double("compute", 1) == 3);
    CHECK_THROWS_WITH_AS(q.finish(), doctest::Contains("has no parameter named: memroy"), error);
  }
  SUBCASE("bad values are refused with the key and the value") {
    auto q = pass_params::parse("x", "a=25Gbpx,b=five,c=1.5,d=3 parsecs,e=maybe,f=-1,g=2MX");
    CHECK_THROWS_WITH_AS(q.get_bandwidth("a", 0), doctest::Contains("a=25Gbpx"), error);
    CHECK_THROWS_AS(q.get_double("b", 0), error);
    CHECK_THROWS_WITH_AS(q.get_int("c", 0), doctest::Contains("whole number"), error);
    CHECK_THROWS_AS(q.get_time_ns("d", 0), error);
    CHECK_THROWS_AS(q.get_bool("e", false), error);
    CHECK_THROWS_AS(q.get_double("f", 0), error);
    CHECK_THROWS_AS(q.get_bytes("g", 0), error);
  }
  SUBCASE("malformed specs are refused") {
    CHECK_THROWS_WITH_AS(pass_params::parse("x", "novalue"), doctest::Contains("key=value"), error);
    CHECK_THROWS_AS(pass_params::parse("x", "=3"), error);
    CHECK(pass_params::parse("x", "").items().empty());
    CHECK(pass_params::parse("x", "a=1,,b=2").items().size() == 2);
  }
}

TEST_CASE("a report's value is its first line of that key, and empty for a key it lacks") {
  pass_report r;
  r.add("kernels", "3");
  r.add("bytes", "1 kB");
  r.add("kernels", "4");
  CHECK(r.value("kernels") == "3");
  CHECK(r.value("bytes") == "1 kB");
  CHECK(r.value("nothing").empty());
}

TEST_CASE("a report line keeps its key and printed text, and says its value typed") {
  pass_report r;
  r.pass = "example";
  r.add_count("buckets", 4);
  r.add("all-reduce time", "1.20 ms", report_value::of_time(1.2e6));
  r.add("GEMM kernels", "2 kernels, 360 ns -> 120 ns",
        report_value::of_change(report_kind::time, 360, 120).with_count(2));
  r.add("link", "NIC node 0");
  REQUIRE(r.items.size() == 4);

  CHECK(r.value("buckets") == "4");
  const auto& buckets = r.at("buckets").value;
  CHECK(buckets.kind == report_kind::count);
  CHECK(buckets.value == 4);
  CHECK(buckets.count == 4);

  CHECK(r.at("all-reduce time").value == report_value{report_kind::time, 1.2e6});
  CHECK(r.at("all-reduce time").value.count == -1);

  const auto& gemm = r.at("GEMM kernels").value;
  CHECK(gemm.kind == report_kind::change);
  CHECK(gemm.unit == report_kind::time);
  CHECK(gemm.before == 360);
  CHECK(gemm.value == 120);
  CHECK(gemm.count == 2);

  CHECK(r.at("link").value == report_value::of_text());
  CHECK(r.at("link").text == "NIC node 0");

  CHECK(r.find("nothing") == nullptr);
  CHECK(r.find("link") == &r.items.back());
  CHECK_THROWS_WITH_AS((void)r.at("nothing"),
                       "daydream: the report of pass 'example' has no line 'nothing' (it has: buckets, all-reduce time, "
                       "GEMM kernels, link)",
                       error);

  SUBCASE("a line decomposes into its key and its text, as the programs print it") {
    std::string printed;
    for (const auto& [key, text] : r.items) printed += key + ": " + text + "\n";
    CHECK(printed == "buckets: 4\nall-reduce time: 1.20 ms\nGEMM kernels: 2 kernels, 360 ns -> 120 ns\n"
                     "link: NIC node 0\n");
    for (auto& [key, text] : r.items) text += ".";
    CHECK(r.value("link") == "NIC node 0.");
    auto [k, t] = report_item{"a", "b", report_value::of_ratio(0.5)};
    CHECK(k == "a");
    CHECK(t == "b");
  }
}

TEST_CASE("report kinds have names") {
  CHECK(to_string(report_kind::count) == "count");
  CHECK(to_string(report_kind::change) == "change");
  CHECK(to_string(report_kind(200)) == "?");
  static_assert(report_value::of_rate(1e9).kind == report_kind::rate);
  static_assert(report_value::of_ratio(0.5).value == 0.5);
  static_assert(report_value::of_bytes(8).with_count(3).count == 3);
}
