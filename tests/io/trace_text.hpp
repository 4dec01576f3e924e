// Defines builders of small Kineto trace texts for the ingest tests: events, flows, memory events, documents.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_IO_TRACE_TEXT_HPP
#define DAYDREAM_TESTS_IO_TRACE_TEXT_HPP

#include <initializer_list>
#include <string>
#include <string_view>

namespace daydream::testing::trace_text {

/// A complete ('X') event; times in microseconds as JSON number text.
inline std::string X(std::string_view cat, std::string_view name, int pid, int tid, std::string_view ts,
              std::string_view dur, std::string_view args = "{}") {
  return "{\"ph\": \"X\", \"cat\": \"" + std::string(cat) + "\", \"name\": \"" + std::string(name) +
         "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " +
         std::string(ts) + ", \"dur\": " + std::string(dur) + ", \"args\": " + std::string(args) + "}";
}
inline std::string flow(char ph, std::string_view cat, int id, int pid, int tid, std::string_view ts) {
  return "{\"ph\": \"" + std::string(1, ph) + "\", \"id\": " + std::to_string(id) + ", \"pid\": " +
         std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + std::string(ts) +
         ", \"cat\": \"" + std::string(cat) + "\", \"name\": \"" + std::string(cat) + "\"" +
         (ph == 'f' ? ", \"bp\": \"e\"}" : "}");
}
inline std::string memory(int pid, int tid, std::string_view ts, long long bytes, long long total, int type) {
  return "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": " +
         std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + std::string(ts) +
         ", \"args\": {\"Total Reserved\": 0, \"Total Allocated\": " + std::to_string(total) +
         ", \"Bytes\": " + std::to_string(bytes) + ", \"Device Id\": " + (type ? "0" : "-1") +
         ", \"Device Type\": " + std::to_string(type) + "}}";
}
inline std::string corr(int c) { return "{\"correlation\": " + std::to_string(c) + "}"; }
inline std::string gpu(int c, int stream = 7) {
  return "{\"device\": 0, \"stream\": " + std::to_string(stream) + ", \"correlation\": " + std::to_string(c) + "}";
}
inline std::string trace(std::initializer_list<std::string> events, std::string_view extra = "") {
  std::string s = "{";
  s += extra;
  s += "\"traceEvents\": [";
  bool first = true;
  for (auto& e : events) {
    if (!first) s += ",\n";
    s += e;
    first = false;
  }
  s += "]}";
  return s;
}

} // namespace daydream::testing::trace_text

#endif
