// Defines io::detail::decode_nsys: the tables of an Nsight Systems SQLite export into the event tables the Kineto ingest builds graphs from.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_NSYS_DECODE_HPP
#define DAYDREAM_IO_DETAIL_NSYS_DECODE_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/nsys_sqlite.hpp>
#include <daydream/kinds.hpp>
#include <daydream/recorded_device.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// How to make the database daydream reads, for error messages.
inline constexpr std::string_view nsys_export_hint =
    "record with `nsys profile --trace=cuda,nvtx ...` and export the report with "
    "`nsys export --type sqlite --output X.sqlite report.nsys-rep`";

/// The tables an Nsight Systems export must have for daydream to read it (the others are
/// read when present: a report without copies has no CUPTI_ACTIVITY_KIND_MEMCPY).
inline constexpr std::string_view nsys_required_tables[] = {"StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME",
                                                            "CUPTI_ACTIVITY_KIND_KERNEL"};

/// A runtime name without the version suffix Nsight Systems appends to the entry point
/// (`cudaLaunchKernel_v7000` -> `cudaLaunchKernel`).
inline std::string_view strip_api_version(std::string_view n) noexcept {
  const auto k = n.rfind("_v");
  if (k == std::string_view::npos || k + 2 == n.size()) return n;
  for (std::size_t i = k + 2; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return n;
  return n.substr(0, k);
}

/// A copy's name as Kineto writes it ("Memcpy HtoD (Pageable -> Device)") from the
/// export's copyKind, srcKind and dstKind (CUPTI's enums; -1: absent).
inline std::string nsys_copy_name(std::int64_t kind, std::int64_t src, std::int64_t dst) {
  static constexpr std::string_view kinds[] = {"",     "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
                                               "DtoA", "DtoD", "HtoH", "PtoP", "HtoD", "DtoH", "DtoD"};
  static constexpr std::string_view mem[] = {"Pageable",      "Pinned",         "Device", "Array", "Managed",
                                             "Device Static", "Managed Static", "Unknown"};
  std::string n = "Memcpy";
  if (kind > 0 && kind < std::int64_t(std::size(kinds))) n += " " + std::string(kinds[kind]);
  if (src >= 0 && src < std::int64_t(std::size(mem)) && dst >= 0 && dst < std::int64_t(std::size(mem)))
    n += " (" + std::string(mem[src]) + " -> " + std::string(mem[dst]) + ")";
  return n;
}

/// The Kineto `cuda_sync` name of a CUPTI synchronization type.
inline std::string_view nsys_sync_name(std::int64_t type) noexcept {
  switch (type) {
  case 1: return "Event Sync";
  case 2: return "Stream Wait Event";
  case 3: return "Stream Sync";
  case 4: return "Context Sync";
  default: return "Unknown Sync";
  }
}

/// Reads an Nsight Systems export into `decoded_trace`: the CUDA runtime and driver calls
/// (CPU events of their threads), NVTX ranges (annotations), kernels, copies and memsets
/// (GPU events), synchronization records and the GPUs. Every row of the tables read is
/// one event: in a table, or counted in `ignored` with the reason.
class nsys_decoder {
public:
  nsys_decoder(const sqlite_db& db, decoded_trace& out) : db_(db), out_(out) {}

  void run() {
    tables_ = db_.tables();
    check_tables();
    read_strings();
    read_gpus();
    read_runtime();
    read_nvtx();
    sort_cpu();
    read_kernels();
    read_copies();
    read_memsets();
    read_syncs();
    if (index_ == 0)
      fail("an Nsight Systems export without CUDA API calls, GPU work or NVTX ranges (its tables are empty); " +
           std::string(nsys_export_hint));
    out_.events = index_;
    // Without PyTorch operators, NVTX ranges name the layers.
    out_.annotation_layers = true;
  }

private:
  [[noreturn]] void fail(const std::string& why) const {
    throw error("daydream: " + db_.source() + ": " + why);
  }

  void check_tables() {
    bool any = false;
    for (auto& t : tables_) any = any || t == "StringIds" || t.starts_with("CUPTI_ACTIVITY_KIND_") || t == "NVTX_EVENTS";
    if (!any)
      fail("a SQLite database, but not an Nsight Systems export (it has none of the tables StringIds, "
           "CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS); " + std::string(nsys_export_hint));
    for (auto t : nsys_required_tables)
      if (!tables_.count(std::string(t)))
        fail("an Nsight Systems export without the table " + std::string(t) +
             (t == "StringIds" ? std::string()
                               : t == "CUPTI_ACTIVITY_KIND_KERNEL" ? " (the report recorded no CUDA kernels)"
                                                                   : " (the report recorded no CUDA API calls)") +
             "; " + std::string(nsys_export_hint));
  }

  bool has(const char* table) const { return tables_.count(table) != 0; }

  /// `SELECT cols FROM table`: a column the table lacks reads as NULL unless `required`
  /// names it (then the error names the table and column).
  std::string select(const std::string& table, const std::vector<const char*>& cols,
                     const std::vector<const char*>& required, const char* order = nullptr) const {
    const auto have = db_.columns(table);
    for (auto r : required)
      if (!have.count(r))
        fail("table " + table + " has no column " + r + " (an export of an unknown version?); " +
             std::string(nsys_export_hint));
    std::string sql = "SELECT ";
    for (std::size_t k = 0; k < cols.size(); ++k) {
      if (k) sql += ", ";
      sql += have.count(cols[k]) ? "\"" + std::string(cols[k]) + "\"" : std::string("NULL");
    }
    sql += " FROM \"" + table + "\"";
    if (order) sql += std::string(" ORDER BY ") + order;
    return sql;
  }

  void ignore(const char* why) { ++out_.ignored[why]; }

  void read_strings() {
    sqlite_query q(db_, select("StringIds", {"id", "value"}, {"id", "value"}));
    while (q.step()) strings_[q.integer(0)] = out_.strings.intern(q.text(1));
  }
  std::string_view string_of(std::int64_t id) const {
    auto it = strings_.find(id);
    return it == strings_.end() ? std::string_view() : it->second;
  }

  /// The thread of a serialized global thread id (pid in bits 24-47, tid in bits 0-23).
  std::uint32_t thread_of(std::int64_t global_tid) {
    auto [it, fresh] = thread_index_.try_emplace(global_tid, static_cast<std::uint32_t>(out_.threads.size()));
    if (fresh) {
      const std::int64_t pid = (global_tid >> 24) & 0xffffff, tid = global_tid & 0xffffff;
      out_.threads.push_back({pid, tid});
      out_.thread_labels.push_back({out_.strings.intern(std::to_string(pid)), out_.strings.intern(std::to_string(tid))});
    }
    return it->second;
  }

  /// Start and duration of a row, or false (counted) when the end is missing or before the start.
  bool span(const sqlite_query& q, int start, int end, time_ns& ts, time_ns& dur) {
    if (q.null(start) || q.null(end)) { ignore("row without start or end"); return false; }
    ts = q.integer(start);
    const std::int64_t e = q.integer(end);
    // Nanoseconds since the session started: anything past 2^62 (146 years) is garbage.
    constexpr std::int64_t limit = std::int64_t(1) << 62;
    if (ts < -limit || ts > limit || e < -limit || e > limit) { ignore("row with a time out of range"); return false; }
    if (e < ts) { ignore("row ending before it starts"); return false; }
    dur = e - ts;
    return true;
  }

  static std::int64_t correlation(const sqlite_query& q, int col) {
    return q.null(col) || q.integer(col) <= 0 ? -1 : q.integer(col);
  }

  void read_gpus() {
    if (!has("TARGET_INFO_GPU")) return;
    sqlite_query q(db_, select("TARGET_INFO_GPU",
                               {"id", "name", "totalMemory", "smCount", "computeMajor", "computeMinor",
                                "maxThreadsPerBlock", "maxWarpsPerSm", "threadsPerWarp", "maxRegistersPerBlock",
                                "maxRegistersPerSm", "maxShmemPerBlock", "maxShmemPerBlockOptin", "maxShmemPerSm"},
                               {"id"}, "id"));
    std::set<std::int64_t> seen;
    while (q.step()) {
      // Metadata, not events (as Kineto's deviceProperties): the first row of an id describes it.
      if (!seen.insert(q.integer(0)).second) continue;
      recorded_device d;
      d.id = static_cast<std::int32_t>(std::clamp<std::int64_t>(q.integer(0), 0, 0x7fffffff));
      d.name = std::string(q.text(1));
      auto u32 = [&](int col) {
        const std::int64_t v = q.integer(col);
        return v <= 0 ? 0u : v > 0xffffffffLL ? 0xffffffffu : std::uint32_t(v);
      };
      d.memory_bytes = q.integer(2) > 0 ? std::uint64_t(q.integer(2)) : 0;
      d.sm_count = u32(3);
      d.compute_major = u32(4);
      d.compute_minor = u32(5);
      d.max_threads_per_block = u32(6);
      d.warp_size = u32(8);
      d.max_threads_per_sm = std::uint32_t(std::min<std::uint64_t>(std::uint64_t(u32(7)) * d.warp_size, 0xffffffffu));
      d.registers_per_block = u32(9);
      d.registers_per_sm = u32(10);
      d.shared_memory_per_block = u32(11);
      d.shared_memory_per_block_optin = u32(12);
      d.shared_memory_per_sm = u32(13);
      out_.gpus.push_back(d.name);
      out_.devices.push_back(std::move(d));
    }
  }

  /// Runtime and driver calls. Nsight Systems may record one call twice, the API entry
  /// and its versioned implementation inside it with the same correlationId: the
  /// outer one is kept.
  void read_runtime() {
    sqlite_query q(db_, select("CUPTI_ACTIVITY_KIND_RUNTIME", {"start", "end", "globalTid", "correlationId", "nameId"},
                               {"start", "end", "globalTid", "correlationId", "nameId"},
                               "start, end DESC"));
    std::unordered_map<std::int64_t, std::uint32_t> by_corr; // correlation -> cpu event
    while (q.step()) {
      const std::uint32_t idx = index_++;
      cpu_event e;
      if (!span(q, 0, 1, e.ts, e.dur)) continue;
      e.index = idx;
      e.thread = thread_of(q.integer(2));
      e.correlation = correlation(q, 3);
      e.name = strip_api_version(string_of(q.integer(4)));
      if (e.correlation >= 0) {
        auto [it, fresh] = by_corr.try_emplace(e.correlation, static_cast<std::uint32_t>(out_.cpu.size()));
        if (!fresh) {
          auto& o = out_.cpu[it->second];
          if (o.thread == e.thread && o.ts <= e.ts && e.ts + e.dur <= o.ts + o.dur) {
            ignore("runtime record inside another record of the same call (same correlationId)");
            continue;
          }
        }
      }
      const bool driver = e.name.size() > 2 && e.name.starts_with("cu") && e.name[2] >= 'A' && e.name[2] <= 'Z';
      e.cat = driver ? ecat::driver : ecat::runtime;
      out_.cpu.push_back(e);
    }
  }

  /// NVTX push/pop and start/end ranges: annotations of their thread. Marks, domain and
  /// thread names and ranges ending on another thread are counted.
  void read_nvtx() {
    if (!has("NVTX_EVENTS")) return;
    sqlite_query q(db_, select("NVTX_EVENTS", {"start", "end", "eventType", "text", "textId", "globalTid", "endGlobalTid"},
                               {"start", "end", "eventType", "globalTid"}, "start, end DESC"));
    while (q.step()) {
      const std::uint32_t idx = index_++;
      const std::int64_t type = q.integer(2);
      if (type != 59 && type != 60) { ignore("NVTX event that is not a range (mark, domain or thread name)"); continue; }
      if (q.null(5)) { ignore("NVTX range without a thread"); continue; }
      if (!q.null(6) && q.integer(6) != q.integer(5)) { ignore("NVTX range ending on another thread"); continue; }
      cpu_event e;
      if (!span(q, 0, 1, e.ts, e.dur)) continue;
      e.index = idx;
      e.thread = thread_of(q.integer(5));
      std::string_view name = q.null(3) ? string_of(q.integer(4)) : q.text(3);
      e.name = out_.strings.intern(name.empty() ? std::string_view("(unnamed NVTX range)") : name);
      e.cat = ecat::user_annotation;
      out_.cpu.push_back(e);
    }
  }

  /// CPU events in start order, enclosing ones first (as Kineto writes them).
  void sort_cpu() {
    std::stable_sort(out_.cpu.begin(), out_.cpu.end(), [](const cpu_event& a, const cpu_event& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
  }

  /// Fills the fields every GPU row has (start, end, device, stream, correlation):
  /// false (counted) when the span is not one.
  bool gpu_row(const sqlite_query& q, gpu_event& g) {
    g.index = index_++;
    if (!span(q, 0, 1, g.ts, g.dur)) return false;
    g.device = static_cast<std::int32_t>(q.integer(2));
    g.stream = static_cast<std::int32_t>(q.integer(3));
    g.correlation = correlation(q, 4);
    return true;
  }

  void read_kernels() {
    sqlite_query q(db_, select("CUPTI_ACTIVITY_KIND_KERNEL",
                               {"start", "end", "deviceId", "streamId", "correlationId", "demangledName", "shortName",
                                "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
                                "staticSharedMemory", "dynamicSharedMemory"},
                               {"start", "end", "deviceId", "streamId", "correlationId"}, "start"));
    while (q.step()) {
      gpu_event g;
      if (!gpu_row(q, g)) continue;
      g.cat = ecat::kernel;
      g.name = string_of(q.null(5) ? q.integer(6) : q.integer(5));
      if (g.name.empty()) g.name = out_.strings.intern("(unnamed kernel)");
      g.launch = launch(q);
      out_.gpu.push_back(g);
    }
  }

  static kernel_launch launch(const sqlite_query& q) {
    kernel_launch l;
    std::uint64_t blocks = 1, threads = 1;
    for (int c = 7; c < 10; ++c) {
      const std::int64_t v = q.integer(c);
      if (v <= 0) return l;
      blocks = std::min<std::uint64_t>(blocks * std::uint64_t(std::min<std::int64_t>(v, 1 << 20)), 0xffffffffu);
    }
    for (int c = 10; c < 13; ++c) {
      const std::int64_t v = q.integer(c);
      if (v <= 0 || v > 0xffff) return l;
      threads *= std::uint64_t(v);
    }
    if (threads > 0xffff) return l;
    l.blocks = std::uint32_t(blocks);
    l.threads = std::uint16_t(threads);
    const std::int64_t regs = q.integer(13), shared = q.integer(14) + q.integer(15);
    if (!q.null(13) && regs >= 0 && regs <= 255 && q.integer(14) >= 0 && q.integer(15) >= 0 && shared <= 0xffffffffLL) {
      l.registers = std::uint8_t(regs);
      l.shared_memory = std::uint32_t(shared);
      l.recorded = 1;
    }
    return l;
  }

  void read_copies() {
    if (!has("CUPTI_ACTIVITY_KIND_MEMCPY")) return;
    sqlite_query q(db_, select("CUPTI_ACTIVITY_KIND_MEMCPY",
                               {"start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind", "srcKind",
                                "dstKind"},
                               {"start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind"}, "start"));
    while (q.step()) {
      gpu_event g;
      if (!gpu_row(q, g)) continue;
      g.cat = ecat::memcpy;
      g.bytes = q.integer(5) > 0 ? std::uint64_t(q.integer(5)) : 0;
      g.name = out_.strings.intern(
          nsys_copy_name(q.integer(6), q.null(7) ? -1 : q.integer(7), q.null(8) ? -1 : q.integer(8)));
      out_.gpu.push_back(g);
    }
  }

  void read_memsets() {
    if (!has("CUPTI_ACTIVITY_KIND_MEMSET")) return;
    sqlite_query q(db_, select("CUPTI_ACTIVITY_KIND_MEMSET",
                               {"start", "end", "deviceId", "streamId", "correlationId", "bytes"},
                               {"start", "end", "deviceId", "streamId", "correlationId", "bytes"}, "start"));
    while (q.step()) {
      gpu_event g;
      if (!gpu_row(q, g)) continue;
      g.cat = ecat::memset;
      g.bytes = q.integer(5) > 0 ? std::uint64_t(q.integer(5)) : 0;
      g.name = out_.strings.intern("Memset (Device)");
      out_.gpu.push_back(g);
    }
  }

  /// Synchronization records; an event wait learns the stream and the call that recorded
  /// the event from CUPTI_ACTIVITY_KIND_CUDA_EVENT when the export has it.
  void read_syncs() {
    if (!has("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) return;
    struct record { time_ns ts; std::int64_t stream, correlation; };
    std::map<std::int64_t, std::vector<record>> records; // eventId -> its records by start
    if (has("CUPTI_ACTIVITY_KIND_CUDA_EVENT")) {
      const auto cols = db_.columns("CUPTI_ACTIVITY_KIND_CUDA_EVENT");
      if (cols.count("eventId") && cols.count("correlationId") && cols.count("streamId") && cols.count("start")) {
        sqlite_query r(db_, "SELECT eventId, start, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT ORDER BY start");
        while (r.step()) records[r.integer(0)].push_back({r.integer(1), r.integer(2), correlation(r, 3)});
      }
    }
    sqlite_query q(db_, select("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                               {"start", "end", "deviceId", "streamId", "correlationId", "syncType", "eventId"},
                               {"start", "end", "deviceId", "streamId", "correlationId", "syncType"}, "start"));
    while (q.step()) {
      const std::uint32_t idx = index_++;
      sync_event s;
      if (!span(q, 0, 1, s.ts, s.dur)) continue;
      s.index = idx;
      s.device = static_cast<std::int32_t>(q.integer(2));
      const std::int64_t stream = q.integer(3);
      s.stream = stream < 0 || stream > 0x7fffffff ? -1 : stream;
      s.correlation = correlation(q, 4);
      const std::int64_t type = q.integer(5);
      s.kind = out_.strings.intern(nsys_sync_name(type));
      if ((type == 1 || type == 2) && !q.null(6)) {
        auto it = records.find(q.integer(6));
        if (it != records.end()) {
          auto& v = it->second;
          auto p = std::upper_bound(v.begin(), v.end(), s.ts, [](time_ns t, const record& r) { return t < r.ts; });
          if (p != v.begin()) {
            --p;
            s.wait_stream = p->stream;
            s.record_correlation = p->correlation;
          }
        }
      }
      out_.syncs.push_back(s);
    }
  }

  const sqlite_db& db_;
  decoded_trace& out_;
  std::set<std::string> tables_;
  std::unordered_map<std::int64_t, std::string_view> strings_;
  std::unordered_map<std::int64_t, std::uint32_t> thread_index_;
  std::uint32_t index_ = 0;
};

/// Decodes the Nsight Systems export `db` into `out` (see nsys_decoder). Throws
/// daydream::error for a database that is not one, or lacks a table daydream needs.
inline void decode_nsys(const sqlite_db& db, decoded_trace& out) { nsys_decoder(db, out).run(); }

//! @endcond

} // namespace daydream::io::detail

#endif
