// Defines io::analyze_dlc: SketchDLC's phases, overlap ratio, overheads, message sizes and data volume of a DLC job.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DLC_ANALYSIS_HPP
#define DAYDREAM_IO_DLC_ANALYSIS_HPP

#include <daydream/io/dlc.hpp>
#include <daydream/io/json_writer.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace daydream::io {

/// Samples of an overhead (microseconds): minimum, mean, maximum, percentiles and a
/// histogram, the distribution SketchDLC plots per key for network simulators to draw
/// from; all 0 with no sample.
struct dlc_stat {
  std::size_t count = 0;
  std::int64_t min = 0, max = 0;
  double mean = 0;
  double sum = 0;
  std::vector<std::int64_t> samples; ///< in the order added
  /// Adds a sample.
  void add(std::int64_t v) {
    if (!count || v < min) min = v;
    if (!count || v > max) max = v;
    ++count;
    sum += double(v);
    mean = sum / double(count);
    samples.push_back(v);
  }
  /// The sample at quantile `q` (0 to 1; nearest rank), 0 without samples.
  std::int64_t percentile(double q) const {
    if (samples.empty()) return 0;
    auto v = samples;
    const auto k = std::min(v.size() - 1, std::size_t(std::max(0.0, std::ceil(q * double(v.size())) - 1)));
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
    return v[k];
  }
  /// Counts of the samples in `bins` equal bins from min to max (the last one holds max);
  /// empty without samples, all in the first bin when min == max.
  std::vector<std::size_t> histogram(std::size_t bins = 10) const {
    if (samples.empty() || bins == 0) return {};
    std::vector<std::size_t> h(bins, 0);
    const double width = double(max - min) / double(bins);
    for (auto v : samples) {
      std::size_t b = width > 0 ? std::size_t(double(v - min) / width) : 0;
      h[std::min(b, bins - 1)] += 1;
    }
    return h;
  }
};

/// One training iteration of one worker (SketchDLC §3.2.4 and §5.3; all in microseconds).
struct dlc_iteration {
  std::int32_t rank = 0;
  std::int32_t iteration = 0;
  /// Phase 1, computation only: the last Pull_Recv_Worker of the previous iteration to
  /// the first Push_Send_Worker; -1 when the previous iteration has no Pull_Recv_Worker.
  std::int64_t phase1_us = -1;
  std::int64_t phase2_us = 0; ///< overlap: first to last Push_Send_Worker
  std::int64_t phase3_us = 0; ///< communication: first Push_Send_Worker to last Pull_Recv_Worker
  /// phase2 / (phase1 + phase3); -1 when phase 1 is unknown or the total is 0.
  double overlap_ratio = -1;
  /// Computation overhead: the last Pull_Recv_Worker of the previous iteration to the
  /// last Push_Send_Worker (phase 1 + phase 2); -1 when phase 1 is unknown.
  std::int64_t computation_us = -1;
  std::int64_t wait_us = 0; ///< wait overhead: first to last Pull_Recv_Worker of the iteration
  std::size_t pushes = 0, pulls = 0; ///< Push_Send_Worker and Pull_Recv_Worker records
};

/// Bytes a node sent and received in one iteration, by message.
struct dlc_volume {
  std::int32_t rank = 0;
  std::int32_t iteration = 0;
  std::uint64_t push = 0, push_ack = 0, pull_request = 0, pull_response = 0;
  std::uint64_t total() const noexcept { return push + push_ack + pull_request + pull_response; }
};

/// The message lengths of one key in the training iterations, seen from the workers
/// (SketchDLC Table 6): Push_Send, Push_Recv, Pull_Send and Pull_Recv. When a length
/// varies, the largest is given and `varies` is set.
struct dlc_message_size {
  std::int64_t key = 0;
  std::uint64_t push_send = 0, push_recv = 0, pull_send = 0, pull_recv = 0;
  bool varies = false;
};

/// A one-to-one record whose d_time is not its time minus its dependency's time.
struct dlc_mismatch {
  std::string file;
  std::size_t line = 0;
  std::int64_t d_time_us = 0;  ///< recorded
  std::int64_t actual_us = 0;  ///< time - dependency's time
};

