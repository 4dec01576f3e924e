// Defines the GPU-link stage of Kineto ingestion: GPU operations by stream, and the runtime call that launched each one.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_LINKS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_LINKS_HPP

#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_tables.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// How much longer than this two GPU ops of one graph launch must overlap on their stream
/// to run on two lanes of it (see assign_lanes): Kineto's timestamps are microseconds,
/// and an op that ends a microsecond after the next one starts is rounding, not
/// parallel branches.
inline constexpr time_ns lane_overlap_tolerance = 1'000;

/// One GPU stream: its operations in start order. A stream whose CUDA graph launches ran
/// several ops at once has lanes (assign_lanes): lane 0 is the stream's resource, each
/// further lane a resource of its own, and every op is on one of them.
struct stream_rec {
  std::int32_t device = 0, stream = 0;
  std::vector<std::uint32_t> ops;     ///< gpu events in start order
  std::vector<time_ns> launch_max;    ///< running max of the launch times along `ops`
  resource_id res = no_resource;
  std::vector<std::uint16_t> lane;    ///< per position in `ops`: its lane (empty: one lane)
  std::vector<std::vector<std::uint32_t>> lane_pos; ///< per lane: its positions in `ops` (empty: one lane)
  std::vector<resource_id> lane_res;  ///< per lane: its resource (lane 0's is `res`)

  /// Number of lanes (1: the stream runs one op at a time).
  std::size_t lanes() const noexcept { return lane_pos.empty() ? 1 : lane_pos.size(); }
  /// The lane of the op at position `k` of `ops`.
  std::uint16_t lane_at(std::size_t k) const noexcept { return lane.empty() ? 0 : lane[k]; }
  /// The resource of the op at position `k` of `ops`.
  resource_id res_at(std::size_t k) const noexcept { return lane.empty() ? res : lane_res[lane[k]]; }
  /// The position in `ops` of the op before position `k` on its lane, or no_pos.
  std::size_t lane_prev(std::size_t k) const noexcept {
    if (lane.empty()) return k == 0 ? no_pos : k - 1;
    auto& v = lane_pos[lane[k]];
    auto it = std::lower_bound(v.begin(), v.end(), static_cast<std::uint32_t>(k));
    return it == v.begin() ? no_pos : *(it - 1);
  }
  /// The position of the first op of lane `l` after position `k`, or no_pos.
  std::size_t first_on_lane_after(std::size_t l, std::size_t k) const noexcept {
    auto& v = lane_pos[l];
    auto it = std::upper_bound(v.begin(), v.end(), static_cast<std::uint32_t>(k));
    return it == v.end() ? no_pos : *it;
  }
  /// The position of the last op of lane `l` before position `k`, or no_pos.
  std::size_t last_on_lane_before(std::size_t l, std::size_t k) const noexcept {
    auto& v = lane_pos[l];
    auto it = std::lower_bound(v.begin(), v.end(), static_cast<std::uint32_t>(k));
    return it == v.begin() ? no_pos : *(it - 1);
  }
};

/// A launch flow pair that was used to link a GPU op (its `s` and `f` flows).
struct flow_pair_rec { std::uint32_t s, f, op; };

/// What the GPU-link stage finds: streams, launch links and what happened to launch flows.
struct gpu_links {
  std::vector<stream_rec> streams;
  std::vector<std::uint32_t> op_stream;       ///< gpu event -> index into streams
  std::vector<std::uint32_t> op_pos;          ///< gpu event -> its position in its stream's ops
  std::size_t laned_ops = 0;                  ///< ops on a lane other than their stream's first
  std::vector<call_semantics> sem;            ///< cpu event -> what the call does (plain if not runtime)
  id_index runtime_by_corr;                   ///< correlation id -> runtime call
  std::vector<std::uint32_t> launch_of;       ///< gpu event -> runtime call, or no_index
  std::vector<std::uint32_t> ops_begin, ops_list; ///< runtime call -> its gpu events (CSR)
  std::vector<flow_pair_rec> flow_pair;       ///< launch flows that link an op
  std::vector<std::uint8_t> flow_state;       ///< per flow: 0 unseen, 2 no end points, 3 contradicts the correlation

  std::uint32_t runtime_of_corr(std::int64_t c) const { return c < 0 ? no_index : runtime_by_corr.find(c); }
  /// When GPU op `o` was launched: its call's start, or its own start if unlinked.
  time_ns launch_time(const decoded_trace& d, std::uint32_t o) const {
    return launch_of[o] != no_index ? d.cpu[launch_of[o]].ts : d.gpu[o].ts;
  }
  bool launches(std::uint32_t e) const { return ops_begin[e + 1] > ops_begin[e]; }
  /// The stream of the first op call `e` launched (call `e` must launch one).
  std::uint32_t first_stream_of(std::uint32_t e) const { return op_stream[ops_list[ops_begin[e]]]; }
  /// The stream of `device`/`stream` (any device if `device` < 0), or no_index.
  std::uint32_t stream_index(std::int32_t device, std::int64_t stream) const {
    for (std::uint32_t k = 0; k < streams.size(); ++k)
      if (streams[k].stream == stream && (device < 0 || streams[k].device == device)) return k;
    return no_index;
  }
  /// The last op of stream `s` launched before `t`, or no_index.
  std::uint32_t last_launched_before(const stream_rec& s, time_ns t) const {
    auto it = std::lower_bound(s.launch_max.begin(), s.launch_max.end(), t);
    if (it == s.launch_max.begin()) return no_index;
    return s.ops[static_cast<std::size_t>(it - s.launch_max.begin()) - 1];
  }
  /// The first op of stream `s` launched after `t`, or no_index.
  std::uint32_t first_launched_after(const stream_rec& s, time_ns t) const {
    auto it = std::upper_bound(s.launch_max.begin(), s.launch_max.end(), t);
    if (it == s.launch_max.end()) return no_index;
    return s.ops[static_cast<std::size_t>(it - s.launch_max.begin())];
  }
};

