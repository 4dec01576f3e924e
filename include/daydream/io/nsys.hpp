// Defines io::load_nsys: an Nsight Systems SQLite export (`nsys export --type sqlite`) to the graph the Kineto ingest gives.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_NSYS_HPP
#define DAYDREAM_IO_NSYS_HPP

#include <daydream/config.hpp>
#include <daydream/io/kineto.hpp>
#if defined(DAYDREAM_HAVE_SQLITE) && (!defined(DAYDREAM_COMPILED) || defined(DAYDREAM_COMPILING_KINETO))
#  include <daydream/io/detail/kineto_events.hpp>
#  include <daydream/io/detail/nsys_decode.hpp>
#  include <daydream/io/detail/nsys_sqlite.hpp>
#endif

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace daydream::io {

/// Whether this build reads Nsight Systems exports (it was built with SQLite, Debian's
/// libsqlite3-dev); without, load_nsys throws an error that says so.
#ifdef DAYDREAM_HAVE_SQLITE
inline constexpr bool has_nsys_reader = true;
#else
inline constexpr bool has_nsys_reader = false;
#endif

#if defined(DAYDREAM_COMPILED) && !defined(DAYDREAM_COMPILING_KINETO)

/// Loads an Nsight Systems SQLite export (defined in compiled/kineto.cpp; see below).
kineto_trace load_nsys(const std::filesystem::path& file, const ingest_options& options = {});
/// Reads an Nsight Systems SQLite export held in memory (defined in compiled/kineto.cpp).
kineto_trace parse_nsys(std::string_view bytes, std::string_view source_name, const ingest_options& options = {});

#else

namespace detail {
/// What loading an export says in a build without SQLite.
inline std::string no_sqlite_message(const std::string& name) {
  return "daydream: " + name + ": an Nsight Systems SQLite export, but this build of daydream has no SQLite: "
         "install libsqlite3-dev (scripts/install-deps.sh) and build again";
}
} // namespace detail

/// Loads an Nsight Systems SQLite export (`nsys export --type sqlite --output X.sqlite
/// report.nsys-rep`) into the graph, iterations and report the Kineto ingest gives
/// (docs/formats.md, "Nsight Systems SQLite"): CUDA runtime and driver calls on their CPU
/// threads (CUPTI_ACTIVITY_KIND_RUNTIME, threads from `globalTid`), kernels, copies and
/// memsets on their streams, linked to the calls that launched them by `correlationId`,
/// synchronization records, NVTX ranges as annotations (the layers, the phases by their
/// names, and the steps with `options.step_annotation`), names from StringIds and the
/// GPUs from TARGET_INFO_GPU. Every row of those tables is in the graph or counted in
/// the report by reason.
///
/// Throws daydream::error naming the file for a file that cannot be opened or is not a
/// SQLite database, a database that is not an Nsight Systems export or lacks a table it
/// needs (StringIds, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_KERNEL: the error
/// names it and says how to export one), a column it needs, and in a build without SQLite.
///
///     auto t = daydream::io::load_nsys("profile.sqlite");
///     auto r = daydream::replay(t.g);
DAYDREAM_COMPILED_INLINE kineto_trace load_nsys(const std::filesystem::path& file, const ingest_options& options = {}) {
  const std::string name = file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw error("daydream: " + name + ": cannot open the file (" +
                (ec ? ec.message() : std::filesystem::exists(file) ? std::string("not a regular file")
                                                                   : std::string("no such file")) +
                ")");
#ifdef DAYDREAM_HAVE_SQLITE
  detail::decoded_trace d;
  {
    detail::sqlite_db db(name, name);
    detail::decode_nsys(db, d);
  } // the database is closed before the graph is built
  return detail::ingest(d, name, options);
#else
  (void)options;
  throw error(detail::no_sqlite_message(name));
#endif
}


/// Reads an Nsight Systems SQLite export held in memory (the bytes of the database file),
/// as load_nsys reads a file; `source_name` names it in errors and in `info.path`.
DAYDREAM_COMPILED_INLINE kineto_trace parse_nsys(std::string_view bytes, std::string_view source_name,
                                                 const ingest_options& options = {}) {
  const std::string name(source_name);
  if (bytes.empty()) throw error("daydream: " + name + ": empty file");
#ifdef DAYDREAM_HAVE_SQLITE
  detail::decoded_trace d;
  {
    detail::sqlite_db db(detail::sqlite_db::in_memory_t{}, bytes, name);
    detail::decode_nsys(db, d);
  }
  return detail::ingest(d, name, options);
#else
  (void)options;
  throw error(detail::no_sqlite_message(name));
#endif
}

#endif

} // namespace daydream::io

#endif
