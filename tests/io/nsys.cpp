// Tests io::load_nsys / parse_nsys and io::load_trace on Nsight Systems SQLite exports: small
// databases made here with the exporter's tables and columns, and the bundled sample.
// SPDX-License-Identifier: MIT
#include <daydream/io/load.hpp>
#include <daydream/io/nsys.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>

#include <support/corpus.hpp>
#include <support/temp_dir.hpp>

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <string>
#include <string_view>

using namespace daydream;
namespace dio = daydream::io;

namespace {

/// The serialized global thread id Nsight Systems writes (pid in bits 24-47, tid below).
constexpr std::int64_t gtid(std::int64_t pid, std::int64_t tid) { return (pid << 24) | tid; }
constexpr std::int64_t nsys_main_thread = gtid(100, 100);

/// The tables of `nsys export --type sqlite` daydream reads, with the columns NVIDIA's
/// exporter documentation lists (those daydream reads and a few it does not).
constexpr std::string_view nsys_schema[] = {
    "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER "
    "NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, "
    "callchainId INTEGER)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT "
    "NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
    "demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, "
    "cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, "
    "gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, "
    "staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT "
    "NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT "
    "NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes "
    "INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, "
    "srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT "
    "NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value "
    "INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER)",
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId "
    "INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid "
    "INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL)",
    "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
    "category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId "
    "INTEGER)",
    "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, totalMemory INTEGER, "
    "smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER, maxThreadsPerBlock INTEGER, threadsPerWarp "
    "INTEGER, maxWarpsPerSm INTEGER)",
};

/// An Nsight Systems export made row by row, written to `path` (the tables in
/// nsys_schema, or only those given).
class nsys_db {
public:
  explicit nsys_db(const std::filesystem::path& path, bool schema = true) : path_(path) {
    std::filesystem::remove(path);
    REQUIRE(sqlite3_open(path.string().c_str(), &db_) == SQLITE_OK);
    exec("PRAGMA page_size = 512");
    if (schema)
      for (auto t : nsys_schema) exec(t);
  }
  nsys_db(const nsys_db&) = delete;
  nsys_db& operator=(const nsys_db&) = delete;
  ~nsys_db() { sqlite3_close(db_); }

  void exec(std::string_view sql) {
    char* msg = nullptr;
    const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &msg);
    INFO(sql << ": " << (msg ? msg : ""));
    sqlite3_free(msg);
    REQUIRE(rc == SQLITE_OK);
  }
  /// The StringIds id of `s` (added the first time).
  std::int64_t str(const std::string& s) {
    auto [it, fresh] = strings_.try_emplace(s, std::int64_t(strings_.size() + 1));
    if (fresh) exec("INSERT INTO StringIds VALUES (" + std::to_string(it->second) + ", '" + s + "')");
    return it->second;
  }
  void runtime(std::int64_t start, std::int64_t end, std::int64_t corr, const std::string& name,
               std::int64_t tid = nsys_main_thread) {
    exec(row("CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)",
             {start, end, 0, tid, corr, str(name), 0}));
  }
  void kernel(std::int64_t start, std::int64_t end, std::int64_t stream, std::int64_t corr, const std::string& name,
              std::int64_t device = 0) {
    const auto n = str(name);
    exec(row("CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, "
             "demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
             "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)",
             {start, end, device, 1, stream, corr, gtid(100, 0), n, n, 32, 80, 2, 1, 256, 1, 1, 1024, 2048, 0, 0, 1}));
  }
  void copy(std::int64_t start, std::int64_t end, std::int64_t stream, std::int64_t corr, std::int64_t bytes,
            std::int64_t kind, std::int64_t src, std::int64_t dst) {
    exec(row("CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, "
             "bytes, copyKind, srcKind, dstKind)",
             {start, end, 0, 1, stream, corr, gtid(100, 0), bytes, kind, src, dst}));
  }
  void memset(std::int64_t start, std::int64_t end, std::int64_t stream, std::int64_t corr, std::int64_t bytes) {
    exec(row("CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId, globalPid, "
             "value, bytes)",
             {start, end, 0, 1, stream, corr, gtid(100, 0), 0, bytes}));
  }
  void sync(std::int64_t start, std::int64_t end, std::int64_t stream, std::int64_t corr, std::int64_t type) {
    exec(row("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, streamId, correlationId, "
             "globalPid, syncType, eventId)",
             {start, end, 0, 1, stream, corr, gtid(100, 0), type, 0}));
  }
  /// An NVTX range (eventType 59, push/pop) or another NVTX event; the text in StringIds
  /// when `registered`.
  void nvtx(std::int64_t start, std::int64_t end, const std::string& text, std::int64_t type = 59,
            std::int64_t tid = nsys_main_thread, std::int64_t end_tid = -1, bool registered = false) {
    const std::string t = registered ? "NULL" : "'" + text + "'";
    const std::string id = registered ? std::to_string(str(text)) : "NULL";
    exec("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, textId) VALUES (" +
         std::to_string(start) + ", " + (end < 0 ? std::string("NULL") : std::to_string(end)) + ", " +
         std::to_string(type) + ", " + t + ", " + std::to_string(tid) + ", " +
         (end_tid < 0 ? std::string("NULL") : std::to_string(end_tid)) + ", " + id + ")");
  }
  void gpu(std::int64_t id, const std::string& name) {
    exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, smCount, computeMajor, computeMinor, "
         "maxThreadsPerBlock, threadsPerWarp, maxWarpsPerSm) VALUES (1, " +
         std::to_string(id) + ", '" + name + "', 85899345920, 132, 9, 0, 1024, 32, 64)");
  }
  const std::filesystem::path& path() const { return path_; }

