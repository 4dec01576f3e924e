// Defines io::load_job: the Kineto traces of every rank of a distributed job, read into a daydream::job.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_JOB_HPP
#define DAYDREAM_IO_JOB_HPP

#include <daydream/config.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/job/graph.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace daydream::io {

/// Knobs of load_job.
struct job_options {
  /// Explicit ranks, file by file (in the order the files are given, after a directory
  /// is expanded): for traces without `distributedInfo`, or to override it. Empty: every
  /// trace must say its rank.
  std::vector<std::int32_t> ranks;
  /// The job's world size when the traces do not say it (0: from the traces, else the
  /// number of files).
  std::int32_t world_size = 0;
  /// Groups of ranks that ran on one host (and so share a clock), for clock alignment.
  std::vector<std::vector<std::int32_t>> same_host;
  ingest_options ingest; ///< how each trace is read
  /// Threads that read the traces at once (load_kineto_files; 0: one per hardware thread).
  unsigned threads = 0;
  /// The ranks of one job run each step together: when the traces' clocks are wall-clock
  /// time (Kineto's microseconds since 1970), a step that begins further apart than this
  /// on two ranks means the traces come from different runs, and make_job refuses them.
  /// 0 turns the check off (hosts whose clocks disagree by more).
  time_ns max_clock_spread = 600'000'000'000; // 10 minutes
};

/// The trace files of `paths`: a directory stands for the Kineto traces in it (`*.json`,
/// `*.json.gz`, not recursive, sorted by name); files are taken as given.
inline std::vector<std::filesystem::path> job_files(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::filesystem::path> out;
  for (auto& p : paths) {
    if (!std::filesystem::is_directory(p)) { out.push_back(p); continue; }
    std::vector<std::filesystem::path> in;
    for (auto& e : std::filesystem::directory_iterator(p)) {
      if (!e.is_regular_file()) continue;
      auto n = e.path().filename().string();
      if (n.ends_with(".json") || n.ends_with(".json.gz")) in.push_back(e.path());
    }
    std::sort(in.begin(), in.end());
    if (in.empty()) throw error("daydream: load_job: directory " + p.string() + " holds no .json or .json.gz trace");
    out.insert(out.end(), in.begin(), in.end());
  }
  return out;
}

