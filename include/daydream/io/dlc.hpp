// Defines io::parse_dlc, io::load_dlc and io::load_dlc_job: SketchDLC communication traces of parameter-server jobs.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DLC_HPP
#define DAYDREAM_IO_DLC_HPP

#include <daydream/config.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::io {

/// The operation of a DLC record (SketchDLC, Xu et al., §3.2.2): who performs it and
/// what it does. `setup` is a connection record (`OP:= SendCom_To_Servers`).
enum class dlc_op : std::uint8_t {
  push_send_worker, ///< the worker sends a gradient to a server
  push_recv_worker, ///< the worker receives the server's confirmation of a push
  pull_send_worker, ///< the worker asks a server for a parameter
  pull_recv_worker, ///< the worker receives the parameter
  push_recv_server, ///< the server receives a gradient
  push_send_server, ///< the server confirms a push
  pull_recv_server, ///< the server receives a pull request
  pull_send_server, ///< the server sends the parameter
  setup,            ///< setting up connections (no op_id, no dependency, no time)
};

/// The name of an operation as DLC files write it ("Push_Send_Worker").
inline constexpr std::string_view to_string(dlc_op o) noexcept {
  constexpr std::string_view names[] = {"Push_Send_Worker", "Push_Recv_Worker", "Pull_Send_Worker",
                                        "Pull_Recv_Worker", "Push_Recv_Server", "Push_Send_Server",
                                        "Pull_Recv_Server", "Pull_Send_Server", "SendCom_To_Servers"};
  return names[static_cast<int>(o)];
}

/// Whether a worker performs `o` (else a server).
inline constexpr bool is_worker_op(dlc_op o) noexcept { return o <= dlc_op::pull_recv_worker; }
/// Whether `o` sends a message (its performer is the record's src; else its dst).
inline constexpr bool is_send(dlc_op o) noexcept {
  return o == dlc_op::push_send_worker || o == dlc_op::pull_send_worker || o == dlc_op::push_send_server ||
         o == dlc_op::pull_send_server;
}
/// The position of `o` in its key's four operations of one iteration (0 push, 1 push
/// confirmation, 2 pull request, 3 pull answer), the same on both sides.
inline constexpr int dlc_step(dlc_op o) noexcept {
  return is_worker_op(o) ? static_cast<int>(o) : static_cast<int>(o) - 4;
}
/// The dep_type an operation's dependency has (SketchDLC §3.2.3): 1 Push_on_Push,
/// 2 Pull_on_Push, 3 Pull_on_Pull, 4 Push_on_Pull (or 0, independent, for a push).
inline constexpr int dlc_dep_type(dlc_op o) noexcept {
  const int s = dlc_step(o);
  return s == 0 ? 4 : s;
}

/// The four messages of one key, one iteration, one worker and one server.
enum class dlc_message : std::uint8_t { push, push_ack, pull_request, pull_response };
/// The name of a message kind ("push_ack").
inline constexpr std::string_view to_string(dlc_message m) noexcept {
  constexpr std::string_view names[] = {"push", "push_ack", "pull_request", "pull_response"};
  return names[static_cast<int>(m)];
}
/// The message a (non-setup) operation sends or receives.
inline constexpr dlc_message message_of(dlc_op o) noexcept { return static_cast<dlc_message>(dlc_step(o)); }
/// The operation that sends (`send`) or receives message `m`.
inline constexpr dlc_op op_of(dlc_message m, bool send) noexcept {
  constexpr dlc_op s[] = {dlc_op::push_send_worker, dlc_op::push_send_server, dlc_op::pull_send_worker,
                          dlc_op::pull_send_server};
  constexpr dlc_op r[] = {dlc_op::push_recv_server, dlc_op::push_recv_worker, dlc_op::pull_recv_server,
                          dlc_op::pull_recv_worker};
  return send ? s[static_cast<int>(m)] : r[static_cast<int>(m)];
}

