// Defines breakdowns of a replay: busy time per phase and resource, and the critical path of one iteration.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_ANALYSIS_HPP
#define DAYDREAM_ANALYSIS_HPP

#include <daydream/config.hpp>
#include <daydream/iteration.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// What bounds an iteration: the kind of work that holds most of its critical path.
enum class bound_by : std::uint8_t {
  cpu, gpu, communication, memory_copies, idle,
  /// CPU-bound, with most of the critical path's CPU time in a DataLoader's `__next__`
  /// on the training thread: the step waits for its input (iteration_breakdown::critical_input).
  input,
};

inline constexpr std::string_view to_string(bound_by b) noexcept {
  switch (b) {
  case bound_by::cpu: return "CPU";
  case bound_by::gpu: return "GPU";
  case bound_by::communication: return "communication";
  case bound_by::memory_copies: return "memory copies";
  case bound_by::idle: return "idle gaps";
  case bound_by::input: return "input";
  }
  return "?";
}

/// The span of iteration `i` in a replay (see iteration_spans), or nothing if `g` has no
/// task of that iteration.
template <class Graph>
std::optional<iteration_span> span_of(const Graph& g, const replay_result& r, std::int32_t i) {
  for (auto& s : iteration_spans(g, r))
    if (s.iteration == i) return s;
  return std::nullopt;
}

/// The length of the union of the intervals `v` (half-open, [first, second)) clipped to
/// [lo, hi): the time during which at least one of them runs. Sorts `v`.
inline time_ns union_length(std::vector<std::pair<time_ns, time_ns>>& v, time_ns lo, time_ns hi) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end()); // a resource's tasks mostly are

  time_ns total = 0, cur_b = 0, cur_e = 0;
  bool open = false;
  for (auto [b, e] : v) {
    b = std::max(b, lo);
    e = std::min(e, hi);
    if (e <= b) continue;
    if (open && b <= cur_e) { cur_e = std::max(cur_e, e); continue; }
    if (open) total += cur_e - cur_b;
    cur_b = b;
    cur_e = e;
    open = true;
  }
  if (open) total += cur_e - cur_b;
  return total;
}

/// The steady-state step of one iteration: how long a training loop that repeats it
/// takes per step. A replay measures an iteration from its first task to the next
/// iteration's first task (iteration_spans), which is the step only when no resource
/// falls behind: when one does (a link whose all-reduces pile up while the CPU runs
/// ahead, a GPU whose queue grows), the span is shorter than the work that resource does
/// per iteration, and repeating the iteration would make the backlog grow without bound.
/// The step is then the bottleneck's work: the union of the replayed intervals of the
/// iteration's own tasks on its busiest resource (a CPU thread's gaps, untraced time
/// between its slices, do not count).
struct steady_step {
  std::int32_t iteration = 0;
  time_ns span = -1;  ///< the replayed span (iteration_time); -1: no task of the iteration
  time_ns work = 0;   ///< the busiest resource's work in the iteration
  resource_id busiest = no_resource; ///< that resource
  /// The step: the larger of the span and the busiest resource's work (-1 without tasks).
  time_ns step() const noexcept { return span < 0 ? -1 : std::max(span, work); }
  /// Whether a resource's backlog, not the span, decides the step.
  bool backlogged() const noexcept { return span >= 0 && work > span; }
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// Where a task counts in the steady-state steps: its span slot (slot << 1 | on the GPU
/// side) and its work slot (slot << 1 | on a fair-share resource), or the codes below.
struct steady_code {
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max(); ///< no task; no work slot
  static constexpr std::uint32_t outside = none - 1;   ///< span: GPU-side, of no iteration
  static constexpr std::uint32_t unspanned = none - 2; ///< span: CPU-side, of no iteration
  std::uint32_t span = none;
  std::uint32_t work = none;
};

/// Finds the steady_code of each task of a graph for the steps of iterations `its`: a
/// span slot per iteration met (in the order met; slots() gives their iterations), the
/// work slot k * resources + resource for a task of `its[k]`.
class steady_coder {
public:
  template <class Graph> steady_coder(const Graph& g, const std::vector<std::int32_t>& its) : n_its_(its.size()) {
    nres_ = g.resource_count();
    shared_.assign(nres_, 0);
    device_.assign(nres_, 0);
    for (std::size_t res = 0; res < nres_; ++res) {
      shared_[res] = g.resource_at(resource_id(res)).share != sharing::exclusive;
      device_[res] = !is_cpu(g.resource_at(resource_id(res)).kind);
    }
    if (n_its_ * nres_ >= (std::size_t(1) << 31))
      throw error("daydream: steady-state steps: " + std::to_string(n_its_) + " iterations of " +
                  std::to_string(nres_) + " resources are more than they can index");
    // An analysed iteration's index comes from a table over their range when it is small.
    for (std::size_t k = 0; k < its.size(); ++k) at_.emplace(its[k], k);
    if (!its.empty()) {
      lo_ = *std::min_element(its.begin(), its.end());
      const auto hi = *std::max_element(its.begin(), its.end());
      if (std::int64_t(hi) - lo_ < (std::int64_t(1) << 16)) {
        index_of_.assign(std::size_t(std::int64_t(hi) - lo_ + 1), n_its_);
        for (auto& [i, k] : at_) index_of_[std::size_t(std::int64_t(i) - lo_)] = k;
      }
    }
  }

