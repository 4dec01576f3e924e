// Defines io::chrome_trace: replay results as Chrome-trace JSON that opens in Perfetto.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_CHROME_TRACE_HPP
#define DAYDREAM_IO_CHROME_TRACE_HPP

#include <daydream/config.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

namespace daydream::io {

/// Formats nanoseconds as microseconds with exact sub-microsecond digits ("12.345").
inline std::string format_us(time_ns t) {
  auto sign = t < 0 ? "-" : "";
  auto a = t < 0 ? -t : t;
  if (a % 1000 == 0) return fmt::format("{}{}", sign, a / 1000);
  auto frac = fmt::format("{:03}", a % 1000);
  while (frac.back() == '0') frac.pop_back();
  return fmt::format("{}{}.{}", sign, a / 1000, frac);
}

/// Builds one Chrome-trace JSON document holding one or more replays side by side: each
/// scenario is a process (named after it), each resource a thread track, each task a
/// complete ("X") event with its kind, layer, phase and iteration as args. The output is
/// deterministic and loads in Perfetto (ui.perfetto.dev) and chrome://tracing.
///
///     daydream::io::chrome_trace ct;
///     ct.add("baseline", g, daydream::replay(g));
///     ct.add("amp", g2, daydream::replay(g2));
///     ct.save("timeline.json");
class chrome_trace {
public:
  chrome_trace() {
    w_.begin_object();
    w_.field("displayTimeUnit", "ns");
    w_.key("traceEvents").begin_array();
  }

  /// Adds the replay `r` of graph `g` as the scenario `name`.
  template <class Graph>
  chrome_trace& add(std::string_view name, const Graph& g, const replay_result& r) {
    const int pid = ++scenarios_;
    meta("process_name", pid, 0, name);
    w_.begin_object().field("name", "process_sort_index").field("ph", "M").field("pid", pid)
        .field("tid", 0).key("args").begin_object().field("sort_index", pid).end_object().end_object();
    for (std::size_t res = 0; res < g.resource_count(); ++res) {
      const auto& info = g.resource_at(resource_id(res));
      meta("thread_name", pid, int(res) + 1, info.name.empty() ? fmt::format("resource {}", res) : info.name);
    }
    meta("thread_name", pid, 0, "unplaced");
    g.for_each_task([&](task_id t) {
      if (t >= r.start.size() || r.start[t] < 0) return;
      auto res = g.resource_of(t);
      w_.begin_object();
      w_.field("name", g.name(t)).field("cat", g.kind_name(t)).field("ph", "X");
      w_.key("ts").raw(format_us(r.start[t]));
      w_.key("dur").raw(format_us(r.end[t] - r.start[t]));
      w_.field("pid", pid).field("tid", res == no_resource ? 0 : int(res) + 1);
      w_.key("args").begin_object();
      w_.field("id", t).field("kind", g.kind_name(t)).field("layer", g.layer(t))
          .field("phase", to_string(g.phase_of(t))).field("iteration", g.iteration(t));
      w_.end_object();
      w_.end_object();
    });
    return *this;
  }

  /// Adds the replay `r` of a graph of several ranks (a job graph, daydream/job/graph.hpp) as
  /// the scenario `name`: one process per rank (the `node` of the resources, named
  /// "<name>: rank N"; resources of no rank, such as the machines' NICs of the fine
  /// communication level, "<name>: network"), each of its resources a thread track; tasks
  /// without a resource (the job's collective barriers) go to the process "<name>: job".
  template <class Graph>
  chrome_trace& add_ranks(std::string_view name, const Graph& g, const replay_result& r) {
    std::map<std::int32_t, int> pid_of;
    for (std::size_t res = 0; res < g.resource_count(); ++res) pid_of.emplace(g.resource_at(resource_id(res)).node, 0);
    const int job_pid = ++scenarios_;
    meta("process_name", job_pid, 0, fmt::format("{}: job", name));
    sort_index(job_pid);
    for (auto& [node, pid] : pid_of) {
      pid = ++scenarios_;
      meta("process_name", pid, 0,
           node < 0 ? fmt::format("{}: network", name) : fmt::format("{}: rank {}", name, node));
      sort_index(pid);
    }
    for (std::size_t res = 0; res < g.resource_count(); ++res) {
      const auto& info = g.resource_at(resource_id(res));
      meta("thread_name", pid_of[info.node], int(res) + 1, info.name.empty() ? fmt::format("resource {}", res) : info.name);
    }
    meta("thread_name", job_pid, 0, "collectives");
    g.for_each_task([&](task_id t) {
      if (t >= r.start.size() || r.start[t] < 0) return;
      auto res = g.resource_of(t);
      w_.begin_object();
      w_.field("name", g.name(t)).field("cat", g.kind_name(t)).field("ph", "X");
      w_.key("ts").raw(format_us(r.start[t]));
      w_.key("dur").raw(format_us(r.end[t] - r.start[t]));
      w_.field("pid", res == no_resource ? job_pid : pid_of[g.resource_at(res).node])
          .field("tid", res == no_resource ? 0 : int(res) + 1);
      w_.key("args").begin_object();
      w_.field("id", t).field("kind", g.kind_name(t)).field("layer", g.layer(t))
          .field("phase", to_string(g.phase_of(t))).field("iteration", g.iteration(t));
      w_.end_object();
      w_.end_object();
    });
    return *this;
  }

  /// The finished document.
  std::string str() const {
    json_writer done = w_;
    done.end_array().end_object();
    return done.take();
  }

  /// Writes the document to `path`; throws daydream::error if the file can't be written.
  void save(const std::string& path) const {
    std::ofstream f(path, std::ios::binary);
    auto s = str();
    f.write(s.data(), std::streamsize(s.size()));
    if (!f) throw error("daydream: cannot write timeline to '" + path + "'");
  }

private:
  void sort_index(int pid) {
    w_.begin_object().field("name", "process_sort_index").field("ph", "M").field("pid", pid)
        .field("tid", 0).key("args").begin_object().field("sort_index", pid).end_object().end_object();
  }
  void meta(std::string_view what, int pid, int tid, std::string_view name) {
    w_.begin_object().field("name", what).field("ph", "M").field("pid", pid).field("tid", tid);
    w_.key("args").begin_object().field("name", name).end_object().end_object();
  }

  json_writer w_;
  int scenarios_ = 0;
};

} // namespace daydream::io

#endif
