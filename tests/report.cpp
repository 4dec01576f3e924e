// Tests of report.hpp: pass reports, line by line with typed values.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/report.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace daydream;

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
