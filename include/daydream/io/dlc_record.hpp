// Defines the records of SketchDLC communication traces: operations, messages, records, a file's header and report, one node's file.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DLC_RECORD_HPP
#define DAYDREAM_IO_DLC_RECORD_HPP

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
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

} // namespace daydream::io

#endif