/// What analyze_dlc finds. Per-key overheads are keyed by parameter key.
struct dlc_analysis {
  std::vector<dlc_iteration> iterations; ///< every training iteration of every worker file
  /// Search overhead: a Pull_Send_Server's time minus its dependency's (the
  /// Pull_Recv_Server); one sample per Pull_Send_Server.
  dlc_stat search;
  /// Update overhead: a Push_Send_Server's time minus its latest dependency's (in
  /// synchronous training the last Push_Recv_Server of the key and iteration).
  dlc_stat update;
  /// Synchronization overhead: first to last Push_Recv_Server of one key and iteration
  /// on one server (one sample per key, iteration and server).
  dlc_stat sync;
  dlc_stat computation, wait, phase1, phase2, phase3; ///< over dlc_analysis::iterations
  std::map<std::int64_t, dlc_stat> search_by_key, update_by_key, sync_by_key;
  std::vector<dlc_message_size> message_sizes; ///< by key
  std::vector<dlc_volume> volume;              ///< by rank and iteration (training and initialization)
  std::size_t d_time_checked = 0;              ///< one-to-one records checked
  std::vector<dlc_mismatch> d_time_mismatches;
  double overlap_ratio_mean = -1; ///< over the iterations with a ratio; -1 if none
};

//! @cond DAYDREAM_INTERNAL
namespace detail::dlc {

// d_time consistency of one-to-one records; search and update overheads.
inline void add_overheads(const dlc_file& f, dlc_analysis& a) {
  for (auto& r : f.records) {
    if (r.deps.empty()) continue;
    std::int64_t latest = std::numeric_limits<std::int64_t>::min();
    for (auto d : r.deps) latest = std::max(latest, f.records[d].time_us);
    const auto gap = r.time_us - latest;
    if (r.form == dlc_dep_form::one) {
      ++a.d_time_checked;
      if (gap != r.d_time_us) a.d_time_mismatches.push_back({f.path, r.line, r.d_time_us, gap});
    }
    if (r.op == dlc_op::pull_send_server) { a.search.add(gap); a.search_by_key[r.key].add(gap); }
    if (r.op == dlc_op::push_send_server) { a.update.add(gap); a.update_by_key[r.key].add(gap); }
  }
}

// Synchronization of a server: first to last Push_Recv_Server per key and iteration.
inline void add_sync(const dlc_file& f, dlc_analysis& a) {
  std::map<std::pair<std::int64_t, std::int32_t>, std::pair<std::int64_t, std::int64_t>> span;
  for (auto& r : f.records) {
    if (r.op != dlc_op::push_recv_server || r.iteration < 1) continue;
    auto [it, fresh] = span.try_emplace({r.key, r.iteration}, r.time_us, r.time_us);
    if (!fresh) {
      it->second.first = std::min(it->second.first, r.time_us);
      it->second.second = std::max(it->second.second, r.time_us);
    }
  }
  for (auto& [k, s] : span) {
    a.sync.add(s.second - s.first);
    a.sync_by_key[k.first].add(s.second - s.first);
  }
}

// Data volume of a node per iteration.
inline void add_volume(const dlc_file& f, dlc_analysis& a) {
  std::map<std::int32_t, dlc_volume> vol;
  for (auto& r : f.records) {
    auto& v = vol[r.iteration];
    v.rank = f.rank;
    v.iteration = r.iteration;
    switch (message_of(r.op)) {
    case dlc_message::push: v.push += r.length; break;
    case dlc_message::push_ack: v.push_ack += r.length; break;
    case dlc_message::pull_request: v.pull_request += r.length; break;
    case dlc_message::pull_response: v.pull_response += r.length; break;
    }
  }
  for (auto& [i, v] : vol) a.volume.push_back(v);
}

// Message sizes, the workers' view of the training iterations (`seen`: per key, a bit
// per size seen).
inline void add_message_sizes(const dlc_file& f, std::map<std::int64_t, dlc_message_size>& sizes,
                              std::map<std::int64_t, int>& seen) {
  for (auto& r : f.records) {
    if (r.iteration < 1) continue;
    auto& m = sizes[r.key];
    m.key = r.key;
    std::uint64_t* slot = nullptr;
    switch (r.op) {
    case dlc_op::push_send_worker: slot = &m.push_send; break;
    case dlc_op::push_recv_worker: slot = &m.push_recv; break;
    case dlc_op::pull_send_worker: slot = &m.pull_send; break;
    case dlc_op::pull_recv_worker: slot = &m.pull_recv; break;
    default: break;
    }
    const int bit = 1 << dlc_step(r.op);
    if ((seen[r.key] & bit) && *slot != r.length) m.varies = true;
    seen[r.key] |= bit;
    *slot = std::max(*slot, r.length);
  }
}

// A worker's pushes and pull answers in one iteration.
struct worker_span {
  std::int64_t first_push = std::numeric_limits<std::int64_t>::max(), last_push = -1;
  std::int64_t first_pull = std::numeric_limits<std::int64_t>::max(), last_pull = -1;
  std::size_t pushes = 0, pulls = 0;
};

// The phases of iteration `i` (span `s`) of worker `rank`; `prev` is the previous
// iteration's span, or nullptr.
inline dlc_iteration worker_iteration(std::int32_t rank, std::int32_t i, const worker_span& s, const worker_span* prev) {
  dlc_iteration it;
  it.rank = rank;
  it.iteration = i;
  it.pushes = s.pushes;
  it.pulls = s.pulls;
  it.phase2_us = s.last_push - s.first_push;
  it.phase3_us = s.last_pull - s.first_push;
  it.wait_us = s.last_pull - s.first_pull;
  if (prev && prev->pulls && prev->last_pull <= s.first_push) {
    it.phase1_us = s.first_push - prev->last_pull;
    it.computation_us = s.last_push - prev->last_pull;
    const auto total = it.phase1_us + it.phase3_us;
    if (total > 0) it.overlap_ratio = double(it.phase2_us) / double(total);
  }
  return it;
}

// The phases of every training iteration of a worker.
inline void add_phases(const dlc_file& f, dlc_analysis& a) {
  std::map<std::int32_t, worker_span> its;
  for (auto& r : f.records) {
    auto& s = its[r.iteration];
    if (r.op == dlc_op::push_send_worker) {
      s.first_push = std::min(s.first_push, r.time_us);
      s.last_push = std::max(s.last_push, r.time_us);
      ++s.pushes;
    } else if (r.op == dlc_op::pull_recv_worker) {
      s.first_pull = std::min(s.first_pull, r.time_us);
      s.last_pull = std::max(s.last_pull, r.time_us);
      ++s.pulls;
    }
  }
  for (auto& [i, s] : its) {
    if (i < 1 || !s.pushes || !s.pulls) continue;
    auto prev = its.find(i - 1);
    a.iterations.push_back(worker_iteration(f.rank, i, s, prev != its.end() ? &prev->second : nullptr));
  }
}

// The distributions over the iterations and the mean overlap ratio.
inline void add_iteration_stats(dlc_analysis& a) {
  double ratio_sum = 0;
  std::size_t ratios = 0;
  for (auto& it : a.iterations) {
    a.phase2.add(it.phase2_us);
    a.phase3.add(it.phase3_us);
    a.wait.add(it.wait_us);
    if (it.phase1_us >= 0) {
      a.phase1.add(it.phase1_us);
      a.computation.add(it.computation_us);
    }
    if (it.overlap_ratio >= 0) { ratio_sum += it.overlap_ratio; ++ratios; }
  }
  if (ratios) a.overlap_ratio_mean = ratio_sum / double(ratios);
}

} // namespace detail::dlc
//! @endcond

