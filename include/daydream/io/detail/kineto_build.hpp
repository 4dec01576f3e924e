// Defines io::detail::build_graph: Kineto event tables to a daydream::graph (CPU flattening, GPU streams, dependencies).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_BUILD_HPP
#define DAYDREAM_IO_DETAIL_KINETO_BUILD_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_decode.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_tables.hpp>
#include <daydream/io/detail/tensor_bytes.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>
#include <daydream/validate.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::io::detail {

/// Knobs of the graph builder (see io::ingest_options for their meaning).
struct build_settings {
  bool merge_slices = true;
  time_ns sync_tolerance = 50'000;
  time_ns launch_latency = 10'000;
  time_ns implicit_sync_min = 50'000;
  time_ns implicit_sync_window = 15'000;
  time_ns session_gap = 50'000;
  double join_coverage = 0.5;
  bool infer_event_waits = true;
  std::size_t max_warnings = 32;
};

/// One iteration found in the trace.
struct iteration_rec {
  std::int32_t number = -1;
  time_ns begin = 0, end = 0;
  std::string marker;
};

/// What build_graph produces.
struct build_output {
  daydream::graph g;
  std::size_t in_graph = 0;
  std::map<std::string, std::size_t> ignored;
  std::size_t unlinked = 0;
  std::vector<std::string> warnings;
  std::vector<iteration_rec> iterations;
  std::int64_t memory_at_start = -1; ///< device bytes allocated before the first [memory] event
  std::int64_t memory_peak = -1;     ///< the trace's largest device Total Allocated
  time_ns begin = 0, end = 0;        ///< first start and last end of the graph's tasks (trace clock)
  std::size_t warnings_dropped = 0;
};

//! @cond DAYDREAM_INTERNAL

/// A slice of a CPU thread's time, attributed to the innermost event running then.
struct slice {
  time_ns start = 0, end = 0;
  std::uint32_t ev = no_index;      ///< innermost cpu event; no_index for a marker
  std::uint8_t marker = 0;          ///< 0 none, 1 anchor / origin, 2 join, 3 memory
  bool cut_before = false;          ///< starts at a cut: never merged with the slice before
  bool no_merge = false;            ///< a join target
  bool anchored = false;            ///< first slice of a worker session (gap before it is 0)
  std::int32_t iteration = -1;
  phase ph = phase::other;
  name_id layer = no_name;
  time_ns wait_until = std::numeric_limits<time_ns>::min(); ///< latest trace end of what it waits for
  task_id task = no_task;
};

enum : std::uint8_t { mk_none = 0, mk_anchor = 1, mk_join = 2, mk_memory = 3 };
enum : std::uint8_t { cut_anchor, cut_join, cut_memory, cut_launch };

struct cut {
  time_ns t;
  std::uint8_t type;
  std::uint32_t ev = no_index; ///< cut_launch: the call that gets a zero-length launch piece
  friend bool operator<(const cut& a, const cut& b) { return a.t != b.t ? a.t < b.t : a.type < b.type; }
};

/// Per CPU event attributes, inherited top-down along the nesting.
struct ev_attr {
  std::uint32_t parent = no_index;
  std::uint32_t op = no_index;      ///< innermost operator (cpu_op), itself included
  std::uint32_t top_op = no_index;  ///< outermost operator
  std::uint32_t module = no_index;  ///< innermost `nn.Module:` python_function
  std::uint32_t bwd = no_index;     ///< outermost backward root (evaluate_function / *Backward*)
  std::uint32_t accgrad = no_index; ///< innermost torch::autograd::AccumulateGrad
  time_ns end = 0;                  ///< end after clamping into the parent
  std::uint8_t mark = 0;            ///< phase marker (1 + phase), innermost wins
  bool sliced = false;              ///< covered by at least one slice
};

struct thread_rec {
  pidtid key;
  std::vector<std::uint32_t> events; ///< cpu events, sorted in nesting order
  std::vector<slice> slices;
  std::vector<cut> cuts;
  bool ignored = false;              ///< python frames only
  bool is_main = false;
  bool backward = false;             ///< runs autograd backward
  std::uint32_t main = no_index;     ///< the main thread of its process
  resource_id res = no_resource;
};

struct stream_rec {
  std::int32_t device = 0, stream = 0;
  std::vector<std::uint32_t> ops;     ///< gpu events in start order
  std::vector<time_ns> launch_max;    ///< running max of the launch times along `ops`
  resource_id res = no_resource;
};

struct edge_req {
  task_id from, to;
  dep_kind kind;
};

class kineto_builder {
public:
  kineto_builder(decoded_trace& d, const build_settings& s, build_output& out)
      : d_(d), s_(s), out_(out), g_(out.g) {}

  void run() {
    index_gpu();
    group_threads();
    link_gpu_ops();
    find_iterations();
    for (std::uint32_t t = 0; t < threads_.size(); ++t) flatten(t);
    resolve_backward_layers();
    choose_main_threads();
    find_blocking_copies();
    plan_anchors();
    apply_phase(cut_anchor);
    plan_joins();
    plan_memory_and_splits();
    for (auto& th : threads_) apply_cuts(th);
    classify_slices();
    mark_join_targets();
    if (s_.merge_slices)
      for (auto& th : threads_) merge(th);
    index_pieces();
    make_tasks();
    add_edges();
    account();
  }

private:
  // ------------------------------------------------------------------ helpers
  void warn(std::string w) {
    if (out_.warnings.size() < s_.max_warnings) out_.warnings.push_back(std::move(w));
    else ++out_.warnings_dropped;
  }
  bool is_runtime(std::uint32_t e) const {
    return d_.cpu[e].cat == ecat::runtime || d_.cpu[e].cat == ecat::driver;
  }
  std::int32_t iteration_at(time_ns t) const {
    auto it = std::upper_bound(iter_begin_.begin(), iter_begin_.end(), t);
    if (it == iter_begin_.begin()) return -1;
    auto k = static_cast<std::size_t>(it - iter_begin_.begin()) - 1;
    return t < out_.iterations[k].end ? out_.iterations[k].number : -1;
  }

  // ------------------------------------------------------------------ GPU side
  void index_gpu() {
    std::unordered_map<std::int64_t, std::uint32_t> by_key;
    for (std::uint32_t i = 0; i < d_.gpu.size(); ++i) {
      auto& e = d_.gpu[i];
      std::int64_t key = (std::int64_t(e.device) << 32) ^ std::uint32_t(e.stream);
      auto [it, fresh] = by_key.try_emplace(key, static_cast<std::uint32_t>(streams_.size()));
      if (fresh) streams_.push_back({e.device, e.stream, {}, {}, no_resource});
      streams_[it->second].ops.push_back(i);
    }
    op_stream_.assign(d_.gpu.size(), 0);
    for (std::uint32_t s = 0; s < streams_.size(); ++s) {
      auto& ops = streams_[s].ops;
      std::stable_sort(ops.begin(), ops.end(), [&](auto a, auto b) { return d_.gpu[a].ts < d_.gpu[b].ts; });
      for (auto o : ops) op_stream_[o] = s;
    }
  }

  void group_threads() {
    threads_.resize(d_.threads.size());
    for (std::uint32_t t = 0; t < d_.threads.size(); ++t) threads_[t].key = d_.threads[t];
    for (std::uint32_t i = 0; i < d_.cpu.size(); ++i) threads_[d_.cpu[i].thread].events.push_back(i);
    attr_.resize(d_.cpu.size());
    for (auto& th : threads_) {
      bool only_python = !th.events.empty();
      for (auto e : th.events)
        if (d_.cpu[e].cat != ecat::python_function) { only_python = false; break; }
      th.ignored = only_python;
    }
    std::vector<std::pair<std::int64_t, std::uint32_t>> kv;
    for (std::uint32_t i = 0; i < d_.cpu.size(); ++i)
      if (is_runtime(i) && d_.cpu[i].correlation >= 0) kv.push_back({d_.cpu[i].correlation, i});
    runtime_by_corr_ = id_index(kv);
    sem_.assign(d_.cpu.size(), call_semantics::plain);
    for (std::uint32_t i = 0; i < d_.cpu.size(); ++i)
      if (is_runtime(i)) sem_[i] = classify_call(d_.cpu[i].name);
    runtime_index_.resize(threads_.size());
    runtime_indexed_.assign(threads_.size(), 0);
    top_ordinal_.assign(d_.cpu.size(), 0);
    top_layer_.assign(d_.cpu.size(), no_layer);
    bwd_forward_.assign(d_.cpu.size(), no_index);
    tensor_bytes_.assign(d_.cpu.size(), no_bytes);
    blocking_copy_.assign(d_.cpu.size(), no_index);
  }
  std::uint32_t runtime_of_corr(std::int64_t c) const {
    return c < 0 ? no_index : runtime_by_corr_.find(c);
  }

