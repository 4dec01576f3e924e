// Defines io::write_dlc and io::ps_messages: DLC traces (one file per worker and server) from parameter-server messages.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DLC_WRITER_HPP
#define DAYDREAM_IO_DLC_WRITER_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/dlc.hpp>
#include <daydream/replay_result.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace daydream::io {

/// Options of write_dlc.
struct dlc_write_options {
  std::int32_t workers = 1;
  std::int32_t servers = 1;
  /// Synchronous training: a server confirms a key's push once every worker pushed it
  /// (Push_Send_Server depends on all the key's Push_Recv_Server records, one-to-many);
  /// false: each push is confirmed on its own (one-to-one), as in asynchronous training.
  bool synchronous = true;
  /// The time (microseconds, as time_sec * 10^6 + time_usec) of the messages' time 0.
  std::int64_t epoch_us = 1'500'000'000'000'000;
  std::string hostname = "daydream"; ///< worker_hostname:= of the header
};

/// One written file.
struct dlc_text {
  std::int32_t rank = 0;
  std::string name; ///< "worker_0.dlc", "server_0.dlc"
  std::string text;
};

//! @cond DAYDREAM_INTERNAL
namespace detail::dlc {
inline std::int64_t us_of(time_ns t) { return t >= 0 ? t / 1000 : -((-t + 999) / 1000); }
inline std::string node_tag(std::int32_t rank, std::int32_t workers) {
  return rank < workers ? "w" + std::to_string(rank) : "s" + std::to_string(rank - workers);
}
} // namespace detail::dlc
//! @endcond