/// Analyses a DLC job as SketchDLC §3.2.4 and §5.3 define it: the three phases and
/// the overlap ratio of every worker iteration (from the worker's file), the search,
/// update and synchronization overheads (from the servers' files), the computation and
/// wait overheads (from the workers' files), the message sizes per key, the data volume
/// per node and iteration, and the d_time consistency check of every one-to-one record.
/// Iteration 0 (initialization) has no phases. Complexity: O(R log R) for R records.
inline dlc_analysis analyze_dlc(const dlc_job& job) {
  namespace d = detail::dlc;
  dlc_analysis a;
  std::map<std::int64_t, dlc_message_size> sizes;
  std::map<std::int64_t, int> seen;
  for (auto& f : job.files) {
    d::add_overheads(f, a);
    if (!f.is_worker()) d::add_sync(f, a);
    d::add_volume(f, a);
    if (f.is_worker()) {
      d::add_message_sizes(f, sizes, seen);
      d::add_phases(f, a);
    }
  }
  d::add_iteration_stats(a);
  for (auto& [k, m] : sizes) a.message_sizes.push_back(m);
  return a;
}

//! @cond DAYDREAM_INTERNAL
namespace detail::dlc {
inline void stat_json(json_writer& w, const dlc_stat& s, bool histogram = false) {
  w.begin_object().field("count", s.count).field("min", s.min).field("mean", s.mean).field("max", s.max);
  w.field("p50", s.percentile(0.5)).field("p90", s.percentile(0.9));
  if (histogram) {
    w.key("histogram").begin_array();
    for (auto n : s.histogram()) w.value(n);
    w.end_array();
  }
  w.end_object();
}

inline void nodes_json(json_writer& w, const dlc_job& job) {
  w.key("nodes").begin_array();
  for (auto& f : job.files) {
    w.begin_object().field("rank", f.rank).field("role", f.rank < 0 ? "none" : f.is_worker() ? "worker" : "server");
    w.field("file", f.path).field("records", f.report.records).field("usable", f.report.usable);
    w.field("setup", f.report.setup).field("duplicate_ids", f.report.duplicate_ids);
    w.field("out_of_order", f.report.out_of_order);
    w.key("unusable").begin_object();
    for (auto& [why, n] : f.report.unusable) w.field(why, n);
    w.end_object();
    w.key("problems").begin_array();
    for (auto& p : f.report.problems) w.value(p);
    w.end_array().end_object();
  }
  w.end_array();
}

inline void iterations_json(json_writer& w, const dlc_analysis& a) {
  w.key("iterations").begin_array();
  for (auto& it : a.iterations) {
    w.begin_object().field("rank", it.rank).field("iteration", it.iteration);
    if (it.phase1_us >= 0) w.field("phase1_us", it.phase1_us); else w.key("phase1_us").null();
    w.field("phase2_us", it.phase2_us).field("phase3_us", it.phase3_us);
    if (it.overlap_ratio >= 0) w.field("overlap_ratio", it.overlap_ratio); else w.key("overlap_ratio").null();
    if (it.computation_us >= 0) w.field("computation_us", it.computation_us); else w.key("computation_us").null();
    w.field("wait_us", it.wait_us).end_object();
  }
  w.end_array();
  if (a.overlap_ratio_mean >= 0) w.field("overlap_ratio_mean", a.overlap_ratio_mean);
  else w.key("overlap_ratio_mean").null();
}

inline void overheads_json(json_writer& w, const dlc_analysis& a) {
  w.key("overheads").begin_object();
  w.key("computation_us"); stat_json(w, a.computation);
  w.key("search_us"); stat_json(w, a.search);
  w.key("update_us"); stat_json(w, a.update);
  w.key("sync_us"); stat_json(w, a.sync);
  w.key("wait_us"); stat_json(w, a.wait);
  w.end_object();
  w.key("overheads_by_key").begin_array();
  std::map<std::int64_t, int> keys;
  for (auto& m : {&a.search_by_key, &a.update_by_key, &a.sync_by_key})
    for (auto& [k, s] : *m) keys[k] = 1;
  for (auto& entry : keys) {
    const std::int64_t k = entry.first;
    w.begin_object().field("key", k);
    auto one = [&](const char* name, const std::map<std::int64_t, dlc_stat>& m) {
      auto it = m.find(k);
      w.key(name);
      if (it == m.end()) w.null(); else stat_json(w, it->second, true);
    };
    one("search_us", a.search_by_key);
    one("update_us", a.update_by_key);
    one("sync_us", a.sync_by_key);
    w.end_object();
  }
  w.end_array();
}

inline void sizes_json(json_writer& w, const dlc_analysis& a) {
  w.key("message_sizes").begin_array();
  for (auto& m : a.message_sizes)
    w.begin_object().field("key", m.key).field("push_send", m.push_send).field("push_recv", m.push_recv)
        .field("pull_send", m.pull_send).field("pull_recv", m.pull_recv).field("varies", m.varies).end_object();
  w.end_array();
  w.key("volume").begin_array();
  for (auto& v : a.volume)
    w.begin_object().field("rank", v.rank).field("iteration", v.iteration).field("push", v.push)
        .field("push_ack", v.push_ack).field("pull_request", v.pull_request).field("pull_response", v.pull_response)
        .field("total", v.total()).end_object();
  w.end_array();
}

inline void d_time_json(json_writer& w, const dlc_analysis& a) {
  w.field("d_time_checked", a.d_time_checked);
  w.field("d_time_mismatches", a.d_time_mismatches.size());
  w.key("d_time_mismatch_list").begin_array();
  for (auto& m : a.d_time_mismatches)
    w.begin_object().field("file", m.file).field("line", m.line).field("d_time_us", m.d_time_us)
        .field("actual_us", m.actual_us).end_object();
  w.end_array();
}
} // namespace detail::dlc
//! @endcond

/// Writes the analysis of `job` as JSON (docs/dlc.md, "JSON"): nodes, iterations,
/// overheads ({count, min, mean, max, p50, p90} each, in microseconds), per-key overheads
/// (with a 10-bin histogram from min to max), message sizes, data volume and the d_time
/// mismatches.
inline void write_dlc_analysis_json(json_writer& w, const dlc_job& job, const dlc_analysis& a) {
  namespace d = detail::dlc;
  w.begin_object();
  w.field("workers", job.workers).field("servers", job.servers);
  d::nodes_json(w, job);
  d::iterations_json(w, a);
  d::overheads_json(w, a);
  d::sizes_json(w, a);
  d::d_time_json(w, a);
  w.end_object();
}

} // namespace daydream::io

#endif
