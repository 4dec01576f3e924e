// Tests the what-if program's analysis and outputs, in process, on the bundled real traces and
// on small generated ones with known answers.
// SPDX-License-Identifier: MIT
#include "captured.hpp"
#include "trace_builder.hpp"

#include <support/corpus.hpp>

#include <whatif/whatif.hpp>

#include <daydream/io/kineto.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/update.hpp>

#include <doctest/doctest.h>
#include <simdjson.h>

#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

using namespace programs_test;
using daydream::time_ns;

namespace {

const std::string resnet = DAYDREAM_EXAMPLE_TRACES "/resnet50_v100.json.gz";

/// What one in-process run printed.
struct result {
  int status = -1;
  std::string out, err;
};

result run(whatif_cmd::options o, const daydream::passes::registry<daydream::graph>& reg = daydream::passes::bundled()) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  REQUIRE(out);
  REQUIRE(err);
  result r;
  r.status = whatif_cmd::run(o, out, err, reg);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

whatif_cmd::options json_of(std::string trace, std::vector<std::string> specs = {}) {
  whatif_cmd::options o;
  o.trace = std::move(trace);
  o.specs = std::move(specs);
  o.json = true;
  return o;
}

/// The parsed JSON of a run (the parser must outlive the element).
struct parsed {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  explicit parsed(const std::string& text) {
    auto doc = parser.parse(text);
    REQUIRE_MESSAGE(!doc.error(), "not JSON: " << text);
    root = doc.value();
  }
};

/// A pass for the tests: makes every kernel `factor` times longer and says it models
/// `workers` data-parallel workers (as the distributed passes do).
struct slow_kernels {
  static constexpr std::string_view name = "slow_kernels";
  static constexpr std::string_view help = "test pass";
  double factor = 1.25;
  std::int32_t workers = 16;
  static slow_kernels from_params(const daydream::pass_params& p) {
    slow_kernels s;
    s.factor = p.get_double("factor", 1.25);
    s.workers = std::int32_t(p.get_int("workers", 16));
    p.finish();
    return s;
  }
  daydream::pass_report operator()(daydream::graph& g) const {
    g.for_each_task([&](daydream::task_id t) {
      if (g.is<daydream::gpu_kernel>(t)) daydream::set_duration(g, t, time_ns(double(g.duration(t)) * factor));
    });
    daydream::pass_report r;
    r.workers = workers;
    return r;
  }
};

/// A pass for the tests that finds nothing to do and says so.
struct does_nothing {
  static constexpr std::string_view name = "does_nothing";
  static constexpr std::string_view help = "test pass";
  daydream::pass_report operator()(daydream::graph&) const {
    daydream::pass_report r;
    r.not_applied("the trace has nothing for it");
    return r;
  }
};

daydream::passes::registry<daydream::graph> test_registry() {
  return daydream::passes::registry<daydream::graph>::of<slow_kernels, does_nothing>();
}

} // namespace

TEST_CASE("every pass spec is checked before the trace is read: bad names and parameters are usage errors") {
  // The trace does not exist: a usage error proves the specs were checked first.
  const std::string missing = scratch() / "no-such-trace.json";
  for (std::string spec : {"ampp", "ddp:workers=-3", "ddp:bandwidth=fast", "amp+nope", "amp:bogus=1"}) {
    CAPTURE(spec);
    CHECK_THROWS_AS(run(json_of(missing, {"amp", spec})), daydream::usage_error);
  }
  CHECK_THROWS_WITH(run(json_of(missing, {"ampp"})), doctest::Contains("unknown pass 'ampp'"));
  // A good spec gets as far as the file.
  try {
    run(json_of(missing, {"amp"}));
    FAIL("a missing trace must throw");
  } catch (const daydream::usage_error&) {
    FAIL("a missing trace is not a usage error");
  } catch (const daydream::error& e) {
    CHECK(std::string(e.what()).find("no-such-trace") != std::string::npos);
  }
  whatif_cmd::options o = json_of(resnet, {"amp"});
  o.iteration = 7;
  CHECK_THROWS_AS(run(o), daydream::usage_error); // the trace has ProfilerStep#100..104
}