private:
  static std::string row(const std::string& table, std::initializer_list<std::int64_t> values) {
    std::string s = "INSERT INTO " + table + " VALUES (";
    bool first = true;
    for (auto v : values) {
      s += (first ? "" : ", ") + std::to_string(v);
      first = false;
    }
    return s + ")";
  }
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
  std::map<std::string, std::int64_t> strings_;
};

/// The n-th task (in id order) named `name`.
task_id task_named(const graph& g, std::string_view name, int nth = 0) {
  task_id found = no_task;
  g.for_each_task([&](task_id t) {
    if (found == no_task && g.name(t) == name && nth-- == 0) found = t;
  });
  REQUIRE_MESSAGE(found != no_task, "no task named " << name);
  return found;
}

std::string load_error(const std::filesystem::path& p) {
  try {
    (void)dio::load_trace(p);
  } catch (const error& e) {
    return e.what();
  }
  FAIL("no error loading " << p);
  return {};
}

/// Three training steps of 400 us marked by NVTX ranges "train_step", one after the
/// other: each launches a forward kernel (in ranges "forward" and "layer1") and a
/// backward one, then waits for both with cudaDeviceSynchronize. Times in ns; step k
/// begins at 1 ms + (k - 1) * 400 us. Kernels start as their launch returns (a later
/// start within ingest_options::launch_latency is launch latency, which the graph drops).
void three_steps(nsys_db& db) {
  db.gpu(0, "NVIDIA H100 80GB HBM3");
  std::int64_t corr = 10;
  for (std::int64_t k = 1; k <= 3; ++k) {
    const std::int64_t b = 1'000'000 + (k - 1) * 400'000;
    db.nvtx(b, b + 400'000, "train_step");
    db.nvtx(b + 10'000, b + 100'000, "forward");
    db.nvtx(b + 20'000, b + 90'000, "layer1", 59, nsys_main_thread, -1, true);
    db.runtime(b + 30'000, b + 40'000, corr, "cudaLaunchKernel_v7000");
    db.kernel(b + 40'000, b + 240'000, 7, corr++, "gemm_fwd");
    db.nvtx(b + 110'000, b + 200'000, "backward");
    db.runtime(b + 120'000, b + 130'000, corr, "cudaLaunchKernel_v7000");
    db.kernel(b + 240'000, b + 340'000, 7, corr++, "gemm_bwd");
    db.runtime(b + 210'000, b + 340'000, corr, "cudaDeviceSynchronize_v3020");
    db.sync(b + 210'000, b + 340'000, -1, corr++, 4);
  }
}

} // namespace

