// Tests of what_if.hpp: a pass applied as a transaction and replayed with its own policy, its reports handed back.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/report.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/what_if.hpp>
#include <support/compare.hpp>
#include <support/fixtures.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using namespace daydream;

namespace {

struct halve_gemms {
  static constexpr std::string_view name = "halve-gemms";
  pass_report operator()(graph& g) const {
    pass_report r;
    int n = 0;
    for (auto k : tasks<gpu_kernel>(g) | where(name_matches("gemm"))) {
      scale_duration(g, k, 0.5);
      ++n;
    }
    r.add_count("kernels halved", n);
    return r;
  }
};
struct pushes_first {
  static constexpr std::string_view name = "pushes-first";
  using policy = priority_policy;
  void operator()(graph& g) const {
    for (auto t : tasks<comm_task>(g)) reschedule(g, t, as_soon_as_ready);
  }
};
struct gives_up {
  static constexpr std::string_view name = "gives-up";
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g)) set_duration(g, k, 1);
    throw error("not today");
  }
};

} // namespace

TEST_CASE("what_if applies a pass and hands back its report and the replay") {
  graph g = testing::shared_channel();
  auto [reports, r] = what_if(g, halve_gemms{});
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].pass == "halve-gemms"); // named after the pass when it names itself nothing
  CHECK(reports[0].at("kernels halved").value.count == 1);
  CHECK(g.duration(1) == 20);
  CHECK(testing::replay_difference(r, replay(g)) == "");
  CHECK(r.start[1] == 10);
}

TEST_CASE("what_if replays with the pass's own policy") {
  graph g = testing::shared_channel();
  auto res = what_if(g, pushes_first{});
  REQUIRE(res.reports.size() == 1);
  CHECK(res.reports[0].pass == "pushes-first"); // a pass that returns nothing
  CHECK(res.reports[0].items.empty());
  CHECK(res.replay.start[2] == 10); // the push first, as priority_policy runs it
  CHECK(res.replay.start[1] == 30);
  CHECK(testing::replay_difference(res.replay, replay(g, priority_policy{})) == "");
  CHECK(replay(g).start[1] == 10); // trace order would have run the kernel first
}

TEST_CASE("what_if runs a pipeline as one transaction and reports each pass") {
  graph g = testing::shared_channel();
  auto [reports, r] = what_if(g, halve_gemms{} | pushes_first{} | halve_gemms{});
  REQUIRE(reports.size() == 3);
  CHECK(reports[0].pass == "halve-gemms");
  CHECK(reports[1].pass == "pushes-first");
  CHECK(reports[2].value("kernels halved") == "1");
  CHECK(g.duration(1) == 10);
  CHECK(r.start[2] == 10); // the pipeline's policy: pushes_first's
  CHECK(r.makespan == 40);
}

TEST_CASE("what_if leaves the graph as it was when a pass is refused") {
  const graph original = testing::shared_channel();
  graph g = original;
  CHECK_THROWS_WITH_AS(what_if(g, halve_gemms{} | gives_up{}),
                       doctest::Contains("pass 'pipeline' was refused and the graph left unchanged: not today"), error);
  CHECK(testing::graph_difference(original, g) == "");
}