  /// The code of live task `t` of the graph (a span slot is made for its iteration when
  /// it is the first met: the last one met is looked up first).
  template <class Graph> steady_code code(const Graph& g, task_id t) {
    steady_code c;
    const auto i = g.iteration(t);
    const auto res = g.resource_of(t);
    const bool known = res != no_resource && res < nres_;
    const bool dev = known && device_[res];
    if (i < 0) {
      c.span = dev ? steady_code::outside : steady_code::unspanned;
    } else {
      if (slots_.empty() || slots_[last_] != i) {
        auto [it, added] = span_of_.try_emplace(i, slots_.size());
        if (added) {
          if (slots_.size() >= steady_code::unspanned >> 1)
            throw error("daydream: steady-state steps: more iterations than they can index");
          slots_.push_back(i);
        }
        last_ = it->second;
      }
      c.span = std::uint32_t(last_ << 1 | std::size_t(dev));
    }
    std::size_t k = n_its_;
    if (!index_of_.empty()) {
      if (i >= lo_ && std::int64_t(i) - lo_ < std::int64_t(index_of_.size())) k = index_of_[std::size_t(std::int64_t(i) - lo_)];
    } else if (auto it = at_.find(i); it != at_.end()) {
      k = it->second;
    }
    if (k < n_its_ && known) c.work = std::uint32_t((k * nres_ + res) << 1 | shared_[res]);
    return c;
  }

  /// The iteration of each span slot made so far.
  const std::vector<std::int32_t>& slots() const noexcept { return slots_; }
  /// Which resources share (fair-share), by resource id.
  const std::vector<std::uint8_t>& shared() const noexcept { return shared_; }
  /// Work slots: the analysed iterations times the resources.
  std::size_t work_slots() const noexcept { return n_its_ * nres_; }
  std::size_t resources() const noexcept { return nres_; }

private:
  std::size_t n_its_ = 0, nres_ = 0, last_ = 0;
  std::vector<std::uint8_t> shared_, device_;
  std::map<std::int32_t, std::size_t> at_, span_of_;
  std::int32_t lo_ = 0;
  std::vector<std::size_t> index_of_; ///< iteration - lo_ -> its index in `its` (n_its_: not analysed); empty: use at_
  std::vector<std::int32_t> slots_;
};

/// What steady_steps sums, task by task, and the steps it makes of it. A task adds to its
/// iteration's span, to the GPU-side work of no iteration, and to the work of its
/// (analysed iteration, resource): an exclusive resource runs one task at a time, so its
/// work is the sum of its tasks' replayed times; a fair-share one keeps its intervals,
/// whose union is its work.
struct steady_sums {
  std::vector<iteration_span> spans; ///< per span slot; `tasks` 0: none of its tasks ran
  std::vector<std::pair<time_ns, time_ns>> outside; ///< GPU-side tasks of no iteration
  std::vector<time_ns> busy;                         ///< exclusive work per work slot
  std::vector<std::vector<std::pair<time_ns, time_ns>>> iv; ///< fair-share intervals per work slot

