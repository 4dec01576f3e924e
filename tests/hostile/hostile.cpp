// Tests hostile input and failing passes: malformed traces get errors that name the file, the place and the reason; refused passes leave the graph as it was; output is deterministic.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/semantics/memory.hpp>
#include <support/compare.hpp>
#include <support/fixtures.hpp>
#include <support/temp_dir.hpp>

#include <doctest/doctest.h>
#include <range/v3/iterator/operations.hpp>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <algorithm>
#include <vector>


using namespace daydream;
namespace dio = daydream::io;
namespace fs = std::filesystem;

namespace {

/// A committed input of tests/hostile/inputs.
fs::path input(std::string_view name) {
  return fs::path(DAYDREAM_SOURCE_DIR) / "tests" / "hostile" / "inputs" / std::string(name);
}

/// The message load_kineto throws for `p`; fails the test if it loads.
std::string load_error(const fs::path& p) {
  try {
    dio::load_kineto(p);
  } catch (const daydream::error& e) {
    return e.what();
  }
  FAIL_CHECK("loaded without an error: " << p.string());
  return {};
}

/// The message of a load of committed input `name`, after "daydream: <path>: ".
std::string error_after_path(std::string_view name) {
  const auto p = input(name);
  const auto msg = load_error(p);
  const auto prefix = "daydream: " + p.string() + ": ";
  INFO(msg);
  REQUIRE(msg.substr(0, prefix.size()) == prefix);
  return msg.substr(prefix.size());
}

/// The message parse_kineto throws for `json`, named `source`.
std::string parse_error(std::string_view json, std::string_view source) {
  try {
    dio::parse_kineto(json, source);
  } catch (const daydream::error& e) {
    return e.what();
  }
  FAIL_CHECK("parsed without an error: " << source);
  return {};
}

void check_accounting(const dio::kineto_trace& t) {
  CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
  CHECK_NOTHROW(check_invariants(t.g));
  CHECK_NOTHROW(replay(t.g));
}

/// The only task named `name`.
task_id named(const graph& g, std::string_view name) {
  task_id found = no_task;
  std::size_t n = 0;
  g.for_each_task([&](task_id t) {
    if (g.name(t) == name) { found = t; ++n; }
  });
  REQUIRE_MESSAGE(n == 1, n << " tasks named " << name);
  return found;
}

/// The launch calls of a task (its predecessors over launch dependencies).
std::vector<task_id> launchers(const graph& g, task_id t) {
  std::vector<task_id> out;
  for (auto d : g.predecessors(t))
    if (d.kind == dep_kind::launch) out.push_back(d.from);
  return out;
}

using temp_dir = daydream::testing::temp_dir;

/// A complete event of a CPU thread, times in microseconds.
std::string cpu_event(std::string_view cat, std::string_view name, long long ts, long long dur,
                      std::string_view args = "{}") {
  return "{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":\"" + std::string(name) +
         "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
         ",\"args\":" + std::string(args) + "}";
}

} // namespace

// ------------------------------------------------------------------------ malformed JSON

TEST_CASE("hostile: truncated JSON names the end of the input as the place") {
  // 150 bytes: the second event is cut inside its category.
  auto msg = error_after_path("truncated.json");
  CHECK(msg.find("byte 150 (the end of the input): JSON syntax error: ") == 0);
  CHECK(msg.find("ended early") != std::string::npos);
  CHECK(msg.find("(is the file truncated?)") != std::string::npos);
  // cut inside a string: the same place, another reason
  auto cut = parse_error(R"({"traceEvents": [{"ph": "X", "name": "aten::ad)", "cut.json");
  CHECK(cut == "daydream: cut.json: byte 46 (the end of the input): JSON syntax error: "
               "A string is opened, but never closed. (is the file truncated?)");
}

TEST_CASE("hostile: a NUL byte between two fields names its byte and its event") {
  auto msg = error_after_path("nul_byte.json");
  CHECK(msg.find("byte 125 (in event #1): JSON syntax error: ") == 0);
}

TEST_CASE("hostile: invalid UTF-8 names the first bad byte") {
  // "aten::\xff\xfe": the 0xff is the 65th byte of the file.
  CHECK(error_after_path("invalid_utf8.json") == "byte 64: JSON syntax error: The input is not valid UTF-8");
}

