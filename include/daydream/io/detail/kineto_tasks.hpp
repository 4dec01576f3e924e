// Defines the task stage of Kineto ingestion: resources and one task per CPU slice and per GPU operation.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_TASKS_HPP
#define DAYDREAM_IO_DETAIL_KINETO_TASKS_HPP

#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_cuts.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_flops.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_names.hpp>
#include <daydream/io/detail/kineto_parallel.hpp>
#include <daydream/io/detail/kineto_tables.hpp>
#include <daydream/io/detail/kineto_threads.hpp>
#include <daydream/io/detail/tensor_bytes.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL

/// Where the tasks of the graph came from.
struct task_map {
  std::vector<task_id> gpu_task;                  ///< per gpu event
  std::vector<std::uint32_t> piece_first, piece_last; ///< per runtime call: its first and last slice
  std::size_t unlinked = 0;                       ///< GPU ops without a launching call

  /// The first and last slice of runtime call `e` (no_pos if it has none).
  std::pair<std::size_t, std::size_t> pieces_of(std::uint32_t e) const {
    if (piece_first[e] == no_index) return {no_pos, no_pos};
    return {piece_first[e], piece_last[e]};
  }
  /// The slice that launches GPU op `o`: the last piece of its runtime call, or the piece
  /// before the cut of a blocking copy or a graph launch (`launch_at`, per cpu event);
  /// nullptr for an unlinked op.
  slice* launch_slice(const decoded_trace& d, thread_table& tt, const gpu_links& L,
                      const std::vector<time_ns>& launch_at, std::uint32_t o) const {
    auto r = L.launch_of[o];
    if (r == no_index) return nullptr;
    auto& th = tt.threads[d.cpu[r].thread];
    auto [first, last] = pieces_of(r);
    if (first == no_pos) return nullptr;
    if (launch_at[r] != no_launch_cut && first != last) return &th.slices[first];
    return &th.slices[last];
  }
};


/// The ranks of a `Process Group Ranks` argument ("[0, 1, 2]", as a string or an array);
/// empty when it is not such a list (then the group's ranks count as unknown).
inline std::vector<std::int32_t> rank_list(std::string_view s) {
  std::vector<std::int32_t> out;
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '"')) ++i;
  if (i == s.size() || s[i] != '[') return {};
  ++i;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i < s.size() && s[i] == ']') return out;
    std::int64_t v = 0;
    std::size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && digits < 10) v = v * 10 + (s[i++] - '0'), ++digits;
    if (digits == 0 || v > std::numeric_limits<std::int32_t>::max()) return {};
    out.push_back(static_cast<std::int32_t>(v));
  }
  return {};
}

