// Defines the replay of a job and its explanation: per-rank iteration times, compute / transfer / wait (and for whom), the straggler, the critical path across ranks; and the job scenarios (no_straggler, representative worker).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_JOB_REPLAY_HPP
#define DAYDREAM_JOB_REPLAY_HPP

#include <daydream/config.hpp>
#include <daydream/iteration.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/replay.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream {

/// One rank of a replayed job.
struct rank_result {
  std::int32_t rank = -1;
  std::vector<time_ns> per_iteration; ///< replayed time of each analysed iteration (-1: none)
  /// Its replayed time in the focus iteration (job_result::iteration; per_iteration
  /// there), -1 if it has none. The job's iteration is the largest of these.
  time_ns predicted = -1;
  time_ns measured = -1;              ///< the trace's time of the same iteration (-1: unknown)
  /// In the focus iteration, the rank's span split into time computing (a GPU kernel or
  /// copy of the rank running), else transferring (a collective's transfer), else waiting
  /// for other ranks at a collective, else other (the GPU idle: CPU-bound or between
  /// iterations); the four add up to `predicted`.
  time_ns compute = 0, transfer = 0, wait = 0, other = 0;
  /// The waiting time by the rank waited for (the last to arrive); sums to `wait`.
  std::map<std::int32_t, time_ns> waited_for;
};

/// The rank that makes the others wait, and why.
struct straggler_report {
  std::int32_t rank = -1;          ///< -1: no rank waited for another
  time_ns caused = 0;              ///< the others' waiting for it in the focus iteration
  std::size_t last_arrivals = 0;   ///< collectives of the focus iteration it arrived last at
  std::size_t collectives = 0;     ///< collectives of the focus iteration
  std::vector<std::pair<std::string, time_ns>> operations; ///< what made it late, longest first
  std::string reason;              ///< one sentence for people
};

/// A stretch of the critical path on one rank (rank -1: the job's own tasks, its
/// collectives' barriers and, at the fine level, their chunk transfers).
struct critical_segment {
  std::int32_t rank = -1;
  time_ns time = 0;        ///< task time on the path in this stretch
  std::size_t tasks = 0;
};

/// The replay of a job and what it says.
struct job_result {
  replay_result r;                      ///< the replay of job_graph::g
  std::vector<std::int32_t> iterations; ///< the analysed iterations
  /// The focus iteration: the one whose job time is the median (the first such); every
  /// rank's predicted time and its parts are of this iteration.
  std::int32_t iteration = -1;
  std::vector<rank_result> ranks;       ///< by rank index
  std::vector<time_ns> per_iteration;   ///< job time per analysed iteration: the slowest rank's
  /// The job's iteration time: the median of per_iteration, which is the focus
  /// iteration's, the slowest rank's predicted time.
  time_ns predicted = -1;
  straggler_report straggler;
  std::vector<critical_segment> critical; ///< the critical path across ranks, in order
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
// A duration for people: three significant digits and a unit ("3.21 ms").
inline std::string job_time(time_ns ns) {
  char buf[48];
  const double v = double(ns), a = v < 0 ? -v : v;
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", v);
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.3g us", v / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.3g ms", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3g s", v / 1e9);
  return buf;
}
struct interval {
  time_ns b = 0, e = 0;
  int cls = 0;           // 0 compute, 1 transfer, 2 wait
  std::int32_t whom = -1;
};
} // namespace detail
//! @endcond

/// Per rank index, its iteration spans in replay `r` of `jg` (as iteration_spans, over the
/// rank's own tasks).
inline std::vector<std::vector<iteration_span>> rank_iteration_spans(const job_graph& jg, const replay_result& r) {
  check_replay_of(jg.g, r, "rank_iteration_spans");
  std::vector<detail::span_builder> m(jg.ranks.size());
  jg.g.for_each_task([&](task_id t) {
    if (auto k = jg.rank_index_of(t); k >= 0) m[std::size_t(k)].add(jg.g, t, r);
  });
  std::vector<std::vector<iteration_span>> out;
  for (auto& b : m) out.push_back(b.close());
  return out;
}

