// Tests the streamed decode of Kineto traces: the same tables and graph whatever the window size, split at every byte.
// SPDX-License-Identifier: MIT
#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_stream.hpp>
#include <daydream/io/detail/trace_file.hpp>
#include <daydream/io/detail/trace_reader.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/replay.hpp>

#include <support/compare.hpp>
#include <support/corpus.hpp>
#include <support/temp_dir.hpp>

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>


using namespace daydream;
namespace dio = daydream::io;
namespace dd = daydream::io::detail;

namespace {

/// A small trace with what a scanner can trip over: strings holding brackets, commas,
/// quotes and escapes, arrays in args, string pids and tids, metadata before and after
/// the events, and a traceEvents-like key inside a nested object.
const std::string small_trace = std::string(R"J({"schemaVersion": 1,
 "deviceProperties": [{"id": 0, "name": "Tesla \"V100\" [x]"}],
 "nested": {"traceEvents": {"not": "these"}},
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 900},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm, \"]}{[\\", "pid": 1, "tid": 1, "ts": 110, "dur": 300,
   "args": {"External id": 3, "Input Dims": [[32, 64], [64, 128]], "Input type": ["float", "float"], "Sequence number": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 120, "dur": 20, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm\u00e9 {k}", "pid": 0, "tid": 7, "ts": 150, "dur": 200, "args": {"device": 0, "stream": 7, "correlation": 7}},
  {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 120, "cat": "ac2g", "name": "ac2g"},
  {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 150, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 130,
   "args": {"Total Allocated": 4096, "Bytes": 4096, "Device Id": 0, "Device Type": 1}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: A", "pid": "Spans", "tid": "w 2", "ts": 140, "dur": 5},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1, "tid": 2, "ts": 500, "dur": 30},
  {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "py[t]hon, \"main\""}}
 ],
 "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
 "traceName": "x,]}"
}
)J");

/// Every field of two decoded traces is the same (strings by their text).
std::string table_difference(const dd::decoded_trace& a, const dd::decoded_trace& b) {
  std::ostringstream o;
  auto check = [&](bool same, const char* what, std::size_t i) {
    if (!same && o.str().empty()) o << what << " #" << i << " differs";
  };
  check(a.cpu.size() == b.cpu.size(), "cpu count", 0);
  check(a.gpu.size() == b.gpu.size(), "gpu count", 0);
  check(a.flows.size() == b.flows.size(), "flow count", 0);
  check(a.memory.size() == b.memory.size(), "memory count", 0);
  check(a.metas.size() == b.metas.size(), "meta count", 0);
  check(a.threads.size() == b.threads.size(), "thread count", 0);
  if (!o.str().empty()) return o.str();
  for (std::size_t i = 0; i < a.cpu.size(); ++i) {
    auto &x = a.cpu[i], &y = b.cpu[i];
    check(x.ts == y.ts && x.dur == y.dur && x.name == y.name && x.index == y.index && x.thread == y.thread &&
              x.correlation == y.correlation && x.seq == y.seq && x.meta == y.meta && x.cat == y.cat,
          "cpu event", i);
  }
  for (std::size_t i = 0; i < a.gpu.size(); ++i) {
    auto &x = a.gpu[i], &y = b.gpu[i];
    check(x.ts == y.ts && x.dur == y.dur && x.name == y.name && x.index == y.index && x.device == y.device &&
              x.stream == y.stream && x.correlation == y.correlation && x.cat == y.cat && x.bytes == y.bytes &&
              x.meta == y.meta,
          "gpu event", i);
  }
  for (std::size_t i = 0; i < a.flows.size(); ++i) {
    auto &x = a.flows[i], &y = b.flows[i];
    check(x.ts == y.ts && x.id == y.id && x.index == y.index && x.where == y.where && x.ph == y.ph &&
              x.stream == y.stream && x.cat == y.cat,
          "flow", i);
  }
  for (std::size_t i = 0; i < a.memory.size(); ++i) {
    auto &x = a.memory[i], &y = b.memory[i];
    check(x.ts == y.ts && x.bytes == y.bytes && x.total == y.total && x.index == y.index && x.thread == y.thread &&
              x.device_type == y.device_type && x.device_id == y.device_id,
          "memory event", i);
  }
  check(a.syncs.size() == b.syncs.size(), "sync count", 0);
  for (std::size_t i = 0; i < a.syncs.size() && i < b.syncs.size(); ++i) {
    auto &x = a.syncs[i], &y = b.syncs[i];
    check(x.ts == y.ts && x.dur == y.dur && x.index == y.index && x.correlation == y.correlation &&
              x.stream == y.stream && x.wait_stream == y.wait_stream && x.kind == y.kind,
          "sync event", i);
  }
  for (std::size_t i = 0; i < a.metas.size(); ++i) {
    auto &x = a.metas[i], &y = b.metas[i];
    check(x.input_dims == y.input_dims && x.input_types == y.input_types && x.collective == y.collective &&
              x.dtype == y.dtype && x.in_nelems == y.in_nelems && x.out_nelems == y.out_nelems &&
              x.group_size == y.group_size && x.pg_name == y.pg_name && x.pg_ranks == y.pg_ranks,
          "meta", i);
  }
  for (std::size_t i = 0; i < a.threads.size(); ++i)
    check(a.threads[i] == b.threads[i] && a.thread_labels[i].pid == b.thread_labels[i].pid &&
              a.thread_labels[i].tid == b.thread_labels[i].tid,
          "thread", i);
  check(a.events == b.events, "event count", 0);
  check(a.ignored == b.ignored, "ignored counts", 0);
  check(a.gpus == b.gpus, "device names", 0);
  check(a.rank == b.rank && a.world_size == b.world_size && a.backend == b.backend, "distributedInfo", 0);
  return o.str();
}