TEST_CASE("an empty traceEvents is an error saying what to record") {
  auto path = write_file("empty.json", "{\"traceEvents\": []}");
  CHECK_THROWS_WITH_AS(run(json_of(path)), doctest::Contains("ProfilerActivity.CUDA"), daydream::error);
  CHECK_THROWS_WITH_AS(run(json_of(path)), doctest::Contains("\"traceEvents\" is empty"), daydream::error);
}

TEST_CASE("a trace without GPU activity is analysed with a prominent warning") {
  auto path = write_file("cpu-only.json", training_trace({.kernel_us = {100, 100, 100, 100}, .gpu = false}));
  auto r = run(json_of(path, {"amp"}));
  parsed j(r.out);
  auto warnings = j.root["warnings"].get_array().value();
  REQUIRE(warnings.size() >= 1);
  std::string first(warnings.at(0).get_string().value());
  CHECK(first.find("no GPU activity") != std::string::npos);
  CHECK(first.find("ProfilerActivity.CUDA") != std::string::npos);
  // and first in the table
  auto o = json_of(path, {"amp"});
  o.json = false;
  auto t = run(o);
  CHECK(t.out.find("WARNING: " + path + ": no GPU activity") != std::string::npos);
  CHECK(t.out.find("WARNING") < t.out.find("scenario"));
}

namespace {

/// Five 600 us steps: each runs two 400 us kernels at once on stream 7 and a 100 us
/// kernel after them. `graph`: the three are one cudaGraphLaunch's (a CUDA graph's
/// parallel branches, recorded on the launch stream); otherwise each has a launch of its
/// own (kernels of several streams recorded as one).
std::string branches_trace(bool graph) {
  std::string ev;
  auto add = [&](std::string e) { ev += (ev.empty() ? "" : ",\n") + e; };
  int corr = 1;
  for (long long k = 0, t = 0; k < 5; ++k, t += 600) {
    add(X("user_annotation", "ProfilerStep#" + std::to_string(k + 1), 1, 1, t, 600));
    auto on7 = [&](int c) { return "{\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(c) + "}"; };
    auto launch = [&](const char* name, long long at) {
      add(X("cuda_runtime", name, 1, 1, at, graph ? 5 : 1, "{\"correlation\": " + std::to_string(corr) + "}"));
      return corr;
    };
    // the graph launch submits its kernels as it starts; the separate launches return
    // 10 us before the first kernel starts (launch latency, which the replay leaves out)
    int a = launch(graph ? "cudaGraphLaunch" : "cudaLaunchKernel", graph ? t + 20 : t + 9);
    int b = graph ? a : (++corr, launch("cudaLaunchKernel", t + 12));
    int c = graph ? a : (++corr, launch("cudaLaunchKernel", t + 14));
    add(X("kernel", "branch_a_gemm", 0, 7, t + 20, 400, on7(a)));
    add(X("kernel", "branch_b_gemm", 0, 7, t + 20, 400, on7(b)));
    add(X("kernel", "join_add", 0, 7, t + 420, 100, on7(c)));
    ++corr;
    const long long sync = graph ? t + 26 : t + 16;
    add(X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, sync, t + 526 - sync,
          "{\"correlation\": " + std::to_string(corr++) + "}"));
  }
  return "{\"traceEvents\": [" + ev + "]}";
}

/// The warnings of a JSON run that begin with "replay: ".
std::vector<std::string> replay_warnings(const simdjson::dom::element& root) {
  std::vector<std::string> out;
  auto warnings = root["warnings"].get_array();
  if (warnings.error()) return out; // none at all
  for (auto w : warnings.value()) {
    std::string s(w.get_string().value());
    if (s.rfind("replay: ", 0) == 0) out.push_back(s);
  }
  return out;
}

} // namespace