/// Writes the DLC files of a parameter-server job from its messages (SketchDLC §4.1):
/// for every message a send record in the sender's file and a receive record in the
/// receiver's, one file per worker and server, records in time order with ids from 0.
/// Operation numbers are 4 x iteration - 2 + step on every node (the servers'
/// numbering; iteration 0 is initialization), times are floored to microseconds after
/// `epoch_us`, and dependencies are the protocol's (docs/dlc.md, "Writing"): a push on
/// every pull answer of the previous iteration (one-to-many), the confirmation on the
/// push (on every worker's push of the key when synchronous), the pull request on the
/// confirmation, the answer on the request. A dependency whose message is absent is
/// left out (-1 when none is left). Throws daydream::error naming the message if a
/// message's two times are missing or reversed, a record would precede its dependency,
/// a message is given twice, or a worker, server, key or length is out of range.
/// Cost: one file per node, each header listing every node, so O((W + S)^2) bytes of
/// headers; O(M log M) for M messages, times W (or S) for the records whose dependency
/// is every worker's (or server's) message.
inline std::vector<dlc_text> write_dlc(std::span<const ps_message> msgs, const dlc_write_options& opt = {}) {
  namespace d = detail::dlc;
  const std::int32_t W = opt.workers, S = opt.servers;
  if (W < 1 || S < 1 || W > d::max_nodes || S > d::max_nodes)
    throw error("daydream: write_dlc: need 1 to " + std::to_string(d::max_nodes) + " workers and servers");
  struct rec {
    dlc_op op;
    std::int32_t src, dst, peer;
    std::uint64_t length;
    std::int64_t key, op_num, time_us;
    std::int32_t iteration;
    std::int32_t dep_type = 0;
    std::int64_t d_time = 0;
    std::string id_dep = "-1";
  };
  std::vector<std::vector<rec>> files(std::size_t(W + S));
  // (rank, key, op_num, peer) -> time, for dependencies.
  std::map<std::tuple<std::int32_t, std::int64_t, std::int64_t, std::int32_t>, std::int64_t> at;
  // (rank, op_num, peer) -> the latest time of those records (every key).
  std::map<std::tuple<std::int32_t, std::int64_t, std::int32_t>, std::int64_t> latest_of;
  auto describe = [](const ps_message& m) {
    return std::string(to_string(m.kind)) + " of key " + std::to_string(m.key) + ", iteration " +
           std::to_string(m.iteration) + ", worker " + std::to_string(m.worker) + ", server " + std::to_string(m.server);
  };
  for (auto& m : msgs) {
    if (m.worker < 0 || m.worker >= W || m.server < 0 || m.server >= S)
      throw error("daydream: write_dlc: " + describe(m) + ": no such worker or server");
    if (m.key < 0 || m.key >= d::max_int32 || m.iteration < 0 || m.iteration >= d::max_iteration)
      throw error("daydream: write_dlc: " + describe(m) + ": key or iteration out of range");
    if (m.bytes > std::uint64_t(d::max_length)) throw error("daydream: write_dlc: " + describe(m) + ": length out of range");
    if (m.sent < 0 || m.received < m.sent)
      throw error("daydream: write_dlc: " + describe(m) + ": needs a send time and a receive time not before it");
    if (opt.epoch_us < 0 || m.received / 1000 > d::max_time_sec * 1'000'000 + 999'999 - opt.epoch_us)
      throw error("daydream: write_dlc: " + describe(m) + ": time out of range");
    const std::int32_t wr = m.worker, sr = W + m.server;
    const bool from_worker = m.kind == dlc_message::push || m.kind == dlc_message::pull_request;
    const int step = static_cast<int>(m.kind);
    const std::int64_t op_num = 4 * std::int64_t(m.iteration) - 2 + step;
    auto add = [&](bool send, std::int64_t t) {
      rec r;
      r.op = op_of(m.kind, send);
      r.src = from_worker ? wr : sr;
      r.dst = from_worker ? sr : wr;
      const std::int32_t me = send ? r.src : r.dst;
      r.peer = me == wr ? sr : wr;
      r.length = m.bytes;
      r.key = m.key;
      r.op_num = op_num;
      r.time_us = opt.epoch_us + d::us_of(t);
      r.iteration = m.iteration;
      if (!at.emplace(std::make_tuple(me, r.key, r.op_num, r.peer), r.time_us).second)
        throw error("daydream: write_dlc: " + describe(m) + " is given twice");
      auto [l, fresh] = latest_of.try_emplace(std::make_tuple(me, r.op_num, r.peer), r.time_us);
      if (!fresh) l->second = std::max(l->second, r.time_us);
      files[std::size_t(me)].push_back(r);
    };
    add(true, m.sent);
    add(false, m.received);
  }
  // Dependencies.
  for (std::int32_t rank = 0; rank < W + S; ++rank)
    for (auto& r : files[std::size_t(rank)]) {
      const bool worker = rank < W;
      const int step = dlc_step(r.op);
      std::vector<std::tuple<std::int64_t, std::int64_t, std::int32_t>> one; // key, op_num, peer
      std::vector<std::pair<std::int64_t, std::int32_t>> many;               // op_num, peer: every key
      if (step == 0) {
        // Push_on_Pull: every answer of the previous iteration (a worker: from every
        // server; a server: to this worker).
        const std::int64_t prev = r.op_num - 1;
        if (worker) {
          for (std::int32_t s = W; s < W + S; ++s) many.emplace_back(prev, s);
        } else {
          many.emplace_back(prev, r.peer);
        }
      } else if (step == 1 && !worker && opt.synchronous) {
        for (std::int32_t w = 0; w < W; ++w) one.emplace_back(r.key, r.op_num - 1, w);
      } else {
        one.emplace_back(r.key, r.op_num - 1, r.peer);
      }
      std::vector<std::string> items;
      std::int64_t latest = std::numeric_limits<std::int64_t>::min();
      for (auto& [k, n, p] : one)
        if (auto it = at.find(std::make_tuple(rank, k, n, p)); it != at.end()) {
          items.push_back(std::to_string(k) + "-" + std::to_string(n) + "-" + d::node_tag(p, W));
          latest = std::max(latest, it->second);
        }
      for (auto& [n, p] : many)
        if (auto it = latest_of.find(std::make_tuple(rank, n, p)); it != latest_of.end()) {
          items.push_back(std::to_string(n) + "-" + d::node_tag(p, W));
          latest = std::max(latest, it->second);
        }
      if (items.empty()) continue;
      if (latest > r.time_us)
        throw error("daydream: write_dlc: " + std::string(to_string(r.op)) + " " + std::to_string(r.key) + "-" +
                    std::to_string(r.op_num) + "-" + d::node_tag(r.peer, W) + " of " + d::node_tag(rank, W) +
                    " is " + std::to_string(latest - r.time_us) +
                    " us before its dependency: the messages do not follow the parameter-server protocol");
      if (r.time_us - latest > d::max_d_time)
        throw error("daydream: write_dlc: " + std::string(to_string(r.op)) + " " + std::to_string(r.key) + "-" +
                    std::to_string(r.op_num) + "-" + d::node_tag(r.peer, W) + " of " + d::node_tag(rank, W) +
                    " is more than 2^40 us after its dependency: d_time out of range");
      r.dep_type = dlc_dep_type(r.op);
      r.d_time = r.time_us - latest;
      const bool is_many = !many.empty() || items.size() > 1 || (step == 1 && !worker && opt.synchronous);
      if (is_many) {
        std::string s = "(";
        for (auto& it : items) s += it + ".";
        r.id_dep = s + ")";
      } else {
        r.id_dep = items.front();
      }
    }
  std::vector<dlc_text> out;
  for (std::int32_t rank = 0; rank < W + S; ++rank) {
    auto& recs = files[std::size_t(rank)];
    std::stable_sort(recs.begin(), recs.end(), [](const rec& a, const rec& b) {
      return std::tie(a.time_us, a.iteration, a.key) < std::tie(b.time_us, b.iteration, b.key);
    });
    dlc_text t;
    t.rank = rank;
    t.name = (rank < W ? "worker_" + std::to_string(rank) : "server_" + std::to_string(rank - W)) + ".dlc";
    std::string& s = t.text;
    s += "== num_workers:= " + std::to_string(W) + " num_servers:= " + std::to_string(S) +
         " worker_hostname:= " + (opt.hostname.empty() ? std::string("-") : opt.hostname) + " Worker_ID:= ";
    for (std::int32_t w = 0; w < W; ++w) s += std::to_string(w) + ",";
    s += " Server_ID:= ";
    for (std::int32_t k = W; k < W + S; ++k) s += std::to_string(k) + ",";
    s += "\n== node: " + (rank < W ? "worker " + std::to_string(rank) : "server " + std::to_string(rank - W)) +
         " (rank " + std::to_string(rank) + ")\n";
    s += "== push operation: push_send_worker -> push_recv_worker push_recv_server -> push_send_server\n";
    s += "== pull operation: pull_send_worker -> pull_recv_worker pull_recv_server -> pull_send_server\n";
    s += "== op_id: (key-operation_num-node) operation_num: 4 x iteration - 2 + (push_send, push_recv, pull_send, "
         "pull_recv); iteration 0 is initialization\n";
    s += "id\tsrc\tdst\tlength\tnum_pp\toperation\top_id\tdep_type\td_time\ttime_sec\ttime_usec\tid_dep\n";
    // num_pp: the Push/Pull pairs of the file numbered in (iteration, key) order, odd
    // for the push and even for the pull; -15 in initialization.
    std::map<std::pair<std::int32_t, std::int64_t>, std::int64_t> pairs;
    for (auto& r : recs) pairs.emplace(std::make_pair(r.iteration, r.key), 0);
    std::int64_t q = 0;
    for (auto& [k, v] : pairs) v = q++ % (std::int64_t(1) << 29);
    std::int64_t id = 0;
    for (auto& r : recs) {
      const std::int64_t pair = pairs[{r.iteration, r.key}];
      const std::int64_t num_pp = r.iteration == 0 ? -15 : 2 * pair + (dlc_step(r.op) < 2 ? 1 : 2);
      s += std::to_string(id++) + "\t" + std::to_string(r.src) + "\t" + std::to_string(r.dst) + "\t" +
           std::to_string(r.length) + "\t" + std::to_string(num_pp) + "\tOP:= " + std::string(to_string(r.op)) + "\t" +
           std::to_string(r.key) + "-" + std::to_string(r.op_num) + "-" + d::node_tag(r.peer, W) + "\t" +
           std::to_string(r.dep_type) + "\t" + std::to_string(r.d_time) + "\t" + std::to_string(r.time_us / 1'000'000) +
           "\t" + std::to_string(r.time_us % 1'000'000) + "\t" + r.id_dep + "\n";
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// Writes the files of write_dlc into `dir` (created if missing) and returns their
/// paths. Throws daydream::error naming a file that cannot be written.
inline std::vector<std::filesystem::path> write_dlc_files(const std::filesystem::path& dir,
                                                          const std::vector<dlc_text>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw error("daydream: " + dir.string() + ": cannot create the directory: " + ec.message());
  std::vector<std::filesystem::path> out;
  for (auto& f : files) {
    auto p = dir / f.name;
    std::ofstream o(p, std::ios::binary);
    o << f.text;
    o.close();
    if (!o) throw error("daydream: " + p.string() + ": cannot write the file");
    out.push_back(p);
  }
  return out;
}

/// The parameter-server messages of a replayed graph whose passes (P3, TicTac, tensor
/// partition) model push/pull as comm_tasks with comm_op::push and comm_op::pull, each
/// pull depending on its push: one worker's view, the workers being symmetric. Every
/// push/pull pair of an iteration is one key (numbered in task order within the
/// iteration, so the same slice has the same key in every iteration), held by server
/// key mod `servers`; the graph's iterations become 1, 2, ... in order. For each of
/// `workers` workers: the push (sent at the push's start, received at its end), its
/// confirmation and the pull request (0 bytes, at the push's end and the pull's start:
/// the passes do not model them) and the answer (the pull's start to its end). Times
/// are the replay's (ns).
inline std::vector<ps_message> ps_messages(const graph& g, const replay_result& r, std::int32_t workers,
                                           std::int32_t servers) {
  if (workers < 1 || servers < 1) throw error("daydream: ps_messages: need at least one worker and one server");
  std::vector<task_id> pushes;
  std::map<std::int32_t, std::int32_t> its;
  g.for_each<comm_task>([&](handle<comm_task> h) {
    if (g.payload(h).op == comm_op::push && h.id < r.end.size() && r.end[h.id] >= 0) {
      pushes.push_back(h.id);
      its[g.iteration(h.id)] = 0;
    }
  });
  std::int32_t n = 0;
  for (auto& [i, k] : its) k = ++n;
  std::sort(pushes.begin(), pushes.end());
  std::map<std::int32_t, std::int64_t> next_key;
  std::vector<ps_message> out;
  for (auto p : pushes) {
    task_id pull = no_task;
    for (auto dep : g.successors(p))
      if (auto c = g.as<comm_task>(dep.to); c && g.payload(c).op == comm_op::pull) { pull = dep.to; break; }
    if (pull == no_task) continue;
    const auto it = its[g.iteration(p)];
    const auto key = next_key[it]++;
    const auto bytes = g.payload(g.as<comm_task>(p)).bytes;
    for (std::int32_t w = 0; w < workers; ++w) {
      const std::int32_t s = std::int32_t(key % servers);
      out.push_back({dlc_message::push, w, s, key, it, bytes, r.start[p], r.end[p]});
      out.push_back({dlc_message::push_ack, w, s, key, it, 0, r.end[p], r.end[p]});
      out.push_back({dlc_message::pull_request, w, s, key, it, 0, r.start[pull], r.start[pull]});
      out.push_back({dlc_message::pull_response, w, s, key, it, g.payload(g.as<comm_task>(pull)).bytes, r.start[pull],
                     r.end[pull]});
    }
  }
  return out;
}

} // namespace daydream::io

#endif
