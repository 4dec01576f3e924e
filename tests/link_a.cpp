// Two-translation-unit link test, first unit: a header-only library with a missing `inline` fails to link here.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/format.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

// Defined in link_b.cpp, from the same headers.
std::string link_b_summary(const daydream::graph& g);
daydream::graph link_b_graph();

namespace {

std::string summary(const daydream::graph& g) {
  auto r = daydream::replay(g);
  std::string s = fmt::format("{} tasks, {} ns", g.size(), r.makespan);
  for (auto step : r.critical_path()) s += fmt::format(", {}", daydream::io::describe(g, step.task));
  return s;
}

} // namespace

TEST_CASE("two translation units that include every header link into one program") {
  auto g = link_b_graph();
  CHECK(summary(g) == link_b_summary(g));
  CHECK(summary(g) == "2 tasks, 35 ns, cpu_task#0 \"cudaLaunchKernel\", gpu_kernel#1 \"volta_sgemm\"");
  daydream::check_invariants(g);
  CHECK(daydream::find_cycle(g).empty());
}