  /// Empty sums over the spans of iterations `slots` and `work` work slots.
  void reset(const std::vector<std::int32_t>& slots, std::size_t work) {
    spans.clear();
    fit(slots);
    outside.clear();
    busy.assign(work, 0);
    for (auto& v : iv) v.clear();
    iv.resize(work);
  }
  /// Empty spans for the slots of `slots` not summed yet.
  void fit(const std::vector<std::int32_t>& slots) {
    while (spans.size() < slots.size()) {
      iteration_span s;
      s.iteration = slots[spans.size()];
      s.first_start = std::numeric_limits<time_ns>::max();
      s.last_end = s.cpu_end = std::numeric_limits<time_ns>::min();
      spans.push_back(s);
    }
  }
  /// A task of code `c` that the replay ran over [start, end) (start < 0: it did not run).
  void add(steady_code c, time_ns start, time_ns end) {
    if (c.span == steady_code::none || start < 0) return;
    if (c.span < steady_code::unspanned) span_builder::extend(spans[c.span >> 1], start, end, c.span & 1);
    else if (c.span == steady_code::outside) outside.push_back({start, end});
    if (c.work == steady_code::none || end <= start) return;
    if (c.work & 1) iv[c.work >> 1].push_back({start, end});
    else busy[c.work >> 1] += end - start;
  }

  /// The steps of iterations `its`: work slot k * `nres` + resource is `its[k]`'s on that
  /// resource, `shared` says which resources share.
  std::vector<steady_step> steps(const std::vector<std::int32_t>& its, std::size_t nres,
                                 const std::vector<std::uint8_t>& shared) {
    std::vector<steady_step> out(its.size());
    for (std::size_t k = 0; k < its.size(); ++k) out[k].iteration = its[k];
    span_builder b;
    b.spans.reserve(spans.size());
    for (auto& s : spans)
      if (s.tasks > 0) b.spans.push_back(s);
    b.outside = std::move(outside);
    const auto closed = b.close();
    outside = std::move(b.outside);
    for (auto& s : closed)
      for (std::size_t k = 0; k < its.size(); ++k)
        if (its[k] == s.iteration) out[k].span = s.duration();
    for (std::size_t k = 0; k < its.size(); ++k)
      for (std::size_t res = 0; res < nres; ++res) {
        const std::size_t w = k * nres + res;
        const auto work = shared[res] ? union_length(iv[w], std::numeric_limits<time_ns>::min(),
                                                     std::numeric_limits<time_ns>::max())
                                      : busy[w];
        if (work == 0) continue;
        auto& s = out[k];
        if (work > s.work) {
          s.work = work;
          s.busiest = resource_id(res);
        }
      }
    return out;
  }
};
} // namespace detail
//! @endcond

/// The steady-state steps of iterations `its` of a replay of `g` (see steady_step), in
/// the order of `its`. One pass over the tasks: O(V log V). For many replays of one graph
/// (the what-ifs of a duration_overlay), steady_plan reads the graph once.
template <class Graph>
std::vector<steady_step> steady_steps(const Graph& g, const replay_result& r, const std::vector<std::int32_t>& its) {
  check_replay_of(g, r, "steady_steps");
  detail::steady_coder coder(g, its);
  detail::steady_sums sums;
  sums.reset({}, coder.work_slots());
  // A plain loop over the ids (a per-task lambda through for_each_task is not inlined
  // by every compiler).
  for (task_id t = 0, n = g.id_bound(); t < n; ++t) {
    if (!g.contains(t) || r.start[t] < 0) continue;
    const auto c = coder.code(g, t);
    sums.fit(coder.slots());
    sums.add(c, r.start[t], r.end[t]);
  }
  return sums.steps(its, coder.resources(), coder.shared());
}