  /// Launch links: correlation ids, then launch flows for GPU ops still unlinked.
  void link_gpu_ops() {
    launch_of_.assign(d_.gpu.size(), no_index);
    std::vector<std::pair<std::int64_t, std::uint32_t>> kv;
    for (std::uint32_t i = 0; i < d_.gpu.size(); ++i) {
      auto c = d_.gpu[i].correlation;
      if (c < 0) continue;
      kv.push_back({c, i});
      auto r = runtime_of_corr(c);
      if (r != no_index && !threads_[d_.cpu[r].thread].ignored) launch_of_[i] = r;
    }
    const id_index op_by_corr(kv);
    // Launch flows: pair s and f by id (sorting the flows, no hashing).
    std::vector<std::uint32_t> fl;
    for (std::uint32_t i = 0; i < d_.flows.size(); ++i)
      if (d_.flows[i].cat == ecat::launch_flow) fl.push_back(i);
    std::sort(fl.begin(), fl.end(), [&](auto a, auto b) {
      auto& x = d_.flows[a];
      auto& y = d_.flows[b];
      return x.id != y.id ? x.id < y.id : x.ph < y.ph; // 'f' before 's'
    });
    flow_state_.assign(d_.flows.size(), 0);
    std::unordered_map<std::uint64_t, std::uint32_t> gpu_at; // built only if needed
    for (std::size_t k = 0; k + 1 < fl.size(); ++k) {
      auto fi = fl[k], si = fl[k + 1];
      auto& ff = d_.flows[fi];
      auto& fs = d_.flows[si];
      if (ff.id != fs.id || ff.ph != 'f' || fs.ph != 's') continue;
      ++k;
      const auto dev = static_cast<std::int32_t>(ff.where.pid), st = static_cast<std::int32_t>(ff.stream);
      std::uint32_t op = op_by_corr.find(ff.id);
      if (op == no_index || d_.gpu[op].device != dev || d_.gpu[op].stream != st || d_.gpu[op].ts != ff.ts) {
        // the flow does not follow the correlation ids: find the op by place and time
        if (gpu_at.empty())
          for (std::uint32_t i = 0; i < d_.gpu.size(); ++i)
            gpu_at.emplace(gpu_key(d_.gpu[i].device, d_.gpu[i].stream, d_.gpu[i].ts), i);
        auto git = gpu_at.find(gpu_key(dev, st, ff.ts));
        op = git == gpu_at.end() ? no_index : git->second;
      }
      // the flow's id is the correlation id: check that call first, search by time if not
      std::uint32_t rt = runtime_of_corr(fs.id);
      if (rt == no_index || d_.cpu[rt].ts != fs.ts || !(threads_[d_.cpu[rt].thread].key == fs.where))
        rt = runtime_at(fs.where, fs.ts);
      if (op == no_index || rt == no_index) { flow_state_[si] = flow_state_[fi] = 2; continue; }
      if (launch_of_[op] == no_index && !threads_[d_.cpu[rt].thread].ignored) launch_of_[op] = rt;
      if (launch_of_[op] == rt) flow_pair_.push_back({si, fi, op});
      else flow_state_[si] = flow_state_[fi] = 3;
    }
    // Runtime call -> its GPU ops (CSR).
    ops_begin_.assign(d_.cpu.size() + 1, 0);
    for (auto r : launch_of_) if (r != no_index) ++ops_begin_[r + 1];
    for (std::size_t i = 1; i < ops_begin_.size(); ++i) ops_begin_[i] += ops_begin_[i - 1];
    ops_list_.assign(ops_begin_.back(), 0);
    auto fill = ops_begin_;
    for (std::uint32_t i = 0; i < d_.gpu.size(); ++i)
      if (launch_of_[i] != no_index) ops_list_[fill[launch_of_[i]]++] = i;
    // Launch times along each stream.
    for (auto& s : streams_) {
      s.launch_max.resize(s.ops.size());
      time_ns m = std::numeric_limits<time_ns>::min();
      for (std::size_t k = 0; k < s.ops.size(); ++k) {
        m = std::max(m, launch_time(s.ops[k]));
        s.launch_max[k] = m;
      }
    }
  }
  static std::uint64_t gpu_key(std::int32_t dev, std::int32_t st, time_ns ts) {
    return (std::uint64_t(std::uint32_t(dev)) * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t(std::uint32_t(st)) << 40) ^ std::uint64_t(ts);
  }
  time_ns launch_time(std::uint32_t op) const {
    return launch_of_[op] != no_index ? d_.cpu[launch_of_[op]].ts : d_.gpu[op].ts;
  }
  std::uint32_t thread_index(pidtid k) const {
    for (std::uint32_t t = 0; t < threads_.size(); ++t)
      if (threads_[t].key == k) return t;
    return no_index;
  }
  /// The runtime event on thread `k` starting at `ts` (a launch flow's start).
  std::uint32_t runtime_at(pidtid k, time_ns ts) {
    auto t = cached_thread(k);
    if (t == no_index) return no_index;
    auto& idx = runtime_index(t);
    auto it = std::lower_bound(idx.begin(), idx.end(), ts, [&](std::uint32_t e, time_ns v) { return d_.cpu[e].ts < v; });
    if (it != idx.end() && d_.cpu[*it].ts == ts) return *it;
    return no_index;
  }
  std::uint32_t cached_thread(pidtid k) {
    auto it = thread_cache_.find(k);
    if (it != thread_cache_.end()) return it->second;
    auto t = thread_index(k);
    thread_cache_.emplace(k, t);
    return t;
  }
  std::vector<std::uint32_t>& runtime_index(std::uint32_t t) {
    auto& v = runtime_index_[t];
    if (runtime_indexed_[t]) return v;
    runtime_indexed_[t] = 1;
    for (auto e : threads_[t].events) if (is_runtime(e)) v.push_back(e);
    std::stable_sort(v.begin(), v.end(), [&](auto a, auto b) { return d_.cpu[a].ts < d_.cpu[b].ts; });
    return v;
  }

  // ------------------------------------------------------------------ iterations
  void find_iterations() {
    struct mark { time_ns ts, end; std::int32_t n; std::uint32_t ev; };
    std::vector<mark> steps;
    for (std::uint32_t i = 0; i < d_.cpu.size(); ++i) {
      auto& e = d_.cpu[i];
      if (e.cat != ecat::user_annotation && e.cat != ecat::cpu_op) continue;
      std::int32_t n;
      if (profiler_step_number(e.name, n)) steps.push_back({e.ts, e.ts + e.dur, n, i});
    }
    if (!steps.empty()) {
      std::sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
      for (auto& m : steps) {
        if (!out_.iterations.empty() && out_.iterations.back().number == m.n) continue; // duplicate marker
        if (!out_.iterations.empty() && m.ts < out_.iterations.back().end) {
          warn("ProfilerStep#" + std::to_string(m.n) + " overlaps the previous step; ignored as a marker");
          continue;
        }
        out_.iterations.push_back({m.n, m.ts, m.end, std::string(d_.cpu[m.ev].name)});
        marker_events_.push_back(m.ev);
      }
    } else {
      // Optimizer steps end iterations: iteration k starts with the first event of the
      // optimizer's thread after optimizer step k-1 ended (iteration 1: its first
      // event) and lasts until iteration k+1 starts; the last one until its optimizer
      // step ends.
      std::vector<mark> opt;
      for (std::uint32_t i = 0; i < d_.cpu.size(); ++i) {
        auto& e = d_.cpu[i];
        if ((e.cat == ecat::user_annotation || e.cat == ecat::cpu_op) && starts_with(e.name, "Optimizer.step"))
          opt.push_back({e.ts, e.ts + e.dur, 0, i});
      }
      if (opt.empty()) return;
      std::sort(opt.begin(), opt.end(), [](auto& a, auto& b) { return a.ts < b.ts; });
      const auto thread = d_.cpu[opt.front().ev].thread;
      std::vector<time_ns> starts;
      for (auto& e : d_.cpu) if (e.thread == thread) starts.push_back(e.ts);
      std::sort(starts.begin(), starts.end());
      auto first_at_or_after = [&](time_ns t) {
        auto it = std::lower_bound(starts.begin(), starts.end(), t);
        return it == starts.end() ? t : *it;
      };
      time_ns prev_end = starts.front();
      std::int32_t n = 0;
      for (auto& m : opt) {
        if (m.end <= prev_end && n > 0) continue; // nested duplicate
        ++n;
        const time_ns begin = n == 1 ? prev_end : first_at_or_after(prev_end);
        if (n > 1) out_.iterations.back().end = begin;
        out_.iterations.push_back({n, begin, m.end, std::string(d_.cpu[m.ev].name)});
        marker_events_.push_back(m.ev);
        prev_end = m.end;
      }
    }
    for (auto& it : out_.iterations) iter_begin_.push_back(it.begin);
  }

  // ------------------------------------------------------------------ CPU flattening
  /// Whether a zero-length event must still appear (it launches or waits for GPU work).
  bool needed_zero(std::uint32_t e) const {
    if (!is_runtime(e)) return false;
    if (ops_begin_[e + 1] > ops_begin_[e]) return true;
    auto sem = sem_[e];
    return sem != call_semantics::plain && sem != call_semantics::launch && sem != call_semantics::async_copy;
  }

  static int cat_rank(ecat c) {
    switch (c) {
    case ecat::python_function: return 0;
    case ecat::user_annotation: return 1;
    case ecat::cpu_op: return 2;
    default: return 3;
    }
  }

