// Defines the libFuzzer target for the DLC reader: arbitrary bytes as a DLC file, then the graph, the analysis and the writer.
// SPDX-License-Identifier: MIT
//
// Whatever the bytes, parse_dlc either gives a file or throws daydream::error naming the
// source; it never crashes, hangs, trips a sanitizer, or throws anything else. A file it
// gives accounts for every record line; its job builds a graph that replays every record
// at its recorded time (one file: no clock of another node); the analysis runs; and its
// messages, written with write_dlc (or refused with a daydream::error) and read back, are
// the same messages with every record usable.
#include <daydream/io/dlc.hpp>
#include <daydream/io/dlc_analysis.hpp>
#include <daydream/io/dlc_graph.hpp>
#include <daydream/io/dlc_writer.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_dlc: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_error(const daydream::error& e, std::string_view source) {
  std::string_view msg = e.what();
  if (msg.find(source) == std::string_view::npos) fail("an error that does not name its source", std::string(msg));
}

void check_file(const daydream::io::dlc_file& f) {
  namespace io = daydream::io;
  const auto& rep = f.report;
  if (rep.usable + rep.setup + rep.unusable_total() != rep.records)
    fail("accounting", std::to_string(rep.usable) + " usable + " + std::to_string(rep.setup) + " set-up + " +
                           std::to_string(rep.unusable_total()) + " unusable != " + std::to_string(rep.records));
  auto job = io::make_dlc_job({f});
  // The graph builder accepts whatever the reader accepted, and replays it exactly.
  io::dlc_graph d;
  daydream::replay_result r;
  try {
    d = io::build_dlc_graph(job);
    daydream::check_invariants(d.g);
    r = daydream::replay(d.g);
  } catch (const daydream::error& e) {
    fail("an accepted file does not build or replay", e.what());
  }
  for (std::size_t i = 0; i < f.records.size(); ++i)
    if (d.replayed_us(r, 0, i) != f.records[i].time_us)
      fail("replay", "line " + std::to_string(f.records[i].line) + " replays at another time");
  // The what-ifs keep durations valid.
  auto faster = d;
  io::apply_dlc_what_if(faster, {.bandwidth_scale = 3, .workers = 5, .servers = 2});
  (void)daydream::replay(faster.g);
  auto a = io::analyze_dlc(job);
  daydream::io::json_writer w;
  io::write_dlc_analysis_json(w, job, a);
  // The writer: the file's messages, each end the job lacks at the other's time. It
  // writes a file per node whose header lists every node, and looks up every worker's
  // (or server's) message for each synchronous record: O((W + S)^2 + records x (W + S))
  // by the format's design. A header of a few bytes can declare 2^16 nodes, so the round
  // trip is checked for jobs of up to 256 nodes (the reader, build, replay and analysis
  // above run on every job).
  if (job.workers + job.servers > 256) return;
  auto msgs = io::dlc_messages(job, 0);
  for (auto& m : msgs) {
    if (m.sent < 0) m.sent = m.received;
    if (m.received < 0) m.received = m.sent;
  }
  std::vector<io::dlc_text> files;
  try {
    files = io::write_dlc(msgs, {.workers = job.workers, .servers = job.servers, .epoch_us = 0});
  } catch (const daydream::error& e) {
    if (std::string_view(e.what()).find("write_dlc") == std::string_view::npos) fail("writer error", e.what());
    return; // the records do not follow the protocol's dependencies: refused, with the message named
  }
  std::vector<io::dlc_file> back;
  for (auto& t : files) {
    auto b = io::parse_dlc(t.text, t.name);
    if (b.report.unusable_total()) fail("written record unusable", b.report.problems.empty() ? "" : b.report.problems[0]);
    back.push_back(std::move(b));
  }
  auto again = io::dlc_messages(io::make_dlc_job(std::move(back)), 0);
  if (again != msgs) fail("round trip", std::to_string(msgs.size()) + " messages written, others read back");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    check_file(daydream::io::parse_dlc(bytes, "fuzz.dlc"));
  } catch (const daydream::error& e) {
    check_error(e, "fuzz.dlc");
  }
  return 0;
}