TEST_CASE("hostile: a file of whitespace has no JSON value") {
  auto msg = error_after_path("whitespace_only.json");
  CHECK(msg.find("JSON syntax error: ") != std::string::npos);
  CHECK(msg.find("no JSON found") != std::string::npos);
}

// ------------------------------------------------------------------------ wrong document shape

TEST_CASE("hostile: bytes that are not JSON are named as such, not as a truncated trace") {
  auto png = error_after_path("random_bytes.json");
  INFO(png);
  CHECK(png.find("not a JSON document (it starts with 0x89 'P' 'N' 'G' 0x0d 0x0a 0x1a 0x0a;") == 0);
  CHECK(png.find("truncated") == std::string::npos);
  auto text = error_after_path("plain_text.json");
  INFO(text);
  CHECK(text.find("not a JSON document (it starts with 'h' 'e' 'l' 'l' 'o' ',' 0x20 't';") == 0);
  CHECK(text.find("truncated") == std::string::npos);
}

TEST_CASE("hostile: the document must be an object with one traceEvents array, or an array of events") {
  CHECK(error_after_path("top_level_number.json") ==
        "the top-level JSON value is a number, not an object with a \"traceEvents\" array nor an array of events");
  CHECK(error_after_path("trace_events_string.json") == "\"traceEvents\" is a string, not an array");
  CHECK(error_after_path("trace_events_twice.json") == "\"traceEvents\" appears twice");
  CHECK(error_after_path("event_is_array.json") == "event #1: is an array, not an object");
}

// ------------------------------------------------------------------------ wrong field types

TEST_CASE("hostile: a field of the wrong type names the event, the field and both types") {
  CHECK(error_after_path("ts_boolean.json") == "event #1: field 'ts' must be a number, not a boolean");
  CHECK(error_after_path("dur_null.json") == "event #2: field 'dur' must be a number, not null");
  CHECK(error_after_path("ph_number.json") == "event #0: field 'ph' must be a string, not a number");
  CHECK(error_after_path("cat_object.json") == "event #1: field 'cat' must be a string, not an object");
  CHECK(error_after_path("tid_boolean.json") == "event #0: field 'tid' must be a number or a string, not a boolean");
}

TEST_CASE("hostile: missing timestamps are named per kind of event") {
  CHECK(error_after_path("x_without_ts.json") == "event #1: complete event ('X') without 'ts'");
  CHECK(error_after_path("instant_without_ts.json") == "event #1: instant event without 'ts'");
  CHECK(error_after_path("flow_without_ts.json") == "event #2: flow event without 'ts'");
}

// ------------------------------------------------------------------------ numbers

TEST_CASE("hostile: huge, negative, infinite and NaN times are refused with their text") {
  CHECK(error_after_path("ts_huge.json") == "event #1: field 'ts' (1e300 us) is out of range");
  CHECK(error_after_path("dur_huge.json") == "event #0: field 'dur' (99999999999999999999 us) is out of range");
  CHECK(error_after_path("ts_plus_dur_overflow.json") == "event #0: 'ts' + 'dur' is out of range");
  CHECK(error_after_path("dur_negative.json") == "event #3: negative duration (dur = -0.001 us)");
  CHECK(error_after_path("ts_infinity.json") == "event #0: field 'ts' is not a finite number (Infinity)");
  CHECK(error_after_path("dur_nan.json") == "event #1: field 'dur' is not a finite number (NaN)");
  CHECK(error_after_path("pid_huge.json") == "event #0: field 'pid' is not an integer (1e30)");
}

// ------------------------------------------------------------------------ files and gzip

TEST_CASE("hostile: gzip problems name the file and what is wrong with the data") {
  CHECK(error_after_path("zip_not_gzip.json.gz") ==
        "the name ends in .gz but the file is not gzip data (it does not start with the gzip magic bytes 1f 8b)");
  CHECK(error_after_path("truncated.json.gz") ==
        "truncated gzip data: the compressed stream ends after 86 bytes without its end marker");
  CHECK(error_after_path("empty_inside.json.gz") == "empty file (no JSON inside the gzip data)");
  // The gzip trailer claims 4 GiB inflated: refused at the end, and (found by fuzz_kineto)
  // the claim no longer decides how much memory is reserved up front.
  CHECK(error_after_path("gzip_size_claim_4gib.json.gz") ==
        "corrupt gzip data after 173 compressed bytes (incorrect length check)");
  // Zero padding and junk after a complete gzip member are ignored, as gzip does.
  auto t = dio::load_kineto(input("trailing_garbage.json.gz"));
  CHECK(t.report.events == 3);
  CHECK(t.report.in_graph == 3);
  check_accounting(t);
}

