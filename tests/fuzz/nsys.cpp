// Defines the libFuzzer target for the Nsight Systems reader: arbitrary rows in an export's tables, or arbitrary bytes as a database.
// SPDX-License-Identifier: MIT
//
// Input that starts with SQLite's header is read as a database file (parse_nsys). Other
// input is a list of rows: each record's first byte picks a table (runtime calls,
// kernels, copies, memsets, synchronizations, NVTX events, strings, GPUs, or dropping a
// table), the next bytes give its values (small numbers, so that correlation ids, threads,
// streams and times collide); the rows are written into an in-memory database with the
// exporter's tables, whose bytes the reader then reads. Whatever the input, the reader
// gives a trace (every row in the graph or counted, the graph's invariants kept, a
// replay) or throws daydream::error naming the source; it never crashes or hangs.
#include "check_trace.hpp"

#include <daydream/io/nsys.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  daydream::fuzzing::fail("fuzz_nsys", what, detail);
}

constexpr const char* schema =
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER, "
    "correlationId INTEGER, nameId INTEGER, returnValue INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, "
    "streamId INTEGER, correlationId INTEGER, demangledName INTEGER, shortName INTEGER, registersPerThread INTEGER, "
    "gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, "
    "staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, "
    "streamId INTEGER, correlationId INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, "
    "streamId INTEGER, correlationId INTEGER, value INTEGER, bytes INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER, deviceId INTEGER, contextId "
    "INTEGER, streamId INTEGER, correlationId INTEGER, syncType INTEGER, eventId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, "
    "streamId INTEGER, correlationId INTEGER, eventId INTEGER);"
    "CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER, "
    "endGlobalTid INTEGER, textId INTEGER);"
    "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER, "
    "maxThreadsPerBlock INTEGER, threadsPerWarp INTEGER, maxWarpsPerSm INTEGER);";

/// Names the rows pick from: calls of every kind the ingest tells apart, and annotations
/// that mark steps and phases.
constexpr const char* names[] = {"cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cudaMemcpy",
                                 "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventRecord",
                                 "cudaStreamWaitEvent", "cudaEventSynchronize", "cuLaunchKernel",
                                 "cudaFree", "step", "forward", "backward", "optimizer", "layer", "ncclKernel_AllReduce"};

/// Reads the fuzz input a value at a time (0 past its end).
struct reader {
  const std::uint8_t* p;
  std::size_t n;
  bool done() const { return n == 0; }
  std::uint8_t byte() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  /// A small value: mostly 0..63, sometimes a time in microseconds, a large or a negative one.
  std::int64_t value() {
    const std::uint8_t b = byte();
    switch (b >> 6) {
    case 0: return b & 63;
    case 1: return std::int64_t(b & 63) * 1000 + byte();
    case 2: return std::int64_t(byte()) * 10'000;
    default: return (b & 1) ? -std::int64_t(byte()) : std::int64_t(0x7fffffff) * (b & 15);
    }
  }
};

void exec(sqlite3* db, const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "";
    sqlite3_free(msg);
    fail("building the database", m + " in " + sql);
  }
}

/// Runs a row's statement; one on a table the input dropped does nothing.
void row(sqlite3* db, const std::string& sql) { sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr); }

std::string values(reader& in, int count) {
  std::string s;
  for (int k = 0; k < count; ++k) s += (k ? ", " : "") + std::to_string(in.value());
  return s;
}

/// The bytes of a database whose rows the input gives.
std::string database_of(reader in) {
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) fail("sqlite", "cannot open a database in memory");
  exec(db, schema);
  for (std::size_t k = 0; k < std::size(names); ++k)
    exec(db, "INSERT INTO StringIds VALUES (" + std::to_string(k) + ", '" + names[k] + "')");
  exec(db, "BEGIN");
  for (int rows = 0; !in.done() && rows < 2000; ++rows) {
    const std::uint8_t table = in.byte() % 10;
    switch (table) {
    case 0: row(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + values(in, 7) + ")"); break;
    case 1: row(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + values(in, 17) + ")"); break;
    case 2: row(db, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (" + values(in, 10) + ")"); break;
    case 3: row(db, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (" + values(in, 8) + ")"); break;
    case 4: row(db, "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (" + values(in, 8) + ")"); break;
    case 5: row(db, "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (" + values(in, 7) + ")"); break;
    case 6: {
      const std::string v = values(in, 3);
      const std::uint8_t how = in.byte();
      const std::string text = how & 1 ? "NULL" : "'" + std::string(names[how % std::size(names)]) + "'";
      row(db, "INSERT INTO NVTX_EVENTS VALUES (" + v + ", " + text + ", " + values(in, 3) + ")");
      break;
    }
    case 7: row(db, "INSERT INTO TARGET_INFO_GPU VALUES (" + std::to_string(in.value()) + ", 'gpu', " +
                         values(in, 5) + ")");
      break;
    case 8: { // a NULL where the exporter writes NOT NULL columns
      const std::uint8_t which = in.byte() % 3;
      row(db, which == 0   ? "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = NULL WHERE rowid = 1"
               : which == 1 ? "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL"
                            : "UPDATE NVTX_EVENTS SET globalTid = NULL WHERE rowid = 2");
      break;
    }
    default: { // a table missing
      static constexpr const char* optional[] = {"NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMCPY", "TARGET_INFO_GPU",
                                                 "CUPTI_ACTIVITY_KIND_KERNEL"};
      row(db, std::string("DROP TABLE IF EXISTS ") + optional[in.byte() % 4]);
      break;
    }
    }
  }
  exec(db, "COMMIT");
  sqlite3_int64 size = 0;
  unsigned char* bytes = sqlite3_serialize(db, "main", &size, 0);
  if (!bytes) fail("sqlite", "cannot serialize the database");
  std::string out(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(size));
  sqlite3_free(bytes);
  sqlite3_close(db);
  return out;
}

/// Checks what a successful read promises.
void check_trace(const daydream::io::kineto_trace& t) { (void)daydream::fuzzing::check_trace("fuzz_nsys", t, "rows"); }

void run(std::string_view bytes, const daydream::io::ingest_options& o) {
  try {
    check_trace(daydream::io::parse_nsys(bytes, "fuzz.sqlite", o));
  } catch (const daydream::error& e) {
    const std::string_view msg = e.what();
    // The step expression's own error (no NVTX range matches it) names the expression.
    const bool steps = !o.step_annotation.empty() && msg.find("step annotation") != std::string_view::npos;
    if (!steps && msg.find("fuzz.sqlite") == std::string_view::npos) fail("an error that does not name its source", std::string(msg));
    if (msg.find("internal error") != std::string_view::npos) fail("an internal error", std::string(msg));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr char magic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f', 'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
  daydream::io::ingest_options o;
  o.threads = 1;
  if (size >= 16 && std::memcmp(data, magic, 16) == 0) {
    run(std::string_view(reinterpret_cast<const char*>(data), size), o);
    return 0;
  }
  // The first byte chooses whether NVTX ranges named "step" mark the iterations.
  if (size > 0 && (data[0] & 1)) o.step_annotation = "^step$";
  run(database_of(reader{size ? data + 1 : data, size ? size - 1 : 0}), o);
  return 0;
}
