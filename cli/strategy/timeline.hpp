// Defines what `daydream strategy --timeline` and Python's dd.strategy(timeline=) write:
// the replays of compiled strategies as one Chrome trace (Perfetto).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_STRATEGY_TIMELINE_HPP
#define DAYDREAM_CLI_STRATEGY_TIMELINE_HPP

#include <daydream/config.hpp>
#include <daydream/io/chrome_trace.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/replay.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compile.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/strategy/device_spans.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/simulate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace strategy_cmd {

namespace ds = daydream::strategy;

/// Writes replays of compiled strategies as one Chrome trace (Perfetto): per strategy,
/// one process per device ("<strategy>: device R (stage K, machine M)") with its queues
/// as tracks: computation, feature queue (tensor-parallel all-reduces, pipeline sends),
/// gradient queue (data-parallel reduction, ZeRO's gathers). A communication spans its
/// queue from its issue to when it is done on the device.
class strategy_timeline {
public:
  strategy_timeline() {
    w_.begin_object();
    w_.field("displayTimeUnit", "ns");
    w_.key("traceEvents").begin_array();
  }
  /// Adds replay `r` of `cs`.
  strategy_timeline& add(const ds::compiled_strategy& cs, const daydream::replay_result& r) {
    const auto name = cs.name.empty() ? cs.strategy.to_string() : cs.name;
    const int first = pid_ + 1;
    for (std::size_t d = 0; d < cs.compute.size(); ++d) {
      const int pid = ++pid_;
      meta("process_name", pid, 0,
           fmt::format("{}: device {} (stage {}, machine {})", name, d, cs.stage_of[d],
                       cs.hierarchy.machine_of(std::int32_t(d))));
      w_.begin_object().field("name", "process_sort_index").field("ph", "M").field("pid", pid).field("tid", 0);
      w_.key("args").begin_object().field("sort_index", pid).end_object().end_object();
      meta("thread_name", pid, 1, "computation");
      meta("thread_name", pid, 2, "feature queue");
      meta("thread_name", pid, 3, "gradient queue");
    }
    for (auto& sp : ds::device_spans(cs, r)) {
      w_.begin_object();
      w_.field("name", cs.g.name(sp.task)).field("cat", sp.track == 0 ? "computation" : "communication");
      w_.field("ph", "X");
      w_.key("ts").raw(daydream::io::format_us(sp.start));
      w_.key("dur").raw(daydream::io::format_us(sp.end - sp.start));
      w_.field("pid", first + int(sp.device)).field("tid", int(sp.track) + 1);
      w_.key("args").begin_object();
      w_.field("layer", cs.g.layer(sp.task)).field("phase", daydream::to_string(cs.g.phase_of(sp.task)));
      w_.end_object().end_object();
    }
    return *this;
  }
  /// Processes written so far (devices of every strategy added).
  int processes() const noexcept { return pid_; }
  /// The finished document.
  std::string str() const {
    daydream::io::json_writer done = w_;
    done.end_array().end_object();
    return done.take();
  }
  /// Writes it to `path`; throws daydream::error if the file can't be written.
  void save(const std::string& path) const {
    std::ofstream f(path, std::ios::binary);
    const auto s = str();
    f.write(s.data(), std::streamsize(s.size()));
    if (!f) throw daydream::error("daydream strategy: cannot write timeline to '" + path + "'");
  }

private:
  void meta(std::string_view what, int pid, int tid, const std::string& name) {
    w_.begin_object().field("name", what).field("ph", "M").field("pid", pid).field("tid", tid);
    w_.key("args").begin_object().field("name", name).end_object().end_object();
  }
  daydream::io::json_writer w_;
  int pid_ = 0;
};

/// Writes the timeline of the first `given` of `plans` (the strategies named on the
/// command line, in order) and of the plan named `best` when it is not among them (""
/// for none): each compiled on `cluster` and replayed with `overlap` as the overlap
/// slowdown. Throws daydream::error if `path` can't be written.
inline void write_strategy_timeline(const std::string& path, const std::vector<ds::strategy_plan>& plans,
                                    std::size_t given, const std::string& best, const ds::cluster_spec& cluster,
                                    const ds::model_profile& model, const ds::simulate_options& so, double overlap) {
  std::vector<const ds::strategy_plan*> shown;
  for (std::size_t i = 0; i < given && i < plans.size(); ++i) shown.push_back(&plans[i]);
  if (!best.empty() && std::none_of(shown.begin(), shown.end(), [&](auto* p) { return p->name == best; })) {
    auto it = std::find_if(plans.begin(), plans.end(), [&](const ds::strategy_plan& p) { return p.name == best; });
    if (it == plans.end()) throw daydream::error("daydream strategy: no strategy named " + best);
    shown.push_back(&*it);
  }
  strategy_timeline tl;
  daydream::replay_options ro;
  ro.overlap_slowdown = overlap;
  for (auto* p : shown) {
    auto cs = ds::compile(*p, cluster, model, so);
    tl.add(cs, daydream::replay(cs.g, daydream::trace_order_policy{}, ro));
  }
  tl.save(path);
}

} // namespace strategy_cmd

#endif