  void flatten(std::uint32_t ti) {
    auto& th = threads_[ti];
    if (th.ignored) return;
    auto& ev = th.events;
    // Nesting order: by start, longer first, then outer categories first, then file
    // order. Sorted on compact keys rather than through the event table.
    struct key { time_ns ts, neg_dur; std::uint32_t rank_and_index[2]; };
    std::vector<key> keys(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) {
      auto& x = d_.cpu[ev[i]];
      keys[i] = {x.ts, -x.dur, {static_cast<std::uint32_t>(cat_rank(x.cat)), ev[i]}};
    }
    std::sort(keys.begin(), keys.end(), [](const key& a, const key& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.neg_dur != b.neg_dur) return a.neg_dur < b.neg_dur;
      if (a.rank_and_index[0] != b.rank_and_index[0]) return a.rank_and_index[0] < b.rank_and_index[0];
      return a.rank_and_index[1] < b.rank_and_index[1];
    });
    for (std::size_t i = 0; i < ev.size(); ++i) ev[i] = keys[i].rank_and_index[1];
    struct open { std::uint32_t ev; time_ns end; };
    std::vector<open> stack;
    auto& sl = th.slices;
    sl.reserve(ev.size() * 2);
    time_ns cursor = std::numeric_limits<time_ns>::min();
    auto emit = [&](time_ns a, time_ns b, std::uint32_t e) {
      slice s;
      s.start = a; s.end = b; s.ev = e;
      sl.push_back(s);
      attr_[e].sliced = true;
    };
    for (auto e : ev) {
      auto& x = d_.cpu[e];
      while (!stack.empty() && stack.back().end <= x.ts) {
        auto top = stack.back();
        if (cursor < top.end) emit(cursor, top.end, top.ev);
        cursor = top.end;
        stack.pop_back();
      }
      if (!stack.empty() && cursor < x.ts) emit(cursor, x.ts, stack.back().ev);
      cursor = x.ts;
      auto& a = attr_[e];
      time_ns end = x.ts + x.dur;
      if (!stack.empty()) {
        a.parent = stack.back().ev;
        if (end > stack.back().end) { end = stack.back().end; ++clamped_; }
      }
      a.end = end;
      inherit(e);
      if (end == x.ts) {
        if (needed_zero(e)) emit(x.ts, x.ts, e);
        continue;
      }
      stack.push_back({e, end});
    }
    while (!stack.empty()) {
      auto top = stack.back();
      if (cursor < top.end) emit(cursor, top.end, top.ev);
      cursor = std::max(cursor, top.end);
      stack.pop_back();
    }
    for (auto e : ev)
      if (starts_with(d_.cpu[e].name, "autograd::engine::evaluate_function")) { th.backward = true; break; }
  }

  void inherit(std::uint32_t e) {
    auto& a = attr_[e];
    auto& x = d_.cpu[e];
    const bool is_op = x.cat == ecat::cpu_op;
    if (a.parent != no_index) {
      auto& p = attr_[a.parent];
      a.op = p.op; a.top_op = p.top_op; a.module = p.module; a.bwd = p.bwd; a.mark = p.mark;
      a.accgrad = p.accgrad;
    }
    if (is_op && x.name == "torch::autograd::AccumulateGrad") a.accgrad = e;
    if (is_op) {
      a.op = e;
      if (a.top_op == no_index) {
        a.top_op = e;
        // Layers named after top-level operators: name#k, k-th such op of the iteration.
        top_ordinal_[e] = top_count_[top_key{x.thread, iteration_at(x.ts), x.name}]++;
      }
    }
    if (x.cat == ecat::python_function && starts_with(x.name, "nn.Module:")) a.module = e;
    if (a.bwd == no_index && is_backward_root(x.name, is_op)) a.bwd = e;
    auto m = phase_mark(x.name, is_op, x.cat == ecat::python_function, x.cat == ecat::user_annotation);
    if (m) a.mark = m;
  }

  /// The innermost event of thread `t` containing `ts` (start <= ts < end, or a
  /// zero-length one at ts), searching the nesting from the last event starting <= ts.
  std::uint32_t event_at(std::uint32_t t, time_ns ts, bool starting_exactly) const {
    auto& ev = threads_[t].events;
    auto it = std::upper_bound(ev.begin(), ev.end(), ts, [&](time_ns v, std::uint32_t e) { return v < d_.cpu[e].ts; });
    if (it == ev.begin()) return no_index;
    // Deepest event starting exactly at ts (the last in nesting order with that start).
    std::uint32_t e = *(it - 1);
    if (starting_exactly) return d_.cpu[e].ts == ts ? e : no_index;
    for (std::uint32_t c = e; c != no_index; c = attr_[c].parent)
      if (ts < attr_[c].end || (attr_[c].end == d_.cpu[c].ts && ts == d_.cpu[c].ts)) return c;
    return no_index;
  }

  // ------------------------------------------------------------------ layers
  std::string_view module_layer(std::uint32_t m) const {
    std::string_view n = d_.cpu[m].name;
    n.remove_prefix(10); // "nn.Module:"
    while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
    return n;
  }
  name_id forward_layer(std::uint32_t e) {
    auto& a = attr_[e];
    if (a.module != no_index) return g_.intern(module_layer(a.module));
    if (a.top_op != no_index) {
      if (top_layer_[a.top_op] != no_layer) return top_layer_[a.top_op];
      auto& x = d_.cpu[a.top_op];
      std::string n(x.name);
      n += '#';
      n += std::to_string(top_ordinal_[a.top_op]);
      return top_layer_[a.top_op] = g_.intern(n);
    }
    return no_name;
  }

  void resolve_backward_layers() {
    // fwdbwd flows: start on the forward op, finish inside the backward one.
    std::unordered_map<std::int64_t, std::uint32_t> s_of, f_of;
    for (std::uint32_t i = 0; i < d_.flows.size(); ++i) {
      auto& f = d_.flows[i];
      if (f.cat != ecat::fwdbwd_flow) continue;
      (f.ph == 's' ? s_of : f_of).emplace(f.id, i);
    }
    fwd_state_.assign(d_.flows.size(), 0);
    for (auto& [id, si] : s_of) {
      auto fit = f_of.find(id);
      if (fit == f_of.end()) continue;
      auto& fs = d_.flows[si];
      auto& ff = d_.flows[fit->second];
      auto ts = cached_thread(fs.where), tf = cached_thread(ff.where);
      std::uint32_t fe = ts == no_index || threads_[ts].ignored ? no_index : event_at(ts, fs.ts, true);
      if (fe == no_index && ts != no_index && !threads_[ts].ignored) fe = event_at(ts, fs.ts, false);
      std::uint32_t be = tf == no_index || threads_[tf].ignored ? no_index : event_at(tf, ff.ts, false);
      if (fe == no_index || be == no_index) { fwd_state_[si] = fwd_state_[fit->second] = 2; continue; }
      auto root = attr_[be].bwd != no_index ? attr_[be].bwd : be;
      if (bwd_forward_[root] == no_index) bwd_forward_[root] = fe;
      fwd_state_[si] = fwd_state_[fit->second] = 1;
    }
    // Sequence numbers: the latest forward op with that number before the backward one.
    std::unordered_map<std::int64_t, std::vector<std::uint32_t>> fwd_seq;
    for (std::uint32_t i = 0; i < d_.cpu.size(); ++i) {
      auto& x = d_.cpu[i];
      if (x.seq < 0 || x.cat != ecat::cpu_op || attr_[i].bwd != no_index || threads_[x.thread].ignored) continue;
      fwd_seq[x.seq].push_back(i);
    }
    for (auto& [k, v] : fwd_seq)
      std::sort(v.begin(), v.end(), [&](auto a, auto b) { return d_.cpu[a].ts < d_.cpu[b].ts; });
    for (std::uint32_t i = 0; i < d_.cpu.size(); ++i) {
      if (attr_[i].bwd != i || bwd_forward_[i] != no_index) continue;
      // the root itself, or its first child, carries the sequence number
      std::int64_t seq = d_.cpu[i].seq;
      if (seq < 0) continue;
      auto it = fwd_seq.find(seq);
      if (it == fwd_seq.end()) continue;
      auto& v = it->second;
      auto p = std::upper_bound(v.begin(), v.end(), d_.cpu[i].ts, [&](time_ns t, std::uint32_t e) { return t < d_.cpu[e].ts; });
      if (p == v.begin()) continue;
      bwd_forward_[i] = *(p - 1);
    }
  }

  /// The layer of a CPU event: the forward layer of its backward root, its module, or
  /// its top-level operator. `unmapped` is set for backward work without a forward op.
  name_id layer_of(std::uint32_t e, bool& unmapped) {
    unmapped = false;
    auto& a = attr_[e];
    if (a.bwd != no_index) {
      if (bwd_forward_[a.bwd] != no_index) return forward_layer(bwd_forward_[a.bwd]);
      unmapped = true;
      return no_name;
    }
    return forward_layer(e);
  }

  // ------------------------------------------------------------------ threads
  void choose_main_threads() {
    std::map<std::int64_t, std::vector<std::uint32_t>> by_pid;
    for (std::uint32_t t = 0; t < threads_.size(); ++t)
      if (!threads_[t].ignored && !threads_[t].slices.empty()) by_pid[threads_[t].key.pid].push_back(t);
    for (auto& [pid, ts] : by_pid) {
      std::uint32_t best = no_index;
      int best_rank = -1;
      time_ns best_busy = -1;
      for (auto t : ts) {
        int rank = 0;
        for (auto e : threads_[t].events) {
          auto n = d_.cpu[e].name;
          if (starts_with(n, "ProfilerStep#")) { rank = std::max(rank, 3); break; }
          if (starts_with(n, "Optimizer.step")) rank = std::max(rank, 2);
        }
        if (rank == 0 && threads_[t].key.tid == pid) rank = 1;
        time_ns busy = 0;
        for (auto& s : threads_[t].slices) busy += s.end - s.start;
        if (rank > best_rank || (rank == best_rank && busy > best_busy)) { best = t; best_rank = rank; best_busy = busy; }
      }
      for (auto t : ts) threads_[t].main = best;
      threads_[best].is_main = true;
      threads_[best].backward = false; // the main thread's own work is not all backward
      if (first_main_ == no_index || best_rank > first_main_rank_) { first_main_ = best; first_main_rank_ = best_rank; }
    }
    // The earliest time anything happens: the replay's time 0.
    t0_ = std::numeric_limits<time_ns>::max();
    for (auto& th : threads_) if (!th.slices.empty()) t0_ = std::min(t0_, th.slices.front().start);
    for (auto& g : d_.gpu) t0_ = std::min(t0_, g.ts);
    time_ns last = std::numeric_limits<time_ns>::min();
    for (auto& th : threads_) if (!th.slices.empty()) last = std::max(last, th.slices.back().end);
    for (auto& g : d_.gpu) last = std::max(last, g.ts + g.dur);
    if (last != std::numeric_limits<time_ns>::min()) { out_.begin = t0_; out_.end = last; }
  }

  /// Whether main thread `m` has a slice boundary strictly inside (a, b).
  bool boundary_inside(const thread_rec& m, time_ns a, time_ns b) const {
    auto& sl = m.slices;
    auto it = std::upper_bound(sl.begin(), sl.end(), a, [](time_ns v, const slice& s) { return v < s.start; });
    if (it != sl.end() && it->start < b) return true;
    // an end inside (a, b): the slice containing a ends before b
    if (it != sl.begin()) {
      auto& p = *(it - 1);
      if (p.end > a && p.end < b) return true;
    }
    return false;
  }

  struct session { std::uint32_t thread; std::size_t first, last; };

  void plan_anchors() {
    for (std::uint32_t t = 0; t < threads_.size(); ++t) {
      auto& th = threads_[t];
      if (th.ignored || th.slices.empty() || th.main == no_index) continue;
      if (th.is_main) { th.cuts.push_back({t0_, cut_anchor}); continue; } // origin
      auto& m = threads_[th.main];
      std::size_t first = 0;
      for (std::size_t k = 1; k <= th.slices.size(); ++k) {
        bool split = k == th.slices.size();
        if (!split) {
          time_ns a = th.slices[k - 1].end, b = th.slices[k].start;
          split = b - a >= s_.session_gap && boundary_inside(m, a, b);
        }
        if (!split) continue;
        sessions_.push_back({t, first, k - 1});
        const time_ns at = th.slices[first].start;
        const bool soft = inside_runtime(m, at);
        if (!soft) m.cuts.push_back({at, cut_anchor});
        anchor_times_.push_back({t, at, soft});
        first = k;
      }
    }
    // The first op of a stream has no predecessor to keep a gap after: when nobody we
    // saw launched it, or it started well after its launch returned (it waited for
    // something the trace does not show), anchor it to the main thread at its start.
    if (first_main_ != no_index)
      for (auto& s : streams_)
        if (!s.ops.empty() && head_needs_anchor(s.ops.front()) &&
            !inside_runtime(threads_[first_main_], d_.gpu[s.ops.front()].ts))
          threads_[first_main_].cuts.push_back({d_.gpu[s.ops.front()].ts, cut_anchor});
  }

  /// Whether `t` falls strictly inside a runtime call on thread `m`. Anchors do not cut
  /// runtime calls (a sync cut in two would wait for a fixed time in its first piece):
  /// they hang on the slice before the call instead.
  bool inside_runtime(const thread_rec& m, time_ns t) const {
    auto k = slice_containing(m, t);
    return k != no_pos && m.slices[k].start < t && m.slices[k].ev != no_index && is_runtime(m.slices[k].ev);
  }

  bool head_needs_anchor(std::uint32_t o) const {
    auto r = launch_of_[o];
    if (r == no_index) return true;
    const time_ns launched = blocking_copy_[r] != no_index ? d_.cpu[r].ts : attr_[r].end;
    return d_.gpu[o].ts - launched > s_.launch_latency;
  }

  void apply_phase(std::uint8_t type) {
    for (auto& th : threads_) {
      std::vector<cut> now, later;
      for (auto& c : th.cuts) (c.type == type ? now : later).push_back(c);
      if (now.empty()) continue;
      th.cuts = std::move(now);
      apply_cuts(th);
      th.cuts = std::move(later);
    }
  }

  /// Joins: a main thread blocked while a worker session ran (backward) resumes when it ends.
  void plan_joins() {
    for (auto& ss : sessions_) {
      auto& w = threads_[ss.thread];
      auto& m = threads_[w.main];
      auto& L = w.slices[ss.last];
      const time_ns B = L.end, first = w.slices[ss.first].start;
      auto& sl = m.slices;
      // the main slice containing B (start <= B < end, non-empty)
      auto it = std::upper_bound(sl.begin(), sl.end(), B, [](time_ns v, const slice& s) { return v < s.start; });
      const slice* cont = nullptr;
      if (it != sl.begin() && (it - 1)->start < B && B < (it - 1)->end) cont = &*(it - 1);
      if (cont) {
        if (cont->start > L.start) continue; // main did something while the last slice ran
        double cover = double(B - std::max(first, cont->start)) / double(cont->end - cont->start);
        if (cover < s_.join_coverage) continue;
        joins_.push_back({ss.thread, B, false});
      } else {
        // idle at B: previous main slice ends <= B, next starts >= B
        time_ns prev_end = it == sl.begin() ? std::numeric_limits<time_ns>::min() : (it - 1)->end;
        time_ns next_start = it == sl.end() ? std::numeric_limits<time_ns>::max() : it->start;
        if (it == sl.end() || prev_end > L.start) continue;
        const time_ns from = std::max(prev_end, first);
        if (next_start <= from || double(B - from) / double(next_start - from) < s_.join_coverage) continue;
        m.cuts.push_back({B, cut_join});
        joins_.push_back({ss.thread, B, true});
      }
    }
  }

  void plan_memory_and_splits() {
    for (std::uint32_t i = 0; i < d_.memory.size(); ++i) {
      auto& m = d_.memory[i];
      if (!is_device_memory(m)) continue;
      auto t = m.thread;
      if (t >= threads_.size() || threads_[t].ignored || threads_[t].slices.empty()) {
        // a thread without CPU events: count it on its process's main thread
        t = no_index;
        for (std::uint32_t k = 0; k < threads_.size(); ++k)
          if (threads_[k].is_main && threads_[k].key.pid == d_.threads[m.thread].pid) { t = k; break; }
        if (t == no_index) t = first_main_;
      }
      mem_thread_.push_back(t);
      if (t == no_index) continue;
      threads_[t].cuts.push_back({m.ts, cut_memory});
    }
  }

  /// Blocking copies: the call gets a zero-length piece at its start that enqueues the
  /// copy, and the rest of the call waits for the copy to end. (The copy may start much
  /// later, when its stream drains: that waiting is the dependency, not CPU time.)
  void find_blocking_copies() {
    for (std::uint32_t e = 0; e < d_.cpu.size(); ++e) {
      if (!is_runtime(e) || threads_[d_.cpu[e].thread].ignored) continue;
      auto copy = blocking_copy_of(e);
      if (copy == no_index) continue;
      auto& x = d_.cpu[e];
      if (attr_[e].end > x.ts) threads_[x.thread].cuts.push_back({x.ts, cut_launch, e});
      blocking_copy_[e] = copy;
    }
  }

  bool is_device_memory(const memory_event& m) const {
    return m.device_type == 1 || m.device_type == 6 || (m.device_type < 0 && m.device_id >= 0);
  }

  /// The copy a runtime call waits for, if it is a blocking copy (by API or by timing).
  std::uint32_t blocking_copy_of(std::uint32_t e) const {
    auto sem = sem_[e];
    if (sem != call_semantics::blocking_copy && sem != call_semantics::async_copy) return no_index;
    const time_ns s = d_.cpu[e].ts, end = attr_[e].end;
    for (auto k = ops_begin_[e]; k < ops_begin_[e + 1]; ++k) {
      auto op = ops_list_[k];
      auto& g = d_.gpu[op];
      if (g.cat == ecat::kernel) continue;
      const time_ns ce = g.ts + g.dur;
      if (ce > end + s_.sync_tolerance) continue; // returned before its copy ended: not blocking
      if (sem == call_semantics::blocking_copy) return op;
      // an async copy that behaves synchronously (pageable memory): long, and returns
      // right after its copy ends
      if (end - s >= s_.implicit_sync_min && ce > s && end - ce <= s_.implicit_sync_window) return op;
    }
    return no_index;
  }

  /// Applies the cuts of a thread (sorted) to its slices.
  void apply_cuts(thread_rec& th) {
    if (th.cuts.empty()) return;
    std::sort(th.cuts.begin(), th.cuts.end());
    std::vector<slice> out;
    out.reserve(th.slices.size() + th.cuts.size());
    std::size_t c = 0;
    auto marker = [&](time_ns t, std::uint8_t kind) {
      slice m;
      m.start = m.end = t;
      m.marker = kind;
      m.cut_before = true;
      out.push_back(m);
    };
    auto idle = [&](const cut& k) {
      switch (k.type) {
      case cut_anchor:
        if (out.empty() || out.back().end != k.t) marker(k.t, mk_anchor);
        break;
      case cut_join:
        if (out.empty() || !(out.back().marker == mk_join && out.back().start == k.t)) marker(k.t, mk_join);
        break;
      case cut_memory:
        if (out.empty() || out.back().start != k.t || out.back().end != k.t) marker(k.t, mk_memory);
        break;
      default: break;
      }
    };
    for (auto& s0 : th.slices) {
      while (c < th.cuts.size() && th.cuts[c].t < s0.start) idle(th.cuts[c++]);
      slice s = s0;
      // cuts at this slice's start; a launch cut at a zero-length slice of another event
      // waits for the slice of its own event
      while (c < th.cuts.size() && th.cuts[c].t == s.start &&
             !(th.cuts[c].type == cut_launch && th.cuts[c].ev != s.ev && s.start == s.end)) {
        auto& k = th.cuts[c++];
        if (k.type == cut_anchor) { if (out.empty() || out.back().end != k.t) marker(k.t, mk_anchor); }
        else if (k.type == cut_join) marker(k.t, mk_join);
        else if (k.type == cut_memory) s.cut_before = true;
        else if (k.type == cut_launch && k.ev == s.ev) {
          slice z = s;
          z.end = z.start;
          out.push_back(z);
          s.cut_before = true;
        }
      }
      while (c < th.cuts.size() && th.cuts[c].t < s.end) {
        auto t = th.cuts[c++].t;
        if (t == s.start) continue;
        slice a = s;
        a.end = t;
        out.push_back(a);
        s.start = t;
        s.cut_before = true;
        s.anchored = false;
      }
      out.push_back(s);
    }
    while (c < th.cuts.size()) idle(th.cuts[c++]);
    th.slices = std::move(out);
    th.cuts.clear();
  }

  // ------------------------------------------------------------------ slice attributes
  void classify_slices() {
    for (std::uint32_t t = 0; t < threads_.size(); ++t) {
      auto& th = threads_[t];
      name_id last_bwd_layer = no_name;
      for (auto& s : th.slices) {
        s.iteration = iteration_at(s.start);
        if (s.ev == no_index) {
          s.ph = s.marker == mk_join && s.iteration >= 0 ? phase::backward : phase::other;
          continue;
        }
        auto& a = attr_[s.ev];
        bool unmapped = false;
        s.layer = layer_of(s.ev, unmapped);
        if (a.bwd != no_index && !unmapped) last_bwd_layer = s.layer;
        if (unmapped || (th.backward && a.bwd == no_index && s.layer == no_name)) s.layer = last_bwd_layer;
        if (s.iteration < 0) s.ph = phase::other;
        else if (a.mark) s.ph = static_cast<phase>(a.mark - 1);
        else if (th.backward) s.ph = phase::backward;
        else if (a.op != no_index) s.ph = phase::forward;
        else s.ph = phase::other;
      }
    }
  }

  void mark_join_targets() {
    for (auto& j : joins_) {
      if (j.marker) continue;
      auto& m = threads_[threads_[j.thread].main];
      auto k = slice_containing(m, j.B);
      if (k != no_pos) m.slices[k].no_merge = true;
    }
  }

  static constexpr std::size_t no_pos = std::numeric_limits<std::size_t>::max();
  /// The slice with start <= t < end (the last such when zero-length ones share t).
  static std::size_t slice_containing(const thread_rec& th, time_ns t) {
    auto& sl = th.slices;
    auto it = std::upper_bound(sl.begin(), sl.end(), t, [](time_ns v, const slice& s) { return v < s.start; });
    while (it != sl.begin()) {
      --it;
      if (it->start <= t && t < it->end) return static_cast<std::size_t>(it - sl.begin());
      if (it->end <= t) break;
    }
    return no_pos;
  }
  /// The last slice ending exactly at t.
  static std::size_t slice_ending_at(const thread_rec& th, time_ns t) {
    auto& sl = th.slices;
    auto it = std::upper_bound(sl.begin(), sl.end(), t, [](time_ns v, const slice& s) { return v < s.start; });
    while (it != sl.begin()) {
      --it;
      if (it->end == t) return static_cast<std::size_t>(it - sl.begin());
      if (it->end < t) break;
    }
    return no_pos;
  }
  /// The last slice ending at or before t.
  static std::size_t slice_ending_by(const thread_rec& th, time_ns t) {
    auto& sl = th.slices;
    auto it = std::upper_bound(sl.begin(), sl.end(), t, [](time_ns v, const slice& s) { return v < s.start; });
    while (it != sl.begin()) {
      --it;
      if (it->end <= t) return static_cast<std::size_t>(it - sl.begin());
    }
    return no_pos;
  }
  /// The first slice starting exactly at t (a marker at t comes first).
  static std::size_t slice_starting_at(const thread_rec& th, time_ns t, std::uint8_t marker = 255) {
    auto& sl = th.slices;
    auto it = std::lower_bound(sl.begin(), sl.end(), t, [](const slice& s, time_ns v) { return s.start < v; });
    for (; it != sl.end() && it->start == t; ++it)
      if (marker == 255 || it->marker == marker) return static_cast<std::size_t>(it - sl.begin());
    return no_pos;
  }

  bool plain(const slice& s) const {
    return s.ev != no_index && s.marker == mk_none && !is_runtime(s.ev) && !s.no_merge;
  }

  void merge(thread_rec& th) {
    auto& sl = th.slices;
    if (sl.size() < 2) return;
    std::size_t w = 0;
    for (std::size_t r = 1; r < sl.size(); ++r) {
      auto& p = sl[w];
      auto& s = sl[r];
      if (plain(p) && plain(s) && !s.cut_before && p.end == s.start && attr_[p.ev].op == attr_[s.ev].op &&
          p.layer == s.layer && p.ph == s.ph && p.iteration == s.iteration) {
        p.end = s.end;
        continue;
      }
      sl[++w] = s;
    }
    sl.resize(w + 1);
  }

  // ------------------------------------------------------------------ tasks
  std::uint64_t tensor_bytes_of(std::uint32_t e) {
    if (tensor_bytes_[e] != no_bytes) return tensor_bytes_[e];
    std::uint64_t b = 0;
    // AccumulateGrad: the gradient it accumulates.
    if (auto c = attr_[e].accgrad; c != no_index && d_.cpu[c].meta != no_index) {
      auto& m = d_.metas[d_.cpu[c].meta];
      b = input_bytes(m.input_dims, m.input_types);
    }
    if (!b) {
      auto op = attr_[e].op;
      if (op != no_index && d_.cpu[op].meta != no_index) {
        auto& m = d_.metas[d_.cpu[op].meta];
        b = input_bytes(m.input_dims, m.input_types);
      }
    }
    return tensor_bytes_[e] = b;
  }

  /// First and last slice of every runtime call (they are never merged, only cut).
  void index_pieces() {
    piece_first_.assign(d_.cpu.size(), no_index);
    piece_last_.assign(d_.cpu.size(), no_index);
    for (auto& th : threads_)
      for (std::size_t k = 0; k < th.slices.size(); ++k) {
        auto e = th.slices[k].ev;
        if (e == no_index || !is_runtime(e)) continue;
        if (piece_first_[e] == no_index) piece_first_[e] = static_cast<std::uint32_t>(k);
        piece_last_[e] = static_cast<std::uint32_t>(k);
      }
  }

  void make_tasks() {
    std::size_t n = d_.gpu.size();
    for (auto& th : threads_) n += th.slices.size();
    g_.reserve(n);
    // Resources: threads (main first within a process), then streams.
    for (std::uint32_t t = 0; t < threads_.size(); ++t) {
      auto& th = threads_[t];
      if (th.slices.empty()) continue;
      std::string name = "thread " + tid_text(th.key.tid) + " (pid " + tid_text(th.key.pid);
      name += th.is_main ? ", main)" : th.backward ? ", backward)" : ")";
      th.res = g_.add_resource({name, resource_kind::cpu_thread, sharing::exclusive, node(), -1, 0});
    }
    for (auto& s : streams_)
      s.res = g_.add_resource({"stream " + std::to_string(s.stream) + " (gpu " + std::to_string(s.device) + ")",
                               resource_kind::gpu_stream, sharing::exclusive, node(), s.device, 0});
    // CPU slices.
    for (std::uint32_t t = 0; t < threads_.size(); ++t) {
      auto& th = threads_[t];
      for (auto& s : th.slices) {
        cpu_task p;
        std::string_view name;
        if (s.ev == no_index) {
          name = s.marker == mk_join ? "[join]" : s.marker == mk_memory ? "[memory]" : "[anchor]";
        } else {
          auto& x = d_.cpu[s.ev];
          name = x.name;
          if (is_runtime(s.ev)) {
            p.call = call_kind(sem_[s.ev]);
            if (ops_begin_[s.ev + 1] > ops_begin_[s.ev] && p.call == cpu_call::runtime) {
              bool kernel = false;
              for (auto k = ops_begin_[s.ev]; k < ops_begin_[s.ev + 1]; ++k)
                kernel |= d_.gpu[ops_list_[k]].cat == ecat::kernel;
              p.call = kernel ? cpu_call::launch : cpu_call::memcpy;
            }
            p.correlation = x.correlation >= 0 ? static_cast<std::uint64_t>(x.correlation) : 0;
          }
          auto op = attr_[s.ev].op;
          if (op != no_index) p.op = names_(d_.cpu[op].name);
          p.tensor_bytes = tensor_bytes_of(s.ev);
        }
        // names and layers are interned through the cache, then set in place
        auto h = g_.add(p, task_fields{.name = {}, .duration = s.end - s.start, .resource = th.res,
                                       .gap = 0, .trace_start = s.start, .layer = {},
                                       .phase = s.ph, .iteration = s.iteration});
        g_.core().name[h.id] = names_(name);
        g_.core().layer[h.id] = s.layer;
        s.task = h.id;
      }
    }
    // GPU operations.
    gpu_task_.assign(d_.gpu.size(), no_task);
    for (auto& s : streams_) {
      for (auto o : s.ops) {
        auto& e = d_.gpu[o];
        name_id layer = no_name;
        phase ph = phase::other;
        std::int32_t it = iteration_at(e.ts);
        auto src = launch_slice(o);
        if (src) {
          layer = src->layer;
          ph = src->ph;
          it = src->iteration;
        } else {
          ++out_.unlinked;
        }
        task_fields f{.name = {}, .duration = e.dur, .resource = s.res, .gap = 0,
                      .trace_start = e.ts, .layer = {}, .phase = ph, .iteration = it};
        const std::uint64_t corr = e.correlation >= 0 ? static_cast<std::uint64_t>(e.correlation) : 0;
        task_id id;
        if (e.cat == ecat::kernel && is_comm_kernel(e.name)) {
          comm_task c;
          c.device = e.device; c.stream = e.stream; c.correlation = corr;
          size_collective(o, c);
          id = g_.add(c, f).id;
        } else if (e.cat == ecat::kernel) {
          gpu_kernel k;
          k.device = e.device; k.stream = e.stream; k.correlation = corr;
          id = g_.add(k, f).id;
        } else {
          memcpy_task m;
          m.direction = copy_direction(e.name, e.cat == ecat::memset);
          m.bytes = e.bytes; m.device = e.device; m.stream = e.stream; m.correlation = corr;
          id = g_.add(m, f).id;
        }
        g_.core().name[id] = names_(e.name);
        g_.core().layer[id] = layer;
        gpu_task_[o] = id;
      }
    }
    if (out_.unlinked)
      warn(std::to_string(out_.unlinked) + " GPU operations have no matching runtime call; they are kept in "
           "stream order and start no earlier than in the trace relative to their predecessor");
  }

  std::int32_t node() const { return d_.rank >= 0 ? d_.rank : 0; }
  static std::string tid_text(std::int64_t v) {
    if (v <= std::numeric_limits<std::int64_t>::min() / 4) return "s" + std::to_string(v - std::numeric_limits<std::int64_t>::min() / 2);
    return std::to_string(v);
  }

  /// The slice that launches GPU op `o`: the last piece of its runtime call, or the
  /// piece before the cut of a blocking copy.
  slice* launch_slice(std::uint32_t o) {
    auto r = launch_of_[o];
    if (r == no_index) return nullptr;
    auto& th = threads_[d_.cpu[r].thread];
    auto [first, last] = pieces_of(r);
    if (first == no_pos) return nullptr;
    if (blocking_copy_[r] != no_index && first != last) return &th.slices[first];
    return &th.slices[last];
  }

  /// The first and last slice whose innermost event is `e`.
  std::pair<std::size_t, std::size_t> pieces_of(std::uint32_t e) const {
    if (!piece_first_.empty()) {
      if (piece_first_[e] == no_index) return {no_pos, no_pos};
      return {piece_first_[e], piece_last_[e]};
    }
    auto& th = threads_[d_.cpu[e].thread];
    auto& sl = th.slices;
    const time_ns ts = d_.cpu[e].ts;
    auto it = std::lower_bound(sl.begin(), sl.end(), ts, [](const slice& s, time_ns v) { return s.start < v; });
    std::size_t first = no_pos, last = no_pos;
    for (; it != sl.end() && it->start <= attr_[e].end; ++it) {
      if (it->ev == e) {
        if (first == no_pos) first = static_cast<std::size_t>(it - sl.begin());
        last = static_cast<std::size_t>(it - sl.begin());
      } else if (first != no_pos && it->ev != e && it->start >= attr_[e].end) {
        break;
      }
    }
    return {first, last};
  }

  void size_collective(std::uint32_t o, comm_task& c) {
    auto& e = d_.gpu[o];
    c.op = collective_of_kernel(e.name);
    std::int64_t group = -1;
    auto from_meta = [&](const op_meta& m, bool allow_dims) -> bool {
      comm_op op;
      if (!m.collective.empty() && collective_from_name(m.collective, op)) c.op = op;
      if (m.group_size > 0) group = m.group_size;
      std::int64_t n = std::max(m.in_nelems, m.out_nelems);
      if (n > 0) {
        std::uint32_t sz = dtype_size(m.dtype);
        c.bytes = std::uint64_t(n) * (sz ? sz : 1);
        return true;
      }
      if (allow_dims) {
        auto b = input_bytes(m.input_dims, m.input_types);
        if (b) { c.bytes = b; return true; }
      }
      return false;
    };
    bool sized = e.meta != no_index && from_meta(d_.metas[e.meta], false);
    auto r = launch_of_[o];
    if (r != no_index) {
      // Walk out from the launch: the first collective annotation / record_param_comms
      // that says its size (nccl:* and record_param_comms before c10d::, which lists
      // output and input both).
      std::uint32_t c10d = no_index;
      for (auto k = attr_[r].parent; k != no_index && !sized; k = attr_[k].parent) {
        auto n = d_.cpu[k].name;
        comm_op op;
        if (starts_with(n, "nccl:") && collective_from_name(n, op)) c.op = op;
        const bool commish = starts_with(n, "nccl:") || n == "record_param_comms";
        if (starts_with(n, "c10d::")) { if (c10d == no_index) c10d = k; continue; }
        if (!commish || d_.cpu[k].meta == no_index) continue;
        sized = from_meta(d_.metas[d_.cpu[k].meta], true);
      }
      if (!sized && c10d != no_index && d_.cpu[c10d].meta != no_index) {
        comm_op op;
        if (c.op == comm_op::other && collective_from_name(d_.cpu[c10d].name, op)) c.op = op;
        sized = from_meta(d_.metas[d_.cpu[c10d].meta], true);
      }
    }
    if (group <= 0) group = d_.world_size > 0 ? d_.world_size : 1;
    c.group_size = static_cast<std::uint32_t>(group);
  }

  // ------------------------------------------------------------------ dependencies
  void edge(task_id a, task_id b, dep_kind k) {
    if (a == no_task || b == no_task || a == b) return;
    edges_.push_back({a, b, k});
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
  /// On stream `s`: the last op launched before `t` that ended by `deadline`.
  std::uint32_t waited_on(const stream_rec& s, time_ns t, time_ns deadline) const {
    auto it = std::lower_bound(s.launch_max.begin(), s.launch_max.end(), t);
    for (auto k = static_cast<std::size_t>(it - s.launch_max.begin()); k-- > 0;) {
      auto o = s.ops[k];
      if (d_.gpu[o].ts + d_.gpu[o].dur <= deadline) return o;
    }
    return no_index;
  }
  std::uint32_t stream_index(std::int32_t device, std::int64_t stream) const {
    for (std::uint32_t k = 0; k < streams_.size(); ++k)
      if (streams_[k].stream == stream && (device < 0 || streams_[k].device == device)) return k;
    return no_index;
  }

  /// A CPU slice waits for GPU op `o` (a sync dependency).
  void wait_for_op(slice& s, std::uint32_t o) {
    if (o == no_index || gpu_task_[o] == no_task) return;
    edge(gpu_task_[o], s.task, dep_kind::sync);
    s.wait_until = std::max(s.wait_until, d_.gpu[o].ts + d_.gpu[o].dur);
  }

  /// The stream an event record on thread `t` at time `ts` records on: the stream of
  /// the last GPU op that thread launched before.
  std::uint32_t stream_launched_last(std::uint32_t t, time_ns ts) {
    auto& idx = runtime_index(t);
    auto it = std::lower_bound(idx.begin(), idx.end(), ts, [&](std::uint32_t e, time_ns v) { return d_.cpu[e].ts < v; });
    while (it != idx.begin()) {
      --it;
      auto e = *it;
      if (ops_begin_[e + 1] > ops_begin_[e]) return op_stream_[ops_list_[ops_begin_[e]]];
    }
    return no_index;
  }
  std::uint32_t stream_launched_next(std::uint32_t t, time_ns ts) {
    auto& idx = runtime_index(t);
    auto it = std::upper_bound(idx.begin(), idx.end(), ts, [&](time_ns v, std::uint32_t e) { return v < d_.cpu[e].ts; });
    for (; it != idx.end(); ++it) {
      auto e = *it;
      if (ops_begin_[e + 1] > ops_begin_[e]) return op_stream_[ops_list_[ops_begin_[e]]];
    }
    return no_index;
  }

  void add_edges() {
    // Program order.
    for (auto& th : threads_)
      for (std::size_t k = 1; k < th.slices.size(); ++k) edge(th.slices[k - 1].task, th.slices[k].task, dep_kind::cpu_order);
    for (auto& s : streams_)
      for (std::size_t k = 1; k < s.ops.size(); ++k) edge(gpu_task_[s.ops[k - 1]], gpu_task_[s.ops[k]], dep_kind::stream_order);
    // Launches.
    gpu_ready_.assign(d_.gpu.size(), std::numeric_limits<time_ns>::min());
    for (std::uint32_t o = 0; o < d_.gpu.size(); ++o) {
      auto* src = launch_slice(o);
      if (!src) continue;
      edge(src->task, gpu_task_[o], dep_kind::launch);
      gpu_ready_[o] = std::max(gpu_ready_[o], src->end);
    }
    // Anchors: worker sessions start after the main thread reached their start time.
    for (auto& an : anchor_times_) {
      auto& w = threads_[an.thread];
      auto& m = threads_[w.main];
      auto a = an.soft ? slice_ending_by(m, an.t) : slice_ending_at(m, an.t);
      auto b = slice_starting_at(w, an.t);
      if (a == no_pos || b == no_pos) continue;
      edge(m.slices[a].task, w.slices[b].task, dep_kind::control);
      // a hard anchor ends exactly at the session's start: the idle time before the
      // session is then the main thread's, not a gap of the worker
      if (!an.soft) w.slices[b].anchored = true;
    }
    if (first_main_ != no_index)
      for (auto& s : streams_) {
        if (s.ops.empty() || !head_needs_anchor(s.ops.front())) continue;
        auto& m = threads_[first_main_];
        auto head = s.ops.front();
        auto a = slice_ending_by(m, d_.gpu[head].ts);
        if (a == no_pos) continue;
        edge(m.slices[a].task, gpu_task_[head], dep_kind::control);
        gpu_ready_[head] = std::max(gpu_ready_[head], m.slices[a].end);
      }
    // Joins: the main thread resumes when the worker session ends.
    for (auto& j : joins_) {
      auto& w = threads_[j.thread];
      auto& m = threads_[w.main];
      auto src = slice_ending_at(w, j.B);
      std::size_t dst = j.marker ? slice_starting_at(m, j.B, mk_join) : slice_containing(m, j.B);
      if (src == no_pos || dst == no_pos) continue;
      edge(w.slices[src].task, m.slices[dst].task, dep_kind::control);
      m.slices[dst].wait_until = std::max(m.slices[dst].wait_until, j.B);
    }
    synchronizations();
    // Durations of waiting slices and gaps.
    for (auto& th : threads_) {
      for (std::size_t k = 0; k < th.slices.size(); ++k) {
        auto& s = th.slices[k];
        time_ns dur = s.end - s.start;
        if (s.wait_until != std::numeric_limits<time_ns>::min()) {
          time_ns w = std::clamp(s.wait_until, s.start, s.end);
          dur = s.end - w;
        }
        g_.core().duration[s.task] = dur;
        time_ns gap = 0;
        if (k + 1 < th.slices.size()) {
          auto& n = th.slices[k + 1];
          gap = n.start - s.end;
          if (n.anchored || (n.marker == mk_join && n.wait_until != std::numeric_limits<time_ns>::min())) gap = 0;
        }
        g_.core().gap[s.task] = std::max<time_ns>(0, gap);
      }
    }
    for (auto& s : streams_) {
      for (std::size_t k = 0; k + 1 < s.ops.size(); ++k) {
        auto& p = d_.gpu[s.ops[k]];
        auto nx = s.ops[k + 1];
        auto& n = d_.gpu[nx];
        const time_ns pend = p.ts + p.dur;
        const time_ns full = std::max<time_ns>(0, n.ts - pend);
        // The replay starts `n` at max(ready, end of `p` + gap). Idle time on the stream
        // that its dependencies explain (a launch issued late, an event wait) is left to
        // them, so that it shrinks when they come earlier; what they do not explain (GPU
        // scheduling between queued ops, a wait the trace does not show) stays a gap. A
        // start a little after the launch returned is launch latency, not kept.
        const time_ns ready = gpu_ready_[nx];
        time_ns gap = full;
        // (A copy enqueued by a blocking copy call is "ready" at the call's start only
        // nominally: the time before it starts is the call's own work, kept as a gap.)
        const bool nominal = launch_of_[nx] != no_index && blocking_copy_[launch_of_[nx]] != no_index;
        if (!nominal && ready != std::numeric_limits<time_ns>::min() && ready > pend &&
            n.ts - ready <= s_.launch_latency)
          gap = 0;
        g_.core().gap[gpu_task_[s.ops[k]]] = gap;
      }
    }
    // Memory.
    std::int64_t first_total = -1;
    time_ns first_ts = std::numeric_limits<time_ns>::max();
    for (std::size_t i = 0, k = 0; i < d_.memory.size(); ++i) {
      auto& m = d_.memory[i];
      if (!is_device_memory(m)) continue;
      auto t = mem_thread_[k++];
      // allocated before the trace's first allocation event (in time, not file order)
      if (m.total >= 0 && m.ts < first_ts) { first_ts = m.ts; first_total = m.total - m.bytes; }
      if (m.total >= 0) out_.memory_peak = std::max(out_.memory_peak, m.total);
      if (t == no_index) continue;
      auto& th = threads_[t];
      auto p = slice_starting_at(th, m.ts);
      if (p == no_pos) p = slice_containing(th, m.ts);
      if (p == no_pos) continue;
      g_.core().mem_delta[th.slices[p].task] += m.bytes;
      mem_used_.push_back(static_cast<std::uint32_t>(i));
    }
    out_.memory_at_start = first_total;
    // Add edges, then break any cycle that timestamp noise may have produced.
    for (auto& e : edges_) g_.add_dependency(e.from, e.to, e.kind);
    repair_cycles();
  }

  void synchronizations() {
    // cuda_sync records by correlation.
    std::unordered_map<std::int64_t, std::uint32_t> sync_by_corr;
    for (std::uint32_t i = 0; i < d_.syncs.size(); ++i)
      if (d_.syncs[i].correlation >= 0) sync_by_corr.emplace(d_.syncs[i].correlation, i);
    sync_state_.assign(d_.syncs.size(), 0);
    // Event records seen so far per process (for event waits without cuda_sync records).
    std::vector<std::uint32_t> records;
    for (std::uint32_t e = 0; e < d_.cpu.size(); ++e)
      if (is_runtime(e) && !threads_[d_.cpu[e].thread].ignored && sem_[e] == call_semantics::event_record)
        records.push_back(e);
    std::sort(records.begin(), records.end(), [&](auto a, auto b) { return d_.cpu[a].ts < d_.cpu[b].ts; });

    for (std::uint32_t e = 0; e < d_.cpu.size(); ++e) {
      if (!is_runtime(e) || threads_[d_.cpu[e].thread].ignored) continue;
      auto& x = d_.cpu[e];
      auto& th = threads_[x.thread];
      auto [first, last] = pieces_of(e);
      if (last == no_pos) continue;
      slice& w = th.slices[last];
      const time_ns s = x.ts, end = attr_[e].end;
      const time_ns deadline = end + s_.sync_tolerance;
      auto sem = sem_[e];
      auto sit = x.correlation >= 0 ? sync_by_corr.find(x.correlation) : sync_by_corr.end();
      const sync_event* rec = sit != sync_by_corr.end() ? &d_.syncs[sit->second] : nullptr;
      const std::size_t edges_before = edges_.size();
      // The cuda_sync record is represented when the call got a dependency from it.
      auto used = [&] {
        if (rec) sync_state_[sit->second] = edges_.size() > edges_before ? 1 : 3;
      };

      if (blocking_copy_[e] != no_index) {
        // Only when the call was cut at its copy's start: the piece before launches it.
        if (first != last) wait_for_op(w, blocking_copy_[e]);
        used();
        continue;
      }
      switch (sem) {
      case call_semantics::device_sync: {
        std::int32_t dev = rec ? rec->device : -1;
        bool any = false;
        for (auto& st : streams_) {
          if (dev >= 0 && st.device != dev) continue;
          auto o = waited_on(st, s, deadline);
          if (o != no_index) { wait_for_op(w, o); any = true; }
        }
        (void)any;
        used();
        break;
      }
      case call_semantics::stream_sync: {
        std::uint32_t si = rec && rec->stream >= 0 ? stream_index(rec->device, rec->stream) : no_index;
        if (si == no_index) si = stream_launched_last(x.thread, s);
        std::uint32_t o = si != no_index ? waited_on(streams_[si], s, deadline) : no_index;
        if (o == no_index) {
          // the stream is unknown or inconsistent: the latest op launched before that ended in time
          time_ns best = std::numeric_limits<time_ns>::min();
          for (auto& st : streams_) {
            auto c = waited_on(st, s, deadline);
            if (c != no_index && d_.gpu[c].ts + d_.gpu[c].dur > best) { best = d_.gpu[c].ts + d_.gpu[c].dur; o = c; }
          }
        }
        wait_for_op(w, o);
        used();
        break;
      }
      case call_semantics::event_sync: {
        std::uint32_t o = no_index;
        if (rec) {
          if (rec->record_correlation >= 0 && rec->wait_stream >= 0) {
            auto rit = runtime_of_corr(rec->record_correlation);
            auto si = stream_index(rec->device, rec->wait_stream);
            if (rit != no_index && si != no_index) o = waited_on(streams_[si], d_.cpu[rit].ts + 1, deadline);
          }
        } else if (s_.infer_event_waits) {
          o = event_source(records, x, deadline, no_index);
        }
        wait_for_op(w, o);
        used();
        break;
      }
      case call_semantics::stream_wait: {
        std::uint32_t src = no_index, dst = no_index;
        if (rec) {
          auto rit = runtime_of_corr(rec->record_correlation);
          auto ss = rec->wait_stream >= 0 ? stream_index(rec->device, rec->wait_stream) : no_index;
          auto ds = rec->stream >= 0 ? stream_index(rec->device, rec->stream) : no_index;
          if (rit != no_index && ss != no_index) src = last_launched_before(streams_[ss], d_.cpu[rit].ts + 1);
          if (ds != no_index) dst = first_launched_after(streams_[ds], s);
        } else if (s_.infer_event_waits) {
          auto ds = stream_launched_next(x.thread, end);
          if (ds != no_index) dst = first_launched_after(streams_[ds], s);
          src = event_source(records, x, std::numeric_limits<time_ns>::max(), ds);
        }
        if (src != no_index && dst != no_index && op_stream_[src] != op_stream_[dst] &&
            d_.gpu[src].ts + d_.gpu[src].dur <= d_.gpu[dst].ts + s_.sync_tolerance) {
          edge(gpu_task_[src], gpu_task_[dst], dep_kind::sync);
          gpu_ready_[dst] = std::max(gpu_ready_[dst], d_.gpu[src].ts + d_.gpu[src].dur);
          ++cross_stream_;
        }
        used();
        break;
      }
      case call_semantics::launch:
      case call_semantics::async_copy: {
        // Back-pressure: a launch that blocks until the GPU frees a queue slot returns
        // right after some GPU op ends.
        if (end - s < s_.implicit_sync_min) break;
        auto o = op_ending_before(end, s);
        if (o != no_index) { wait_for_op(w, o); ++backpressure_; }
        if (rec) sync_state_[sit->second] = 2;
        break;
      }
      default:
        if (rec) sync_state_[sit->second] = 2; // a non-blocking call (cudaEventQuery)
        break;
      }
    }
  }

  /// For event waits without cuda_sync records: the op recorded by the latest event
  /// record of the same process before the call, on the stream its thread used last.
  /// Without records of its own, the event is taken to have been recorded after the
  /// GPU op launched last before the call on a stream other than `not_stream` (some
  /// traces hold no cudaEventRecord calls at all).
  std::uint32_t event_source(const std::vector<std::uint32_t>& records, const cpu_event& x, time_ns deadline,
                             std::uint32_t not_stream) {
    auto it = std::lower_bound(records.begin(), records.end(), x.ts, [&](std::uint32_t r, time_ns v) { return d_.cpu[r].ts < v; });
    while (it != records.begin()) {
      --it;
      auto r = *it;
      if (threads_[d_.cpu[r].thread].key.pid != threads_[x.thread].key.pid) continue;
      auto si = stream_launched_last(d_.cpu[r].thread, d_.cpu[r].ts);
      if (si == no_index || si == not_stream) break;
      return waited_on(streams_[si], d_.cpu[r].ts, deadline);
    }
    // the op launched last before the call, on another stream, by this process
    if (by_launch_.empty()) {
      for (std::uint32_t o = 0; o < d_.gpu.size(); ++o)
        if (launch_of_[o] != no_index) by_launch_.push_back(o);
      std::sort(by_launch_.begin(), by_launch_.end(), [&](auto a, auto b) { return launch_time(a) < launch_time(b); });
    }
    auto jt = std::lower_bound(by_launch_.begin(), by_launch_.end(), x.ts, [&](std::uint32_t o, time_ns v) { return launch_time(o) < v; });
    const auto pid = threads_[x.thread].key.pid;
    for (int tries = 0; jt != by_launch_.begin() && tries < 256; ++tries) {
      --jt;
      auto o = *jt;
      if (op_stream_[o] == not_stream || threads_[d_.cpu[launch_of_[o]].thread].key.pid != pid) continue;
      return d_.gpu[o].ts + d_.gpu[o].dur <= deadline ? o : no_index;
    }
    return no_index;
  }

  /// The GPU op, launched before `s`, that ended last within the implicit-sync window
  /// before `end` and was still running at `s`.
  std::uint32_t op_ending_before(time_ns end, time_ns s) {
    if (ends_.empty()) {
      ends_.resize(d_.gpu.size());
      for (std::uint32_t i = 0; i < d_.gpu.size(); ++i) ends_[i] = i;
      std::sort(ends_.begin(), ends_.end(), [&](auto a, auto b) {
        return d_.gpu[a].ts + d_.gpu[a].dur < d_.gpu[b].ts + d_.gpu[b].dur;
      });
    }
    auto it = std::upper_bound(ends_.begin(), ends_.end(), end, [&](time_ns v, std::uint32_t o) { return v < d_.gpu[o].ts + d_.gpu[o].dur; });
    while (it != ends_.begin()) {
      --it;
      auto o = *it;
      time_ns oe = d_.gpu[o].ts + d_.gpu[o].dur;
      if (end - oe > s_.implicit_sync_window) break;
      if (oe > s && launch_time(o) < s) return o;
    }
    return no_index;
  }

  void repair_cycles() {
    // Until none is left: each round drops an edge (or throws), so this ends. A bound on
    // the rounds would hand back a cyclic graph for a trace with more inconsistencies.
    for (;;) {
      auto cyc = find_cycle(g_);
      if (cyc.empty()) return;
      // Drop the weakest inferred edge of the cycle: control, then sync, then launch.
      std::size_t pick = cyc.size();
      int best = -1;
      for (std::size_t i = 0; i + 1 < cyc.size(); ++i) {
        auto k = g_.dependency_kind(cyc[i], cyc[i + 1]);
        int w = k == dep_kind::control ? 3 : k == dep_kind::sync ? 2 : k == dep_kind::launch ? 1 : 0;
        if (w > best) { best = w; pick = i; }
      }
      if (pick == cyc.size() || best == 0) throw error("daydream: internal error: program-order cycle in the built graph");
      warn("dropped a " + std::string(to_string(g_.dependency_kind(cyc[pick], cyc[pick + 1]))) +
           " dependency " + std::string(g_.name(cyc[pick])) + " -> " + std::string(g_.name(cyc[pick + 1])) +
           " that closed a cycle (inconsistent timestamps)");
      g_.remove_dependency(cyc[pick], cyc[pick + 1]);
    }
  }

  // ------------------------------------------------------------------ accounting
  void account() {
    auto& ig = out_.ignored;
    ig = d_.ignored;
    std::size_t in = 0;
    // CPU events: represented when some slice covers them (as the innermost event or
    // as an enclosing one, giving the slice its op, layer, phase or iteration).
    std::vector<std::uint8_t> marker(d_.cpu.size(), 0);
    for (auto e : marker_events_) marker[e] = 1;
    for (std::uint32_t e = 0; e < d_.cpu.size(); ++e) {
      auto& x = d_.cpu[e];
      if (threads_[x.thread].ignored) { ++ig["python_function on a thread without operators or runtime calls"]; continue; }
      if (attr_[e].end > x.ts || attr_[e].sliced || marker[e]) { ++in; continue; }
      ++ig["zero-duration CPU event"];
    }
    in += d_.gpu.size();
    // Launch flows.
    std::vector<std::uint8_t> in_flow(d_.flows.size(), 0);
    for (auto& p : flow_pair_) if (gpu_task_[p.op] != no_task) in_flow[p.s] = in_flow[p.f] = 1;
    for (std::uint32_t i = 0; i < d_.flows.size(); ++i) {
      auto& f = d_.flows[i];
      if (f.cat == ecat::launch_flow) {
        if (in_flow[i]) ++in;
        else if (flow_state_[i] == 2) ++ig["launch flow whose end points match no event"];
        else if (flow_state_[i] == 3) ++ig["launch flow contradicting the correlation id"];
        else ++ig["flow without partner"];
      } else {
        if (fwd_state_[i] == 1) ++in;
        else if (fwd_state_[i] == 2) ++ig["fwdbwd flow whose end points match no event"];
        else ++ig["flow without partner"];
      }
    }
    // Memory.
    std::vector<std::uint8_t> mem_in(d_.memory.size(), 0);
    for (auto i : mem_used_) mem_in[i] = 1;
    for (std::uint32_t i = 0; i < d_.memory.size(); ++i) {
      if (mem_in[i]) ++in;
      else if (d_.memory[i].device_type == 0) ++ig["cpu memory event"];
      else if (!is_device_memory(d_.memory[i])) ++ig["memory event of a non-GPU device"];
      else ++ig["memory event outside any CPU activity"];
    }
    // cuda_sync records.
    for (std::uint32_t i = 0; i < d_.syncs.size(); ++i) {
      if (sync_state_[i] == 1) ++in;
      else if (sync_state_[i] == 2) ++ig["cuda_sync of a non-blocking call (cudaEventQuery)"];
      else if (sync_state_[i] == 3) ++ig["cuda_sync with nothing to wait for"];
      else ++ig["cuda_sync without a matching runtime call"];
    }
    out_.in_graph = in;
    std::size_t total = in;
    for (auto& [k, v] : ig) total += v;
    if (total != d_.events)
      throw error("daydream: internal error: ingest accounting covers " + std::to_string(total) + " of " +
                  std::to_string(d_.events) + " events");
    if (clamped_)
      warn(std::to_string(clamped_) + " CPU events ended after their enclosing event and were clamped to it");
    if (backpressure_)
      warn(std::to_string(backpressure_) + " launch/copy calls blocked until a GPU operation finished "
           "(launch queue full); they wait for it in the graph");
    if (cross_stream_)
      warn(std::to_string(cross_stream_) + " cudaStreamWaitEvent calls became dependencies between streams");
  }

  // ------------------------------------------------------------------ state
  struct flow_pair_rec { std::uint32_t s, f, op; };
  struct join_rec { std::uint32_t thread; time_ns B; bool marker; };

  decoded_trace& d_;
  const build_settings& s_;
  build_output& out_;
  daydream::graph& g_;
  struct intern_fn {
    daydream::graph* g;
    name_id operator()(std::string_view s) const { return g->intern(s); }
  };
  name_cache<intern_fn> names_{intern_fn{&g_}};

  std::vector<thread_rec> threads_;
  std::vector<stream_rec> streams_;
  std::vector<std::uint32_t> op_stream_;
  std::vector<ev_attr> attr_;
  static constexpr name_id no_layer = std::numeric_limits<name_id>::max();
  static constexpr std::uint64_t no_bytes = std::numeric_limits<std::uint64_t>::max();
  struct top_key {
    std::uint32_t thread;
    std::int32_t iteration;
    std::string_view name;
    friend bool operator==(const top_key&, const top_key&) = default;
  };
  struct top_key_hash {
    std::size_t operator()(const top_key& k) const noexcept {
      return std::hash<std::string_view>{}(k.name) ^ (std::size_t(k.thread) << 20) ^ std::size_t(std::uint32_t(k.iteration));
    }
  };
  id_index runtime_by_corr_;
  std::vector<std::uint32_t> launch_of_;
  std::vector<std::uint32_t> ops_begin_, ops_list_;
  std::vector<flow_pair_rec> flow_pair_;
  std::vector<std::uint8_t> flow_state_, fwd_state_, sync_state_;
  std::unordered_map<pidtid, std::uint32_t, pidtid_hash> thread_cache_;
  std::vector<std::vector<std::uint32_t>> runtime_index_;
  std::vector<std::uint8_t> runtime_indexed_;
  std::vector<time_ns> iter_begin_;
  std::vector<std::uint32_t> marker_events_;
  std::unordered_map<top_key, std::uint32_t, top_key_hash> top_count_;
  std::vector<std::uint32_t> top_ordinal_;
  std::vector<call_semantics> sem_;
  std::vector<std::uint32_t> piece_first_, piece_last_;
  std::vector<name_id> top_layer_;
  std::vector<std::uint32_t> bwd_forward_;
  std::vector<std::uint64_t> tensor_bytes_;
  std::vector<std::uint32_t> blocking_copy_;
  std::vector<session> sessions_;
  struct anchor_rec { std::uint32_t thread; time_ns t; bool soft; };
  std::vector<anchor_rec> anchor_times_;
  std::vector<join_rec> joins_;
  std::vector<std::uint32_t> mem_thread_, mem_used_;
  std::vector<task_id> gpu_task_;
  std::vector<time_ns> gpu_ready_;
  std::vector<edge_req> edges_;
  std::vector<std::uint32_t> ends_, by_launch_;
  std::uint32_t first_main_ = no_index;
  int first_main_rank_ = -1;
  time_ns t0_ = 0;
  std::size_t clamped_ = 0, backpressure_ = 0, cross_stream_ = 0;
};
//! @endcond

/// Builds the task graph of a decoded Kineto trace (see io::load_kineto).
inline void build_graph(decoded_trace& d, const build_settings& s, build_output& out) {
  kineto_builder b(d, s, out);
  b.run();
}

} // namespace daydream::io::detail

#endif
