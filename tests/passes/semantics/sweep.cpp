// Tests passes::expand_sweep: the grid of chains x parameter values, how values reach the
// passes, repeated points, and the errors that must come before anything runs.
// SPDX-License-Identifier: MIT
#include <daydream/registry/sweep.hpp>

#include <daydream/graph.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using daydream::graph;
using daydream::passes::expand_sweep;
using daydream::passes::sweep_axis;

// Three passes that do nothing but take parameters, as the bundled ones do.
struct cluster_pass {
  static constexpr std::string_view name = "cluster";
  double workers = 1, bandwidth = 0;
  static cluster_pass from_params(const daydream::pass_params& p) {
    cluster_pass c;
    c.workers = double(p.get_int("workers", 1));
    c.bandwidth = p.get_bandwidth("bandwidth", 1e9);
    p.finish();
    return c;
  }
  void operator()(graph&) const {}
};
struct scale_pass {
  static constexpr std::string_view name = "scale";
  static scale_pass from_params(const daydream::pass_params& p) {
    (void)p.get_double("compute", 2);
    p.finish();
    return {};
  }
  void operator()(graph&) const {}
};
// Reads `chunk` only when `split` is on: what it takes depends on what it is given.
struct split_pass {
  static constexpr std::string_view name = "split";
  static split_pass from_params(const daydream::pass_params& p) {
    if (p.get_bool("split", false)) (void)p.get_bytes("chunk", 1 << 20);
    p.finish();
    return {};
  }
  void operator()(graph&) const {}
};

auto reg() { return daydream::passes::registry<graph>::of<cluster_pass, scale_pass, split_pass>(); }

std::vector<std::string> specs(const daydream::passes::sweep_grid& g) {
  std::vector<std::string> out;
  for (auto& p : g.points) out.push_back(p.spec);
  return out;
}

} // namespace

TEST_CASE("a pass names the parameters it takes, given what it is given") {
  auto r = reg();
  CHECK(r.parameters("cluster") == std::vector<std::string>{"bandwidth", "workers"});
  CHECK(r.parameters("scale:compute=3") == std::vector<std::string>{"compute"});
  CHECK(r.parameters("split") == std::vector<std::string>{"split"});
  CHECK(r.parameters("split:split=on") == std::vector<std::string>{"chunk", "split"});
  // A pass that refuses its parameters still names what it read before refusing.
  CHECK(r.parameters("cluster:workers=x") == std::vector<std::string>{"workers"});
}

TEST_CASE("every chain at every combination, the last axis fastest, values set on the passes that take them") {
  auto g = expand_sweep(reg(), {"cluster", "scale+cluster:workers=2"},
                        {sweep_axis::parse("workers=4,8"), sweep_axis::parse("bandwidth=10Gbps,100Gbps,1Tbps")});
  REQUIRE(g.points.size() == 12);
  CHECK(g.distinct() == 12);
  CHECK(specs(g) == std::vector<std::string>{
                        "cluster:bandwidth=10Gbps,workers=4", "cluster:bandwidth=100Gbps,workers=4",
                        "cluster:bandwidth=1Tbps,workers=4", "cluster:bandwidth=10Gbps,workers=8",
                        "cluster:bandwidth=100Gbps,workers=8", "cluster:bandwidth=1Tbps,workers=8",
                        // The grid's value replaces the chain's own (workers=2).
                        "scale+cluster:bandwidth=10Gbps,workers=4", "scale+cluster:bandwidth=100Gbps,workers=4",
                        "scale+cluster:bandwidth=1Tbps,workers=4", "scale+cluster:bandwidth=10Gbps,workers=8",
                        "scale+cluster:bandwidth=100Gbps,workers=8", "scale+cluster:bandwidth=1Tbps,workers=8"});
  auto& p = g.points[4];
  CHECK(p.chain == 0);
  CHECK(p.at == std::vector<std::size_t>{1, 1});
  CHECK(g.value(p, 0) == "8");
  CHECK(g.value(p, 1) == "100Gbps");
  CHECK(p.unused.empty());
}