TEST_CASE("a CUDA graph's parallel branches recorded on the launch stream replay as the trace ran them") {
  // Each step's graph launch runs two 400 us kernels at once on stream 7 and a 100 us
  // kernel after them: the ingest puts the second branch on a lane of its own, and the
  // join waits for both, so the replay is the trace's 600 us steps.
  auto path = write_file("graph-branches.json", branches_trace(true));
  parsed j(run(json_of(path, {"amp"})).out);
  CHECK(replay_warnings(j.root).empty());
  CHECK(num(j.root["measured_us"]) == doctest::Approx(600));
  auto iterations = j.root["iterations"].get_array().value(); // kept: the loop reads from it
  for (auto it : iterations) CHECK(num(it["baseline_us"]) == doctest::Approx(600));
}

TEST_CASE("a replay that misses the trace by more than 2% warns and names what it did not model") {
  // The same steps with every kernel launched on its own (kernels of several streams
  // recorded as one stream): nothing says the two 400 us kernels may run at once, the
  // replay runs the stream one kernel at a time and makes the 600 us steps 990 us.
  auto path = write_file("stream-overlap.json", branches_trace(false));
  parsed j(run(json_of(path, {"amp"})).out);
  auto warnings = replay_warnings(j.root);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "replay: the replay of iteration 2 differs from the trace by +65.00% (replayed 0.990 ms, measured 0.600 ms): "
        "along the trace's critical path, 1 GPU operation starts before the previous one on its stream ends (0.400 ms "
        "of overlap, at `branch_b_gemm`): the replay runs a stream's work one at a time (kernels of several streams "
        "recorded as one, or a CUDA graph's parallel branches) (2 more of the analysed iterations differ by over 2%)");
  // A trace the replay reproduces says nothing of the kind.
  auto fine = write_file("fine.json", training_trace({.kernel_us = {500, 500, 500, 500, 500}}));
  parsed k(run(json_of(fine, {"amp"})).out);
  CHECK(replay_warnings(k.root).empty());
}

TEST_CASE("--step-annotation analyses the steps an inference engine marks (vLLM's decode steps)") {
  // Five decode steps of 300 us marked `step[DECODE bs=16]` (no ProfilerStep), each
  // launching one 200 us kernel and waiting for it; a prefill step between two of them.
  std::string ev;
  auto add = [&](std::string e) { ev += (ev.empty() ? "" : ",\n") + e; };
  int corr = 1;
  long long t = 0;
  for (int k = 0; k < 5; ++k) {
    if (k == 2) {
      add(X("user_annotation", "step[PREFILL bs=1]", 1, 1, t, 100));
      add(X("cpu_op", "aten::mm", 1, 1, t + 10, 50));
      t += 100;
    }
    add(X("user_annotation", "step[DECODE bs=16]", 1, 1, t, 300));
    add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 10, 5, "{\"correlation\": " + std::to_string(corr) + "}"));
    add(X("kernel", "decode_gemm", 0, 7, t + 20, 200,
          "{\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(corr) + "}"));
    ++corr;
    add(X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, t + 16, 210, "{\"correlation\": " + std::to_string(corr++) + "}"));
    t += 300;
  }
  auto path = write_file("decode.json", "{\"traceEvents\": [" + ev + "]}");
  auto o = json_of(path, {"speedup:factor=2"});
  o.step_annotation = "step\\[DECODE";
  auto r = run(o);
  parsed j(r.out);
  auto its = j.root["iterations"].get_array().value();
  CHECK(its.size() == 3); // decode steps 2..4: the first and the last are not steady
  CHECK(int64_t(j.root["iterations_in_trace"].get_int64().value()) == 5);
  CHECK(double(j.root["measured_us"].get_double().value()) == doctest::Approx(300));
  CHECK(std::string(j.root["iteration_name"].get_string().value()).rfind("step[DECODE bs=16] #", 0) == 0);
  // Without it, the trace has no step markers: one whole-trace iteration.
  parsed whole(run(json_of(path, {"speedup:factor=2"})).out);
  CHECK(int64_t(whole.root["iterations_in_trace"].get_int64().value()) == 1);
  // A bad expression is the user's mistake; a job takes no step annotation.
  o.step_annotation = "step[DECODE";
  CHECK_THROWS_AS(run(o), daydream::usage_error);
  auto job = json_of(path);
  job.traces = {path, path};
  job.step_annotation = "DECODE";
  CHECK_THROWS_AS(run(job), daydream::usage_error);
}