/// Sets the operation, size and group of a collective from the metadata of its kernel,
/// or of the annotations around its launch (nccl:*, record_param_comms, c10d::*).
inline void size_collective(const decoded_trace& d, const gpu_links& L, const flat_events& F, std::uint32_t o,
                            comm_task& c) {
  auto& e = d.gpu[o];
  c.op = collective_of_kernel(e.name);
  std::int64_t group = -1;
  auto from_meta = [&](const op_meta& m, bool allow_dims) -> bool {
    comm_op op;
    if (!m.collective.empty() && collective_from_name(m.collective, op)) c.op = op;
    if (m.group_size > 0) group = m.group_size;
    if (!m.pg_name.empty()) c.group = std::string(m.pg_name);
    if (!m.pg_ranks.empty()) c.group_ranks = rank_list(m.pg_ranks);
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
  bool sized = e.meta != no_index && from_meta(d.metas[e.meta], false);
  auto r = L.launch_of[o];
  if (r != no_index) {
    // Walk out from the launch: the first collective annotation / record_param_comms
    // that says its size (nccl:* and record_param_comms before c10d::, which lists
    // output and input both).
    std::uint32_t c10d = no_index;
    for (auto k = F.attr[r].parent; k != no_index && !sized; k = F.attr[k].parent) {
      auto n = d.cpu[k].name;
      comm_op op;
      if (starts_with(n, "nccl:") && collective_from_name(n, op)) c.op = op;
      const bool commish = starts_with(n, "nccl:") || n == "record_param_comms";
      if (starts_with(n, "c10d::")) { if (c10d == no_index) c10d = k; continue; }
      if (!commish || d.cpu[k].meta == no_index) continue;
      sized = from_meta(d.metas[d.cpu[k].meta], true);
    }
    if (!sized && c10d != no_index && d.cpu[c10d].meta != no_index) {
      comm_op op;
      if (c.op == comm_op::other && collective_from_name(d.cpu[c10d].name, op)) c.op = op;
      sized = from_meta(d.metas[d.cpu[c10d].meta], true);
    }
  }
  if (group <= 0) group = d.world_size > 0 ? d.world_size : 1;
  c.group_size = static_cast<std::uint32_t>(group);
}

/// The tensor bytes of CPU event `e`: the gradient AccumulateGrad accumulates, or the
/// inputs of its operator.
inline std::uint64_t tensor_bytes_of(const decoded_trace& d, const flat_events& F, std::uint32_t e) {
  std::uint64_t b = 0;
  if (auto c = F.attr[e].accgrad; c != no_index && d.cpu[c].meta != no_index) {
    auto& m = d.metas[d.cpu[c].meta];
    b = input_bytes(m.input_dims, m.input_types);
  }
  if (!b) {
    auto op = F.attr[e].op;
    if (op != no_index && d.cpu[op].meta != no_index) {
      auto& m = d.metas[d.cpu[op].meta];
      b = input_bytes(m.input_dims, m.input_types);
    }
  }
  return b;
}

/// The resources of stream `s`: "stream 7 (gpu 0)", and "stream 7 lane 1 (gpu 0)" and so
/// on for the further lanes of a stream that ran a graph launch's ops at once
/// (assign_lanes).
inline void add_stream_resources(stream_rec& s, std::int32_t node, daydream::graph& g) {
  const std::string sn = "stream " + std::to_string(s.stream), dn = " (gpu " + std::to_string(s.device) + ")";
  s.res = g.add_resource({sn + dn, resource_kind::gpu_stream, sharing::exclusive, node, s.device, 0});
  s.lane_res.assign(s.lanes(), s.res);
  for (std::size_t l = 1; l < s.lanes(); ++l)
    s.lane_res[l] = g.add_resource({sn + " lane " + std::to_string(l) + dn, resource_kind::gpu_stream,
                                    sharing::exclusive, node, s.device, 0});
}

/// The CPU tasks of stage 13, one per slice, thread after thread (ids in that order), and
/// `T`'s first and last slice of every runtime call. The tasks are added at once, then
/// filled thread by thread on up to `workers` threads: each writes its own slices' tasks
/// and events only, and numbers the names it meets in its own table; the names are then
/// interned thread after thread in the order they were first met, the order in which
/// one thread adding the tasks one by one would intern them, so that the graph, name ids
/// included, is the same whatever the number of workers.
inline void make_cpu_tasks(const decoded_trace& d, thread_table& tt, const gpu_links& L, const flat_events& F,
                           daydream::graph& g, task_map& T, unsigned workers) {
  T.piece_first.assign(d.cpu.size(), no_index);
  T.piece_last.assign(d.cpu.size(), no_index);
  const std::size_t n = tt.threads.size();
  std::vector<task_id> base(n, 0);
  std::size_t slices = 0;
  for (std::size_t t = 0; t < n; ++t) base[t] = static_cast<task_id>(slices), slices += tt.threads[t].slices.size();
  if (slices == 0) return;
  const task_id first = g.add_defaults<cpu_task>(slices);
  auto& core = g.core();
  std::vector<std::uint64_t> tensor_bytes(d.cpu.size(), std::numeric_limits<std::uint64_t>::max());
  // Per thread: its names in the order met (a name's local number is its index).
  std::vector<std::vector<std::string_view>> met(n);
  struct local_fn {
    std::vector<std::string_view>* met;
    name_id operator()(std::string_view s) const {
      met->push_back(s);
      return static_cast<name_id>(met->size() - 1);
    }
  };
  auto fill = [&](std::size_t t) {
    auto& th = tt.threads[t];
    name_cache<local_fn> names{local_fn{&met[t]}};
    for (std::size_t k = 0; k < th.slices.size(); ++k) {
      auto& s = th.slices[k];
      const task_id id = first + base[t] + static_cast<task_id>(k);
      auto& p = g.payload(handle<cpu_task>::unchecked(id));
      std::string_view name;
      if (s.ev == no_index) {
        name = s.marker == mk_join ? "[join]" : s.marker == mk_memory ? "[memory]" : "[anchor]";
      } else {
        auto& x = d.cpu[s.ev];
        name = x.name;
        if (is_runtime(d, s.ev)) {
          if (T.piece_first[s.ev] == no_index) T.piece_first[s.ev] = static_cast<std::uint32_t>(k);
          T.piece_last[s.ev] = static_cast<std::uint32_t>(k);
          p.call = call_kind(L.sem[s.ev]);
          if (L.launches(s.ev) && p.call == cpu_call::runtime) {
            bool kernel = false;
            for (auto o = L.ops_begin[s.ev]; o < L.ops_begin[s.ev + 1]; ++o)
              kernel |= d.gpu[L.ops_list[o]].cat == ecat::kernel;
            p.call = kernel ? cpu_call::launch : cpu_call::memcpy;
          }
          p.correlation = x.correlation >= 0 ? static_cast<std::uint64_t>(x.correlation) : 0;
        }
        auto op = F.attr[s.ev].op;
        p.op = op != no_index ? names(d.cpu[op].name) : no_index; // local numbers for now
        auto& b = tensor_bytes[s.ev];
        if (b == std::numeric_limits<std::uint64_t>::max()) b = tensor_bytes_of(d, F, s.ev);
        p.tensor_bytes = b;
      }
      core.name[id] = names(name); // a local number for now
      core.duration[id] = s.end - s.start;
      core.res[id] = th.res;
      core.trace_start[id] = s.start;
      core.layer[id] = s.layer;
      core.ph[id] = s.ph;
      core.iteration[id] = s.iteration;
      s.task = id;
    }
  };
  const auto order = largest_first(n, [&](std::size_t t) { return tt.threads[t].slices.size(); });
  parallel_for(n, workers, [&](std::size_t i) { fill(order[i]); });
  // The names, interned in the order one thread would have met them.
  std::vector<std::vector<name_id>> global(n);
  for (std::size_t t = 0; t < n; ++t) {
    global[t].reserve(met[t].size());
    for (auto s : met[t]) global[t].push_back(g.intern(s));
  }
  parallel_for(n, workers, [&](std::size_t i) {
    const auto t = order[i];
    const auto& to = global[t];
    const task_id end = first + base[t] + static_cast<task_id>(tt.threads[t].slices.size());
    for (task_id id = first + base[t]; id < end; ++id) {
      core.name[id] = to[core.name[id]];
      auto& p = g.payload(handle<cpu_task>::unchecked(id));
      p.op = p.op == no_index ? no_name : to[p.op];
    }
  });
}

/// Stage 13: the graph's resources (threads with slices, main first within a process
/// as they come, then streams) and tasks: one CPU task per slice (durations and gaps are
/// set by the edge stage) and one GPU task per op, which takes layer, phase and
/// iteration from the slice that launched it. Sets `slice::task` and `resource` fields.
inline task_map make_tasks(const decoded_trace& d, thread_table& tt, gpu_links& L, const flat_events& F,
                           const thread_plan& P, const iteration_table& its, daydream::graph& g,
                           warning_log& warnings, unsigned workers = 1) {
  task_map T;
  struct intern_fn {
    daydream::graph* g;
    name_id operator()(std::string_view s) const { return g->intern(s); }
  };
  name_cache<intern_fn> names{intern_fn{&g}};
  std::size_t slices = 0, kernels = 0;
  for (auto& th : tt.threads) slices += th.slices.size();
  for (auto& e : d.gpu) kernels += e.cat == ecat::kernel;
  g.reserve(slices + d.gpu.size());
  g.reserve<cpu_task>(slices);
  g.reserve<gpu_kernel>(kernels); // with the collectives: at most that many
  g.reserve<memcpy_task>(d.gpu.size() - kernels);
  const std::int32_t node = d.rank >= 0 ? d.rank : 0;
  for (std::uint32_t t = 0; t < tt.threads.size(); ++t) {
    auto& th = tt.threads[t];
    if (th.slices.empty()) continue;
    // ids as the trace writes them (large unsigned numbers, strings)
    auto& label = d.thread_labels[t];
    std::string name = "thread " + std::string(label.tid) + " (pid " + std::string(label.pid);
    name += th.is_main ? ", main)" : th.backward ? ", backward)" : ")";
    th.res = g.add_resource({name, resource_kind::cpu_thread, sharing::exclusive, node, -1, 0});
  }
  for (auto& s : L.streams) add_stream_resources(s, node, g);
  make_cpu_tasks(d, tt, L, F, g, T, workers);
  // GPU operations. Whether a kernel is a collective is decided once per distinct name
  // (a case-blind search of names of a hundred characters, for every kernel otherwise).
  std::vector<std::int8_t> comm_name; // by name id: -1 not decided yet
  auto is_comm = [&](name_id n, std::string_view text) {
    if (n >= comm_name.size()) comm_name.resize(std::size_t(n) + 1, -1);
    if (comm_name[n] < 0) comm_name[n] = is_comm_kernel(text) ? 1 : 0;
    return comm_name[n] == 1;
  };
  T.gpu_task.assign(d.gpu.size(), no_task);
  std::vector<const slice*> srcs;
  for (auto& s : L.streams) {
    // A stream runs its ops in the order they were launched, so an op whose launch is not
    // in the trace (unlinked) was launched between its stream neighbours' launches: its
    // iteration is found from theirs, not from when it ran (a GPU that lags the CPU runs a
    // step's kernels during the next one). One queued before the stream's first launched
    // op was launched before the trace's window (work the first step waited for): it
    // belongs to no iteration. Between launched ops, its iteration is when it ran, but no
    // earlier than the op before it and no later than the op after it.
    srcs.clear();
    for (auto o : s.ops) srcs.push_back(T.launch_slice(d, tt, L, P.launch_at, o));
    std::vector<std::int32_t> next_it(srcs.size() + 1, -1); // iteration of the next linked op (-1: none)
    for (std::size_t k = srcs.size(); k-- > 0;) next_it[k] = srcs[k] ? srcs[k]->iteration : next_it[k + 1];
    bool seen_linked = false;
    std::int32_t prev_it = -1;
    for (std::size_t k = 0; k < s.ops.size(); ++k) {
      const auto o = s.ops[k];
      auto& e = d.gpu[o];
      name_id layer = no_name;
      phase ph = phase::other;
      std::int32_t it = its.at(e.ts);
      const slice* src = srcs[k];
      if (src) {
        layer = src->layer;
        ph = src->ph;
        it = src->iteration;
        seen_linked = true;
        prev_it = it;
      } else {
        ++T.unlinked;
        if (its.source != iteration_source::whole_trace) {
          if (!seen_linked && next_it[k + 1] >= 0) {
            it = -1;
          } else if (it >= 0) {
            if (next_it[k + 1] >= 0) it = std::min(it, next_it[k + 1]);
            if (prev_it >= 0) it = std::max(it, prev_it);
          } else if (prev_it >= 0 && next_it[k + 1] >= 0) {
            it = prev_it; // ran outside the steps, launched between two launches of theirs
          }
        }
      }
      task_fields f{.name = {}, .duration = e.dur, .resource = s.res_at(k), .gap = 0,
                    .trace_start = e.ts, .layer = {}, .phase = ph, .iteration = it};
      const std::uint64_t corr = e.correlation >= 0 ? static_cast<std::uint64_t>(e.correlation) : 0;
      task_id id;
      const name_id nid = names(e.name);
      if (e.cat == ecat::kernel && is_comm(nid, e.name)) {
        comm_task c;
        c.device = e.device; c.stream = e.stream; c.correlation = corr;
        size_collective(d, L, F, o, c);
        id = g.add(c, f).id;
      } else if (e.cat == ecat::kernel) {
        gpu_kernel k;
        k.device = e.device; k.stream = e.stream; k.correlation = corr; k.launch = e.launch;
        id = g.add(k, f).id;
      } else {
        memcpy_task m;
        m.direction = copy_direction(e.name, e.cat == ecat::memset);
        m.bytes = e.bytes; m.device = e.device; m.stream = e.stream; m.correlation = corr;
        id = g.add(m, f).id;
      }
      g.core().name[id] = nid;
      g.core().layer[id] = layer;
      T.gpu_task[o] = id;
    }
  }
  assign_op_work(d, L, F, T.gpu_task, g); // FLOPs and bytes of GEMMs, convolutions, attention
  if (T.unlinked)
    warnings.add(std::to_string(T.unlinked) + " GPU operations have no matching runtime call; they are kept in "
                 "stream order and start no earlier than in the trace relative to their predecessor");
  return T;
}

/// Stage 13b: the latest trace end of each iteration's work: its CPU slices and the GPU
/// ops they launched (which may run long after the iteration's marker ended), and its GPU
/// window: when its GPU ops began their own work (after GPU ops of earlier iterations, and
/// of none that started before its first one: the backlog it waited for) and when the last
/// ended (iteration_spans' rule, daydream::detail::last_iteration_window). With the whole
/// trace as one iteration, sets its bounds to `mains`' span.
inline void set_work_ends(iteration_table& its, const decoded_trace& d, const thread_table& tt, const task_map& T,
                          const main_threads& mains, const daydream::graph& g) {
  if (its.source == iteration_source::whole_trace) {
    its.list.front().begin = its.begins.front() = mains.begin;
    its.list.front().end = mains.end;
  }
  // The first iteration numbered n: by a table of the first index of each number (a
  // trace of thousands of steps would make a search for each slice quadratic).
  std::unordered_map<std::int32_t, std::size_t> first_of;
  first_of.reserve(its.list.size());
  for (std::size_t k = 0; k < its.list.size(); ++k) first_of.try_emplace(its.list[k].number, k);
  std::int32_t last_number = std::numeric_limits<std::int32_t>::min();
  std::size_t last_index = its.list.size();
  auto index_of = [&](std::int32_t n) -> std::size_t {
    if (n == last_number) return last_index; // slices and ops come mostly an iteration at a time
    auto it = first_of.find(n);
    last_number = n;
    last_index = it == first_of.end() ? its.list.size() : it->second;
    return last_index;
  };
  std::vector<std::pair<time_ns, time_ns>> outside; // GPU ops of no iteration
  // The whole trace's bounds are its CPU slices' and GPU ops': its CPU work is its slices'.
  const bool whole = its.source == iteration_source::whole_trace;
  for (auto& it : its.list) {
    it.work_end = std::max(it.begin, it.end);
    it.cpu_end = whole ? it.begin : it.work_end;
    it.backlog_end = it.begin;
    it.device_first = it.device_begin = it.device_end = -1;
  }
  for (auto& th : tt.threads)
    for (auto& s : th.slices)
      if (s.iteration >= 0)
        if (auto k = index_of(s.iteration); k < its.list.size()) {
          its.list[k].work_end = std::max(its.list[k].work_end, s.end);
          its.list[k].cpu_end = std::max(its.list[k].cpu_end, s.end);
        }
  for (std::uint32_t o = 0; o < d.gpu.size(); ++o) {
    if (T.gpu_task[o] == no_task) continue;
    const auto n = g.iteration(T.gpu_task[o]);
    const time_ns b = d.gpu[o].ts, e = d.gpu[o].ts + d.gpu[o].dur;
    if (n < 0) {
      outside.push_back({b, e});
      continue;
    }
    const auto k = index_of(n);
    if (k == its.list.size()) continue;
    auto& it = its.list[k];
    it.work_end = std::max(it.work_end, e);
    it.device_first = it.device_first < 0 ? b : std::min(it.device_first, b);
    it.device_end = std::max(it.device_end, e);
  }
  time_ns earlier = std::numeric_limits<time_ns>::min(); // latest end of the earlier iterations' GPU ops
  for (auto& it : its.list) {
    if (it.device_first >= 0) {
      const auto prior = std::max(earlier, daydream::detail::end_of_work_queued_before(outside, it.device_first));
      it.device_begin = daydream::detail::last_iteration_window(it.begin, it.cpu_end, it.device_first, it.device_end, prior)
                            .device_begin;
      if (prior > it.begin) it.backlog_end = std::min(prior, it.device_end);
    }
    earlier = std::max(earlier, it.device_end);
  }
}

//! @endcond

} // namespace daydream::io::detail

#endif