TEST_CASE("hostile: gzip text cut short names the end of its text, not the size guessed from the file") {
  // Found by fuzz_kineto: an event's string left open before its array ends. The text
  // (72 bytes) compresses to more than itself, so the trailer's size is not believed and
  // the guess (four times the file) was named as the end.
  const std::string text = R"({"traceEvents":["ph":"X",name":"a\"b","ts":1,"dur":2,"pid":1,"tid":1},{")";
  REQUIRE(text.size() == 72);
  const std::string plain = "byte 72 (the end of the input): JSON syntax error: A string is opened, but never closed. "
                            "(is the file truncated?)";
  CHECK(parse_error(text, "open.json") == "daydream: open.json: " + plain);
  temp_dir d{"daydream_hostile_"};
  const auto gz = d.gz("open.json.gz", text);
  REQUIRE(fs::file_size(gz) > text.size());
  CHECK(load_error(gz) == "daydream: " + gz.string() + ": " + plain);
}

TEST_CASE("hostile: a directory is not a trace file") {
  temp_dir d{"daydream_hostile_"};
  const auto dir = d.p / "looks_like.json";
  fs::create_directories(dir);
  CHECK(load_error(dir) == "daydream: " + dir.string() + ": is a directory, not a trace file");
}

// ------------------------------------------------------------------------ deep nesting

TEST_CASE("hostile: 10^6 nested JSON arrays as an event are refused at that event") {
  const std::size_t depth = 1'000'000;
  std::string json = "{\"traceEvents\": [";
  json.append(depth, '[');
  json.append(depth, ']');
  json += "]}";
  CHECK(parse_error(json, "deep.json") == "daydream: deep.json: event #0: is an array, not an object");
}

TEST_CASE("hostile: 10^6 nested objects in args and in an unread field are skipped, not recursed") {
  const std::size_t depth = 1'000'000;
  std::string args;
  args.reserve(depth * 7);
  for (std::size_t i = 0; i < depth; ++i) args += "{\"a\": ";
  args += "1";
  args.append(depth, '}');
  auto t = dio::parse_kineto("{\"traceEvents\": [" + cpu_event("cpu_op", "aten::add", 1, 2, args) + "]}", "deep_args.json");
  CHECK(t.report.events == 1);
  CHECK(t.report.in_graph == 1);
  check_accounting(t);

  std::string other = "{\"traceEvents\": [], \"extra\": ";
  other.append(depth, '[');
  other.append(depth, ']');
  other += "}";
  auto e = dio::parse_kineto(other, "deep_extra.json");
  CHECK(e.report.events == 0);
  CHECK(e.g.empty());
}

TEST_CASE("hostile: 10^6 CPU events nested in time flatten without recursion") {
  // Event i spans [i, 2n - i) us: each one inside the one before.
  const long long n = 1'000'000;
  std::string json = "{\"traceEvents\": [";
  for (long long i = 0; i < n; ++i) {
    if (i) json += ',';
    json += cpu_event("cpu_op", "aten::nested", i, 2 * n - 2 * i);
  }
  json += "]}";
  auto t = dio::parse_kineto(json, "nested.json");
  CHECK(t.report.events == std::size_t(n));
  CHECK(t.report.in_graph == std::size_t(n));
  check_accounting(t);
  // Every event covers a slice before and after its child; the innermost one a single slice.
  auto r = replay(t.g);
  CHECK(r.makespan == 2 * n * 1000);
}

// ------------------------------------------------------------------------ accepted with a report