TEST_CASE("every steady-state iteration is replayed: median headline, spread, and a warning past 10%") {
  // Steps 2..4 are steady state (not the first, not the last); step 3's kernel is 3x longer.
  auto path = write_file("uneven.json", training_trace({.kernel_us = {500, 500, 1500, 500, 500}}));
  auto r = run(json_of(path, {"slow_kernels:factor=2,workers=0"}), test_registry());
  parsed j(r.out);
  auto its = j.root["iterations"].get_array().value();
  REQUIRE(its.size() == 3);
  std::vector<double> base;
  for (auto it : its) base.push_back(num(it["baseline_us"]));
  CHECK(num(its.at(0)["iteration"]) == 2);
  CHECK(num(its.at(2)["iteration"]) == 4);
  CHECK(base[1] > 2.5 * base[0]);
  // the headline is the median (steps 2 and 4 take the same time), not the middle step
  CHECK(num(j.root["baseline_us"]) == doctest::Approx(std::min(base[0], base[2])));
  CHECK(num(j.root["iterations_in_trace"]) == 5);
  CHECK(std::string_view(j.root["iteration_name"].get_string().value()) == "ProfilerStep#2");
  CHECK(num(j.root["spread_us"]["max"]) == doctest::Approx(base[1]));
  auto w = std::string(j.root["warnings"].get_array().value().at(0).get_string().value());
  CHECK(w.find("differ by more than 10%") != std::string::npos);
  auto s = j.root["scenarios"].get_array().value().at(0);
  CHECK(s["per_iteration_us"].get_array().value().size() == 3);
  CHECK(num(s["speedup"]) == doctest::Approx(num(j.root["baseline_us"]) / num(s["predicted_us"])));

  // Wording: the trace's own name for the iteration, and how many the trace has.
  auto o = json_of(path);
  o.json = false;
  o.iteration = 3;
  o.specs = {"does_nothing"};
  auto t = run(o, test_registry());
  CHECK(t.out.find("ProfilerStep#3, 5 iterations in the trace") != std::string::npos);
  CHECK(t.out.find("of 5;") == std::string::npos);
}

TEST_CASE("a pass that changed nothing says no change and why, in the table, the JSON and the report") {
  auto path = write_file("steady.json", training_trace({.kernel_us = {400, 400, 400, 400}}));
  auto o = json_of(path, {"does_nothing"});
  o.report = (scratch() / "nothing.html").string();
  auto r = run(o, test_registry());
  parsed j(r.out);
  auto s = j.root["scenarios"].get_array().value().at(0);
  CHECK(s["applied"].get_bool().value() == false);
  CHECK(std::string_view(s["reason"].get_string().value()) == "the trace has nothing for it");
  auto rep = s["reports"].get_array().value().at(0);
  CHECK(rep["applied"].get_bool().value() == false);
  o.json = false;
  auto t = run(o, test_registry());
  CHECK(t.out.find("no change: the trace has nothing for it") != std::string::npos);
  CHECK(t.out.find("1.00x", t.out.find("does_nothing")) == std::string::npos);
  std::ifstream f(o.report);
  std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(html.find("no change:</b> the trace has nothing for it") != std::string::npos);
}

TEST_CASE("every scenario says what bounds it") {
  auto path = write_file("gpu-bound.json", training_trace({.kernel_us = {2000, 2000, 2000, 2000}}));
  auto r = run(json_of(path, {"slow_kernels:workers=0"}), test_registry());
  parsed j(r.out);
  CHECK(std::string_view(j.root["bound"].get_string().value()).starts_with("GPU-bound: stream 7"));
  CHECK(std::string_view(j.root["scenarios"].get_array().value().at(0)["bound"].get_string().value())
            .starts_with("GPU-bound"));
}