dd::decoded_trace stream(std::string_view text, std::size_t window, unsigned threads = 1) {
  auto in = dd::trace_reader::of_memory(text, "test.json");
  dd::decoded_trace d;
  dd::stream_kineto(in, d, window, threads);
  return d;
}

std::string error_of(std::string_view text, std::size_t window, unsigned threads = 1) {
  try {
    stream(text, window, threads);
  } catch (const daydream::error& e) {
    return e.what();
  }
  return "";
}

using temp_dir = daydream::testing::temp_dir;

} // namespace

TEST_CASE("stream: the decoded tables are the same with the window ending at every byte of the trace") {
  const auto whole = stream(small_trace, std::size_t(1) << 20);
  REQUIRE(whole.events == 10);
  REQUIRE(whole.cpu.size() == 5);
  CHECK(whole.cpu[1].name == "aten::mm, \"]}{[\\");
  CHECK(whole.gpu.at(0).name == "gemm\xc3\xa9 {k}");
  CHECK(whole.gpus == std::vector<std::string>{"Tesla \"V100\" [x]"});
  CHECK(whole.rank == 1);
  CHECK(whole.backend == "nccl");
  // every window size from 1 byte up to the whole trace: the first window of events
  // ends at every byte of it, and so do later ones
  // (and with windows decoded on other threads: the same tables, merged in order)
  for (unsigned threads : {1u, 2u, 3u})
    for (std::size_t w = 1; w <= small_trace.size() + 1; ++w) {
      CAPTURE(threads);
      CAPTURE(w);
      const auto d = stream(small_trace, w, threads);
      CHECK(table_difference(whole, d) == "");
    }
}

TEST_CASE("stream: the graph is the same with any window, and the same as the legacy whole-text decode") {
  dd::decoded_trace legacy;
  {
    auto buf = dd::padded_buffer::copy_of(small_trace);
    simdjson::ondemand::parser parser;
    dd::decode_kineto(parser, buf.padded(), "test.json", legacy);
  }
  CHECK(table_difference(legacy, stream(small_trace, 0)) == "");
  const auto ref = dio::parse_kineto(small_trace, "test.json");
  REQUIRE(ref.g.size() > 3);
  for (std::size_t w : {1, 7, 64, 100, 333, 1000}) {
    CAPTURE(w);
    dio::ingest_options o;
    o.window_bytes = w;
    const auto t = dio::parse_kineto(small_trace, "test.json", o);
    CHECK(testing::graph_difference(ref.g, t.g) == "");
    CHECK(t.report.events == ref.report.events);
    CHECK(t.report.ignored == ref.report.ignored);
    CHECK(t.info.gpus == ref.info.gpus);
    CHECK(replay(t.g).makespan == replay(ref.g).makespan);
  }
}

TEST_CASE("stream: gzip is inflated a window at a time, with the same result") {
  temp_dir dir{"daydream_stream_test_"};
  const auto plain = dir.file("t.json", small_trace);
  const auto gz = dir.gz("t.json.gz", small_trace);
  const auto ref = dio::load_kineto(plain);
  for (std::size_t w : {1, 5, 64, 4096}) {
    CAPTURE(w);
    dio::ingest_options o;
    o.window_bytes = w;
    const auto a = dio::load_kineto(gz, o);
    const auto b = dio::load_kineto(plain, o);
    CHECK(testing::graph_difference(ref.g, a.g) == "");
    CHECK(testing::graph_difference(ref.g, b.g) == "");
    CHECK(a.report.events == 10);
    auto in = dd::trace_reader::open(gz);
    dd::decoded_trace d;
    dd::stream_kineto(in, d, w);
    CHECK(in.bytes_read() == small_trace.size());
    CHECK(table_difference(stream(small_trace, 0), d) == "");
  }
}

