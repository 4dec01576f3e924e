// Defines the module stage of Kineto ingestion: the nesting of the trace's `nn.Module:` events.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_MODULES_HPP
#define DAYDREAM_IO_DETAIL_KINETO_MODULES_HPP

#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/kineto_types.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::io {

//! @cond DAYDREAM_INTERNAL
namespace detail {

inline std::string_view module_name(std::string_view n) {
  n.remove_prefix(10); // "nn.Module:"
  while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
  return n;
}

/// The module hierarchy of a decoded trace: per thread, the `nn.Module:` python_function
/// events nest by time (an event inside another's span is its child; one that outlives
/// its parent is still taken as nested in it); then, over all threads in order of their
/// start, each module name becomes a node the first time it is seen, under the module
/// enclosing that call. Parents precede their children in the result. Empty when the
/// trace records no modules (with_stack / Python tracing off).
inline std::vector<module_node> collect_modules(const decoded_trace& d) {
  struct call { time_ns ts, end; std::uint32_t thread, depth, event; std::int32_t parent_event; };
  std::vector<std::uint32_t> ev;
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
    auto& x = d.cpu[i];
    if (x.cat == ecat::python_function && x.name.starts_with("nn.Module:")) ev.push_back(i);
  }
  std::sort(ev.begin(), ev.end(), [&](std::uint32_t a, std::uint32_t b) {
    auto& x = d.cpu[a];
    auto& y = d.cpu[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.ts != y.ts) return x.ts < y.ts;
    if (x.dur != y.dur) return x.dur > y.dur;
    return a < b;
  });
  std::vector<call> calls;
  calls.reserve(ev.size());
  std::vector<std::uint32_t> open; // indices into calls
  for (std::size_t k = 0; k < ev.size(); ++k) {
    auto& x = d.cpu[ev[k]];
    if (k == 0 || d.cpu[ev[k - 1]].thread != x.thread) open.clear();
    while (!open.empty() && calls[open.back()].end <= x.ts) open.pop_back();
    const std::int32_t parent = open.empty() ? -1 : std::int32_t(calls[open.back()].event);
    calls.push_back({x.ts, x.ts + std::max<time_ns>(0, x.dur), x.thread, std::uint32_t(open.size()), ev[k], parent});
    open.push_back(std::uint32_t(calls.size() - 1));
  }
  // First seen over all threads: by start, outer calls first.
  std::sort(calls.begin(), calls.end(), [](const call& a, const call& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.event < b.event;
  });
  std::vector<module_node> out;
  std::unordered_map<std::string_view, std::uint32_t> index;
  for (auto& c : calls) {
    const auto name = module_name(d.cpu[c.event].name);
    auto it = index.find(name);
    if (it != index.end()) { ++out[it->second].calls; continue; }
    module_node m;
    m.name = std::string(name);
    m.calls = 1;
    m.first_call = c.ts;
    if (c.parent_event >= 0) {
      // The enclosing call starts no later and is less deep: its name is already a node.
      auto p = index.find(module_name(d.cpu[std::uint32_t(c.parent_event)].name));
      if (p != index.end()) m.parent = std::int32_t(p->second);
    }
    const auto id = std::uint32_t(out.size());
    if (m.parent >= 0) out[std::size_t(m.parent)].children.push_back(id);
    index.emplace(name, id);
    out.push_back(std::move(m));
  }
  return out;
}

} // namespace detail
//! @endcond

} // namespace daydream::io

#endif