TEST_CASE("hostile: an empty trace loads as an empty graph") {
  auto t = dio::load_kineto(input("empty_trace.json"));
  CHECK(t.report.events == 0);
  CHECK(t.g.empty());
  CHECK(t.iterations.empty());
  CHECK(t.default_iteration() == -1);
  CHECK(replay(t.g).makespan == 0);
  // the trace says what is missing and how to record it
  auto why = t.problems();
  REQUIRE(why.size() == 1);
  CHECK(why[0].find("\"traceEvents\" is empty") != std::string::npos);
  CHECK(why[0].find("ProfilerActivity.CUDA") != std::string::npos);
  CHECK(!t.has_gpu_activity());
  CHECK(!t.initial_allocated_bytes());
}

TEST_CASE("hostile: a trace with no GPU work is a CPU-only graph with its iterations") {
  auto t = dio::load_kineto(input("cpu_only.json"));
  CHECK(t.report.events == 5);
  CHECK(t.report.in_graph == 5);
  check_accounting(t);
  CHECK(ranges::distance(tasks<gpu_kernel>(t.g)) == 0);
  CHECK(ranges::distance(tasks<memcpy_task>(t.g)) == 0);
  REQUIRE(t.iterations.size() == 2);
  CHECK(t.iterations[0].number == 3);
  CHECK(t.iterations[1].number == 4);
  CHECK(t.measured(3) == 100'000);
  auto r = replay(t.g);
  CHECK(r.makespan == 200'000);
  // no GPU activity: the profiler ran without ProfilerActivity.CUDA, and the trace says so
  CHECK(t.info.kernels + t.info.copies + t.info.memsets == 0);
  CHECK(t.info.cpu_events == 5);
  CHECK(!t.has_gpu_activity());
  auto why = t.problems();
  REQUIRE(why.size() == 1);
  CHECK(why[0].find("no GPU activity recorded") != std::string::npos);
  CHECK(why[0].find("ProfilerActivity.CUDA") != std::string::npos);
}

TEST_CASE("hostile: the JSON Array Format loads like the object form, closed or left open") {
  const auto object = dio::load_kineto(input("cpu_only.json"));
  for (auto name : {"array_form.json", "array_unclosed.json"}) {
    INFO(name);
    auto t = dio::load_kineto(input(name));
    CHECK(t.report.events == 5);
    CHECK(t.report.in_graph == 5);
    check_accounting(t);
    CHECK(t.g.size() == object.g.size());
    CHECK(t.g.dependency_count() == object.g.dependency_count());
    REQUIRE(t.iterations.size() == 2);
    CHECK(t.iterations[0].number == 3);
    CHECK(t.measured(3) == 100'000);
    CHECK(replay(t.g).makespan == replay(object.g).makespan);
  }
}

TEST_CASE("hostile: a JSON array cut inside an event, or of non-objects, is refused with its place") {
  // 251 bytes: the third event is cut inside its name; the place is the file's own end
  auto cut = error_after_path("array_truncated.json");
  INFO(cut);
  CHECK(cut.find("byte 251 (the end of the input): JSON syntax error: ") == 0);
  CHECK(cut.find("(is the file truncated?)") != std::string::npos);
  CHECK(error_after_path("array_of_numbers.json") == "event #0: is a number, not an object");
  CHECK(error_after_path("array_with_string.json") == "event #1: is a string, not an object");
}

TEST_CASE("hostile: thread ids above INT64_MAX and string thread ids are kept as the trace writes them") {
  auto t = dio::load_kineto(input("tid_unsigned_and_string.json"));
  CHECK(t.report.in_graph == 3);
  check_accounting(t);
  std::vector<std::string> names;
  for (std::size_t r = 0; r < t.g.resource_count(); ++r) names.push_back(t.g.resource_at(resource_id(r)).name);
  auto named = [&](std::string_view prefix) {
    for (auto& n : names)
      if (n.rfind(prefix, 0) == 0) return true;
    return false;
  };
  CHECK(named("thread 18446744071562067968 (pid 4242"));
  CHECK(named("thread 4026531840 (pid 4242"));
  CHECK(named("thread 9223372036854775807 (pid 4242"));
  for (auto& n : names) CHECK(n.find("thread -") == std::string::npos);
}

TEST_CASE("hostile: unknown categories and phases are counted by reason") {
  auto t = dio::load_kineto(input("unknown_categories.json"));
  CHECK(t.report.events == 8);
  CHECK(t.report.in_graph == 1);
  const auto& ig = t.report.ignored;
  CHECK(ig.at("unknown category \"my_custom_category\"") == 1);
  CHECK(ig.at("unknown category \"" + std::string(40, 'a') + "\"") == 1); // cut at 40 characters
  CHECK(ig.at("unsupported phase \"Z\"") == 1);
  CHECK(ig.at("begin/end pair event (not written by Kineto)") == 2);
  CHECK(ig.at("flow of unknown category \"mystery_flow\"") == 1);
  CHECK(ig.at("counter event") == 1);
  check_accounting(t);
}

TEST_CASE("hostile: duplicate correlation ids link each GPU op to one call, the first") {
  auto t = dio::load_kineto(input("duplicate_correlation.json"));
  CHECK(t.report.events == 6);
  CHECK(t.report.in_graph == 6);
  CHECK(t.report.unlinked_gpu_ops == 0);
  check_accounting(t);
  // Two calls carry correlation 5: k5 is launched by the first (at 0 us) only.
  auto k5 = launchers(t.g, named(t.g, "k5"));
  REQUIRE(k5.size() == 1);
  CHECK(t.g.trace_start(k5[0]) == 0);
  // Two kernels carry correlation 6: both are launched by its one call (at 20 us).
  for (auto name : {"k6a", "k6b"}) {
    auto l = launchers(t.g, named(t.g, name));
    REQUIRE(l.size() == 1);
    CHECK(t.g.trace_start(l[0]) == 20'000);
  }
}

TEST_CASE("hostile: dangling flows and correlation ids are counted, the GPU op kept") {
  auto t = dio::load_kineto(input("dangling_flows.json"));
  CHECK(t.report.events == 10);
  CHECK(t.report.in_graph == 5); // 2 calls/kernels + the orphan kernel + the matched flow pair
  CHECK(t.report.unlinked_gpu_ops == 1);
  CHECK(t.report.ignored.at("flow without partner") == 3);
  CHECK(t.report.ignored.at("launch flow whose end points match no event") == 2);
  REQUIRE(!t.report.warnings.empty());
  CHECK(t.report.warnings[0].find("1 GPU operations have no matching runtime call") == 0);
  check_accounting(t);
  auto orphan = named(t.g, "orphan");
  CHECK(launchers(t.g, orphan).empty());
  CHECK(t.g.has_dependency(named(t.g, "k1"), orphan)); // still in stream order
}

TEST_CASE("hostile: a flow that closes a cycle is dropped with a warning naming the edge") {
  // The flow says the call at 200 us launched P, which ran at 120 us, before O on its
  // stream; the long call at 100 us blocked until O ended: P -> O -> call@100 -> call@200 -> P.
  auto t = dio::load_kineto(input("flow_cycle.json"));
  CHECK(t.report.events == 8);
  CHECK(t.report.in_graph == 8);
  check_accounting(t);
  REQUIRE(!t.report.warnings.empty());
  CHECK(t.report.warnings[0] ==
        "dropped a sync dependency O -> cudaLaunchKernel that closed a cycle (inconsistent timestamps)");
  CHECK(find_cycle(t.g).empty());
}

TEST_CASE("hostile: seventy flow cycles are all broken, not just the first ones") {
  std::string json = "{\"traceEvents\": [";
  for (int k = 0; k < 70; ++k) {
    const long long b = 1000LL * k;
    const int c = 10 * k;
    auto gpu = [](std::string_view name, long long ts, long long dur, std::string_view extra) {
      return "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + std::string(name) + "\",\"pid\":0,\"tid\":7,\"ts\":" +
             std::to_string(ts) + ",\"dur\":" + std::to_string(dur) + ",\"args\":{\"device\":0,\"stream\":7" +
             std::string(extra) + "}},";
    };
    json += cpu_event("cuda_runtime", "cudaLaunchKernel", b, 5, "{\"correlation\":" + std::to_string(c + 1) + "}") + ",";
    json += cpu_event("cuda_runtime", "cudaLaunchKernel", b + 100, 60, "{\"correlation\":" + std::to_string(c + 4) + "}") + ",";
    json += cpu_event("cuda_runtime", "cudaLaunchKernel", b + 200, 5) + ",";
    json += gpu("P", b + 120, 10, "");
    json += gpu("O", b + 140, 15, ",\"correlation\":" + std::to_string(c + 1));
    json += gpu("Q", b + 170, 10, ",\"correlation\":" + std::to_string(c + 4));
    json += "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":" + std::to_string(c + 3) +
            ",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(b + 200) + "},";
    json += "{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":" + std::to_string(c + 3) +
            ",\"pid\":0,\"tid\":7,\"ts\":" + std::to_string(b + 120) + ",\"bp\":\"e\"}";
    json += k + 1 < 70 ? "," : "";
  }
  json += "]}";
  auto t = dio::parse_kineto(json, "cycles.json");
  CHECK(t.report.events == 560);
  check_accounting(t);
  CHECK(find_cycle(t.g).empty());
  // 32 warnings are kept (ingest_options::max_warnings), the rest counted.
  CHECK(t.report.warnings.back().find("... and ") == 0);
}

TEST_CASE("hostile: escaped keys and names are read like plain ones") {
  auto t = dio::load_kineto(input("escaped_keys.json"));
  CHECK(t.report.in_graph == 1);
  CHECK(named(t.g, "aten::add") != no_task);
}

TEST_CASE("hostile: every committed input gives a trace or an error naming the file, never a crash") {
  std::size_t loaded = 0, refused = 0;
  for (auto& entry : fs::directory_iterator(input(""))) {
    INFO(entry.path().string());
    try {
      auto t = dio::load_kineto(entry.path());
      check_accounting(t);
      ++loaded;
    } catch (const daydream::error& e) {
      CHECK(std::string_view(e.what()).find(entry.path().string()) != std::string_view::npos);
      ++refused;
    }
  }
  CHECK(loaded == 11);  // two array-form traces among them
  CHECK(refused == 32);
}

// ------------------------------------------------------------------------ transactional passes

namespace {

/// A pass that adds `to -> from` for the first two GPU kernels joined by a dependency
/// `from -> to`: a two-task cycle.
struct cycle_closer {
  static constexpr std::string_view name = "cycle-closer";
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g))
      for (auto d : g.successors(k))
        if (g.is<gpu_kernel>(d.to)) {
          g.add_dependency(d.to, d.from, dep_kind::control);
          return;
        }
  }
};

/// Removes half the tasks, renumbers the rest (compact), then fails.
struct compact_then_throw {
  static constexpr std::string_view name = "compact-then-throw";
  void operator()(graph& g) const {
    std::vector<task_id> ids;
    g.for_each_task([&](task_id t) { if (t % 2) ids.push_back(t); });
    remove(g, ids);
    g.compact();
    g.add_resource({"new link", resource_kind::link, sharing::fair});
    throw error("daydream: compact-then-throw: gave up after renumbering");
  }
};

/// A graph of three kernels in stream order, with known ids and names.
graph three_kernels() {
  graph g;
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream});
  task_id prev = no_task;
  for (auto name : {"conv", "bn", "relu"}) {
    auto k = g.add(gpu_kernel{}, {.name = name, .duration = 10, .resource = st});
    if (prev != no_task) g.add_dependency(prev, k, dep_kind::stream_order);
    prev = k;
  }
  return g;
}