TEST_CASE("nsys: a launch, its kernel, a blocking copy and a memset replay to the recorded times") {
  testing::temp_dir dir;
  nsys_db db(dir.p / "copies.sqlite");
  // The call and, inside it, its versioned entry point with the same correlationId.
  db.runtime(0, 10'000, 1, "cudaLaunchKernel");
  db.runtime(1'000, 9'000, 1, "cudaLaunchKernel_v7000");
  db.kernel(10'000, 60'000, 7, 1, "void gemm<float>(float*)");
  db.runtime(15'000, 100'000, 2, "cudaMemcpy_v3020");
  db.copy(60'000, 98'000, 7, 2, 1 << 20, 2, 2, 0); // DtoH, device -> pageable
  db.runtime(100'000, 105'000, 3, "cudaMemsetAsync_v3020");
  db.memset(105'000, 110'000, 7, 3, 4096);
  db.nvtx(50, -1, "a mark", 34);                                  // a mark: no range
  db.nvtx(200, 5'000, "across threads", 60, nsys_main_thread, gtid(100, 101)); // ends on another thread
  auto t = dio::load_trace(db.path());
  auto& g = t.g;
  check_invariants(g);
  // 4 runtime + 1 kernel + 1 copy + 1 memset + 2 NVTX rows, each in the graph or counted.
  CHECK(t.report.events == 9);
  CHECK(t.report.in_graph == 6);
  CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
  CHECK(t.report.ignored.at("runtime record inside another record of the same call (same correlationId)") == 1);
  CHECK(t.report.ignored.at("NVTX event that is not a range (mark, domain or thread name)") == 1);
  CHECK(t.report.ignored.at("NVTX range ending on another thread") == 1);
  CHECK(t.report.unlinked_gpu_ops == 0);
  CHECK(t.info.kernels == 1);
  CHECK(t.info.copies == 1);
  CHECK(t.info.memsets == 1);
  CHECK(t.info.path == db.path().string());

  auto launch = task_named(g, "cudaLaunchKernel"), kernel = task_named(g, "void gemm<float>(float*)");
  CHECK(g.dependency_kind(launch, kernel) == dep_kind::launch);
  auto k = g.as<gpu_kernel>(kernel);
  REQUIRE(k);
  CHECK(g.payload(k).stream == 7);
  CHECK(g.payload(k).launch.blocks == 160);
  CHECK(g.payload(k).launch.threads == 256);
  CHECK(g.payload(k).launch.registers == 32);
  CHECK(g.payload(k).launch.shared_memory == 3072);
  auto copy = task_named(g, "Memcpy DtoH (Device -> Pageable)");
  auto m = g.as<memcpy_task>(copy);
  REQUIRE(m);
  CHECK(g.payload(m).direction == copy_kind::d2h);
  CHECK(g.payload(m).bytes == std::uint64_t(1) << 20);
  auto set = g.as<memcpy_task>(task_named(g, "Memset (Device)"));
  REQUIRE(set);
  CHECK(g.payload(set).direction == copy_kind::memset);
  CHECK(g.payload(set).bytes == 4096);
  // The blocking copy is cut where its copy starts: the piece before enqueues it, the
  // piece after waits for it. The copy queues behind the kernel; the replay reproduces
  // the recorded timeline.
  auto enqueue = task_named(g, "cudaMemcpy", 0), wait = task_named(g, "cudaMemcpy", 1);
  CHECK(g.dependency_kind(enqueue, copy) == dep_kind::launch);
  CHECK(g.dependency_kind(copy, wait) == dep_kind::sync);
  auto r = replay(g);
  CHECK(r.end[copy] == 98'000);
  CHECK(r.end[wait] == 100'000);
  CHECK(r.makespan == 110'000);
  REQUIRE(t.iterations.size() == 1);
  CHECK(t.info.iterations_from == dio::iteration_source::whole_trace);
  CHECK(t.measured(0) == 105'000); // the CPU's 105 us (the GPU's work lasts 100 us)
  CHECK(iteration_time(g, r, 0) == t.measured(0));
  // If the kernel runs 20 us faster, the copy and the call waiting for it end 20 us earlier.
  set_duration(g, kernel, 30'000);
  CHECK(replay(g).end[task_named(g, "cudaMemcpy", 1)] == 80'000);
}

TEST_CASE("nsys: NVTX ranges are the steps (--nvtx-step), the phases and the layers") {
  testing::temp_dir dir;
  nsys_db db(dir.p / "steps.sqlite");
  three_steps(db);
  dio::ingest_options o;
  o.step_annotation = "^train_step$";
  auto t = dio::load_nsys(db.path(), o);
  auto& g = t.g;
  check_invariants(g);
  CHECK(t.report.events == 3 * 10); // 4 NVTX ranges, 3 calls, 2 kernels, 1 sync record a step
  CHECK(t.report.in_graph == t.report.events);
  CHECK(t.report.ignored_total() == 0);
  REQUIRE(t.iterations.size() == 3);
  CHECK(t.info.iterations_from == dio::iteration_source::annotations);
  CHECK(t.iterations[1].marker == "train_step #2");
  CHECK(t.iterations[1].trace_begin == 1'400'000);
  CHECK(t.steady_state_iterations() == std::vector<std::int32_t>{2});
  REQUIRE(t.info.gpus.size() == 1);
  CHECK(t.info.gpus[0] == "NVIDIA H100 80GB HBM3");
  REQUIRE(g.devices().size() == 1);
  CHECK(g.devices()[0].sm_count == 132);
  CHECK(g.devices()[0].max_threads_per_sm == 2048);
  // Phases from the ranges' names, the layer from the innermost range that names neither
  // a step nor a phase.
  for (int k = 0; k < 3; ++k) {
    auto fwd = task_named(g, "gemm_fwd", k), bwd = task_named(g, "gemm_bwd", k);
    CHECK(g.phase_of(fwd) == phase::forward);
    CHECK(g.layer(fwd) == "layer1");
    CHECK(g.phase_of(bwd) == phase::backward);
    CHECK(g.iteration(fwd) == k + 1);
  }
  // Every step replays to its recorded 400 us (the last to the end of its work).
  auto r = replay(g);
  for (int n = 1; n <= 3; ++n) {
    CAPTURE(n);
    CHECK(t.measured(n) == 400'000);
    CHECK(iteration_time(g, r, n) == t.measured(n));
  }
  // Twice as fast backward kernels: each step's synchronize returns 50 us earlier, and
  // so does the rest of the step.
  for (int k = 0; k < 3; ++k) set_duration(g, task_named(g, "gemm_bwd", k), 50'000);
  CHECK(iteration_time(g, replay(g), 2) == 350'000);
}

TEST_CASE("nsys: a step expression that matches no NVTX range names the ranges there are") {
  testing::temp_dir dir;
  nsys_db db(dir.p / "steps.sqlite");
  three_steps(db);
  dio::ingest_options o;
  o.step_annotation = "ProfilerStep";
  try {
    (void)dio::load_nsys(db.path(), o);
    FAIL("no error");
  } catch (const error& e) {
    CHECK(std::string(e.what()).find("train_step") != std::string::npos);
  }
}

TEST_CASE("nsys: load_trace tells the formats apart by content, not by name") {
  testing::temp_dir dir;
  // A SQLite database named .json is read as an export ...
  {
    nsys_db db(dir.p / "profile.json");
    db.runtime(0, 10'000, 1, "cudaLaunchKernel_v7000");
    db.kernel(11'000, 20'000, 7, 1, "k");
  }
  CHECK(dio::detect_trace_format(dir.p / "profile.json") == dio::trace_format::nsys_sqlite);
  CHECK(dio::load_trace(dir.p / "profile.json").info.kernels == 1);
  // ... and a Kineto trace named .sqlite as a Kineto trace.
  auto kineto = dir.file("trace.sqlite", R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 10,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 10,
     "args": {"correlation": 1, "stream": 7, "device": 0}}]})");
  CHECK(dio::detect_trace_format(kineto) == dio::trace_format::kineto);
  auto t = dio::load_trace(kineto);
  CHECK(t.info.kernels == 1);
  CHECK(replay(t.g).makespan == 20'000);
  // A missing file: the Kineto reader's error.
  CHECK(load_error(dir.p / "missing.sqlite").find("missing.sqlite") != std::string::npos);
}

TEST_CASE("nsys: a SQLite database that is not an export, or lacks a table or a column, is a clear error") {
  testing::temp_dir dir;
  auto says = [](const std::string& msg, std::initializer_list<std::string_view> parts) {
    CAPTURE(msg);
    for (auto p : parts) CHECK(msg.find(p) != std::string::npos);
  };
  const std::string_view how = "nsys export --type sqlite --output X.sqlite report.nsys-rep";
  {
    nsys_db db(dir.p / "other.sqlite", false);
    db.exec("CREATE TABLE customers (id INTEGER, name TEXT)");
  }
  says(load_error(dir.p / "other.sqlite"), {"other.sqlite", "not an Nsight Systems export", how});
  {
    nsys_db db(dir.p / "nokernels.sqlite", false);
    db.exec(nsys_schema[0]);
    db.exec(nsys_schema[1]);
    db.exec(nsys_schema[6]);
  }
  says(load_error(dir.p / "nokernels.sqlite"), {"without the table CUPTI_ACTIVITY_KIND_KERNEL", "no CUDA kernels", how});
  {
    nsys_db db(dir.p / "noruntime.sqlite", false);
    db.exec(nsys_schema[0]);
    db.exec(nsys_schema[2]);
  }
  says(load_error(dir.p / "noruntime.sqlite"), {"without the table CUPTI_ACTIVITY_KIND_RUNTIME", how});
  {
    nsys_db db(dir.p / "nostrings.sqlite", false);
    db.exec(nsys_schema[1]);
    db.exec(nsys_schema[2]);
  }
  says(load_error(dir.p / "nostrings.sqlite"), {"without the table StringIds", how});
  {
    nsys_db db(dir.p / "nostream.sqlite", false);
    db.exec(nsys_schema[0]);
    db.exec(nsys_schema[1]);
    db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, "
            "correlationId INTEGER, demangledName INTEGER)");
  }
  says(load_error(dir.p / "nostream.sqlite"), {"CUPTI_ACTIVITY_KIND_KERNEL has no column streamId"});
  {
    nsys_db db(dir.p / "empty.sqlite");
  }
  says(load_error(dir.p / "empty.sqlite"), {"empty.sqlite", "tables are empty", how});
  // The SQLite header followed by garbage.
  std::string bad = std::string("SQLite format 3", 16) + std::string(2000, 'x');
  says(load_error(dir.file("bad.sqlite", bad)), {"bad.sqlite"});
  // In memory: the same reader.
  says([&] {
    try {
      (void)dio::parse_nsys(bad, "memory.sqlite");
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  }(), {"memory.sqlite"});
}

TEST_CASE("nsys: parse_nsys reads the bytes of an export as load_nsys reads the file") {
  testing::temp_dir dir;
  {
    nsys_db db(dir.p / "steps.sqlite");
    three_steps(db);
  }
  std::ifstream in(dir.p / "steps.sqlite", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto a = dio::load_nsys(dir.p / "steps.sqlite");
  auto b = dio::parse_nsys(bytes, "steps");
  CHECK(a.g.size() == b.g.size());
  CHECK(a.report.in_graph == b.report.in_graph);
  CHECK(replay(a.g).makespan == replay(b.g).makespan);
  CHECK(b.info.path == "steps");
}

TEST_CASE("nsys: the bundled export of an MPI + CUDA program replays within 2%") {
  // tests/data/nsys/saxpy-mpi-cuda.sqlite (pipit's test data, MIT; tests/data/SOURCES.md):
  // five saxpy steps of copies in, a kernel and a copy out, on an A100.
  const auto path = testing::bundled("nsys/saxpy-mpi-cuda.sqlite");
  auto t = dio::load_trace(path);
  check_invariants(t.g);
  CHECK(t.report.events == 139);
  CHECK(t.report.in_graph + t.report.ignored_total() == t.report.events);
  CHECK(t.report.unlinked_gpu_ops == 0);
  CHECK(t.info.kernels == 5);
  CHECK(t.info.copies == 15);
  REQUIRE(t.info.gpus.size() == 1);
  CHECK(t.info.gpus[0] == "NVIDIA A100-SXM4-40GB");
  REQUIRE(t.iterations.size() == 1);
  const auto measured = t.measured(0), predicted = iteration_time(t.g, replay(t.g), 0);
  CAPTURE(measured);
  CAPTURE(predicted);
  CHECK(std::abs(double(predicted - measured)) <= 0.02 * double(measured));
}