/// What steady_steps reads of a graph, read once, for many replays of it that change no
/// task, iteration or resource: the what-ifs of a duration_overlay, the rows of a
/// sensitivity profile. `steps(r)` is `steady_steps(g, r, its)` for a replay `r` of `g`
/// (or of an overlay over it), one pass over the replay's times and 8 bytes per task id;
/// it reuses its working memory, so a plan serves one thread at a time (copy it for more).
///
///     daydream::duration_overlay o(g);
///     daydream::steady_plan plan(g, its);
///     daydream::replay_result r;
///     for (auto t : slow) {
///       o.reset();
///       o.scale_duration(t, 0.5);
///       daydream::replay_into(o, r);
///       fmt::print("{}\n", plan.steps(r)[0].step());
///     }
class steady_plan {
public:
  steady_plan() = default;
  template <class Graph> steady_plan(const Graph& g, std::vector<std::int32_t> its) : its_(std::move(its)) {
    detail::steady_coder coder(g, its_);
    codes_.assign(g.id_bound(), detail::steady_code{});
    for (task_id t = 0, n = g.id_bound(); t < n; ++t)
      if (g.contains(t)) codes_[t] = coder.code(g, t);
    slots_ = coder.slots();
    shared_ = coder.shared();
    nres_ = coder.resources();
  }

  /// The steady-state steps of the plan's iterations in replay `r` (steady_steps), in
  /// their order. Throws daydream::error if `r` is not a replay of the plan's graph.
  std::vector<steady_step> steps(const replay_result& r) {
    if (r.start.size() != codes_.size() || r.end.size() != codes_.size())
      throw error("daydream: steady_plan: the replay result covers " + std::to_string(r.start.size()) +
                  " task ids, the plan's graph has " + std::to_string(codes_.size()) +
                  "; it is not a replay of this graph (make the plan again after changing the graph)");
    sums_.reset(slots_, its_.size() * nres_);
    const time_ns* start = r.start.data();
    const time_ns* end = r.end.data();
    for (std::size_t t = 0, n = codes_.size(); t < n; ++t) sums_.add(codes_[t], start[t], end[t]);
    return sums_.steps(its_, nres_, shared_);
  }
  /// The iterations whose steps the plan gives.
  const std::vector<std::int32_t>& iterations() const noexcept { return its_; }

private:
  std::vector<std::int32_t> its_;
  std::size_t nres_ = 0;
  std::vector<std::int32_t> slots_; ///< the iteration of each span slot
  std::vector<std::uint8_t> shared_;
  std::vector<detail::steady_code> codes_;
  detail::steady_sums sums_;
};

/// The critical path of one iteration: the chain of tasks that decides when the iteration
/// ends, followed back (through replay_result::pred) until it leaves the iteration's span.
///
/// The span is the one iteration_time measures: from the iteration's first task to the
/// first task of the next iteration (for the last iteration, its CPU or its GPU window:
/// iteration_span). The chain starts at the task that let the next iteration's first task
/// start (for the last iteration: at its last-ending task within the window) and may pass through tasks of other
/// iterations that run inside the span; its first task may have started before the span
/// (breakdown clips it). Every task of the chain ends after the span's begin and no later
/// than its end. First task first; empty if `g` has no task of the iteration.
template <class Graph>
std::vector<critical_step> iteration_critical_path(const Graph& g, const replay_result& r,
                                                   std::int32_t iteration) {
  std::vector<critical_step> path;
  auto spans = iteration_spans(g, r);
  auto it = std::find_if(spans.begin(), spans.end(), [&](auto& s) { return s.iteration == iteration; });
  if (it == spans.end()) return path;
  const auto span = *it;
  const bool has_next = it + 1 != spans.end() && (it + 1)->iteration == iteration + 1;
  task_id last = no_task;
  if (has_next) {
    task_id first_next = no_task;
    g.for_each_task([&](task_id t) {
      if (first_next == no_task && g.iteration(t) == iteration + 1 && r.start[t] == span.end) first_next = t;
    });
    if (first_next != no_task) last = r.pred[first_next];
  } else {
    // The task that ends the window: its last CPU task, or, when the GPU's window is the
    // longer (iteration_span), its last GPU-side task.
    g.for_each_task([&](task_id t) {
      if (g.iteration(t) == iteration && r.end[t] >= 0 && r.end[t] <= span.end &&
          (last == no_task || r.end[t] > r.end[last]))
        last = t;
    });
  }
  for (auto t = last; t != no_task && r.end[t] > span.begin; t = r.pred[t])
    path.push_back({t, r.why[t], r.edge[t]});
  std::reverse(path.begin(), path.end());
  return path;
}