TEST_CASE("stream: bundled traces, object and array form, give the same graph with a 4 KiB window") {
  for (const char* rel : {"hta_small_train_gp100/step_based_trace_2543932.json.gz",
                          "hta_small_train_gp100/step_based_trace_2543932.array.json.gz"}) {
    CAPTURE(rel);
    const auto file = testing::bundled(rel);
    const auto ref = dio::load_kineto(file);
    REQUIRE(ref.report.events > 1000);
    dio::ingest_options o;
    o.window_bytes = 4096;
    const auto t = dio::load_kineto(file, o);
    CHECK(testing::graph_difference(ref.g, t.g) == "");
    CHECK(t.report.events == ref.report.events);
    CHECK(t.report.ignored == ref.report.ignored);
    CHECK(t.iterations.size() == ref.iterations.size());
  }
}

TEST_CASE("stream: the array form, closed or left open, decodes the same events at every window") {
  const std::string events =
      R"J({"ph": "X", "cat": "cpu_op", "name": "a,]", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
 {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 20, "dur": 5},
 {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": 5, "args": {"stream": 7}})J";
  const std::string closed = "[" + events + "]\n";
  const std::string open = "[" + events + ",\n";
  const std::string open_no_comma = "[" + events + "\n";
  const auto ref = stream("{\"traceEvents\": " + closed + "}", 0);
  REQUIRE(ref.events == 3);
  for (unsigned threads : {1u, 2u})
    for (std::size_t w = 1; w <= closed.size() + 1; ++w) {
      CAPTURE(threads);
      CAPTURE(w);
      CHECK(table_difference(ref, stream(closed, w, threads)) == "");
      CHECK(table_difference(ref, stream(open, w, threads)) == "");
      CHECK(table_difference(ref, stream(open_no_comma, w, threads)) == "");
    }
  CHECK(stream("[]", 1).events == 0);
  CHECK(stream("[", 1).events == 0);
  CHECK(stream("{\"traceEvents\": [ ]}", 1).events == 0);
}

TEST_CASE("stream: errors name the input byte and the event whatever the window") {
  // event #2 has a NUL between two fields: byte 94 of the input
  const std::string bad = std::string(R"({"traceEvents": [{"ph": "M", "name": "a"}, {"ph": "M", "name": "b"},
 {"ph": "X", "name": "c",)") + '\0' + R"( "ts": 1, "dur": 1}]})";
  REQUIRE(bad[94] == '\0');
  const auto whole = error_of(bad, 0);
  CHECK(whole.find("daydream: test.json: byte 94 (in event #2): JSON syntax error: ") == 0);
  for (unsigned threads : {1u, 2u, 4u})
    for (std::size_t w = 1; w <= bad.size(); w += 3) {
      CAPTURE(threads);
      CAPTURE(w);
      CHECK(error_of(bad, w, threads) == whole);
    }
  // content errors name the event (also when a worker thread decoded its window)
  const std::string neg = R"({"traceEvents": [{"ph": "M"}, {"ph": "M"}, {"ph": "X", "cat": "cpu_op", "name": "n", "ts": 1, "dur": -2}]})";
  for (unsigned threads : {1u, 2u})
    for (std::size_t w : {1, 10, 40, 1000})
      CHECK(error_of(neg, w, threads) == "daydream: test.json: event #2: negative duration (dur = -2 us)");
  // cut inside the events: the end of the input, whatever the window
  const std::string cut = R"({"traceEvents": [{"ph": "M"}, {"ph": "X", "name": "ab)";
  for (std::size_t w : {1, 10, 1000})
    CHECK(error_of(cut, w) == "daydream: test.json: byte 53 (the end of the input): JSON syntax error: "
                              "A string is opened, but never closed. (is the file truncated?)");
  const std::string cut2 = R"({"traceEvents": [{"ph": "M"}, {"ph": "X", "args": {"a": 1}, )";
  for (std::size_t w : {1, 10, 1000})
    CHECK(error_of(cut2, w).find("daydream: test.json: byte 60 (the end of the input): JSON syntax error: ") == 0);
  // a syntax error after the events names its byte in the input, past the events
  for (std::size_t w : {0, 1, 9, 30}) {
    CAPTURE(w);
    CHECK(error_of(R"({"traceEvents": [{"ph": "M"}, {"ph": "M"}] "x": 1})", w)
              .find("daydream: test.json: byte 43: JSON syntax error: ") == 0);
    CHECK(error_of(R"({"traceEvents": [{"ph": "M"}, {"ph": "M"}], "distributedInfo": {"rank" 1}})", w)
              .find("daydream: test.json: byte 71: JSON syntax error: ") == 0);
  }
  // an empty element between two commas, wherever the window cuts
  for (unsigned threads : {1u, 2u})
    for (std::size_t w : {1, 2, 3, 20, 1000}) {
      CAPTURE(threads);
      CAPTURE(w);
      const std::string two_commas = R"({"traceEvents": [{"ph": "M"}, {"ph": "M"},,{"ph": "M"}]})";
      CHECK(error_of(two_commas, w, threads) == error_of(two_commas, 0));
      CHECK(error_of(two_commas, w, threads).find("JSON syntax error") != std::string::npos);
      CHECK(error_of(R"({"traceEvents": [{"ph": "M"},]})", w, threads).find("JSON syntax error") != std::string::npos);
    }
}