/// One operation named by an id_dep: `key-opnum-node`, or (`key` -1) every record of
/// the file with operation number `op_num` and peer `peer` (`3-s0` inside `(...)`).
struct dlc_ref {
  std::int64_t key = -1;
  std::int64_t op_num = 0;
  std::int32_t peer = -1; ///< rank
  friend bool operator==(const dlc_ref&, const dlc_ref&) = default;
};

/// How a record depends on others.
enum class dlc_dep_form : std::uint8_t {
  none, ///< id_dep -1
  one,  ///< one op_id (one-to-one)
  many, ///< a parenthesized list (one-to-many)
};

/// A usable record of a DLC file (every field range-checked and consistent).
struct dlc_record {
  std::int64_t id = 0;        ///< the record's id (not necessarily unique in real files)
  std::int32_t src = 0, dst = 0; ///< ranks: workers, then servers
  std::uint64_t length = 0;   ///< bytes
  std::int64_t num_pp = 0;    ///< Push/Pull sequence number (-15: initialization)
  dlc_op op = dlc_op::setup;
  std::int64_t key = 0;       ///< of op_id
  std::int64_t op_num = 0;    ///< operation number of op_id
  std::int32_t peer = 0;      ///< the other end's rank (op_id's node)
  std::int32_t dep_type = 0;  ///< 0..4
  std::int64_t d_time_us = 0; ///< dependency time, microseconds
  std::int64_t time_us = 0;   ///< time_sec * 10^6 + time_usec
  dlc_dep_form form = dlc_dep_form::none;
  std::vector<dlc_ref> dep;   ///< what id_dep names
  std::vector<std::size_t> deps; ///< the records (indices into dlc_file::records) id_dep names
  std::int32_t iteration = 0; ///< 0: initialization, 1, 2, ...: training iterations
  std::size_t line = 0;       ///< 1-based line of the file

  /// The rank that performs the operation (src of a send, dst of a receive).
  std::int32_t performer() const noexcept { return is_send(op) ? src : dst; }
};

/// The header block of a DLC file.
struct dlc_header {
  std::int32_t num_workers = -1;
  std::int32_t num_servers = -1;
  std::string hostname;             ///< worker_hostname:= (or hostname:=)
  std::vector<std::int32_t> worker_ids, server_ids;
};

/// What happened to every record line of a file:
/// `records == usable + setup + unusable_total()`.
struct dlc_report {
  std::size_t records = 0;  ///< lines after the header that are not blank
  std::size_t usable = 0;   ///< in dlc_file::records
  std::size_t setup = 0;    ///< connection set-up records (kept out of the analyses and the graph)
  std::map<std::string, std::size_t> unusable; ///< reason -> count
  std::vector<std::string> problems; ///< "file:line: reason: detail"; at most dlc_options::max_problems
  std::size_t duplicate_ids = 0;     ///< records whose id an earlier record has (kept)
  std::size_t out_of_order = 0;      ///< records earlier than the record before them (kept)

  /// Number of unusable records (the sum over reasons).
  std::size_t unusable_total() const noexcept {
    std::size_t n = 0;
    for (auto& [k, v] : unusable) n += v;
    return n;
  }
};

/// Knobs of the DLC reader.
struct dlc_options {
  std::size_t max_problems = 32; ///< problems kept in the report (all are counted)
};

/// One node's DLC file.
struct dlc_file {
  std::string path;           ///< file name, or the source name given to parse_dlc
  dlc_header header;
  std::int32_t rank = -1;     ///< the node whose operations the file holds; -1: no usable record
  std::vector<dlc_record> records; ///< the usable records, in file order
  dlc_report report;

  /// Whether the file is a worker's (else a server's).
  bool is_worker() const noexcept { return rank >= 0 && rank < header.num_workers; }
  /// "worker 0", "server 0" (server ranks count from num_workers).
  std::string node_name() const {
    if (rank < 0) return "no node";
    return is_worker() ? "worker " + std::to_string(rank) : "server " + std::to_string(rank - header.num_workers);
  }
};