/// A data-parallel training step (two iterations) on which every bundled pass has work:
/// forward operators record their input sizes (the stashes of gist, vdnn, recompute and
/// the activation memory model) and each layer's backward has an AccumulateGrad with the
/// gradient's size (what the distributed passes communicate).
graph every_pass_applies() {
  graph g = testing::training_step({.layers = 3, .iterations = 2});
  std::vector<task_id> after;
  g.for_each<cpu_task>([&](handle<cpu_task> h) {
    if (g.phase_of(h) == phase::forward && g.payload(h).call == cpu_call::op) g.payload(h).tensor_bytes = 8 << 20;
    if (g.name(h) == "autograd::engine::evaluate_function: ConvolutionBackward0") after.push_back(next_on_resource(g, h));
  });
  for (auto launch : after)
    insert_after(g, cpu_task{cpu_call::op, no_name, 0, 4 << 20},
                 {.name = "torch::autograd::AccumulateGrad", .duration = 3'000, .gap = 1'000,
                  .layer = g.layer(launch), .phase = phase::backward, .iteration = g.iteration(launch)},
                 launch);
  // A batch loaded on the main thread at the start of each iteration (for dataloader).
  std::map<std::int32_t, std::vector<task_id>> cpu_of;
  for (auto t : tasks<cpu_task>(g)) cpu_of[t.iteration()].push_back(t);
  for (auto& [it, ts] : cpu_of)
    insert_before(g, cpu_task{}, {.name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                                  .duration = 40'000, .phase = phase::other, .iteration = it},
                  first_in_trace(g, ts));
  // One short bf16 GEMM after the first forward kernel (for precision:to=fp8; too short
  // to make the step count as already in reduced precision for amp).
  task_id first = no_task;
  for (auto k : tasks<gpu_kernel>(g))
    if (g.phase_of(k) == phase::forward && (first == no_task || g.trace_start(k) < g.trace_start(first))) first = k;
  if (first != no_task && launch_of(g, first) != no_task) {
    auto f = fields_of(g, first);
    f.name = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n";
    f.duration = 1'000;
    const auto p = g.payload(g.as<gpu_kernel>(first));
    insert_launched(g, gpu_kernel{.device = p.device, .stream = p.stream}, f, just_after(first),
                    just_after(launch_of(g, first)));
  }
  passes::estimate_activation_memory(g);
  return g;
}

/// The spec a scenario of daydream-whatif gives pass `e` (substitute: layers 1 and 2).
std::string spec_of(const passes::pass_entry<graph>& e) {
  if (e.name == "substitute") return "substitute:layers=layer[12]";
  if (e.name == "gpu") return "gpu:target=H100,source=A100"; // a hand-built graph records no GPU
  return e.scenario_params.empty() ? std::string(e.name) : std::string(e.name) + ":" + std::string(e.scenario_params);
}

/// The message `apply` throws, or "" if it succeeds.
template <class Pass> std::string refusal(graph& g, const Pass& pass, std::string_view name) {
  try {
    apply(g, pass, name);
  } catch (const error& e) {
    return e.what();
  }
  return {};
}

} // namespace