/// When rank part `part` of a modelled collective was ready to start in replay `r`: the
/// latest end of what it waited for other than the barrier (its own rank's arrival).
inline time_ns arrival_of(const job_graph& jg, const replay_result& r, task_id part, task_id barrier) {
  // The rank's own tasks only: the barrier and the fine level's transfers come after them.
  const task_id own = jg.first_task.empty() ? jg.g.id_bound() : jg.first_task.back();
  time_ns at = 0;
  for (auto d : jg.g.predecessors(part))
    if (d.from != barrier && d.from < own && r.end[d.from] >= 0) at = std::max(at, r.end[d.from]);
  return at;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {

// The explanation of a job's replay (analyse_job), in steps over `out.r`: each rank's
// iterations and the focus iteration; per rank the intervals of that iteration spent
// computing, transferring and waiting (and for whom); their exclusive split; the
// straggler; the critical path by rank.
class job_analysis {
public:
  job_analysis(const job& j, const job_graph& jg, const std::vector<std::int32_t>& iterations, job_result& out)
      : j_(j), jg_(jg), iterations_(iterations), out_(out), r_(out.r), iv_(jg.ranks.size()),
        window_(jg.ranks.size(), {0, -1}) {}

  void run() {
    spans_ = rank_iteration_spans(jg_, r_);
    iteration_times();
    choose_focus();
    for (std::size_t k = 0; k < jg_.ranks.size(); ++k)
      for (auto& s : spans_[k])
        if (s.iteration == out_.iteration) window_[k] = {s.begin, s.end};
    for (auto& c : jg_.collectives)
      for (auto p : c.parts) parts_.insert(p);
    task_intervals();
    transfer_intervals();
    for (auto& c : jg_.collectives) wait_intervals(c);
    for (std::size_t k = 0; k < jg_.ranks.size(); ++k) split(k);
    find_straggler();
    critical_path();
  }

private:
  // Each rank's time per analysed iteration, and the job's (the slowest rank's).
  void iteration_times() {
    out_.ranks.resize(jg_.ranks.size());
    for (std::size_t k = 0; k < jg_.ranks.size(); ++k) {
      auto& rr = out_.ranks[k];
      rr.rank = jg_.ranks[k];
      for (auto i : iterations_) {
        time_ns t = -1;
        for (auto& s : spans_[k])
          if (s.iteration == i) t = s.duration();
        rr.per_iteration.push_back(t);
      }
    }
    for (std::size_t x = 0; x < iterations_.size(); ++x) {
      time_ns t = -1;
      for (auto& rr : out_.ranks) t = std::max(t, rr.per_iteration[x]);
      out_.per_iteration.push_back(t);
    }
    out_.predicted = median_of(out_.per_iteration);
  }

  // Every rank is told in the focus iteration, so that the job's time is the slowest
  // rank's and each rank's parts add up to its time (a rank's own median iteration may
  // be another one, and the largest of those medians is not the job's median).
  void choose_focus() {
    for (std::size_t x = 0; x < iterations_.size(); ++x) {
      if (out_.per_iteration[x] != out_.predicted) continue;
      out_.iteration = iterations_[x];
      for (std::size_t k = 0; k < jg_.ranks.size(); ++k) {
        auto& rr = out_.ranks[k];
        rr.predicted = rr.per_iteration[x];
        if (k < j_.ranks.size())
          if (auto it = j_.ranks[k].measured.find(out_.iteration); it != j_.ranks[k].measured.end())
            rr.measured = it->second;
      }
      break;
    }
  }

  // The ranks' GPU work in the focus iteration: computing, or transferring for
  // communication tasks and collective parts.
  void task_intervals() {
    jg_.g.for_each_task([&](task_id t) {
      if (r_.start[t] < 0 || jg_.g.iteration(t) != out_.iteration) return;
      auto res = jg_.g.resource_of(t);
      if (res == no_resource) return;
      auto kind = jg_.g.resource_at(res).kind;
      if (kind == resource_kind::cpu_thread || kind == resource_kind::other) return;
      auto k = jg_.rank_index_of(t);
      if (k < 0) return;
      const bool comm = jg_.g.is<comm_task>(t) || parts_.count(t);
      iv_[std::size_t(k)].push_back({r_.start[t], r_.end[t], comm ? 1 : 0, -1});
    });
  }

  // The fine level: a rank transfers from the barrier until its kernel ends (its last
  // chunk arrived); the kernel itself takes no time.
  void transfer_intervals() {
    for (auto& c : jg_.collectives)
      if (c.transfers)
        for (std::size_t x = 0; x < c.parts.size(); ++x)
          if (jg_.g.iteration(c.parts[x]) == out_.iteration && r_.end[c.parts[x]] > r_.end[c.barrier])
            iv_[c.part_rank[x]].push_back({r_.end[c.barrier], r_.end[c.parts[x]], 1, -1});
  }

  // The waiting at collective `c` of the focus iteration: each rank from its arrival
  // until the barrier, for the rank that arrived last.
  void wait_intervals(const modelled_collective& c) {
    if (c.parts.empty() || jg_.g.iteration(c.parts.front()) != out_.iteration) return;
    ++focus_collectives_;
    const task_id p = r_.pred[c.barrier];
    const std::int32_t whom = p == no_task ? -1 : jg_.rank_of(p);
    if (whom >= 0) ++last_count_[whom];
    time_ns total = 0;
    for (std::size_t x = 0; x < c.parts.size(); ++x) {
      const time_ns arrive = arrival_of(jg_, r_, c.parts[x], c.barrier);
      const time_ns until = r_.end[c.barrier];
      if (until > arrive && whom >= 0 && whom != jg_.ranks[c.part_rank[x]]) {
        iv_[c.part_rank[x]].push_back({arrive, until, 2, whom});
        total += until - arrive;
      }
    }
    if (whom >= 0) caused_[whom] += total;
    if (total > worst_wait_) {
      worst_wait_ = total;
      worst_ = &c;
    }
  }

  // Rank `k`'s focus iteration split exclusively by a sweep: compute > transfer > wait > other.
  void split(std::size_t k) {
    auto& rr = out_.ranks[k];
    auto [b, e] = window_[k];
    if (e < b) return;
    struct ev { time_ns at; int delta; std::size_t idx; };
    std::vector<ev> evs;
    auto& v = iv_[k];
    for (std::size_t x = 0; x < v.size(); ++x) {
      auto lo = std::max(v[x].b, b), hi = std::min(v[x].e, e);
      if (hi <= lo) continue;
      evs.push_back({lo, +1, x});
      evs.push_back({hi, -1, x});
    }
    std::sort(evs.begin(), evs.end(), [](const ev& a, const ev& c) { return a.at < c.at || (a.at == c.at && a.delta < c.delta); });
    int active[2] = {0, 0};
    std::set<std::size_t> waits;
    time_ns prev = b, busy = 0;
    auto account = [&](time_ns until) {
      const time_ns d = until - prev;
      if (d <= 0) return;
      if (active[0]) rr.compute += d;
      else if (active[1]) rr.transfer += d;
      else if (!waits.empty()) { rr.wait += d; rr.waited_for[v[*waits.begin()].whom] += d; }
      else return;
      busy += d;
    };
    for (auto& x : evs) {
      account(x.at);
      prev = x.at;
      const auto cls = v[x.idx].cls;
      if (cls == 2) { if (x.delta > 0) waits.insert(x.idx); else waits.erase(x.idx); }
      else active[cls] += x.delta;
    }
    account(e);
    rr.other = (e - b) - busy;
  }

  // The straggler: the rank the others waited for longest.
  void find_straggler() {
    auto& st = out_.straggler;
    st.collectives = focus_collectives_;
    for (auto& [rank, t] : caused_)
      if (t > st.caused) { st.caused = t; st.rank = rank; }
    if (st.rank < 0) {
      st.reason = focus_collectives_ ? "no rank waited for another at the " + std::to_string(focus_collectives_) +
                                           " collective(s) of iteration " + std::to_string(out_.iteration)
                                     : "the ranks share no collective in iteration " + std::to_string(out_.iteration);
      return;
    }
    st.last_arrivals = last_count_[st.rank];
    late_operations();
    std::string s = "rank " + std::to_string(st.rank) + " arrived last at " + std::to_string(st.last_arrivals) + " of " +
                    std::to_string(focus_collectives_) + " collective(s) of iteration " + std::to_string(out_.iteration) +
                    "; the other ranks waited " + job_time(st.caused) + " for it in all";
    if (!st.operations.empty()) {
      s += "; late because of:";
      for (std::size_t x = 0; x < st.operations.size() && x < 3; ++x)
        s += std::string(x ? "," : "") + " " + st.operations[x].first + " (" + job_time(st.operations[x].second) + ")";
    }
    st.reason = s;
  }

  // What made the straggler late at the collective it delayed most: its own chain of
  // tasks back from its arrival to its previous synchronization (the five longest).
  void late_operations() {
    auto& st = out_.straggler;
    std::map<std::string, time_ns> ops;
    if (worst_) {
      for (task_id t = r_.pred[worst_->barrier]; t != no_task; t = r_.pred[t]) {
        if (jg_.rank_of(t) != st.rank || parts_.count(t) > 0) break;
        const auto k = std::size_t(jg_.rank_index_of(t));
        if (t == jg_.release_task[k]) ops["started late (its previous iteration ended late)"] += r_.duration(t);
        else if (r_.duration(t) > 0) ops[std::string(jg_.g.name(t))] += r_.duration(t);
      }
    }
    for (auto& [n, t] : ops) st.operations.emplace_back(n, t);
    std::sort(st.operations.begin(), st.operations.end(),
              [](auto& a, auto& c) { return a.second > c.second || (a.second == c.second && a.first < c.first); });
    if (st.operations.size() > 5) st.operations.resize(5);
  }

  // The critical path by rank.
  void critical_path() {
    const task_id own = jg_.first_task.empty() ? jg_.g.id_bound() : jg_.first_task.back();
    for (auto& step : r_.critical_path()) {
      const auto rank = step.task < own ? jg_.rank_of(step.task) : -1;
      if (out_.critical.empty() || out_.critical.back().rank != rank) out_.critical.push_back({rank, 0, 0});
      out_.critical.back().time += r_.duration(step.task);
      ++out_.critical.back().tasks;
    }
  }

  const job& j_;
  const job_graph& jg_;
  const std::vector<std::int32_t>& iterations_;
  job_result& out_;
  const replay_result& r_;
  std::vector<std::vector<iteration_span>> spans_;          // by rank index
  std::vector<std::vector<interval>> iv_;                   // by rank index, in the focus iteration
  std::vector<std::pair<time_ns, time_ns>> window_;         // by rank index: its focus iteration
  std::set<task_id> parts_;                                 // the collectives' parts
  std::map<std::int32_t, time_ns> caused_;                  // by rank: the others' waiting for it
  std::map<std::int32_t, std::size_t> last_count_;          // by rank: collectives it arrived last at
  std::size_t focus_collectives_ = 0;
  const modelled_collective* worst_ = nullptr;              // the collective waited at longest
  time_ns worst_wait_ = -1;
};

} // namespace detail
//! @endcond

/// Replays job graph `jg` of job `j` and explains it for `iterations` (empty: the job's
/// analysed iterations): each rank's predicted and measured iteration, its compute /
/// transfer / wait split and whom it waited for, the job's iteration time (the slowest
/// rank's), the straggler with the operations that made it late, and the critical path
/// across ranks.
inline job_result analyse_job(const job& j, const job_graph& jg, std::vector<std::int32_t> iterations = {},
                              const replay_options& options = {}) {
  job_result out;
  if (iterations.empty()) iterations = j.analysed_iterations();
  out.iterations = iterations;
  out.r = replay(jg.g, trace_order_policy{}, options);
  detail::job_analysis(j, jg, iterations, out).run();
  return out;
}

/// The result of no_straggler: the job with the chosen ranks made like the median one.
struct no_straggler_result {
  job j;                                   ///< the changed job
  std::vector<std::int32_t> ranks;         ///< the ranks changed
  std::int32_t like = -1;                  ///< the rank whose task durations they took
  std::size_t changed = 0, unmatched = 0;  ///< tasks given the median's duration / without a counterpart
  std::map<std::size_t, std::size_t> start_like; ///< for job_model_options::start_like
};

/// dPRO-style what-if "what if these ranks were not slow": each rank of `ranks` takes the
/// task durations and gaps of rank `like`, task by task: the k-th task of a kind and name
/// on one rank is the k-th of that kind and name on the other. Recorded collective
/// kernels are left alone (the collective model sets them), and the ranks start when
/// `like` starts. Tasks without a counterpart keep their own times and are counted.
///
/// By default `like` is the median rank of `res` by its own time (its predicted iteration
/// less its waiting for other ranks; ties by rank) among the ranks not in `ranks` (among
/// all when `ranks` names every rank). Not by the predicted iteration alone: in a job
/// whose ranks synchronize every iteration, each rank's iteration is the straggler's (the
/// others wait for it), and the median of equal times could be the straggler itself.
inline no_straggler_result no_straggler(const job& j, const job_result& res, std::vector<std::int32_t> ranks,
                                        std::int32_t like = -1) {
  no_straggler_result out;
  out.j = j;
  if (like < 0) {
    // The ranks left as they are with a predicted iteration; else any with one; else any.
    std::vector<std::pair<time_ns, std::int32_t>> v;
    for (int pass = 0; pass < 3 && v.empty(); ++pass)
      for (auto& rr : res.ranks) {
        const bool changed = std::find(ranks.begin(), ranks.end(), rr.rank) != ranks.end();
        if ((pass == 0 && changed) || (pass < 2 && rr.predicted < 0)) continue;
        v.emplace_back(rr.predicted - rr.wait, rr.rank);
      }
    std::sort(v.begin(), v.end());
    if (!v.empty()) like = v[(v.size() - 1) / 2].second;
  }
  out.like = like;
  const auto li = j.index_of(like);
  if (li < 0) throw usage_error("daydream: no_straggler: the job has no rank " + std::to_string(like));
  const auto& src = j.ranks[std::size_t(li)].g;
  auto key = [](const graph& g, task_id t) {
    return std::string(g.kind_name(t)) + '\x1f' + std::string(g.name(t));
  };
  auto is_collective = [](const graph& g, task_id t) {
    auto r = g.resource_of(t);
    return g.is<comm_task>(t) && r != no_resource && g.resource_at(r).kind == resource_kind::gpu_stream;
  };
  std::unordered_map<std::string, std::vector<task_id>> by_key;
  src.for_each_task([&](task_id t) { by_key[key(src, t)].push_back(t); });
  for (auto rank : ranks) {
    const auto k = j.index_of(rank);
    if (k < 0) throw usage_error("daydream: no_straggler: ranks=" + std::to_string(rank) + ": the job has no such rank");
    out.ranks.push_back(rank);
    if (rank == like) continue;
    out.start_like[std::size_t(k)] = std::size_t(li);
    auto& g = out.j.ranks[std::size_t(k)].g;
    std::unordered_map<std::string, std::size_t> seen;
    g.for_each_task([&](task_id t) {
      if (is_collective(g, t)) return;
      auto kk = key(g, t);
      auto n = seen[kk]++;
      auto it = by_key.find(kk);
      if (it == by_key.end() || n >= it->second.size()) { ++out.unmatched; return; }
      const auto o = it->second[n];
      g.core().duration[t] = src.duration(o);
      g.core().gap[t] = src.gap(o);
      ++out.changed;
    });
  }
  return out;
}

/// Representative-worker mode (dPRO's symmetry for homogeneous data-parallel jobs): one
/// rank's graph alone, each of its matched collectives taking the modelled transfer time
/// and no waiting. On a job of identical ranks its replay equals the full job replay, at
/// the cost of one rank.
inline graph representative_graph(const job& j, const collective_matching& m, const alignment_result& alignment,
                                  const job_model_options& o, std::size_t rank_index) {
  if (rank_index >= j.ranks.size()) throw error("daydream: representative_graph: no rank index " + std::to_string(rank_index));
  graph g = j.ranks[rank_index].g;
  const auto rank = j.ranks[rank_index].rank;
  for (auto& c : m.collectives) {
    auto t = detail::modelled_transfer(c, o, alignment.offset).first;
    for (auto& p : c.parts)
      if (p.rank == rank) g.core().duration[p.task] = t;
  }
  return g;
}

/// Representative-worker mode from one trace and the cluster model alone: every recorded
/// collective kernel of `g` (a comm task on a GPU stream) takes the alpha-beta cost of its
/// operation, size and group (at least `world_size` ranks) on `o.cluster`'s ring link.
inline graph representative_graph(graph g, std::uint32_t world_size, const job_model_options& o) {
  const auto link = o.cluster.ring_link();
  const link_spec scaled{link.bandwidth * o.network_scale, link.latency};
  g.for_each<comm_task>([&](handle<comm_task> h) {
    auto r = g.resource_of(h.id);
    if (r == no_resource || g.resource_at(r).kind != resource_kind::gpu_stream) return;
    const auto& p = g.payload(h);
    g.core().duration[h.id] =
        collective_cost(p.op, double(p.bytes), std::max<std::uint32_t>(p.group_size, world_size), scaled, o.algorithm);
  });
  return g;
}

} // namespace daydream

#endif