TEST_CASE("the run keeps one scenario's graph at a time: its outputs are those of the graphs kept") {
  // Without an output that writes graphs, each scenario's breakdown, bound and backlog are
  // read off its graph as it is made and the graph goes; with --timeline every graph is
  // kept. The default run on a real trace prints the same in both, table and JSON.
  for (bool json : {true, false}) {
    CAPTURE(json);
    whatif_cmd::options o;
    o.trace = resnet;
    o.json = json;
    const auto dropped = run(o);
    o.timeline = (scratch() / "kept_graphs.json").string();
    const auto kept = run(o);
    REQUIRE(dropped.status == 0);
    REQUIRE(kept.status == 0);
    CHECK(dropped.out == kept.out);
    CHECK(dropped.out.find("bound") != std::string::npos);
  }
}

TEST_CASE("data-parallel scenarios report throughput across workers and scaling efficiency") {
  auto path = write_file("dp.json", training_trace({.kernel_us = {2000, 2000, 2000, 2000}}));
  auto o = json_of(path, {"slow_kernels:factor=1.25,workers=16"});
  o.batch = 32;
  o.report = (scratch() / "dp.html").string();
  auto r = run(o, test_registry());
  parsed j(r.out);
  auto s = j.root["scenarios"].get_array().value().at(0);
  const double base = num(j.root["baseline_us"]), pred = num(s["predicted_us"]);
  CHECK(pred > 1.2 * base); // each iteration is slower ...
  auto tp = s["throughput"];
  CHECK(num(tp["workers"]) == 16);
  CHECK(num(tp["steps_per_s"]) == doctest::Approx(1e6 / pred));
  CHECK(num(tp["samples_per_s"]) == doctest::Approx(16 * 32 * 1e6 / pred));
  // ... but 16 workers train 16 batches at once: throughput 16 x base / pred of one GPU's
  CHECK(num(tp["vs_one_gpu"]) == doctest::Approx(16 * base / pred));
  CHECK(num(tp["scaling_efficiency"]) == doctest::Approx(base / pred));
  CHECK(num(s["speedup"]) == doctest::Approx(16 * base / pred));
  CHECK(num(s["speedup"]) > 10);
  CHECK(num(s["iteration_speedup"]) == doctest::Approx(base / pred));
  o.json = false;
  auto t = run(o, test_registry());
  CHECK(t.out.find("16 workers:") != std::string::npos);
  CHECK(t.out.find("samples/s (batch 32 per worker)") != std::string::npos);
  CHECK(t.out.find("scaling efficiency") != std::string::npos);
  std::ifstream f(o.report);
  std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(html.find("16 workers:") != std::string::npos);
}

TEST_CASE("peak memory starts from what the trace had allocated before its first [memory] event") {
  auto path = write_file("memory.json", training_trace({.kernel_us = {300, 300, 300, 300}, .memory_before = 100'000'000}));
  auto r = run(json_of(path, {"slow_kernels:workers=0"}), test_registry());
  parsed j(r.out);
  CHECK(std::string_view(j.root["memory"]["source"].get_string().value()) == "trace");
  CHECK(num(j.root["memory"]["initial_allocated_bytes"]) == 100'000'000);
  CHECK(num(j.root["baseline_peak_memory_bytes"]) == 100'001'000);
  CHECK(num(j.root["memory"]["trace_peak_bytes"]) == 100'001'000);
  CHECK(std::string_view(j.root["memory_model"].get_string().value()).find("[memory] events") != std::string_view::npos);
  // Without memory events and tensor shapes, nothing is claimed.
  auto bare = write_file("bare.json", training_trace({.kernel_us = {300, 300, 300, 300}}));
  parsed k(run(json_of(bare, {"slow_kernels:workers=0"}), test_registry()).out);
  CHECK(std::string_view(k.root["memory"]["source"].get_string().value()) == "none");
  CHECK(k.root["baseline_peak_memory_bytes"].is_null());
  CHECK(std::string_view(k.root["memory_model"].get_string().value()).find("not predicted") == 0);
}