TEST_CASE("stream: windows decoded on several threads give the tables of one decoder") {
  // String pids, tids and flow ids first seen in different windows (their ids count up
  // in the order the strings first appear), threads first seen in later windows, args
  // records, memory events, ignored events of several kinds, and an error late in the
  // trace: whatever the window and the threads, the same tables and the same error.
  std::string t = R"({"traceEvents": [)";
  std::uint64_t x = 12345;
  auto next = [&x](std::uint64_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return (x >> 33) % n;
  };
  for (int i = 0; i < 400; ++i) {
    if (i) t += ",\n";
    const auto tid = "\"w " + std::to_string(next(7)) + "\"";
    const auto ts = std::to_string(10 * i);
    switch (next(6)) {
    case 0:
      t += R"({"ph": "X", "cat": "cpu_op", "name": "op)" + std::to_string(next(5)) + R"(", "pid": "P", "tid": )" +
           tid + R"(, "ts": )" + ts + R"(, "dur": 5, "args": {"Input Dims": [[)" + std::to_string(i) + R"(]]}})";
      break;
    case 1:
      t += R"({"ph": "s", "cat": "ac2g", "id": "f)" + std::to_string(next(50)) + R"(", "pid": 1, "tid": )" + tid +
           R"(, "ts": )" + ts + "}";
      break;
    case 2:
      t += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream )" + std::to_string(next(4)) +
           R"(", "ts": )" + ts + R"(, "dur": 3, "args": {"correlation": )" + std::to_string(i) + "}}";
      break;
    case 3:
      t += R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": "P", "tid": )" + tid +
           R"(, "ts": )" + ts + R"(, "args": {"Bytes": 64, "Total Allocated": 128, "Device Id": 0, "Device Type": 1}})";
      break;
    case 4: t += R"({"ph": "C", "name": "c", "pid": 1, "ts": )" + ts + "}"; break;
    default:
      t += R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": )" +
           std::to_string(next(3)) + R"(, "ts": )" + ts + R"(, "dur": 2, "args": {"correlation": )" +
           std::to_string(i) + "}}";
      break;
    }
  }
  const std::string good = t + "]}";
  const auto ref = stream(good, 0, 1);
  REQUIRE(ref.events == 400);
  REQUIRE(ref.threads.size() > 5);
  for (unsigned threads : {2u, 3u, 8u})
    for (std::size_t w : {1, 50, 200, 999, 4096, 100'000}) {
      CAPTURE(threads);
      CAPTURE(w);
      CHECK(table_difference(ref, stream(good, w, threads)) == "");
    }
  const std::string bad = t + R"(, {"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 1, "dur": -1}]})";
  const auto bad_error = error_of(bad, 0, 1);
  CHECK(bad_error == "daydream: test.json: event #400: negative duration (dur = -1 us)");
  for (unsigned threads : {2u, 3u})
    for (std::size_t w : {1, 64, 700, 5000}) {
      CAPTURE(threads);
      CAPTURE(w);
      CHECK(error_of(bad, w, threads) == bad_error);
    }
}

TEST_CASE("stream: an event larger than the window widens it") {
  const std::string name(100'000, 'x');
  const std::string text = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")" + name +
                           R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})";
  const auto d = stream(text, 64);
  REQUIRE(d.cpu.size() == 1);
  CHECK(d.cpu[0].name == name);
}