inline std::uint64_t gpu_place_key(std::int32_t dev, std::int32_t st, time_ns ts) {
  return (std::uint64_t(std::uint32_t(dev)) * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t(std::uint32_t(st)) << 40) ^ std::uint64_t(ts);
}

/// Stage 2b: lanes. Some CUDA versions record the parallel branches of a CUDA graph on the
/// stream that launched it: ops of one graph launch (one runtime call that launched
/// several) overlap in time on one stream. Each op of a stream, in start order, goes on
/// the lowest lane that is free by its start (the lane's last op ended at most
/// lane_overlap_tolerance after it); when none is, an op of a graph launch whose
/// overlapping ops are all of its own launch opens a new lane, and any other op follows
/// the lane that frees first (the stream runs it after that op, as on one lane). A
/// stream without such overlaps keeps one lane.
inline void assign_lanes(const decoded_trace& d, gpu_links& L) {
  auto graph_call = [&](std::uint32_t o) {
    const auto r = L.launch_of[o];
    return r != no_index && L.sem[r] == call_semantics::launch && L.ops_begin[r + 1] - L.ops_begin[r] >= 2 ? r
                                                                                                        : no_index;
  };
  std::vector<std::uint32_t> tail; // per lane: its last op
  for (auto& st : L.streams) {
    tail.clear();
    bool laned = false;
    std::vector<std::uint16_t> lane(st.ops.size(), 0);
    for (std::size_t k = 0; k < st.ops.size(); ++k) {
      const auto o = st.ops[k];
      const time_ns ts = d.gpu[o].ts;
      auto end_of = [&](std::uint32_t p) { return d.gpu[p].ts + d.gpu[p].dur; };
      std::size_t pick = tail.size(), first_free = tail.size();
      bool own = graph_call(o) != no_index && tail.size() < 0xFFFF;
      for (std::size_t l = 0; l < tail.size(); ++l) {
        if (end_of(tail[l]) <= ts + lane_overlap_tolerance) { first_free = l; break; }
        if (graph_call(tail[l]) != graph_call(o)) own = false;
        if (pick == tail.size() || end_of(tail[l]) < end_of(tail[pick])) pick = l;
      }
      if (first_free < tail.size()) pick = first_free;
      else if (own || tail.empty()) pick = tail.size(), tail.push_back(o);
      tail[pick] = o;
      lane[k] = static_cast<std::uint16_t>(pick);
      laned |= pick > 0;
    }
    if (!laned) continue;
    st.lane = std::move(lane);
    st.lane_pos.assign(tail.size(), {});
    for (std::uint32_t k = 0; k < st.ops.size(); ++k) st.lane_pos[st.lane[k]].push_back(k);
    L.laned_ops += st.ops.size() - st.lane_pos[0].size();
  }
}

