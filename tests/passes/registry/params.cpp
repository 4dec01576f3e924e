// Tests of registry/params.hpp: pass parameters as the command line gives them, with units.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/registry/params.hpp>
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

TEST_CASE("pass_params: a quantity with two names is read under the one given, and refused under both") {
  auto p = pass_params::parse("ddp", "nodes=2");
  CHECK(p.given_key("machines", "nodes") == "nodes");
  CHECK(p.get_int(p.given_key("machines", "nodes"), 1) == 2);
  CHECK(pass_params::parse("ddp", "machines=3").given_key("machines", "nodes") == "machines");
  CHECK(pass_params::parse("ddp", "").given_key("machines", "nodes") == "machines");
  CHECK(p.read_keys() == std::vector<std::string>{"nodes"}); // given_key reads nothing itself
  CHECK_THROWS_WITH_AS(pass_params::parse("ddp", "machines=2,nodes=2").given_key("machines", "nodes"),
                       "daydream: pass 'ddp': machines= and nodes= name the same quantity; give one of them",
                       usage_error);
}
