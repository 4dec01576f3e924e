// Defines {fmt} formatters for daydream's vocabulary: handles, task refs, enums, dependencies, critical paths.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_FORMAT_HPP
#define DAYDREAM_IO_FORMAT_HPP

#include <daydream/dependency.hpp>
#include <daydream/fwd.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::io {

/// A task of a graph, printable with {fmt} as `gpu_kernel#42 "volta_sgemm"` (kind, id,
/// name). Made by describe(); holds a pointer to the graph, so it must not outlive it.
template <class Graph> struct described_task {
  const Graph* g = nullptr; ///< the graph
  task_id id = no_task;     ///< the task
};

/// A printable description of task `t` of `g`: `gpu_kernel#42 "volta_sgemm"`; a removed
/// or unknown id prints as `#42 (removed)`.
///
///     fmt::print("slowest: {}\n", daydream::io::describe(g, t));
template <class Graph> described_task<Graph> describe(const Graph& g, task_id t) {
  return {&g, t};
}

/// A critical path of a graph, printable as one step per line:
/// `  cpu_task#0 "cudaLaunchKernel" [0, 5000)` then `  -launch-> gpu_kernel#3 "volta_sgemm" [5000, 35000)`.
/// Made by describe_path(); holds pointers to the graph and the replay.
template <class Graph> struct described_path {
  const Graph* g = nullptr;           ///< the graph
  const replay_result* r = nullptr;   ///< its replay
  std::vector<critical_step> steps;   ///< the path, first task first
};

/// A printable critical path of replay `r` of `g` (by default r.critical_path()).
///
///     fmt::print("critical path:\n{}", daydream::io::describe_path(g, r));
template <class Graph>
described_path<Graph> describe_path(const Graph& g, const replay_result& r) {
  return {&g, &r, r.critical_path()};
}
/// A printable path of the given steps of replay `r` of `g`.
template <class Graph>
described_path<Graph> describe_path(const Graph& g, const replay_result& r,
                                    std::vector<critical_step> steps) {
  return {&g, &r, std::move(steps)};
}

//! @cond DAYDREAM_INTERNAL
namespace detail {

template <class Graph> std::string task_text(const Graph& g, task_id t) {
  if (!g.contains(t)) return fmt::format("#{} (removed)", t);
  return fmt::format("{}#{} \"{}\"", g.kind_name(t), t, g.name(t));
}

/// Formats a value as a string, then pads and aligns it like a string ("{:>20}").
struct string_like_formatter : fmt::formatter<std::string_view> {
  template <class Ctx> auto emit(std::string_view s, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(s, ctx);
  }
};

/// An enum with a daydream::to_string overload, printed as its name.
template <class Enum> struct enum_formatter : string_like_formatter {
  template <class Ctx> auto format(Enum e, Ctx& ctx) const { return emit(to_string(e), ctx); }
};

} // namespace detail
//! @endcond

} // namespace daydream::io

/// `forward`, `backward`, `weight_update`, `other`.
template <> struct fmt::formatter<daydream::phase> : daydream::io::detail::enum_formatter<daydream::phase> {};
/// `cpu_order`, `stream_order`, `launch`, `sync`, `comm`, `data`, `control`.
template <> struct fmt::formatter<daydream::dep_kind> : daydream::io::detail::enum_formatter<daydream::dep_kind> {};
/// `cpu_thread`, `gpu_stream`, `copy_engine`, `link`, `other`.
template <> struct fmt::formatter<daydream::resource_kind> : daydream::io::detail::enum_formatter<daydream::resource_kind> {};
/// `exclusive`, `fair`.
template <> struct fmt::formatter<daydream::sharing> : daydream::io::detail::enum_formatter<daydream::sharing> {};
/// `op`, `launch`, `memcpy`, `sync`, `runtime`.
template <> struct fmt::formatter<daydream::cpu_call> : daydream::io::detail::enum_formatter<daydream::cpu_call> {};
/// `h2d`, `d2h`, `d2d`, `peer`, `memset`.
template <> struct fmt::formatter<daydream::copy_kind> : daydream::io::detail::enum_formatter<daydream::copy_kind> {};
/// `all_reduce`, `reduce_scatter`, ..., `other`.
template <> struct fmt::formatter<daydream::comm_op> : daydream::io::detail::enum_formatter<daydream::comm_op> {};
/// `none`, `dependency`, `resource`.
template <> struct fmt::formatter<daydream::binding> : daydream::io::detail::enum_formatter<daydream::binding> {};

