// Defines testing::check_pass_laws: daydream::check_pass_laws (the public law checker) as doctest assertions.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_PASS_LAWS_HPP
#define DAYDREAM_TESTS_SUPPORT_PASS_LAWS_HPP

#include <daydream/pass.hpp>
#include <daydream/pass_laws.hpp>
#include <support/fixtures.hpp>

#include <doctest/doctest.h>

#include <vector>

namespace daydream::testing {

/// What check_pass_laws saw, for further checks by the caller: daydream::pass_law_report.
using law_summary = daydream::pass_law_report;
/// How strict check_pass_laws is: daydream::pass_law_options.
using law_options = daydream::pass_law_options;

/// Runs daydream::check_pass_laws (include/daydream/pass_laws.hpp: the laws every pass
/// must obey) on `fixtures` and fails a doctest check for each law the pass breaks. Call
/// it from every pass test:
///
///     TEST_CASE("amp obeys the pass laws") {
///       daydream::testing::check_pass_laws(daydream::passes::amp{},
///                                          daydream::testing::standard_fixtures());
///     }
template <class Pass, class Graph>
law_summary check_pass_laws(const Pass& pass, const std::vector<fixture<Graph>>& fixtures,
                            const law_options& options = {}) {
  auto laws = daydream::check_pass_laws(pass, fixtures, options);
  INFO("pass: " << laws.pass);
  for (const auto& v : laws.violations) FAIL_CHECK("law " << v.law << ", fixture '" << v.fixture << "': " << v.what);
  CHECK(laws.ok());
  return laws;
}

} // namespace daydream::testing

#endif
