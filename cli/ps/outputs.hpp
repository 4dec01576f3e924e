// Defines what `daydream ps --timeline FILE --dlc DIR` writes, shared with Python's dd.ps:
// the largest worker count's first steps simulated again with their timeline, as a Chrome
// trace (Perfetto) and as SketchDLC files (one per worker and server).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_PS_OUTPUTS_HPP
#define DAYDREAM_CLI_PS_OUTPUTS_HPP

#include <daydream/io/dlc_writer.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/ps/config.hpp>
#include <daydream/ps/model.hpp>
#include <daydream/ps/simulate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ps_cmd {

namespace ps = daydream::ps;

/// Writes the simulated steps of `r` as a Chrome JSON trace: one process per worker
/// (its computation, and a thread per server and direction) and one per server (a
/// thread per worker's updates).
inline void write_timeline(const std::string& path, const ps::model& m, std::uint32_t servers, const ps::result& r,
                           std::uint32_t workers) {
  daydream::io::json_writer w(false);
  w.begin_object().key("traceEvents").begin_array();
  const std::uint32_t M = servers;
  auto meta = [&](std::uint32_t pid, std::optional<std::uint32_t> tid, const std::string& name) {
    w.begin_object().field("ph", "M").field("pid", pid);
    if (tid) w.field("tid", *tid).field("name", "thread_name");
    else w.field("name", "process_name");
    w.key("args").begin_object().field("name", name).end_object().end_object();
  };
  for (std::uint32_t k = 0; k < workers; ++k) {
    meta(k, std::nullopt, fmt::format("worker {}", k));
    meta(k, 0, "compute");
    for (std::uint32_t s = 0; s < M; ++s) {
      meta(k, 1 + 2 * s, fmt::format("downlink from server {}", s));
      meta(k, 2 + 2 * s, fmt::format("uplink to server {}", s));
    }
  }
  for (std::uint32_t s = 0; s < M; ++s) {
    meta(workers + s, std::nullopt, fmt::format("server {}", s));
    for (std::uint32_t k = 0; k < workers; ++k) meta(workers + s, k, fmt::format("updates of worker {}", k));
  }
  for (auto& e : r.timeline) {
    std::uint32_t pid = e.worker, tid = 0;
    std::string name;
    const auto& tensor = m.tensors[e.tensor].name;
    switch (e.res) {
    case ps::op_resource::worker: name = fmt::format("step {} compute", e.step); break;
    case ps::op_resource::downlink: tid = 1 + 2 * e.server; name = "pull " + tensor; break;
    case ps::op_resource::uplink: tid = 2 + 2 * e.server; name = "push " + tensor; break;
    case ps::op_resource::server: pid = workers + e.server; tid = e.worker; name = "update " + tensor; break;
    }
    w.begin_object().field("ph", "X").field("name", name).field("pid", pid).field("tid", tid);
    w.field("ts", e.start / 1e3).field("dur", (e.end - e.start) / 1e3);
    w.key("args").begin_object().field("step", e.step).field("op", e.op);
    if (e.bytes > 0) w.field("bytes", e.bytes);
    w.end_object().end_object();
  }
  w.end_array().field("displayTimeUnit", "ns").end_object();
  std::ofstream f(path);
  f << w.take() << '\n';
  if (!f) throw daydream::error("daydream ps: cannot write the timeline to '" + path + "'");
}

/// The parameter-server messages of the simulated steps of `r` (its timeline), in the
/// DLC writer's terms: per worker, step s and tensor k, the push of step s's gradient
/// (iteration s + 1; sent at its first chunk's start, received at its last chunk's end)
/// and its confirmation (0 bytes, when the server's update of it ends), and the pull of the parameters step s
/// reads (iteration s: the pull ends the iteration before; step 0's is the initialization),
/// with its request (0 bytes, at the pull's start). The simulation has no request or
/// confirmation messages of its own.
inline std::vector<daydream::io::ps_message> dlc_messages_of(const ps::result& r) {
  using daydream::io::dlc_message;
  struct span {
    double start = 1e300, end = -1, bytes = 0;
    std::uint32_t server = 0;
  };
  // (worker, step, tensor, uplink?) -> the transfer's chunks together.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, bool>, span> xfers;
  // (worker, step, tensor) -> the end of the server's update of it.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, double> updated;
  for (auto& e : r.timeline) {
    if (e.res == ps::op_resource::server) {
      auto& u = updated[{e.worker, e.step, e.tensor}];
      u = std::max(u, e.end);
    }
    if (e.res != ps::op_resource::downlink && e.res != ps::op_resource::uplink) continue;
    auto& x = xfers[{e.worker, e.step, e.tensor, e.res == ps::op_resource::uplink}];
    x.start = std::min(x.start, e.start);
    x.end = std::max(x.end, e.end);
    x.bytes += e.bytes;
    x.server = e.server;
  }
  std::vector<daydream::io::ps_message> out;
  for (auto& [k, x] : xfers) {
    const auto [worker, step, tensor, up] = k;
    const auto w = std::int32_t(worker), srv = std::int32_t(x.server);
    const auto key = std::int64_t(tensor);
    const auto bytes = std::uint64_t(std::llround(x.bytes));
    const auto start = daydream::time_ns(std::llround(x.start)), end = daydream::time_ns(std::llround(x.end));
    if (up) {
      const auto it = std::int32_t(step) + 1;
      out.push_back({dlc_message::push, w, srv, key, it, bytes, start, end});
      // Confirmed once the server has applied it (the DLC update overhead).
      auto u = updated.find({worker, step, tensor});
      const auto ack = u == updated.end() ? end : std::max(end, daydream::time_ns(std::llround(u->second)));
      out.push_back({dlc_message::push_ack, w, srv, key, it, 0, ack, ack});
    } else {
      const auto it = std::int32_t(step);
      out.push_back({dlc_message::pull_request, w, srv, key, it, 0, start, start});
      out.push_back({dlc_message::pull_response, w, srv, key, it, bytes, start, end});
    }
  }
  return out;
}

/// Simulates the first `steps` steps of `workers` workers (every worker starting
/// `stagger_step_ns` / workers after the previous one when not 0) with their timeline and
/// writes it to `timeline` (a Chrome trace) and `dlc` (a directory of DLC files); an empty
/// path writes nothing.
inline void write_outputs(const std::string& timeline, const std::string& dlc, std::uint32_t steps, const ps::model& m,
                          const ps::config& c, std::uint32_t workers, double stagger_step_ns) {
  auto tc = c;
  tc.workers = workers;
  tc.timeline_steps = std::max<std::uint32_t>(1, steps);
  tc.steps = std::max(tc.timeline_steps + 1, std::min(tc.steps, tc.timeline_steps + 1));
  tc.warmup = 0;
  if (stagger_step_ns > 0) tc.stagger = stagger_step_ns / double(tc.workers);
  auto r = ps::simulate_training(m.steps, m.tensors, tc);
  if (!timeline.empty()) write_timeline(timeline, m, tc.servers, r, tc.workers);
  if (!dlc.empty()) {
    daydream::io::dlc_write_options wo;
    wo.workers = std::int32_t(tc.workers);
    wo.servers = std::int32_t(tc.servers);
    wo.synchronous = false; // asynchronous training: each push is confirmed on its own
    auto msgs = dlc_messages_of(r);
    daydream::io::write_dlc_files(dlc, daydream::io::write_dlc(msgs, wo));
  }
}

} // namespace ps_cmd

#endif