/// The kind of work a task is, for breakdowns: CPU, GPU kernel, communication, copy.
enum class work_kind : std::uint8_t { cpu, gpu_kernel, communication, memory_copy };

/// The work_kind of task `t`.
template <class Graph> work_kind work_kind_of(const Graph& g, task_id t) {
  if (g.template is<cpu_task>(t)) return work_kind::cpu;
  if (g.template is<comm_task>(t)) return work_kind::communication;
  if (g.template is<memcpy_task>(t)) return work_kind::memory_copy;
  return work_kind::gpu_kernel;
}

/// A layer's name without its instance number: "Linear" for "Linear_3", "aten::conv2d"
/// for "aten::conv2d#7" (layers are numbered per iteration, docs/ingest.md); other names
/// are returned whole. Critical-path summaries group by it.
inline std::string_view layer_kind(std::string_view layer) noexcept {
  auto end = layer.size();
  while (end > 0 && layer[end - 1] >= '0' && layer[end - 1] <= '9') --end;
  if (end == layer.size() || end < 2) return layer;
  if (layer[end - 1] == '#' || layer[end - 1] == '_') return layer.substr(0, end - 1);
  return layer;
}

/// Where the time of one iteration goes. Every figure lies within the iteration's span
/// (busy times are unions of intervals clipped to it, so none exceeds `duration`), and the
/// critical path's parts add up to `duration` exactly.
struct iteration_breakdown {
  std::int32_t iteration = 0;
  /// The window, in replay time: the iteration's span (iteration_spans), or, when a
  /// resource falls behind (steady_step::backlogged), its steady-state step from the
  /// span's begin: the step `daydream whatif` gives, of which the breakdown is.
  time_ns begin = 0;
  time_ns end = 0;
  time_ns duration = 0; ///< end - begin: iteration_time, or the steady-state step
  /// Time during which at least one CPU task of the phase runs (index: phase).
  std::array<time_ns, 4> cpu_by_phase{};
  /// Time during which at least one GPU kernel or memory copy of the phase runs.
  std::array<time_ns, 4> gpu_by_phase{};
  /// Time during which at least one communication task (collective, transfer) of the phase runs.
  std::array<time_ns, 4> comm_by_phase{};
  /// Time with any GPU kernel or copy running, attributed to one phase at each instant
  /// (the first of forward, backward, weight_update, other that runs then): the four add
  /// up to gpu_busy.
  std::array<time_ns, 4> gpu_busy_by_phase{};
  time_ns gpu_busy = 0;          ///< time with any GPU kernel or copy running
  time_ns comm_busy = 0;         ///< time with any communication running
  time_ns comm_overlapped = 0;   ///< time with communication and GPU kernels or copies running
  /// Per resource, the time at least one of its tasks runs; busiest first.
  std::vector<std::pair<resource_id, time_ns>> busy;
  /// Critical-path time per kind of work: CPU (with critical_cpu_gaps), GPU kernels,
  /// communication, copies, idle (other time between the chain's tasks). The five add up
  /// to `duration`: past the span, a backlogged step's time is the kind of work its
  /// busiest resource does.
  std::array<time_ns, 5> critical{};
  /// Critical-path CPU time spent in calls that launch GPU work (cpu_call::launch).
  time_ns critical_launch = 0;
  /// Of critical[0]: time a CPU thread spent between its traced tasks while the chain
  /// waited for it (the trace's gaps: untraced Python work, data loading, waits the
  /// profiler did not record). A gap the chain waited through for another reason (launch
  /// latency, a dependency) is idle.
  time_ns critical_cpu_gaps = 0;
  /// Of critical[0]: time in a DataLoader's `__next__` (tasks named
  /// `enumerate(DataLoader)#...__next__`, and the thread's untraced time just before
  /// them): the training thread loading its batch while the step waits.
  time_ns critical_input = 0;
  /// What bounds the iteration: the kind of work holding most of the critical path;
  /// `input` when that is CPU work and at least half of it is data loading.
  bound_by bound = bound_by::idle;
  /// Critical-path time per (layer, phase), largest first (gaps, CPU or idle, are in no entry).
  std::vector<std::pair<std::pair<std::string, phase>, time_ns>> critical_by_layer;
  /// Critical-path time per resource, largest first.
  std::vector<std::pair<resource_id, time_ns>> critical_by_resource;
  /// Tasks on the critical path.
  std::size_t critical_tasks = 0;
};

