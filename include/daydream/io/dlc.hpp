// Defines io::parse_dlc, io::load_dlc and io::load_dlc_job: SketchDLC communication traces of parameter-server jobs.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DLC_HPP
#define DAYDREAM_IO_DLC_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/dlc_fields.hpp>
#include <daydream/io/detail/dlc_line.hpp>
#include <daydream/io/detail/dlc_resolve.hpp>
#include <daydream/io/dlc_record.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::io {

/// Parses the text of one DLC file (SketchDLC §4.1, Table 1, Figure 8): a header block
/// with `num_workers:=` and `num_servers:=`, then one record per line, fields separated
/// by spaces or tabs. `source` names the text in messages and in dlc_file::path.
///
/// Every record line is either usable (dlc_file::records), a set-up record, or unusable
/// with a reason (dlc_report::unusable, dlc_report::problems with file and line). A
/// usable record's numbers are in range, its operation fits its ranks, its op_id's node
/// is its peer, and its dependencies are usable records of the same file that are not
/// later than it and form no cycle (docs/dlc.md lists every check). Throws
/// daydream::error naming `source` only for a file without a usable header.
///
///     auto f = daydream::io::parse_dlc(text, "worker_0.dlc");
///     for (auto& [why, n] : f.report.unusable) std::cerr << n << " records: " << why << '\n';
inline dlc_file parse_dlc(std::string_view text, std::string_view source, const dlc_options& opt = {}) {
  namespace d = detail::dlc;
  dlc_file f;
  f.path = std::string(source);
  const auto lines = d::split_lines(text);
  const std::size_t first = d::read_header_block(lines, f);
  const std::int32_t W = f.header.num_workers, S = f.header.num_servers;
  std::vector<d::raw_record> raw;
  for (std::size_t i = first; i < lines.size(); ++i) {
    const auto t = d::tokens(lines[i].second);
    if (t.empty()) continue;
    ++f.report.records;
    raw.push_back(d::record_line(t, W, S).read(lines[i].first));
  }
  d::file_records(raw, W).run(f, opt);
  return f;
}

/// Reads and parses one DLC file (parse_dlc). Throws daydream::error naming the file if
/// it cannot be read or has no header.
inline dlc_file load_dlc(const std::filesystem::path& path, const dlc_options& opt = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("daydream: " + path.string() + ": cannot open the file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw error("daydream: " + path.string() + ": cannot read the file");
  return parse_dlc(text, path.string(), opt);
}

/// The DLC files of one job, one per node, ordered by rank.
struct dlc_job {
  std::int32_t workers = 0, servers = 0;
  std::vector<dlc_file> files; ///< by rank; files without a usable record come last

  /// The file of rank `rank`, or nullptr.
  const dlc_file* file_of(std::int32_t rank) const noexcept {
    for (auto& f : files)
      if (f.rank == rank) return &f;
    return nullptr;
  }
};

/// Makes one job of parsed files: they must agree on num_workers and num_servers, and
/// no two may hold the same node. Throws daydream::error naming the files otherwise.
inline dlc_job make_dlc_job(std::vector<dlc_file> files) {
  dlc_job j;
  if (files.empty()) throw error("daydream: a DLC job needs at least one file");
  j.workers = files.front().header.num_workers;
  j.servers = files.front().header.num_servers;
  for (auto& f : files)
    if (f.header.num_workers != j.workers || f.header.num_servers != j.servers)
      throw error("daydream: " + f.path + ": the header says " + std::to_string(f.header.num_workers) + " workers and " +
                  std::to_string(f.header.num_servers) + " servers, but " + files.front().path + " says " +
                  std::to_string(j.workers) + " and " + std::to_string(j.servers));
  std::stable_sort(files.begin(), files.end(), [](const dlc_file& a, const dlc_file& b) {
    return (a.rank < 0 ? INT32_MAX : a.rank) < (b.rank < 0 ? INT32_MAX : b.rank);
  });
  for (std::size_t i = 1; i < files.size(); ++i)
    if (files[i].rank >= 0 && files[i].rank == files[i - 1].rank)
      throw error("daydream: " + files[i - 1].path + " and " + files[i].path + " both hold the records of " +
                  files[i].node_name());
  j.files = std::move(files);
  return j;
}

/// Reads the DLC files of one job (load_dlc each, then make_dlc_job).
inline dlc_job load_dlc_job(const std::vector<std::filesystem::path>& paths, const dlc_options& opt = {}) {
  std::vector<dlc_file> files;
  for (auto& p : paths) files.push_back(load_dlc(p, opt));
  return make_dlc_job(std::move(files));
}


/// One parameter-server message: what DLC writers take (io::write_dlc) and what
/// dlc_messages reads back. Times in nanoseconds from an epoch the caller chooses; -1
/// where the job holds no record of that end (the other node's file is missing).
struct ps_message {
  dlc_message kind = dlc_message::push;
  std::int32_t worker = 0;    ///< worker index (its rank)
  std::int32_t server = 0;    ///< server index (0-based; its rank is workers + server)
  std::int64_t key = 0;       ///< parameter (or slice) key
  std::int32_t iteration = 1; ///< 0: initialization; 1, 2, ...: training iterations
  std::uint64_t bytes = 0;    ///< message length
  time_ns sent = -1;          ///< when the sender sent it
  time_ns received = -1;      ///< when the receiver received it
  friend bool operator==(const ps_message&, const ps_message&) = default;
};

/// The messages of a job: every usable record's message, a send and its receive (in
/// two files) joined, ordered by (iteration, key, worker, server, kind). Times are
/// nanoseconds since `epoch_us` (microseconds, as time_sec * 10^6 + time_usec). A
/// message whose two records give different lengths keeps the sender's.
inline std::vector<ps_message> dlc_messages(const dlc_job& job, std::int64_t epoch_us = 0) {
  std::map<std::tuple<std::int32_t, std::int64_t, std::int32_t, std::int32_t, int>, ps_message> by;
  for (auto& f : job.files)
    for (auto& r : f.records) {
      const bool w = is_worker_op(r.op);
      const std::int32_t worker = w ? r.performer() : r.peer;
      const std::int32_t server = (w ? r.peer : r.performer()) - job.workers;
      const auto kind = message_of(r.op);
      auto& m = by[{r.iteration, r.key, worker, server, int(kind)}];
      m.kind = kind;
      m.worker = worker;
      m.server = server;
      m.key = r.key;
      m.iteration = r.iteration;
      const time_ns t = (r.time_us - epoch_us) * 1000;
      if (is_send(r.op)) { m.sent = t; m.bytes = r.length; }
      else { m.received = t; if (m.sent < 0) m.bytes = r.length; }
    }
  std::vector<ps_message> out;
  out.reserve(by.size());
  for (auto& [k, m] : by) out.push_back(m);
  return out;
}

} // namespace daydream::io

#endif