/// A typed handle as `gpu_kernel#42` (`gpu_kernel#none` when empty). A handle does not
/// know its graph: format a task_ref or io::describe(g, h) to see the name too.
template <class Kind>
struct fmt::formatter<daydream::handle<Kind>> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(daydream::handle<Kind> h, Ctx& ctx) const {
    constexpr auto kind = daydream::kind_traits<Kind>::name;
    return emit(h ? fmt::format("{}#{}", kind, h.id) : fmt::format("{}#none", kind), ctx);
  }
};

/// A task of a selection view as `gpu_kernel#42 "volta_sgemm"`.
template <class Graph, class Kind>
struct fmt::formatter<daydream::task_ref<Graph, Kind>> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::task_ref<Graph, Kind>& r, Ctx& ctx) const {
    return emit(daydream::io::detail::task_text(*r.g, r.id), ctx);
  }
};

/// A described task as `gpu_kernel#42 "volta_sgemm"`.
template <class Graph>
struct fmt::formatter<daydream::io::described_task<Graph>> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::io::described_task<Graph>& d, Ctx& ctx) const {
    return emit(daydream::io::detail::task_text(*d.g, d.id), ctx);
  }
};

/// A dependency as `#3 -launch-> #7`.
template <> struct fmt::formatter<daydream::dependency> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::dependency& d, Ctx& ctx) const {
    return emit(fmt::format("#{} -{}-> #{}", d.from, d.kind, d.to), ctx);
  }
};

/// A set of dependency kinds as `{launch, sync}`.
template <> struct fmt::formatter<daydream::dep_mask> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(daydream::dep_mask m, Ctx& ctx) const {
    std::string s = "{";
    for (int k = 0; k < daydream::dep_kind_count; ++k)
      if (m.contains(static_cast<daydream::dep_kind>(k))) {
        if (s.size() > 1) s += ", ";
        s += to_string(static_cast<daydream::dep_kind>(k));
      }
    return emit(s + "}", ctx);
  }
};

/// A priority key as `(major, minor, tie)`.
template <> struct fmt::formatter<daydream::priority_key> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::priority_key& k, Ctx& ctx) const {
    return emit(fmt::format("({}, {}, {})", k.major, k.minor, k.tie), ctx);
  }
};

/// A resource as `stream 7 [gpu_stream]`, or `nic0 [link, fair]` when shared fairly.
template <> struct fmt::formatter<daydream::resource> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::resource& r, Ctx& ctx) const {
    return emit(r.share == daydream::sharing::fair
                    ? fmt::format("{} [{}, fair]", r.name, r.kind)
                    : fmt::format("{} [{}]", r.name, r.kind),
                ctx);
  }
};

/// A critical-path step without its graph: `#7 after launch`, `#3 after its resource`,
/// `#0 at the start`.
template <> struct fmt::formatter<daydream::critical_step> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::critical_step& s, Ctx& ctx) const {
    switch (s.why) {
    case daydream::binding::dependency: return emit(fmt::format("#{} after {}", s.task, s.edge), ctx);
    case daydream::binding::resource: return emit(fmt::format("#{} after its resource", s.task), ctx);
    case daydream::binding::none: break;
    }
    return emit(fmt::format("#{} at the start", s.task), ctx);
  }
};

/// A described critical path, one step per line (each line ends with '\n'):
///
///       cpu_task#0 "cudaLaunchKernel" [0, 5000)
///       -launch-> gpu_kernel#3 "volta_sgemm" [5000, 35000)
///       -resource-> gpu_kernel#5 "relu" [35000, 36000)
template <class Graph>
struct fmt::formatter<daydream::io::described_path<Graph>> : daydream::io::detail::string_like_formatter {
  template <class Ctx> auto format(const daydream::io::described_path<Graph>& p, Ctx& ctx) const {
    std::string s;
    for (auto& step : p.steps) {
      s += "  ";
      if (step.why == daydream::binding::dependency) s += fmt::format("-{}-> ", step.edge);
      else if (step.why == daydream::binding::resource) s += "-resource-> ";
      s += fmt::format("{} [{}, {})\n", daydream::io::detail::task_text(*p.g, step.task),
                       p.r->start[step.task], p.r->end[step.task]);
    }
    return emit(s, ctx);
  }
};

#endif