/// Breaks iteration `iteration` of a replay down by phase, resource and critical path.
/// Every task that runs inside the iteration's span counts, whatever its iteration number
/// (the previous iteration's last kernels, work outside any iteration), clipped to the span.
template <class Graph>
iteration_breakdown breakdown(const Graph& g, const replay_result& r, std::int32_t iteration) {
  iteration_breakdown b;
  b.iteration = iteration;
  auto span = span_of(g, r, iteration);
  if (!span) return b;
  b.begin = span->begin;
  b.end = span->end;
  // A resource that falls behind decides the step (steady_steps): the window is then the
  // step, from the span's begin, so that the breakdown is of the step the headline gives.
  const auto steady = steady_steps(g, r, {iteration}).front();
  if (steady.backlogged()) b.end = b.begin + steady.step();
  b.duration = b.end - b.begin;
  using intervals = std::vector<std::pair<time_ns, time_ns>>;
  std::array<intervals, 4> cpu, gpu, comm;
  std::map<resource_id, intervals> per_res;
  std::array<time_ns, 5> busiest_kinds{}; // the backlogged resource's own time per work_kind
  // GPU compute and communication edges for the overlap sweep: (time, +1/-1, phase or 4 for comm).
  std::vector<std::pair<time_ns, std::pair<int, int>>> edges;
  g.for_each_task([&](task_id t) {
    if (t >= r.start.size() || r.start[t] < 0) return;
    auto s = std::max(r.start[t], b.begin), e = std::min(r.end[t], b.end);
    if (e <= s) return;
    auto p = static_cast<std::size_t>(g.phase_of(t));
    auto k = work_kind_of(g, t);
    if (k == work_kind::cpu) cpu[p].push_back({s, e});
    else if (k == work_kind::communication) comm[p].push_back({s, e});
    else gpu[p].push_back({s, e});
    if (k != work_kind::cpu) {
      int tag = k == work_kind::communication ? 4 : int(p);
      edges.push_back({s, {1, tag}});
      edges.push_back({e, {-1, tag}});
    }
    if (g.resource_of(t) != no_resource) per_res[g.resource_of(t)].push_back({s, e});
    if (steady.backlogged() && g.resource_of(t) == steady.busiest) busiest_kinds[static_cast<std::size_t>(k)] += e - s;
  });
  for (std::size_t p = 0; p < 4; ++p) {
    b.cpu_by_phase[p] = union_length(cpu[p], b.begin, b.end);
    b.gpu_by_phase[p] = union_length(gpu[p], b.begin, b.end);
    b.comm_by_phase[p] = union_length(comm[p], b.begin, b.end);
  }
  // Sweep: which phases of GPU work and whether communication run in each elementary segment.
  std::sort(edges.begin(), edges.end(), [](auto& x, auto& y) {
    return x.first != y.first ? x.first < y.first : x.second.first < y.second.first; // ends first
  });
  std::array<int, 5> active{};
  time_ns prev = b.begin;
  for (auto& [t, ev] : edges) {
    if (t > prev) {
      const time_ns seg = t - prev;
      int ph = -1;
      for (int p = 0; p < 4 && ph < 0; ++p)
        if (active[p] > 0) ph = p;
      if (ph >= 0) { b.gpu_busy_by_phase[ph] += seg; b.gpu_busy += seg; }
      if (active[4] > 0) {
        b.comm_busy += seg;
        if (ph >= 0) b.comm_overlapped += seg;
      }
      prev = t;
    }
    active[ev.second] += ev.first;
  }
  for (auto& [res, v] : per_res) b.busy.push_back({res, union_length(v, b.begin, b.end)});
  std::stable_sort(b.busy.begin(), b.busy.end(), [](auto& x, auto& y) { return x.second > y.second; });

  auto loads_input = [&](task_id t) { return is_dataloader_fetch(g.name(t)); };
  auto path = iteration_critical_path(g, r, iteration);
  b.critical_tasks = path.size();
  std::map<std::pair<std::string, phase>, time_ns> by_layer;
  std::map<resource_id, time_ns> by_res;
  time_ns prev_end = b.begin;
  for (auto& step : path) {
    auto t = step.task;
    auto s = std::max({r.start[t], b.begin, prev_end}), e = std::min(r.end[t], b.end);
    if (e <= s) continue;
    if (s > prev_end) {
      const auto res = g.resource_of(t);
      const bool program_order = step.why == binding::resource ||
                                 (step.why == binding::dependency && step.edge == dep_kind::cpu_order);
      if (program_order && res != no_resource && is_cpu(g.resource_at(res).kind)) {
        b.critical[0] += s - prev_end; // the thread's own untraced time
        b.critical_cpu_gaps += s - prev_end;
        if (loads_input(t)) b.critical_input += s - prev_end;
        by_res[res] += s - prev_end;
      } else {
        b.critical[4] += s - prev_end;
      }
    }
    prev_end = e;
    const auto d = e - s;
    auto k = work_kind_of(g, t);
    b.critical[static_cast<std::size_t>(k)] += d; // work_kind's order is critical's
    if (k == work_kind::cpu) {
      if (auto h = g.template as<cpu_task>(t); h && g.payload(h).call == cpu_call::launch) b.critical_launch += d;
      if (loads_input(t)) b.critical_input += d;
    }
    by_layer[{std::string(g.layer(t)), g.phase_of(t)}] += d;
    if (g.resource_of(t) != no_resource) by_res[g.resource_of(t)] += d;
  }
  if (span->end > prev_end) b.critical[4] += span->end - prev_end;
  // Past the span, the step is the backlogged resource's work: its kind of work holds it.
  if (b.end > span->end) {
    const auto kind = std::max_element(busiest_kinds.begin(), busiest_kinds.end()) - busiest_kinds.begin();
    b.critical[static_cast<std::size_t>(kind)] += b.end - span->end;
    by_res[steady.busiest] += b.end - span->end;
  }
  auto top = std::max_element(b.critical.begin(), b.critical.end()) - b.critical.begin();
  constexpr bound_by order[] = {bound_by::cpu, bound_by::gpu, bound_by::communication,
                                bound_by::memory_copies, bound_by::idle};
  b.bound = order[top];
  if (b.bound == bound_by::cpu && 2 * b.critical_input >= b.critical[0] && b.critical_input > 0) b.bound = bound_by::input;
  for (auto& [k, d] : by_layer) b.critical_by_layer.push_back({k, d});
  std::stable_sort(b.critical_by_layer.begin(), b.critical_by_layer.end(),
                   [](auto& x, auto& y) { return x.second > y.second; });
  for (auto& [res, d] : by_res) b.critical_by_resource.push_back({res, d});
  std::stable_sort(b.critical_by_resource.begin(), b.critical_by_resource.end(),
                   [](auto& x, auto& y) { return x.second > y.second; });
  return b;
}

} // namespace daydream

#endif