TEST_CASE("a placeholder puts a value exactly where the chain says, and nowhere else") {
  auto g = expand_sweep(reg(), {"scale:compute={c}+cluster"}, {sweep_axis::parse("c=1.5,3")});
  CHECK(specs(g) == std::vector<std::string>{"scale:compute=1.5+cluster", "scale:compute=3+cluster"});
  // The same key as a placeholder in one pass is not added to another pass that takes it.
  auto h = expand_sweep(reg(), {"cluster:workers={workers}+cluster"}, {sweep_axis::parse("workers=2,4")});
  CHECK(specs(h) == std::vector<std::string>{"cluster:workers=2+cluster", "cluster:workers=4+cluster"});
}

TEST_CASE("a chain that takes none of an axis repeats its point, named as the same as the first") {
  auto g = expand_sweep(reg(), {"scale", "cluster"}, {sweep_axis::parse("workers=2,4,8")});
  REQUIRE(g.points.size() == 6);
  CHECK(g.distinct() == 4);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(g.points[k].spec == "scale");
    CHECK(g.points[k].same_as == 0);
    CHECK(g.points[k].unused == std::vector<std::string>{"workers"});
  }
  for (std::size_t k = 3; k < 6; ++k) {
    CHECK(g.points[k].same_as == k);
    CHECK(g.points[k].unused.empty());
  }
}

TEST_CASE("what a pass takes is asked with the chain's own parameters") {
  // split takes chunk only with split=on: the axis reaches the second chain only.
  auto g = expand_sweep(reg(), {"split", "split:split=on"}, {sweep_axis::parse("chunk=1MB,4MB")});
  CHECK(specs(g) == std::vector<std::string>{"split", "split", "split:chunk=1MB,split=on", "split:chunk=4MB,split=on"});
}

TEST_CASE("no axis: the chains themselves, once each") {
  auto g = expand_sweep(reg(), {"scale", "cluster:workers=3"}, {});
  CHECK(specs(g) == std::vector<std::string>{"scale", "cluster:workers=3"});
}

TEST_CASE("mistakes are usage errors before anything runs") {
  auto r = reg();
  using E = daydream::usage_error;
  CHECK_THROWS_WITH_AS(sweep_axis::parse("workers"), doctest::Contains("key=value,value"), E);
  CHECK_THROWS_WITH_AS(sweep_axis::parse("=4"), doctest::Contains("key=value,value"), E);
  CHECK_THROWS_WITH_AS(sweep_axis::parse("workers=4,,8"), doctest::Contains("an empty value"), E);
  CHECK_THROWS_WITH_AS(sweep_axis::parse("workers=4,4"), doctest::Contains("'4' is given twice"), E);
  CHECK_THROWS_WITH_AS(expand_sweep(r, {}, {}), doctest::Contains("at least one pass chain"), E);
  CHECK_THROWS_WITH_AS(expand_sweep(r, {"cluster"}, {sweep_axis::parse("bandwith=1,2")}),
                       doctest::Contains("no pass of the sweep takes 'bandwith' (cluster)"), E);
  CHECK_THROWS_WITH_AS(expand_sweep(r, {"cluster:workers={n}"}, {sweep_axis::parse("w=1,2")}),
                       doctest::Contains("the placeholder {n} has no --vary"), E);
  CHECK_THROWS_WITH_AS(expand_sweep(r, {"cluster"}, {sweep_axis::parse("workers=1"), sweep_axis::parse("workers=2")}),
                       doctest::Contains("--vary workers is given twice"), E);
  CHECK_THROWS_WITH_AS(expand_sweep(r, {"nope"}, {sweep_axis::parse("workers=1")}), doctest::Contains("unknown pass 'nope'"),
                       E);
}