/// Stage 2: groups the GPU operations of `d` by stream (in start order) and links each
/// to the runtime call that launched it: by correlation id, then by launch flows for
/// ops still unlinked (a flow that contradicts the correlation is counted, not used).
/// Calls on ignored threads launch nothing.
inline gpu_links link_gpu_ops(const decoded_trace& d, const thread_table& tt) {
  gpu_links L;
  // Streams.
  std::unordered_map<std::int64_t, std::uint32_t> by_key;
  for (std::uint32_t i = 0; i < d.gpu.size(); ++i) {
    auto& e = d.gpu[i];
    std::int64_t key = (std::int64_t(e.device) << 32) ^ std::uint32_t(e.stream);
    auto [it, fresh] = by_key.try_emplace(key, static_cast<std::uint32_t>(L.streams.size()));
    if (fresh) L.streams.push_back({e.device, e.stream, {}, {}, no_resource, {}, {}, {}});
    L.streams[it->second].ops.push_back(i);
  }
  L.op_stream.assign(d.gpu.size(), 0);
  L.op_pos.assign(d.gpu.size(), 0);
  for (std::uint32_t s = 0; s < L.streams.size(); ++s) {
    auto& ops = L.streams[s].ops;
    std::stable_sort(ops.begin(), ops.end(), [&](auto a, auto b) { return d.gpu[a].ts < d.gpu[b].ts; });
    for (std::uint32_t k = 0; k < ops.size(); ++k) L.op_stream[ops[k]] = s, L.op_pos[ops[k]] = k;
  }
  // Runtime calls: by correlation, and what each does.
  // (The pool stores each name once: the semantics are found once per distinct name.)
  std::vector<std::pair<std::int64_t, std::uint32_t>> kv;
  L.sem.assign(d.cpu.size(), call_semantics::plain);
  std::unordered_map<const char*, call_semantics> sem_of_name;
  for (std::uint32_t i = 0; i < d.cpu.size(); ++i) {
    if (!is_runtime(d, i)) continue;
    if (d.cpu[i].correlation >= 0) kv.push_back({d.cpu[i].correlation, i});
    const auto n = d.cpu[i].name;
    auto [it, fresh] = sem_of_name.try_emplace(n.data(), call_semantics::plain);
    if (fresh) it->second = classify_call(n);
    L.sem[i] = it->second;
  }
  L.runtime_by_corr = id_index(kv);
  // Correlation ids.
  L.launch_of.assign(d.gpu.size(), no_index);
  kv.clear();
  for (std::uint32_t i = 0; i < d.gpu.size(); ++i) {
    auto c = d.gpu[i].correlation;
    if (c < 0) continue;
    kv.push_back({c, i});
    auto r = L.runtime_of_corr(c);
    if (r != no_index && !tt.on_ignored(d, r)) L.launch_of[i] = r;
  }
  const id_index op_by_corr(kv);
  // Launch flows: pair s and f by id (sorting the flows, no hashing).
  std::vector<std::uint32_t> fl;
  for (std::uint32_t i = 0; i < d.flows.size(); ++i)
    if (d.flows[i].cat == ecat::launch_flow) fl.push_back(i);
  std::sort(fl.begin(), fl.end(), [&](auto a, auto b) {
    auto& x = d.flows[a];
    auto& y = d.flows[b];
    return x.id != y.id ? x.id < y.id : x.ph < y.ph; // 'f' before 's'
  });
  L.flow_state.assign(d.flows.size(), 0);
  std::unordered_map<std::uint64_t, std::uint32_t> gpu_at; // built only if needed
  for (std::size_t k = 0; k + 1 < fl.size(); ++k) {
    auto fi = fl[k], si = fl[k + 1];
    auto& ff = d.flows[fi];
    auto& fs = d.flows[si];
    if (ff.id != fs.id || ff.ph != 'f' || fs.ph != 's') continue;
    ++k;
    const auto dev = static_cast<std::int32_t>(ff.where.pid), st = static_cast<std::int32_t>(ff.stream);
    std::uint32_t op = op_by_corr.find(ff.id);
    if (op == no_index || d.gpu[op].device != dev || d.gpu[op].stream != st || d.gpu[op].ts != ff.ts) {
      // the flow does not follow the correlation ids: find the op by place and time
      if (gpu_at.empty())
        for (std::uint32_t i = 0; i < d.gpu.size(); ++i)
          gpu_at.emplace(gpu_place_key(d.gpu[i].device, d.gpu[i].stream, d.gpu[i].ts), i);
      auto git = gpu_at.find(gpu_place_key(dev, st, ff.ts));
      op = git == gpu_at.end() ? no_index : git->second;
    }
    // the flow's id is the correlation id: check that call first, search by time if not
    std::uint32_t rt = L.runtime_of_corr(fs.id);
    if (rt == no_index || d.cpu[rt].ts != fs.ts || !(tt.threads[d.cpu[rt].thread].key == fs.where))
      rt = tt.runtime_at(d, fs.where, fs.ts);
    if (op == no_index || rt == no_index) { L.flow_state[si] = L.flow_state[fi] = 2; continue; }
    if (L.launch_of[op] == no_index && !tt.on_ignored(d, rt)) L.launch_of[op] = rt;
    if (L.launch_of[op] == rt) L.flow_pair.push_back({si, fi, op});
    else L.flow_state[si] = L.flow_state[fi] = 3;
  }
  // Runtime call -> its GPU ops (CSR).
  L.ops_begin.assign(d.cpu.size() + 1, 0);
  for (auto r : L.launch_of) if (r != no_index) ++L.ops_begin[r + 1];
  for (std::size_t i = 1; i < L.ops_begin.size(); ++i) L.ops_begin[i] += L.ops_begin[i - 1];
  L.ops_list.assign(L.ops_begin.back(), 0);
  auto fill = L.ops_begin;
  for (std::uint32_t i = 0; i < d.gpu.size(); ++i)
    if (L.launch_of[i] != no_index) L.ops_list[fill[L.launch_of[i]]++] = i;
  // Launch times along each stream.
  for (auto& s : L.streams) {
    s.launch_max.resize(s.ops.size());
    time_ns m = std::numeric_limits<time_ns>::min();
    for (std::size_t k = 0; k < s.ops.size(); ++k) {
      m = std::max(m, L.launch_time(d, s.ops[k]));
      s.launch_max[k] = m;
    }
  }
  assign_lanes(d, L);
  return L;
}

//! @endcond

} // namespace daydream::io::detail

#endif
