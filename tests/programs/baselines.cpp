// Tests that every command gives the same baseline for the same trace (prediction law 4 of
// docs/accuracy.md): whatif's "baseline", optimize's "as traced", ps's "trace step" and
// strategy's one-GPU iteration are one number, the median steady-state step.
// SPDX-License-Identifier: MIT
#include "captured.hpp"

#include <optimize/optimize.hpp>
#include <ps/ps.hpp>
#include <strategy/strategy.hpp>
#include <whatif/whatif.hpp>

#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

using namespace programs_test;

namespace {

/// The number at `key` of the JSON one in-process run printed on its output file.
double number_of(const std::function<int(std::FILE*)>& run, const char* key) {
  std::FILE* out = std::tmpfile();
  REQUIRE(out);
  const int status = run(out);
  const auto text = slurp(out);
  REQUIRE_MESSAGE(status == 0, text);
  simdjson::dom::parser parser;
  auto doc = parser.parse(text);
  REQUIRE_MESSAGE(!doc.error(), "not JSON: " << text);
  auto v = doc.value()[key];
  REQUIRE_MESSAGE(!v.error(), key << " missing in " << text);
  return num(v.value());
}

} // namespace

TEST_CASE("one baseline for every command: whatif, optimize, ps and strategy agree on the bundled ResNet-50 trace") {
  const std::string trace = std::string(DAYDREAM_EXAMPLE_TRACES) + "/resnet50_v100.json.gz";
  REQUIRE(std::filesystem::exists(trace));
  const std::string model_bytes = "102.2MB"; // ResNet-50's parameters: the trace has no shapes

  whatif_cmd::options w;
  w.trace = trace;
  w.specs = {"amp"};
  w.json = true;
  const double base = number_of(
      [&](std::FILE* out) {
        std::FILE* err = std::tmpfile();
        const int s = whatif_cmd::run(w, out, err);
        std::fclose(err);
        return s;
      },
      "baseline_us");
  CHECK(base > 0);

  ps_cmd::options p;
  p.trace = trace;
  p.workers = "1";
  p.steps = 20;
  p.warmup = 2;
  p.model_bytes = model_bytes;
  p.json = true;
  CHECK(number_of([&](std::FILE* out) { return ps_cmd::run(p, out); }, "trace_step_us") == doctest::Approx(base).epsilon(1e-9));

  optimize_cmd::options o;
  o.traces = {trace};
  o.workers = "2";
  o.model_bytes = model_bytes;
  o.time_budget = "1s";
  o.json = true;
  // optimize replays its iteration alone (without the previous step's GPU backlog): its
  // own baseline is within 2% and it gives the whole trace's too, to the nanosecond.
  CHECK(number_of([&](std::FILE* out) { return optimize_cmd::run(o, out); }, "trace_baseline_us") ==
        doctest::Approx(base).epsilon(1e-9));
  CHECK(number_of([&](std::FILE* out) { return optimize_cmd::run(o, out); }, "baseline_us") ==
        doctest::Approx(base).epsilon(0.02));

  strategy_cmd::options s;
  s.trace = trace;
  s.cluster = "1x2";
  s.strategies = {"dp=1"};
  s.model_bytes = model_bytes;
  s.json = true;
  CHECK(number_of([&](std::FILE* out) { return strategy_cmd::run(s, out); }, "single_gpu_us") ==
        doctest::Approx(base).epsilon(1e-9));
}
