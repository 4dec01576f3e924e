// Defines the libFuzzer target for the Chakra execution trace reader: arbitrary bytes as an ET, then the replay and the writer.
// SPDX-License-Identifier: MIT
//
// Whatever the bytes, parse_chakra either gives a trace or throws daydream::error naming
// the source; it never crashes, hangs, trips a sanitizer, or throws anything else. A trace
// it gives is acyclic (the replay terminates and times every task), and written again
// with write_chakra and read back it has the same tasks and dependencies and replays to
// the same makespan. The first byte chooses whether dependencies on missing nodes and
// control dependencies that close cycles are refused or left out.
#include <daydream/io/chakra.hpp>
#include <daydream/replay.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_chakra: %s: %s\n", what, detail.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace io = daydream::io;
  if (size == 0) return 0;
  const bool drop = (data[0] & 1) != 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string source = "fuzz.0.et";
  io::chakra_trace t;
  try {
    t = io::parse_chakra(bytes, source, {.drop_missing_dependencies = drop});
  } catch (const daydream::error& e) {
    if (std::string_view(e.what()).find(source) == std::string_view::npos)
      fail("an error that does not name its source", e.what());
    return 0;
  }
  if (t.nodes != t.g.size()) fail("nodes and tasks differ", std::to_string(t.nodes) + " vs " + std::to_string(t.g.size()));
  const auto r = daydream::replay(t.g);
  if (r.tasks != t.g.size()) fail("the replay left tasks out", std::to_string(r.tasks));
  const auto ex = io::write_chakra(t.g, {.npus = 1});
  if (ex.files.size() != 1) fail("write_chakra of one NPU wrote", std::to_string(ex.files.size()));
  io::chakra_trace back;
  try {
    back = io::parse_chakra(ex.files[0].bytes, "again.et");
  } catch (const daydream::error& e) {
    fail("what write_chakra wrote does not read back", e.what());
  }
  if (back.g.size() != t.g.size() || back.g.dependency_count() != t.g.dependency_count())
    fail("the round trip changed the graph", std::to_string(back.g.size()) + " tasks, " +
                                                  std::to_string(back.g.dependency_count()) + " dependencies");
  if (daydream::replay(back.g).makespan != r.makespan) fail("the round trip changed the replay", "");
  return 0;
}
