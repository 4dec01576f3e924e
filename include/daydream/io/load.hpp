// Defines io::load_trace: a trace file of any format daydream reads, recognised by its content.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_LOAD_HPP
#define DAYDREAM_IO_LOAD_HPP

#include <daydream/io/kineto.hpp>
#include <daydream/io/nsys.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace daydream::io {

/// The formats load_trace reads.
enum class trace_format : unsigned char {
  kineto,      ///< a PyTorch profiler (Kineto) trace: JSON, plain or gzip
  nsys_sqlite, ///< an Nsight Systems SQLite export (`nsys export --type sqlite`)
};

/// The format of `file` from its first bytes, not its name: a SQLite database (the header
/// "SQLite format 3\0") is taken for an Nsight Systems export, anything else for a Kineto
/// trace (whose reader says what is wrong with a file that is not one, or cannot be read).
inline trace_format detect_trace_format(const std::filesystem::path& file) {
  static constexpr char magic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  std::ifstream in(file, std::ios::binary);
  char head[16] = {};
  if (!in.read(head, sizeof head)) return trace_format::kineto;
  return std::memcmp(head, magic, sizeof magic) == 0 ? trace_format::nsys_sqlite : trace_format::kineto;
}

/// Loads a trace of any format daydream reads, recognised by its content
/// (detect_trace_format): load_kineto for Kineto JSON (plain or gzip), load_nsys for an
/// Nsight Systems SQLite export. Throws daydream::error as they do.
///
///     auto t = daydream::io::load_trace(argv[1]);   // trace.json.gz or profile.sqlite
inline kineto_trace load_trace(const std::filesystem::path& file, const ingest_options& options = {}) {
  switch (detect_trace_format(file)) {
  case trace_format::nsys_sqlite: return load_nsys(file, options);
  case trace_format::kineto: break;
  }
  return load_kineto(file, options);
}

} // namespace daydream::io

#endif