TEST_CASE("transactions: a pass that closes a cycle is refused with the cycle's tasks named") {
  const graph before = three_kernels();
  graph g = before;
  CHECK(refusal(g, cycle_closer{}, cycle_closer::name) ==
        "daydream: pass 'cycle-closer' was refused and the graph left unchanged: "
        "daydream: the graph has a cycle: #0 \"conv\" -> #1 \"bn\" -> #0 \"conv\"");
  CHECK(testing::graph_difference(before, g) == "");
}

TEST_CASE("transactions: names with control characters, quotes and NULs are escaped in a cycle") {
  // Found by fuzz_graph: a task name holding a NUL cut the message short (what() is a
  // C string), before the cycle's second task.
  graph g;
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream});
  auto a = g.add(gpu_kernel{}, {.name = std::string("a\0b\n\"q\"\\", 8), .duration = 10, .resource = st});
  auto b = g.add(gpu_kernel{}, {.name = "b", .duration = 10, .resource = st});
  g.add_dependency(a, b, dep_kind::stream_order);
  const graph before = g;
  auto closer = [&](graph& gg) { gg.add_dependency(b, a, dep_kind::control); };
  CHECK(refusal(g, closer, "closer") ==
        "daydream: pass 'closer' was refused and the graph left unchanged: daydream: the graph "
        "has a cycle: #0 \"a\\u0000b\\n\\\"q\\\"\\\\\" -> #1 \"b\" -> #0 \"a\\u0000b\\n\\\"q\\\"\\\\\"");
  CHECK(testing::graph_difference(before, g) == "");
}