/// Makes a job of ranks already loaded (each kineto_trace with its rank): checks that
/// they belong to one job and says what is missing. Throws daydream::error naming the
/// files for a trace without rank information (give job_options::ranks), duplicate
/// ranks, mismatched world sizes, a rank outside the world, different communication
/// backends, and traces that share no iteration (different steps or different jobs).
/// Throws daydream::usage_error when job_options::ranks does not give one rank per file.
inline job make_job(std::vector<kineto_trace> traces, const job_options& o = {}) {
  if (traces.empty()) throw usage_error("daydream: load_job: no trace given");
  if (!o.ranks.empty() && o.ranks.size() != traces.size())
    throw usage_error("daydream: load_job: " + std::to_string(o.ranks.size()) + " explicit rank(s) for " +
                      std::to_string(traces.size()) + " trace(s): give one rank per file");
  job j;
  std::map<std::int32_t, std::string> seen;
  std::int32_t world = o.world_size;
  std::string world_from;
  for (std::size_t k = 0; k < traces.size(); ++k) {
    auto& t = traces[k];
    const std::int32_t rank = o.ranks.empty() ? t.info.rank : o.ranks[k];
    if (rank < 0)
      throw error("daydream: load_job: " + t.info.path +
                  " does not say its rank (no distributedInfo.rank): give the ranks explicitly (--rank)");
    if (auto it = seen.find(rank); it != seen.end())
      throw error("daydream: load_job: " + it->second + " and " + t.info.path + " are both rank " +
                  std::to_string(rank) + ": duplicate ranks");
    seen[rank] = t.info.path;
    if (t.info.world_size > 0 && o.world_size <= 0) {
      if (world > 0 && world != t.info.world_size)
        throw error("daydream: load_job: " + t.info.path + " is of a " + std::to_string(t.info.world_size) +
                    "-rank job, " + world_from + " of a " + std::to_string(world) +
                    "-rank job: mismatched world sizes (traces of different jobs?)");
      world = t.info.world_size;
      world_from = t.info.path;
    }
  }
  if (world <= 0) world = std::int32_t(traces.size());
  for (auto& [rank, file] : seen)
    if (rank >= world)
      throw error("daydream: load_job: " + file + " is rank " + std::to_string(rank) + " of a " +
                  std::to_string(world) + "-rank job");
  for (std::size_t k = 1; k < traces.size(); ++k)
    if (!traces[k].info.backend.empty() && !traces[0].info.backend.empty() &&
        traces[k].info.backend != traces[0].info.backend)
      throw error("daydream: load_job: " + traces[0].info.path + " ran on backend " + traces[0].info.backend + ", " +
                  traces[k].info.path + " on " + traces[k].info.backend + ": traces of different jobs");
  j.world_size = world;
  // Where each trace's steps begin on its own clock, to tell one run from several.
  std::vector<std::map<std::int32_t, time_ns>> step_begins(traces.size());
  for (std::size_t k = 0; k < traces.size(); ++k)
    for (auto& it : traces[k].iterations) step_begins[k][it.number] = it.trace_begin;
  std::map<std::int32_t, std::string> host_of;
  for (std::size_t h = 0; h < o.same_host.size(); ++h)
    for (auto r : o.same_host[h]) host_of[r] = "host " + std::to_string(h);
  for (std::size_t k = 0; k < traces.size(); ++k) {
    auto& t = traces[k];
    rank_trace r;
    r.rank = o.ranks.empty() ? t.info.rank : o.ranks[k];
    r.world_size = world;
    r.file = t.info.path;
    r.backend = t.info.backend;
    if (auto it = host_of.find(r.rank); it != host_of.end()) r.host = it->second;
    for (auto& it : t.iterations) r.measured[it.number] = t.measured(it.number);
    if (t.iterations.empty()) r.measured[0] = t.info.end - t.info.begin;
    r.steady = t.steady_state_iterations();
    if (t.iterations.empty()) {
      r.steady = {0};
      t.g.for_each_task([&](task_id x) { t.g.set_iteration(x, 0); });
    }
    // Every resource belongs to the rank.
    for (std::size_t x = 0; x < t.g.resource_count(); ++x) t.g.resource_at(resource_id(x)).node = r.rank;
    r.g = std::move(t.g);
    j.ranks.push_back(std::move(r));
  }
  std::sort(j.ranks.begin(), j.ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  if (j.common_iterations().empty()) {
    std::string s;
    for (auto& r : j.ranks) {
      s += (s.empty() ? "" : "; ") + r.file + ":";
      for (auto& [i, d] : r.measured) s += " " + std::to_string(i);
    }
    throw error("daydream: load_job: the traces share no iteration (different steps or different jobs): " + s);
  }
  // Wall-clock traces (timestamps past 2001 in ns) whose common step begins far apart on
  // two ranks were recorded at different times: not one job.
  if (o.max_clock_spread > 0) {
    constexpr time_ns wall_clock = 1'000'000'000'000'000'000; // 2001-09-09 in ns since 1970
    const auto first = j.common_iterations().front();
    std::size_t lo = traces.size(), hi = traces.size();
    for (std::size_t k = 0; k < traces.size(); ++k) {
      auto it = step_begins[k].find(first);
      if (it == step_begins[k].end() || it->second < wall_clock) continue;
      if (lo == traces.size() || it->second < step_begins[lo][first]) lo = k;
      if (hi == traces.size() || it->second > step_begins[hi][first]) hi = k;
    }
    if (lo != traces.size() && step_begins[hi][first] - step_begins[lo][first] > o.max_clock_spread) {
      const double apart = double(step_begins[hi][first] - step_begins[lo][first]) / 1e9;
      throw error("daydream: load_job: iteration " + std::to_string(first) + " begins " +
                  std::to_string(static_cast<long long>(apart)) + " s later in " + traces[hi].info.path + " than in " +
                  traces[lo].info.path + ", on the traces' wall clocks: the ranks of one job run each step together, "
                  "so these are traces of different runs (if they are one job whose hosts' clocks disagree by more "
                  "than " + std::to_string(o.max_clock_spread / 1'000'000'000) +
                  " s, set job_options::max_clock_spread)");
    }
  }
  if (j.partial()) {
    auto miss = j.missing();
    std::string present;
    for (auto& r : j.ranks) present += (present.empty() ? "" : ", ") + std::to_string(r.rank);
    j.notes.push_back("partial job: " + std::to_string(j.ranks.size()) + " of " + std::to_string(world) +
                      " ranks traced (" + present + "); the " + std::to_string(miss.size()) +
                      " missing ranks are modelled as copies of the traced ones (rank m as rank "
                      "ranks[m mod " + std::to_string(j.ranks.size()) + "]): they arrive at every collective with "
                      "their original, so they add no waiting");
  }
  return j;
}

/// The traces of `files` as a job keeps them: loaded `threads` at a time (job_options::
/// threads; 0: one per hardware thread), each kept only as make_job needs it (its graph,
/// iterations and metadata; the module tree and the ingest report's warnings and counts
/// are dropped as soon as the file is read), so a job of many large ranks never holds more
/// than its graphs and the loads under way. In the order of `files`, each trace what
/// load_kineto returns less what is dropped, whatever the number of threads; the error of
/// the first file that cannot be read, as load_kineto_files throws it.
inline std::vector<kineto_trace> load_job_traces(std::span<const std::filesystem::path> files, const job_options& o = {}) {
  return load_kineto_files(files, o.ingest, o.threads, [](kineto_trace& x) {
    x.modules = {};
    x.report.ignored = {};
    x.report.warnings = {};
  });
}

/// Loads every rank of one distributed job: `paths` are trace files or directories of
/// them (job_files). Rank and world size come from each trace's `distributedInfo`, or
/// from job_options. Throws daydream::error naming the files for missing rank
/// information, duplicate ranks, mismatched world sizes and traces of different jobs
/// (make_job), and as load_kineto does for a file that cannot be read. The files are read
/// in parallel, job_options::threads at a time, and each is kept only as the job needs it
/// (load_job_traces).
///
///     auto j = daydream::io::load_job({"traces/"});
///     auto m = daydream::match_collectives(j);
///     auto jg = daydream::build_job_graph(j, m, daydream::no_alignment(daydream::make_alignment_input(j, m)));
inline job load_job(const std::vector<std::filesystem::path>& paths, const job_options& o = {}) {
  auto files = job_files(paths);
  return make_job(load_job_traces(files, o), o);
}

} // namespace daydream::io

#endif