//! @cond DAYDREAM_INTERNAL
namespace detail::dlc {

inline constexpr std::int64_t max_length = std::int64_t(1) << 40;   // 1 TiB
inline constexpr std::int64_t max_d_time = std::int64_t(1) << 40;   // us, ~12.7 days
inline constexpr std::int64_t max_time_sec = std::int64_t(1) << 32; // year 2106
inline constexpr std::int64_t max_int32 = std::int64_t(1) << 31;
inline constexpr std::int32_t max_nodes = 1 << 16;
inline constexpr std::int64_t max_iteration = std::int64_t(1) << 28;

inline bool parse_int(std::string_view s, std::int64_t& v) {
  if (s.empty()) return false;
  const char* b = s.data();
  if (*b == '+') {
    ++b;
    if (s.size() < 2 || s[1] < '0' || s[1] > '9') return false;
  }
  auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

inline char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }
inline bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}
inline bool istarts(std::string_view a, std::string_view prefix) {
  return a.size() >= prefix.size() && iequal(a.substr(0, prefix.size()), prefix);
}

inline std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !space(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

inline std::optional<dlc_op> parse_op(std::string_view name) {
  for (int k = 0; k < 8; ++k)
    if (iequal(name, to_string(static_cast<dlc_op>(k)))) return static_cast<dlc_op>(k);
  if (istarts(name, "SendCom")) return dlc_op::setup;
  return std::nullopt;
}

/// `s0` -> W + 0, `w1` -> 1; -1 if malformed or out of range.
inline std::int32_t parse_node(std::string_view s, std::int32_t workers, std::int32_t servers) {
  if (s.size() < 2) return -1;
  std::int64_t k = 0;
  if (s[1] < '0' || s[1] > '9' || !parse_int(s.substr(1), k)) return -1;
  if (lower(s[0]) == 'w') return k < workers ? std::int32_t(k) : -1;
  if (lower(s[0]) == 's') return k < servers ? std::int32_t(workers + k) : -1;
  return -1;
}

/// `key-opnum-node` (with_key) or `opnum-node`.
inline bool parse_ref(std::string_view s, bool with_key, std::int32_t workers, std::int32_t servers, dlc_ref& r) {
  auto d1 = s.find('-', 0);
  if (with_key) {
    if (d1 == std::string_view::npos || d1 == 0) return false;
    if (!parse_int(s.substr(0, d1), r.key) || r.key < 0 || r.key >= max_int32) return false;
    s = s.substr(d1 + 1);
  } else {
    r.key = -1;
  }
  // The operation number may be negative (servers start at -2): split at the last '-'.
  auto d2 = s.rfind('-');
  if (d2 == std::string_view::npos || d2 == 0) return false;
  if (!parse_int(s.substr(0, d2), r.op_num) || r.op_num < -max_int32 || r.op_num >= max_int32) return false;
  r.peer = parse_node(s.substr(d2 + 1), workers, servers);
  return r.peer >= 0;
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  auto q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// The header keys of one line (`name:= value`).
inline void read_header(std::string_view line, dlc_header& h, const std::string& path) {
  auto t = tokens(line);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string_view k = t[i], v;
    auto p = k.find(":=");
    if (p == std::string_view::npos) continue;
    if (p + 2 < k.size()) v = k.substr(p + 2);
    else if (i + 1 < t.size()) v = t[i + 1];
    k = k.substr(0, p);
    auto count = [&](std::int32_t& out) {
      std::int64_t n = 0;
      if (!parse_int(v, n) || n < 1 || n > max_nodes)
        throw error("daydream: " + path + ": header: " + std::string(k) + ":= " + std::string(v) +
                    " is not a node count (1 to " + std::to_string(max_nodes) + ")");
      out = std::int32_t(n);
    };
    auto ids = [&](std::vector<std::int32_t>& out) {
      out.clear();
      std::size_t a = 0;
      while (a < v.size()) {
        auto b = v.find(',', a);
        if (b == std::string_view::npos) b = v.size();
        std::int64_t n = 0;
        if (b > a && parse_int(v.substr(a, b - a), n) && n >= 0 && n <= max_nodes * 2) out.push_back(std::int32_t(n));
        a = b + 1;
      }
    };
    if (iequal(k, "num_workers")) count(h.num_workers);
    else if (iequal(k, "num_servers")) count(h.num_servers);
    else if (iequal(k, "worker_hostname") || iequal(k, "hostname")) h.hostname = std::string(v);
    else if (iequal(k, "Worker_ID")) ids(h.worker_ids);
    else if (iequal(k, "Server_ID")) ids(h.server_ids);
  }
}

struct raw_record {
  dlc_record r;
  std::string bad; // reason key; empty: usable so far
  std::string detail;
};

} // namespace detail::dlc
//! @endcond

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
  std::vector<std::pair<std::size_t, std::string_view>> lines;
  {
    std::size_t a = 0, n = 1;
    while (a <= text.size()) {
      auto b = text.find('\n', a);
      if (b == std::string_view::npos) b = text.size();
      lines.emplace_back(n++, text.substr(a, b - a));
      if (b == text.size()) break;
      a = b + 1;
    }
  }
  // The header: every line before the first one that starts with a number.
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto t = d::tokens(lines[i].second);
    std::int64_t v = 0;
    if (!t.empty() && d::parse_int(t[0], v)) { first = i; break; }
    for (unsigned char c : lines[i].second)
      if ((c < 0x20 && c != '\t' && c != '\r' && c != '\v' && c != '\f') || c == 0x7f)
        throw error("daydream: " + f.path + ":" + std::to_string(lines[i].first) +
                    ": not a DLC trace: binary data before the first record");
    d::read_header(lines[i].second, f.header, f.path);
  }
  if (f.header.num_workers < 1 || f.header.num_servers < 1)
    throw error("daydream: " + f.path + ": not a DLC trace: no header with num_workers:= and num_servers:= " +
                "before the first record");
  const std::int32_t W = f.header.num_workers, S = f.header.num_servers;

  std::vector<d::raw_record> raw;
  for (std::size_t i = first; i < lines.size(); ++i) {
    auto t = d::tokens(lines[i].second);
    if (t.empty()) continue;
    ++f.report.records;
    d::raw_record x;
    auto& r = x.r;
    r.line = lines[i].first;
    auto bad = [&](std::string why, std::string detail) {
      if (x.bad.empty()) { x.bad = std::move(why); x.detail = std::move(detail); }
    };
    auto num = [&](std::string_view field, std::string_view tok, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
      if (!d::parse_int(tok, out)) {
        const bool digits = !tok.empty() && std::all_of(tok.begin() + (tok[0] == '-' || tok[0] == '+'), tok.end(),
                                                        [](char c) { return c >= '0' && c <= '9'; });
        if (digits && tok.size() > 1)
          bad("number out of range", std::string(field) + " " + std::string(tok.substr(0, 40)) + " does not fit 64 bits");
        else bad("bad number", std::string(field) + " '" + std::string(tok.substr(0, 40)) + "' is not an integer");
        return false;
      }
      if (out < lo || out > hi) {
        bad("number out of range", std::string(field) + " " + std::string(tok.substr(0, 40)) + " is not in [" +
                                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return false;
      }
      return true;
    };
    // The operation: `OP:= Name` or `OP:=Name`.
    std::size_t opi = t.size();
    for (std::size_t k = 0; k < t.size(); ++k)
      if (d::istarts(t[k], "OP:=")) { opi = k; break; }
    if (opi == t.size()) {
      std::int64_t v = 0;
      if (!d::parse_int(t[0], v)) bad("not a record", "the line does not start with a record id");
      else bad("truncated record", "no operation field (OP:=)");
      raw.push_back(std::move(x));
      continue;
    }
    std::string_view name = t[opi].substr(4);
    std::size_t next = opi + 1;
    if (name.empty()) {
      if (next < t.size()) name = t[next++];
      else { bad("truncated record", "the operation has no name"); raw.push_back(std::move(x)); continue; }
    }
    if (opi != 5) {
      bad(opi < 5 ? "truncated record" : "too many fields",
          std::to_string(opi) + " fields before the operation (id src dst length num_pp)");
      raw.push_back(std::move(x));
      continue;
    }
    std::int64_t v = 0;
    num("id", t[0], 0, std::int64_t(1) << 53, r.id);
    if (num("src", t[1], 0, d::max_nodes * 2, v)) r.src = std::int32_t(v);
    if (num("dst", t[2], 0, d::max_nodes * 2, v)) r.dst = std::int32_t(v);
    if (num("length", t[3], 0, d::max_length, v)) r.length = std::uint64_t(v);
    num("num_pp", t[4], -d::max_int32, d::max_int32, r.num_pp);
    auto op = d::parse_op(name);
    if (!op) { bad("unknown operation", "'" + std::string(name.substr(0, 40)) + "'"); raw.push_back(std::move(x)); continue; }
    r.op = *op;
    if (r.op == dlc_op::setup) { raw.push_back(std::move(x)); continue; }
    const std::size_t rest = t.size() - next;
    if (rest < 6) {
      bad("truncated record", std::to_string(rest) + " of the 6 fields after the operation");
      raw.push_back(std::move(x));
      continue;
    }
    if (rest > 6) {
      bad("too many fields", std::to_string(rest) + " fields after the operation, not 6");
      raw.push_back(std::move(x));
      continue;
    }
    dlc_ref self;
    if (!d::parse_ref(t[next], true, W, S, self))
      bad("bad op_id", "'" + std::string(t[next].substr(0, 40)) + "' is not key-operation_num-node with a node of the header");
    r.key = self.key;
    r.op_num = self.op_num;
    r.peer = self.peer;
    if (num("dep_type", t[next + 1], 0, 4, v)) r.dep_type = std::int32_t(v);
    num("d_time", t[next + 2], 0, d::max_d_time, r.d_time_us);
    std::int64_t sec = 0, usec = 0;
    const bool sec_ok = num("time_sec", t[next + 3], 0, d::max_time_sec, sec);
    const bool usec_ok = num("time_usec", t[next + 4], 0, 999'999, usec);
    if (sec_ok && usec_ok) r.time_us = sec * 1'000'000 + usec;
    std::string_view dep = t[next + 5];
    if (dep == "-1") {
      r.form = dlc_dep_form::none;
    } else if (!dep.empty() && dep.front() == '(') {
      r.form = dlc_dep_form::many;
      if (dep.size() < 2 || dep.back() != ')') bad("bad id_dep", "'" + std::string(dep.substr(0, 40)) + "' has no closing ')'");
      else {
        auto body = dep.substr(1, dep.size() - 2);
        std::size_t a = 0;
        while (a < body.size() && x.bad.empty()) {
          auto b = body.find_first_of(".,;", a);
          if (b == std::string_view::npos) b = body.size();
          auto item = body.substr(a, b - a);
          a = b + 1;
          if (item.empty()) continue;
          dlc_ref ref;
          if (!d::parse_ref(item, true, W, S, ref) && !d::parse_ref(item, false, W, S, ref))
            bad("bad id_dep", "'" + std::string(item.substr(0, 40)) + "' in " + std::string(dep.substr(0, 40)) +
                                  " is neither key-operation_num-node nor operation_num-node");
          else r.dep.push_back(ref);
        }
        if (r.dep.empty()) bad("bad id_dep", "'" + std::string(dep.substr(0, 40)) + "' names no operation");
      }
    } else {
      r.form = dlc_dep_form::one;
      dlc_ref ref;
      if (!d::parse_ref(dep, true, W, S, ref)) bad("bad id_dep", "'" + std::string(dep.substr(0, 40)) + "' is not -1, an op_id or (...)");
      else r.dep.push_back(ref);
    }
    if (!x.bad.empty()) { raw.push_back(std::move(x)); continue; }
    // Consistency of the fields.
    const std::int32_t sched = W + S;
    if (r.src == sched || r.dst == sched) bad("scheduler record", "records with the scheduler are not part of a DLC trace");
    else if (r.src >= sched || r.dst >= sched)
      bad("number out of range", "src " + std::to_string(r.src) + " or dst " + std::to_string(r.dst) +
                                     " is not a rank of the header's " + std::to_string(W) + " workers and " +
                                     std::to_string(S) + " servers");
    else {
      const auto me = r.performer(), other = is_send(r.op) ? r.dst : r.src;
      const bool me_worker = me < W, other_worker = other < W;
      if (me_worker != is_worker_op(r.op) || other_worker == me_worker)
        bad("operation does not fit the ranks",
            std::string(to_string(r.op)) + " from " + std::to_string(r.src) + " to " + std::to_string(r.dst) +
                " (ranks below " + std::to_string(W) + " are workers)");
      else if (r.peer != other)
        bad("op_id node is not the peer", "op_id's node is rank " + std::to_string(r.peer) + ", the record's peer is " +
                                              std::to_string(other));
    }
    const auto c = r.op_num - dlc_step(r.op);
    if (x.bad.empty() && (c % 2) != 0)
      bad("bad op_id", "operation number " + std::to_string(r.op_num) + " does not fit " + std::string(to_string(r.op)));
    const auto iteration = d::floor_div(c + 2, 4);
    if (x.bad.empty() && (iteration < 0 || iteration >= d::max_iteration))
      bad("bad op_id", "operation number " + std::to_string(r.op_num) + " is outside iterations 0 to " +
                           std::to_string(d::max_iteration - 1));
    r.iteration = std::int32_t(std::clamp<std::int64_t>(iteration, 0, d::max_iteration));
    if (x.bad.empty()) {
      const bool independent = r.form == dlc_dep_form::none;
      if ((r.dep_type == 0) != independent || (!independent && r.dep_type != dlc_dep_type(r.op)))
        bad("dep_type does not fit the operation",
            "dep_type " + std::to_string(r.dep_type) + " with " + std::string(to_string(r.op)) + " and id_dep " +
                std::string(dep.substr(0, 40)));
    }
    raw.push_back(std::move(x));
  }

  // The node of the file: the performer of most records.
  {
    std::map<std::int32_t, std::size_t> votes;
    for (auto& x : raw)
      if (x.bad.empty() && x.r.op != dlc_op::setup) ++votes[x.r.performer()];
    std::size_t best = 0;
    for (auto& [rank, n] : votes)
      if (n > best) { best = n; f.rank = rank; }
    for (auto& x : raw)
      if (x.bad.empty() && x.r.op != dlc_op::setup && x.r.performer() != f.rank)
        x.bad = "performed by another node", x.detail = "rank " + std::to_string(x.r.performer()) +
                                                        " performs it; the file holds rank " + std::to_string(f.rank);
  }
  // Duplicate op_ids: the first is kept.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int32_t>, std::size_t> by_id;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    auto& x = raw[i];
    if (!x.bad.empty() || x.r.op == dlc_op::setup) continue;
    auto [it, fresh] = by_id.emplace(std::make_tuple(x.r.key, x.r.op_num, x.r.peer), i);
    if (!fresh) x.bad = "duplicate op_id", x.detail = "line " + std::to_string(raw[it->second].r.line) + " has the same op_id";
  }
  // Dependencies: resolved to raw indices; a record is usable only if all of them are.
  std::map<std::pair<std::int64_t, std::int32_t>, std::vector<std::size_t>> by_num;
  for (auto& [k, i] : by_id) by_num[{std::get<1>(k), std::get<2>(k)}].push_back(i);
  std::vector<std::vector<std::size_t>> deps(raw.size()), users(raw.size());
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    auto& x = raw[i];
    if (!x.bad.empty() || x.r.op == dlc_op::setup) continue;
    for (auto& ref : x.r.dep) {
      const auto before = deps[i].size();
      if (ref.key >= 0) {
        auto it = by_id.find(std::make_tuple(ref.key, ref.op_num, ref.peer));
        if (it != by_id.end()) deps[i].push_back(it->second);
      } else if (auto it = by_num.find({ref.op_num, ref.peer}); it != by_num.end()) {
        deps[i].insert(deps[i].end(), it->second.begin(), it->second.end());
      }
      if (deps[i].size() == before && x.bad.empty()) {
        x.bad = "dangling id_dep";
        x.detail = "id_dep names " + (ref.key >= 0 ? std::to_string(ref.key) + "-" : std::string()) +
                   std::to_string(ref.op_num) + "-" + (ref.peer < W ? "w" : "s") +
                   std::to_string(ref.peer < W ? ref.peer : ref.peer - W) + ", which no usable record of the file is";
      }
    }
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
    for (auto j : deps[i]) {
      users[j].push_back(i);
      if (x.bad.empty() && raw[j].bad.empty() && raw[j].r.time_us > x.r.time_us) {
        x.bad = "depends on a later record";
        x.detail = "its dependency on line " + std::to_string(raw[j].r.line) + " is " +
                   std::to_string(raw[j].r.time_us - x.r.time_us) + " us later";
      }
    }
  }
  // Whatever depends on an unusable record is unusable too.
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (!raw[i].bad.empty()) todo.push_back(i);
  while (!todo.empty()) {
    auto j = todo.back();
    todo.pop_back();
    for (auto i : users[j]) {
      if (!raw[i].bad.empty()) continue;
      raw[i].bad = "depends on an unusable record";
      raw[i].detail = "its dependency on line " + std::to_string(raw[j].r.line) + " is unusable (" + raw[j].bad + ")";
      todo.push_back(i);
    }
  }
  // Cycles (possible only among records of equal time): Kahn's order over the rest.
  {
    std::vector<std::size_t> indeg(raw.size(), 0);
    std::vector<std::vector<std::size_t>> out(raw.size());
    auto live = [&](std::size_t i) { return raw[i].bad.empty() && raw[i].r.op != dlc_op::setup; };
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (live(i))
        for (auto j : deps[i]) { ++indeg[i]; out[j].push_back(i); }
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (live(i) && !indeg[i]) todo.push_back(i);
    std::vector<bool> done(raw.size(), false);
    while (!todo.empty()) {
      auto i = todo.back();
      todo.pop_back();
      done[i] = true;
      for (auto k : out[i])
        if (!--indeg[k]) todo.push_back(k);
    }
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (live(i) && !done[i]) raw[i].bad = "dependency cycle", raw[i].detail = "its id_dep leads back to itself";
  }
  // The report and the usable records.
  std::vector<std::size_t> index(raw.size(), 0);
  std::map<std::int64_t, std::size_t> ids;
  std::int64_t last_time = -1;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    auto& x = raw[i];
    if (!x.bad.empty()) {
      ++f.report.unusable[x.bad];
      if (f.report.problems.size() < opt.max_problems)
        f.report.problems.push_back(f.path + ":" + std::to_string(x.r.line) + ": " + x.bad + ": " + x.detail);
      continue;
    }
    if (x.r.op == dlc_op::setup) { ++f.report.setup; continue; }
    if (!ids.emplace(x.r.id, i).second) ++f.report.duplicate_ids;
    if (x.r.time_us < last_time) ++f.report.out_of_order;
    last_time = x.r.time_us;
    index[i] = f.records.size();
    f.records.push_back(std::move(x.r));
  }
  for (std::size_t i = 0, k = 0; i < raw.size(); ++i) {
    if (!raw[i].bad.empty() || raw[i].r.op == dlc_op::setup) continue;
    for (auto j : deps[i]) f.records[k].deps.push_back(index[j]);
    ++k;
  }
  f.report.usable = f.records.size();
  if (f.records.empty()) f.rank = -1;
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