TEST_CASE("transactions: a pass that renumbers the graph and then fails leaves the old ids") {
  const graph before = testing::training_step();
  graph g = before;
  CHECK(refusal(g, compact_then_throw{}, compact_then_throw::name) ==
        "daydream: pass 'compact-then-throw' was refused and the graph left unchanged: "
        "daydream: compact-then-throw: gave up after renumbering");
  CHECK(testing::graph_difference(before, g) == "");
  CHECK(g.resource_count() == before.resource_count());
  CHECK(testing::replay_difference(replay(before), replay(g)) == "");
}

TEST_CASE("transactions: a pass that breaks an invariant other than a cycle is refused") {
  const graph before = three_kernels();
  graph g = before;
  // Through the core, past the checks of set_duration: a negative duration.
  auto breaker = [](graph& gg) { gg.core().duration[1] = -5; };
  CHECK(refusal(g, breaker, "breaker") ==
        "daydream: pass 'breaker' was refused and the graph left unchanged: "
        "daydream: invariant: #1 \"bn\" has a negative duration or gap");
  CHECK(testing::graph_difference(before, g) == "");
}

TEST_CASE("transactions: every bundled pass is rolled back when its transaction fails after it ran") {
  const auto reg = passes::bundled();
  const graph before = every_pass_applies();
  std::size_t changed = 0;
  for (auto& e : reg.entries()) {
    const std::string spec = spec_of(e);
    INFO("pass: " << spec);
    auto p = reg.make(spec);
    // What the pass does when it succeeds: the rollback below has something to undo.
    graph done = before;
    (void)p.run(done);
    if (!testing::graph_difference(before, done).empty()) ++changed;

    // A failure after the pass: everything it did is undone.
    {
      graph g = before;
      auto then_fail = [&](graph& gg) {
        (void)p.run(gg);
        throw error("daydream: forced failure after " + spec);
      };
      CHECK(refusal(g, then_fail, spec) == "daydream: pass '" + spec +
                                               "' was refused and the graph left unchanged: "
                                               "daydream: forced failure after " + spec);
      CHECK(testing::graph_difference(before, g) == "");
    }
    // A cycle closed after the pass: refused with the cycle named, everything undone.
    {
      graph g = before;
      auto then_cycle = [&](graph& gg) {
        (void)p.run(gg);
        cycle_closer{}(gg);
      };
      const auto msg = refusal(g, then_cycle, spec);
      CHECK(msg.find("daydream: pass '" + spec + "' was refused and the graph left unchanged: "
                     "daydream: the graph has a cycle: #") == 0);
      CHECK(msg.find("\" -> #") != std::string::npos);
      CHECK(testing::graph_difference(before, g) == "");
    }
  }
  // Every bundled pass changes this training step: each rollback undid real work.
  CHECK(changed == reg.entries().size());
}

