// Defines the libFuzzer target for the Kineto trace reader: arbitrary bytes as JSON, or as a gzip file.
// SPDX-License-Identifier: MIT
//
// Whatever the bytes, the reader either gives a trace or throws daydream::error naming the
// source; it never crashes, hangs, trips a sanitizer, or throws anything else. A trace it
// gives accounts for every event, keeps the graph invariants and replays.
#include "check_trace.hpp"

#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <filesystem>
#include <string>
#include <string_view>

#include <unistd.h> // getpid: one scratch file per fuzzing process

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  daydream::fuzzing::fail("fuzz_kineto", what, detail);
}

/// Checks what a successful ingest promises.
void check_trace(const daydream::io::kineto_trace& t) {
  const auto r = daydream::fuzzing::check_trace("fuzz_kineto", t, "events");
  // Iterations come from somewhere exactly when there are some; an empty graph says why.
  if (t.iterations.empty() != (t.info.iterations_from == daydream::io::iteration_source::none))
    fail("iterations", "iterations_from disagrees with the iterations found");
  if (t.g.empty() && t.problems().empty()) fail("problems", "an empty graph without a reason");
  // The timeline writer reads every name the trace gave.
  daydream::io::chrome_trace ct;
  ct.add("fuzz", t.g, r);
  (void)ct.str();
}

/// Errors must name the input and must not be internal ones.
void check_error(const daydream::error& e, std::string_view source) {
  std::string_view msg = e.what();
  if (msg.find(source) == std::string_view::npos) fail("an error that does not name its source", std::string(msg));
  if (msg.find("internal error") != std::string_view::npos) fail("an internal error", std::string(msg));
}

const std::filesystem::path& scratch_file() {
  static const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("daydream_fuzz_" + std::to_string(::getpid()) + ".json.gz");
  // The fuzzer ends with exit(): the scratch file goes with the process.
  static const int removed_at_exit = std::atexit([] {
    std::error_code ec;
    std::filesystem::remove(p, ec);
  });
  (void)removed_at_exit;
  return p;
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("scratch file", path.string());
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) fail("scratch file", "short write");
  std::fclose(f);
}

/// `text` as one gzip member.
std::string gzip_of(std::string_view text) {
  z_stream zs{};
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) fail("zlib", "deflateInit2");
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) fail("zlib", "deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

/// What a load gave: a summary of the trace, or the error after the source's name.
std::string outcome(auto&& load, const std::string& source) {
  try {
    auto t = load();
    check_trace(t);
    return "ok " + std::to_string(t.g.size()) + " tasks, " + std::to_string(t.g.dependency_count()) + " deps, " +
           std::to_string(t.report.in_graph) + " in graph, " + std::to_string(t.iterations.size()) + " iterations";
  } catch (const daydream::error& e) {
    check_error(e, source);
    std::string msg = e.what();
    return "error" + msg.substr(msg.find(source) + source.size());
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const auto& path = scratch_file();
  if (gzip) {
    // Gzip bytes go through load_kineto, the way a user's .json.gz does: file header,
    // size hint from ISIZE, inflation a window at a time.
    write_file(path, bytes);
    (void)outcome([&] { return daydream::io::load_kineto(path); }, path.string());
    return 0;
  }
  const auto plain = outcome([&] { return daydream::io::parse_kineto(bytes, "fuzz.json"); }, "fuzz.json");
  // DAYDREAM_FUZZ_VERBOSE=1 prints what each input gave, to read a corpus or a reproducer.
  static const bool verbose = std::getenv("DAYDREAM_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "%s\n", plain.c_str());
  // The events are decoded a window at a time: a small window (chosen by size, so a
  // reproducer behaves the same) must load the same trace, or refuse it too (an input
  // with two faults may be refused for either: the one in the first window read).
  {
    daydream::io::ingest_options small;
    small.window_bytes = 1 + size % 97;
    const auto windowed =
        outcome([&] { return daydream::io::parse_kineto(bytes, "fuzz.json", small); }, "fuzz.json");
    const bool both_refused = windowed.rfind("error", 0) == 0 && plain.rfind("error", 0) == 0;
    if (windowed != plain && !both_refused) fail("a small window and the default one disagree", plain + " | " + windowed);
    // Windows decoded on worker threads and merged in order: exactly what the reading
    // thread alone gives at the same window, errors included.
    small.threads = 1;
    const auto alone = outcome([&] { return daydream::io::parse_kineto(bytes, "fuzz.json", small); }, "fuzz.json");
    small.threads = 3;
    const auto shared = outcome([&] { return daydream::io::parse_kineto(bytes, "fuzz.json", small); }, "fuzz.json");
    if (alone != shared) fail("one thread and three disagree", alone + " | " + shared);
  }
  // For one input in four (chosen by size, so a reproducer behaves the same), the same
  // text compressed must load through the file path with the same result.
  if (size > 0 && size % 4 == 0 && size <= (1u << 16)) {
    write_file(path, gzip_of(bytes));
    const auto zipped = outcome([&] { return daydream::io::load_kineto(path); }, path.string());
    if (zipped != plain) fail("gzip and plain input disagree", plain + " | " + zipped);
  }
  return 0;
}