TEST_CASE("the bundled ResNet-50 trace: three steady-state iterations, critical path and report that add up") {
  auto o = json_of(resnet, {"amp"});
  o.critical = true;
  o.report = (scratch() / "resnet.html").string();
  auto r = run(o);
  parsed j(r.out);
  CHECK(j.root["iterations"].get_array().value().size() == 3);
  CHECK(num(j.root["measured_us"]) == doctest::Approx(95551.087));
  // the critical path summary (on stderr with --json) is grouped, not 700 rows
  CHECK(r.err.find("aten::conv2d ") != std::string::npos);
  CHECK(r.err.find("aten::conv2d#") == std::string::npos);
  auto rows = std::count(r.err.begin(), r.err.end(), '\n');
  CHECK(rows < 30);
  CHECK(r.err.find("total") != std::string::npos);
  std::ifstream f(o.report);
  std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(html.find("communication only") != std::string::npos);
  CHECK(html.find("Critical path of ProfilerStep#") != std::string::npos);
}

TEST_CASE("long scenario names are written whole in the report") {
  auto path = write_file("long.json", training_trace({.kernel_us = {400, 400, 400, 400}}));
  auto o = json_of(path, {"slow_kernels:factor=1.5,workers=0+slow_kernels:factor=1.5,workers=0+slow_kernels:factor=1.5,workers=0"});
  o.report = (scratch() / "long.html").string();
  run(o, test_registry());
  std::ifstream f(o.report);
  std::string html((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // in the table and in both charts
  std::size_t n = 0;
  for (auto p = html.find(o.specs[0]); p != std::string::npos; p = html.find(o.specs[0], p + 1)) ++n;
  CHECK(n == 3);
  CHECK(html.find("<svg") == std::string::npos); // no fixed-width label boxes
}

TEST_CASE("a real trace with [memory] events: the predicted peak starts from its allocated level") {
  // BERT inference on an H100: most of its memory (weights) is allocated before the
  // first [memory] event of the trace.
  auto path = daydream::testing::bundled("tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz");
  parsed j(run(json_of(path.string(), {"amp"})).out);
  CHECK(std::string_view(j.root["memory"]["source"].get_string().value()) == "trace");
  const double initial = num(j.root["memory"]["initial_allocated_bytes"]);
  const double trace_peak = num(j.root["memory"]["trace_peak_bytes"]);
  const double peak = num(j.root["baseline_peak_memory_bytes"]);
  CHECK(initial > 0.5 * trace_peak);
  CHECK(peak >= initial);
  CHECK(peak == doctest::Approx(trace_peak).epsilon(0.05));
}

TEST_CASE("a trace without step markers says the iteration cannot be told and analyses the whole trace") {
  // One eager forward pass on a B200: no ProfilerStep, no optimizer step.
  auto path = daydream::testing::bundled("tracelens_b200_eager/eager_trace.json.gz");
  auto o = json_of(path.string(), {"amp"});
  parsed j(run(o).out);
  CHECK(j.root["iterations"].get_array().value().size() == 1);
  CHECK(std::string_view(j.root["iteration_name"].get_string().value()) == "the whole trace");
  auto w = std::string(j.root["warnings"].get_array().value().at(0).get_string().value());
  CHECK(w.find("cannot be told") != std::string::npos);
  o.json = false;
  auto t = run(o);
  CHECK(t.out.find("WARNING: ") != std::string::npos);
  CHECK(t.out.find("the whole trace is analysed as one iteration") != std::string::npos);
}

TEST_CASE("a rank of a data-parallel job: no default data-parallel scenarios, and throughput against the traced job") {
  // Rank 0 of a 16-GPU DDP job with NCCL all-reduces.
  auto path = daydream::testing::bundled("hta_ddp_a100_16rank/rank0.steps550-553.json.gz").string();
  parsed j(run(json_of(path)).out);
  CHECK(num(j.root["workers"]) == 16);
  auto reasons = j.root["not_applicable_reasons"];
  for (auto name : {"ddp", "p3", "blueconnect", "tensor_fusion"}) {
    CAPTURE(name);
    auto why = reasons[name];
    REQUIRE(!why.error());
    CHECK(std::string_view(why.get_string().value()).find("already data-parallel") != std::string_view::npos);
  }
  // Bound to a name first: a range-for over value() of a temporary result would iterate
  // an array whose result object is already gone.
  auto scenarios = j.root["scenarios"].get_array().value();
  for (auto s : scenarios) {
    std::string_view name = s["name"].get_string().value();
    CHECK(name.find("workers=") == std::string_view::npos);
  }
  // An explicit cluster replaces the recorded one: 32 workers against the traced 16.
  parsed k(run(json_of(path, {"ddp:workers=32,bandwidth=100Gbps"})).out);
  auto s = k.root["scenarios"].get_array().value().at(0);
  REQUIRE(s["error"].error()); // not refused
  const double base = num(k.root["baseline_us"]), pred = num(s["predicted_us"]);
  CHECK(num(s["throughput"]["workers"]) == 32);
  CHECK(num(s["speedup"]) == doctest::Approx(32.0 * base / (16.0 * pred)));
  CHECK(s["throughput"]["vs_one_gpu"].is_null());
  CHECK(s["throughput"]["scaling_efficiency"].is_null());
}

TEST_CASE("a sweep: every chain at every point, each predicted as the single run of its spec, as JSON and CSV") {
  auto csv_path = (scratch() / "sweep.csv").string();
  auto o = json_of(resnet, {"slow_kernels", "does_nothing"});
  o.vary = {"factor=1,1.5", "workers=2,4"};
  o.csv = csv_path;
  auto r = run(o, test_registry());
  REQUIRE(r.status == 0);
  parsed j(r.out);
  const double base = num(j.root["baseline_us"]);
  CHECK(num(j.root["sweep"]["points"]) == 8);
  CHECK(num(j.root["sweep"]["evaluated"]) == 5); // does_nothing takes neither key: predicted once
  CHECK(num(j.root["sweep"]["ranks"]) == 1);
  auto rows = j.root["results"].get_array().value();
  REQUIRE(rows.size() == 8);
  std::vector<std::string> seen;
  for (auto row : rows) {
    std::string spec(row["spec"].get_string().value());
    std::string chain(row["scenario"].get_string().value());
    seen.push_back(spec);
    CAPTURE(spec);
    if (chain == "does_nothing") {
      CHECK(spec == "does_nothing");
      CHECK(row["applied"].get_bool().value() == false);
      std::string note(row["note"].get_string().value());
      CHECK(note.find("changed nothing: the trace has nothing for it") != std::string::npos);
      CHECK(note.find("takes no factor, workers") != std::string::npos);
      CHECK(num(row["predicted_us"]) == base);
      continue;
    }
    const std::string factor(row["params"]["factor"].get_string().value());
    const double workers = std::stod(std::string(row["params"]["workers"].get_string().value()));
    CHECK(num(row["workers"]) == workers);
    if (factor == "1") {
      // Kernels unchanged: the baseline's iteration on `workers` GPUs.
      CHECK(num(row["predicted_us"]) == base);
      CHECK(num(row["speedup"]) == doctest::Approx(workers));
    } else {
      CHECK(num(row["predicted_us"]) > base);
    }
    // The same number as a plain run of the spec.
    parsed one(run(json_of(resnet, {spec}), test_registry()).out);
    CHECK(num(one.root["scenarios"].get_array().value().at(0)["predicted_us"]) == num(row["predicted_us"]));
  }
  CHECK(seen == std::vector<std::string>{"slow_kernels:factor=1,workers=2", "slow_kernels:factor=1,workers=4",
                                         "slow_kernels:factor=1.5,workers=2", "slow_kernels:factor=1.5,workers=4",
                                         "does_nothing", "does_nothing", "does_nothing", "does_nothing"});

  std::FILE* f = std::fopen(csv_path.c_str(), "rb");
  REQUIRE(f);
  auto csv = slurp(f);
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < csv.size();) {
    auto nl = csv.find('\n', at);
    lines.push_back(csv.substr(at, nl - at));
    at = nl + 1;
  }
  REQUIRE(lines.size() == 9);
  CHECK(lines[0] == "scenario,params.factor,params.workers,spec,predicted_us,baseline_us,iteration_speedup,speedup,"
                    "workers,steps_per_s,samples_per_s,peak_memory_bytes,applied,note,bound");
  // A spec with a comma is one quoted field.
  CHECK(lines[1].rfind("slow_kernels,1,2,\"slow_kernels:factor=1,workers=2\",", 0) == 0);
  CHECK(lines[5].find(",false,\"changed nothing: the trace has nothing for it; takes no factor, workers\"") !=
        std::string::npos);
}

TEST_CASE("sweep mistakes are usage errors before the trace is read") {
  auto o = json_of("/no/such/trace.json", {"slow_kernels"});
  o.vary = {"factr=1,2"};
  CHECK_THROWS_WITH_AS(run(o, test_registry()), doctest::Contains("no pass of the sweep takes 'factr'"),
                       daydream::usage_error);
  o.vary = {"factor=1,x"};
  CHECK_THROWS_WITH_AS(run(o, test_registry()), doctest::Contains("factor=x"), daydream::usage_error);
  o.vary = {"factor=1"};
  o.report = "r.html";
  CHECK_THROWS_WITH_AS(run(o, test_registry()), doctest::Contains("describe one run"), daydream::usage_error);
  auto p = json_of(resnet, {"slow_kernels"});
  p.csv = "x.csv";
  CHECK_THROWS_WITH_AS(run(p, test_registry()), doctest::Contains("--csv is for a sweep"), daydream::usage_error);
}

TEST_CASE("gpu: --vary target=A100,H100,B200 answers which GPU; the trace's own GPU changes nothing") {
  // resnet50_v100 recorded a Tesla V100-SXM2-32GB (deviceProperties): the catalogue's V100.
  auto o = json_of(resnet);
  o.vary = {"target=A100,H100,B200,V100"};
  auto r = run(o);
  REQUIRE(r.status == 0);
  parsed j(r.out);
  const double base = num(j.root["baseline_us"]);
  auto rows = j.root["results"].get_array().value();
  REQUIRE(rows.size() == 4);
  std::map<std::string, double> step;
  for (auto row : rows) {
    CHECK(std::string(row["scenario"].get_string().value()) == "gpu");
    step[std::string(row["params"]["target"].get_string().value())] = num(row["predicted_us"]);
  }
  CHECK(step["V100"] == base);          // the recorded GPU: unchanged
  CHECK(step["A100"] < base);           // every figure of the A100 is the V100's or more, but the clock
  CHECK(step["H100"] <= step["A100"]);  // faster in every figure again (here the CPU bounds both)
  CHECK(step["B200"] <= step["H100"] * 1.02);
}

TEST_CASE("gpu: a trace without deviceProperties needs source=, an unknown GPU is named: usage errors") {
  auto path = write_file("no-device.json", training_trace({.kernel_us = {100, 100, 100, 100}}));
  CHECK_THROWS_WITH_AS(run(json_of(path, {"gpu:target=H100"})), doctest::Contains("give source=NAME"),
                       daydream::usage_error);
  CHECK(run(json_of(path, {"gpu:target=H100,source=A100"})).status == 0);
  CHECK_THROWS_WITH_AS(run(json_of(resnet, {"gpu:target=H900"})), doctest::Contains("unknown target GPU 'H900'"),
                       daydream::usage_error);
  CHECK_THROWS_WITH_AS(run(json_of(resnet, {"gpu"})), doctest::Contains("give target=NAME"), daydream::usage_error);
  // Composes: amp, then the H100.
  auto both = run(json_of(resnet, {"amp+gpu:target=H100"}));
  CHECK(both.status == 0);
}