TEST_CASE("transactions: bundled passes given bad values fail inside apply and change nothing") {
  const graph before = testing::training_step();
  graph g = before;
  // amp with no speedup for memory-bound kernels: refused before it divides by zero.
  CHECK(refusal(g, passes::amp{.memory = 0}, "amp") ==
        "daydream: pass 'amp' was refused and the graph left unchanged: "
        "daydream: pass 'amp': compute and tf32 must be speedups (0: from the GPU's peaks), memory a positive "
        "speedup and overhead not negative");
  CHECK(testing::graph_difference(before, g) == "");
  passes::grad_accum none;
  none.k = 0;
  CHECK(refusal(g, none, "grad_accum") ==
        "daydream: pass 'grad_accum' was refused and the graph left unchanged: "
        "daydream: pass 'grad_accum': k must be at least 1");
  CHECK(testing::graph_difference(before, g) == "");
  // From parameters, bad values are refused before the pass is built.
  const auto reg = passes::bundled();
  CHECK_THROWS_WITH_AS(reg.make("gist:ratio=2"),
                       "daydream: pass 'gist': ratio is encoded/original size, at most 1", error);
  CHECK_THROWS_WITH_AS(reg.make("p3:slice=0"), "daydream: pass 'p3': slice must be positive", error);
}

// ------------------------------------------------------------------------ determinism

TEST_CASE("determinism: the same trace and passes give the same graph and byte-identical timelines") {
  const auto text = [] {
    std::ifstream f(input("cpu_only.json"), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }();
  auto a = dio::parse_kineto(text, "a.json");
  auto b = dio::parse_kineto(text, "a.json");
  CHECK(testing::graph_difference(a.g, b.g) == "");

  const auto reg = passes::bundled();
  const graph base = every_pass_applies();
  for (auto& e : reg.entries()) {
    const std::string spec = spec_of(e);
    INFO("pass: " << spec);
    auto timeline = [&] {
      graph g = base;
      auto p = reg.make(spec);
      (void)p.run(g);
      dio::chrome_trace ct;
      ct.add(spec, g, p.replay(g, {}));
      return ct.str();
    };
    const auto first = timeline();
    CHECK(first.size() > 100);
    CHECK(first == timeline());
  }
}
