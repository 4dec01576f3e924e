// Defines io::load_kineto and io::parse_kineto: PyTorch profiler (Kineto) traces to a daydream::graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_KINETO_HPP
#define DAYDREAM_IO_KINETO_HPP

#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/io/kineto_types.hpp>
#include <daydream/iteration.hpp>
#include <daydream/remove.hpp>
#include <daydream/task.hpp>
// The ingest itself, unless a program compiles it once (DAYDREAM_COMPILED, see below).
#if !defined(DAYDREAM_COMPILED) || defined(DAYDREAM_COMPILING_KINETO)
#  include <daydream/io/detail/kineto_build.hpp>
#  include <daydream/io/detail/kineto_decode.hpp>
#  include <daydream/io/detail/kineto_modules.hpp>
#  include <daydream/io/detail/kineto_stream.hpp>
#  include <daydream/io/detail/kineto_window_workers.hpp>
#  include <daydream/io/detail/trace_file.hpp>
#  include <daydream/io/detail/trace_reader.hpp>
#  include <simdjson.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace daydream::io {

/// Knobs of Kineto ingestion. The defaults reproduce the trace's iteration times; see
/// docs/ingest.md for what each one models.
struct ingest_options {
  /// Merge contiguous CPU slices of the same operator, layer, phase and iteration
  /// (Python frames between two operators, an operator's pieces around a Python call).
  /// Never merges runtime calls, waiting slices, memory or anchor boundaries, so the
  /// replay is the same either way; it only makes the graph smaller.
  bool merge_slices = true;
  /// How much later than a synchronizing call's return the GPU work it waited for may
  /// end in the trace: CPU and GPU clocks are aligned only to some tens of microseconds,
  /// and a pageable copy returns before its last chunk has landed.
  time_ns sync_tolerance = 50'000;
  /// A GPU operation starting at most this long after the call that launched it
  /// returned counts as started by the launch (the delay is launch latency); one that
  /// starts later waited for something else, and keeps that idle time as a gap.
  time_ns launch_latency = 10'000;
  /// A launch or asynchronous copy call at least this long ...
  time_ns implicit_sync_min = 50'000;
  /// ... that returns within this time after some GPU operation ends is treated as
  /// blocked on that operation (a full launch queue, a copy to pageable memory).
  time_ns implicit_sync_window = 15'000;
  /// Idle time after which a worker thread's next slice (autograd, data loading) is
  /// anchored to the main thread instead of to its own previous slice.
  time_ns session_gap = 50'000;
  /// A main thread idle (or inside one slice) across the end of a worker session for at
  /// least this fraction of its blocked time waits for that session to end.
  double join_coverage = 0.5;
  /// Without `cuda_sync` records, infer what cudaStreamWaitEvent / cudaEventSynchronize
  /// wait for: of each other stream's last op launched before the latest cudaEventRecord,
  /// the one that ended last by the start of the waiting op; without record calls, the
  /// op launched last on another stream (docs/ingest.md, "Dependencies").
  bool infer_event_waits = true;
  /// At most this many warnings are kept in the report (the rest are counted).
  std::size_t max_warnings = 32;
  /// An ECMAScript regular expression: when not empty, the annotations and operators whose
  /// name it matches (searched, case-sensitive) mark the steps instead of ProfilerStep#N,
  /// numbered 1, 2, ... in trace order (`step\[DECODE` for the decode steps of vLLM and
  /// SGLang traces). A marker that overlaps the previous one is skipped (counted in one
  /// warning); a trace with none is an error that names the annotations it has.
  std::string step_annotation;
  /// Bytes of `traceEvents` text decoded at once (0: 4 MiB). The trace is read and
  /// decoded a window at a time, so memory holds one window and its index, not the
  /// file; an event larger than the window widens it. The graph is the same whatever
  /// the size (docs/ingest.md, "Streaming").
  std::size_t window_bytes = 0;
  /// Threads that decode windows of events while the file is read on, and then build
  /// the graph's per-thread stages (0: one per core; 1: the calling thread does it all).
  /// The graph is the same whatever the threads; with more than one and the default
  /// window, an input under 128 MiB per thread is cut into smaller windows (at least
  /// 1 MiB) so that every thread has several.
  unsigned threads = 0;
};

/// What happened to every event of the trace: `in_graph + sum(ignored) == events`.
struct ingest_report {
  std::size_t events = 0;    ///< every element of traceEvents
  std::size_t in_graph = 0;  ///< represented as a task, a dependency or a task attribute
  std::map<std::string, std::size_t> ignored; ///< reason -> count
  std::size_t unlinked_gpu_ops = 0; ///< GPU ops with no matching runtime call (kept, in stream order)
  std::vector<std::string> warnings; ///< for people; at most ingest_options::max_warnings

  /// Number of ignored events (the sum over reasons).
  std::size_t ignored_total() const noexcept {
    std::size_t n = 0;
    for (auto& [k, v] : ignored) n += v;
    return n;
  }
};

/// One training (or inference) iteration of the trace: ProfilerStep#N's span; without
/// step markers, from the first event after optimizer step k-1 ended to the first event
/// after step k ended (the last one: to the end of its step); with neither, the whole
/// trace as iteration 0 (trace_info::iterations_from says which).
struct iteration_info {
  std::int32_t number = -1; ///< N of ProfilerStep#N, or k, the ordinal of the optimizer step; 0 for the whole trace
  time_ns trace_begin = 0;  ///< in the trace's clock (ns)
  time_ns trace_end = 0;
  std::string marker;       ///< "ProfilerStep#12", "Optimizer.step#SGD.step" or "whole trace (no step markers)"
  /// The latest trace end of the iteration's work: its CPU slices and the GPU operations
  /// they launched, which may run long after the marker ended (at least trace_begin).
  time_ns work_end = 0;
  /// The latest trace end of its CPU work: the marker and its CPU slices (at least trace_end).
  time_ns cpu_end = 0;
  /// Its GPU work, in the trace's clock (-1 when it launched none): the first of its GPU
  /// operations' start; when they began their own work (`device_begin`: device_first, or
  /// the end of earlier GPU work still running then, of the steps before or queued before
  /// a one-step window, at most device_end); the last one's end. See measured().
  time_ns device_first = -1, device_begin = -1, device_end = -1;
  /// When the earlier GPU work still running when the step began ended (the steps
  /// before's, or kernels queued before a one-step window), at most device_end;
  /// trace_begin when none was running.
  time_ns backlog_end = 0;
};

/// Where the trace came from.
struct trace_info {
  std::string path;               ///< file name or the source name given to parse_kineto
  std::vector<std::string> gpus;  ///< deviceProperties names
  std::int32_t rank = -1;         ///< distributedInfo.rank, -1 if absent
  std::int32_t world_size = -1;   ///< distributedInfo.world_size, -1 if absent
  std::string backend;            ///< distributedInfo.backend ("nccl"), empty if absent
  /// Device memory (bytes) allocated before the first GPU `[memory]` event, -1 if the
  /// trace has none. replay(g).peak_memory + memory_at_start predicts memory_peak.
  std::int64_t memory_at_start = -1;
  /// The largest device `Total Allocated` of the trace's `[memory]` events, -1 if none.
  std::int64_t memory_peak = -1;
  /// First start and last end of the events in the graph, in the trace's clock (ns): a
  /// trace without iterations is measured as `end - begin`.
  time_ns begin = 0, end = 0;
  /// GPU operations of the trace by kind (collective kernels count as kernels). All
  /// three are 0 when the profiler recorded no GPU activity: see kineto_trace::problems.
  std::size_t kernels = 0, copies = 0, memsets = 0;
  /// CPU events of the trace (operators, annotations, Python frames, runtime calls).
  std::size_t cpu_events = 0;
  /// What the iterations were found from. `whole_trace`: the trace has neither
  /// ProfilerStep markers nor optimizer steps, so where a step ends cannot be told and
  /// the whole trace is measured as one iteration; programs say so.
  iteration_source iterations_from = iteration_source::none;
};

/// A loaded trace: the graph, the ingest report, the iterations and the trace metadata.
///
///     auto t = daydream::io::load_kineto("rank-0.pt.trace.json.gz");
///     auto n = t.default_iteration();
///     auto r = daydream::replay(t.g);
///     std::cout << daydream::iteration_time(t.g, r, n) << " vs " << t.measured(n) << '\n';
struct kineto_trace {
  daydream::graph g;                      ///< the task graph (docs/ingest.md)
  ingest_report report;                   ///< what happened to every event
  std::vector<iteration_info> iterations; ///< in trace order
  trace_info info;                        ///< file and job metadata
  /// The model's module hierarchy from the `nn.Module:` events (io::module_node), parents
  /// first; empty when the trace records none.
  std::vector<module_node> modules;

  /// The trace's own duration of iteration `iteration`, -1 if there is no such
  /// iteration: ProfilerStep#N's `dur`, or the span of an optimizer-step iteration. An
  /// iteration no next one follows (the last of the trace, the only one of a one-step
  /// trace) has no next step to end it: it lasts the longer of its CPU work (the marker,
  /// and CPU slices of the step that end after it) and its GPU work (from when its GPU
  /// operations began their own work, after the earlier GPU work they waited for, to the
  /// end of the last: iteration_info::device_begin, device_end). A step whose GPU work
  /// outlasts its CPU work in a loop of such steps is the GPU's; the GPU work of the steps
  /// before, or of kernels queued before a one-step window, is theirs. iteration_spans
  /// measures the replay by the same rule; measurement_note() says in words when this is
  /// not the marker's own span.
  time_ns measured(std::int32_t iteration) const {
    for (std::size_t k = 0; k < iterations.size(); ++k) {
      auto& it = iterations[k];
      if (it.number != iteration) continue;
      if (!last(k)) return it.trace_end - it.trace_begin;
      const auto w = daydream::detail::last_iteration_window(it.trace_begin, cpu_work_end(it), it.device_first,
                                                             it.device_end, it.device_begin);
      return w.end - w.begin;
    }
    return -1;
  }

  /// Why measured(iteration) is not the step marker's own duration, in one sentence
  /// (empty when it is, or differs by less than 1%): the step's GPU work outlasted its CPU
  /// work (and whether it first waited for earlier GPU work, which is left out), or its CPU
  /// work ran past the marker, with the numbers in milliseconds.
  std::string measurement_note(std::int32_t iteration) const {
    for (std::size_t k = 0; k < iterations.size(); ++k) {
      auto& it = iterations[k];
      if (it.number != iteration) continue;
      const time_ns marker = it.trace_end - it.trace_begin;
      const time_ns m = measured(iteration);
      // Told when over 1% of the marker's span (a kernel's tail of microseconds after the
      // marker is not worth a sentence).
      if (!last(k) || std::abs(m - marker) * 100 <= marker) return {};
      auto ms = [](time_ns x) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f ms", double(x) / 1e6);
        return std::string(buf);
      };
      const bool whole = info.iterations_from == iteration_source::whole_trace;
      std::string out = whole ? "the trace (no step markers) spans " + ms(marker) : it.marker + " lasts " + ms(marker);
      const time_ns cpu_end = cpu_work_end(it);
      const bool gpu = it.device_first >= 0 && it.device_end - it.device_begin == m && m != cpu_end - it.trace_begin;
      if (!gpu && whole)
        return out + "; its CPU work lasts " + ms(m) + ", longer than its GPU work: measured as " + ms(m) +
               ", as the replay is";
      if (!gpu)
        return out + "; its CPU work on other threads ends " + ms(cpu_end - it.trace_end) +
               " after it: measured to the end of that work, " + ms(m) + ", as the replay is";
      out += whole ? "; its GPU work lasts " + ms(m) + " of it"
                   : "; the GPU work it launched ends " + ms(it.device_end - it.trace_end) + " after it and lasts " + ms(m);
      out += ", longer than its CPU work: in a loop of such steps the GPU's work is the step, measured as " + ms(m) +
             ", as the replay is";
      if (const auto backlog = it.backlog_end - it.trace_begin; backlog * 100 > marker)
        out += " (the GPU was still running " + ms(backlog) +
               " of work queued before the step when it began: that belongs to the steps before it and is left out)";
      return out;
    }
    return {};
  }

  /// The end of iteration `it`'s CPU work: its marker's end, or a later end of its CPU
  /// slices; for the whole trace as one iteration (whose bounds include the GPU's), its
  /// CPU slices' end.
  time_ns cpu_work_end(const iteration_info& it) const noexcept {
    return info.iterations_from == iteration_source::whole_trace ? it.cpu_end : std::max(it.trace_end, it.cpu_end);
  }

  /// Whether no next iteration follows iterations[k] (the trace's last, or one whose
  /// successor's number is not the next): it runs to the end of its work (measured()).
  bool last(std::size_t k) const noexcept {
    return k + 1 == iterations.size() || iterations[k + 1].number != iterations[k].number + 1;
  }

  /// A steady-state iteration: with three or more iterations the last one that has a
  /// following one (never the first, which carries warm-up and profiler start-up);
  /// with two, the second; with one, that one; -1 if there is none.
  std::int32_t default_iteration() const {
    const auto n = iterations.size();
    if (n == 0) return -1;
    if (n == 1) return iterations[0].number;
    if (n == 2) return iterations[1].number;
    return iterations[n - 2].number;
  }

  /// The iterations daydream's accuracy check covers: all but the first (warm-up) and,
  /// with three or more, all but the last (its replayed span runs to the end of the GPU
  /// work still queued when the trace's step marker ended, the measured one does not).
  /// With one iteration, that one.
  std::vector<std::int32_t> steady_state_iterations() const {
    std::vector<std::int32_t> out;
    const auto n = iterations.size();
    if (n == 1) out.push_back(iterations[0].number);
    for (std::size_t k = 1; k < n; ++k)
      if (n < 3 || k + 1 < n) out.push_back(iterations[k].number);
    return out;
  }

  /// Device bytes allocated before the trace's first GPU `[memory]` event (that event's
  /// `Total Allocated` minus its own `Bytes`), or nothing when the trace has no memory
  /// events. Peak memory = this + replay(g).peak_memory (the peak of the deltas).
  std::optional<std::int64_t> initial_allocated_bytes() const {
    if (info.memory_at_start < 0) return std::nullopt;
    return info.memory_at_start;
  }

  /// Whether the profiler recorded any GPU operation (kernel, copy or memset).
  bool has_gpu_activity() const noexcept { return info.kernels + info.copies + info.memsets > 0; }

  /// What the trace lacks for a prediction, each as a sentence saying what is missing and
  /// how to record it; empty when nothing is. A program refuses a trace whose graph is
  /// empty (`g.size() == 0`: the one sentence says why) and prints the others as warnings.
  std::vector<std::string> problems() const {
    std::vector<std::string> out;
    const std::string record = "record it with torch.profiler.profile(activities=[ProfilerActivity.CPU, "
                               "ProfilerActivity.CUDA]) around at least one training step";
    if (report.events == 0)
      out.push_back(info.path + ": \"traceEvents\" is empty: the profiler recorded nothing; " + record);
    else if (g.size() == 0)
      out.push_back(info.path + ": none of the trace's " + std::to_string(report.events) +
                    " events is CPU or GPU activity (see the ingest report); " + record);
    else if (!has_gpu_activity())
      out.push_back(info.path + ": no GPU activity recorded (no kernels, copies or memsets): the profiler "
                    "ran without ProfilerActivity.CUDA; pass activities=[ProfilerActivity.CPU, "
                    "ProfilerActivity.CUDA] to torch.profiler.profile");
    return out;
  }
};

// A program that loads traces from many translation units can compile the ingest once:
// link the CMake target daydream::compiled (compiled/kineto.cpp), which defines
// DAYDREAM_COMPILED for its users; this header then declares parse_kineto, load_kineto and
// load_kineto_files, and no includer pays for the ingest's code. Without it (the default,
// and what the installed package gives) they are defined inline here.
#if defined(DAYDREAM_COMPILED) && !defined(DAYDREAM_COMPILING_KINETO)

/// Parses a Kineto trace held in memory (defined in compiled/kineto.cpp; see below).
kineto_trace parse_kineto(std::string_view json, std::string_view source_name, const ingest_options& options = {});
/// Loads a Kineto trace file, plain JSON or gzip (defined in compiled/kineto.cpp).
kineto_trace load_kineto(const std::filesystem::path& file, const ingest_options& options = {});
/// Loads several trace files at once (defined in compiled/kineto.cpp).
std::vector<kineto_trace> load_kineto_files(std::span<const std::filesystem::path> files,
                                            const ingest_options& options = {}, unsigned threads = 0,
                                            const std::function<void(kineto_trace&)>& keep = {});

#else

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline build_settings settings_of(const ingest_options& o) {
  build_settings s;
  s.merge_slices = o.merge_slices;
  s.sync_tolerance = o.sync_tolerance;
  s.launch_latency = o.launch_latency;
  s.implicit_sync_min = o.implicit_sync_min;
  s.implicit_sync_window = o.implicit_sync_window;
  s.session_gap = o.session_gap;
  s.join_coverage = o.join_coverage;
  s.infer_event_waits = o.infer_event_waits;
  s.max_warnings = o.max_warnings;
  s.step_annotation = o.step_annotation;
  s.threads = thread_count(o.threads);
  return s;
}

/// Builds the trace from its decoded tables (whose strings live in d.strings).
inline kineto_trace ingest(decoded_trace& d, std::string_view source, const ingest_options& opt) {
  kineto_trace t;
  // From the event tables, which the builder releases as it goes.
  for (auto& e : d.gpu)
    (e.cat == ecat::kernel ? t.info.kernels : e.cat == ecat::memset ? t.info.memsets : t.info.copies) += 1;
  t.info.cpu_events = d.cpu.size();
  t.modules = collect_modules(d);
  build_output b;
  build_graph(d, settings_of(opt), b);
  t.g = std::move(b.g);
  t.report.events = d.events;
  t.report.in_graph = b.in_graph;
  t.report.ignored = std::move(b.ignored);
  t.report.unlinked_gpu_ops = b.unlinked;
  t.report.warnings = std::move(b.warnings.kept);
  if (b.warnings.dropped)
    t.report.warnings.push_back("... and " + std::to_string(b.warnings.dropped) + " more warnings");
  for (auto& it : b.iterations)
    t.iterations.push_back({it.number, it.begin, it.end, std::move(it.marker), std::max(it.begin, it.work_end),
                            it.cpu_end, it.device_first, it.device_begin, it.device_end, it.backlog_end});
  t.info.iterations_from = b.iterations_from;
  t.info.path = std::string(source);
  t.info.gpus = std::move(d.gpus);
  t.g.set_devices(std::move(d.devices));
  t.info.rank = d.rank;
  t.info.world_size = d.world_size;
  t.info.backend = std::move(d.backend);
  t.info.memory_at_start = b.memory_at_start;
  t.info.memory_peak = b.memory_peak;
  t.info.begin = b.begin;
  t.info.end = b.end;
  return t;
}

/// Decodes the trace `in` window by window (the text is never held whole; an array of
/// events left open, which Chrome's JSON Array Format allows, is read closed) and builds it.
inline kineto_trace ingest(trace_reader& in, const ingest_options& opt) {
  decoded_trace d;
  stream_kineto(in, d, opt.window_bytes, opt.threads); // the parsers and windows go before the graph is built
  return ingest(d, in.name(), opt);
}
} // namespace detail
//! @endcond

/// Parses a Kineto trace held in memory. `source_name` names it in errors and in
/// `info.path`. Throws daydream::error (naming the source, the event index or byte
/// offset, and the reason) for input that is not a readable Kineto trace: bytes that are
/// not JSON, invalid or truncated JSON, neither an object with a `traceEvents` array nor
/// an array of events (Chrome's JSON Array Format, whose closing `]` may be left out), an
/// event that is not an object or whose
/// `ph`, `ts`, `dur`, `name`, `cat`, `pid`, `tid` or `args` has the wrong type, a
/// negative duration, NaN or out-of-range times. Inconsistencies that real traces have
/// (dangling correlation ids, flows without a partner, unknown categories) are not
/// errors: they are counted in the report.
///
///     auto t = daydream::io::parse_kineto(R"({"traceEvents": []})", "empty");
DAYDREAM_COMPILED_INLINE kineto_trace parse_kineto(std::string_view json, std::string_view source_name,
                                 const ingest_options& options = {}) {
  if (json.empty()) throw error("daydream: " + std::string(source_name) + ": empty file");
  auto in = detail::trace_reader::of_memory(json, source_name);
  return detail::ingest(in, options);
}

/// Loads a Kineto trace file, plain JSON or gzip (recognised by its magic bytes, not its
/// name; a `.gz` that is not gzip is refused), read (and inflated) a window at a time:
/// the text is never held whole, so a trace larger than memory loads. Throws daydream::error as parse_kineto does, and for files that
/// cannot be read, are empty or hold corrupt or truncated gzip data.
///
///     auto t = daydream::io::load_kineto("worker0_step_12.pt.trace.json");
///     std::cout << t.report.in_graph << " of " << t.report.events << " events in the graph\n";
DAYDREAM_COMPILED_INLINE kineto_trace load_kineto(const std::filesystem::path& file, const ingest_options& options = {}) {
  auto in = detail::trace_reader::open(file);
  return detail::ingest(in, options);
}

/// Loads several trace files at once (a job's rank traces), one task per file on
/// `threads` threads (0: one per hardware thread; never more than there are files; 1: on
/// the calling thread). The result holds the traces in the order of `files`, each
/// exactly what `load_kineto(files[i], options)` returns, whatever the number of threads
/// and whichever file finished first. Memory: the loads that run at once each take their
/// own peak (see docs/performance.md), so lower `threads` for many large files.
///
/// When a file cannot be loaded, no further file is started, the loads under way finish,
/// and the error of the first failing file in the order of `files` is thrown (the same
/// error whatever the number of threads): daydream::error naming the file and the
/// reason, as load_kineto throws it; another exception (std::bad_alloc) is rethrown as a
/// daydream::error naming the file.
///
///     std::vector<std::filesystem::path> ranks = {"rank-0.json.gz", "rank-1.json.gz"};
/// `keep`, when given, is called on each trace as soon as it is loaded, on the thread
/// that loaded it (to drop what the caller does not need while other files load).
///
///     auto traces = daydream::io::load_kineto_files(ranks);   // traces[1] is rank-1's
DAYDREAM_COMPILED_INLINE std::vector<kineto_trace> load_kineto_files(std::span<const std::filesystem::path> files,
                                                   const ingest_options& options = {}, unsigned threads = 0,
                                                   const std::function<void(kineto_trace&)>& keep = {}) {
  const std::size_t n = files.size();
  std::vector<std::optional<kineto_trace>> done(n);
  std::vector<std::exception_ptr> failed(n);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  const std::size_t workers = std::min<std::size_t>(detail::thread_count(threads), n);
  // Files share the cores: with several loading at once, each decodes on its own thread.
  ingest_options each = options;
  if (workers > 1 && each.threads == 0) each.threads = 1;
  // Files are claimed in input order, so every file before a failed one was claimed
  // (and is loaded or failed) when loading stops: the first failure in input order is
  // the same whatever the threads.
  auto work = [&] {
    for (;;) {
      if (stop.load(std::memory_order_relaxed)) return;
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        auto& x = done[i].emplace(load_kineto(files[i], each));
        if (keep) keep(x);
      } catch (const error&) {
        failed[i] = std::current_exception();
        stop.store(true, std::memory_order_relaxed);
      } catch (const std::exception& e) {
        try {
          throw error("daydream: " + files[i].string() + ": " + e.what());
        } catch (...) {
          failed[i] = std::current_exception();
        }
        stop.store(true, std::memory_order_relaxed);
      }
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(workers - 1);
    for (std::size_t k = 1; k < workers; ++k) {
      try {
        pool.emplace_back(work);
      } catch (const std::system_error&) {
        break; // no more threads to be had: the ones started (and this one) do the rest
      }
    }
    work();
  } // the pool joins here
  std::vector<kineto_trace> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (failed[i]) std::rethrow_exception(failed[i]);
    out.push_back(std::move(*done[i]));
  }
  return out;
}

#endif

/// Keeps the iterations `first` .. `last` of a loaded trace (one: first == last) and
/// drops the others: their tasks are removed with daydream::remove, which bridges
/// dependencies, so the order among the remaining tasks is kept; tasks outside any
/// iteration are kept only between the kept iterations. `t.iterations` keeps the
/// selected ones; the ingest report still describes the whole file. Renumbers the
/// tasks (compact()): ids and replay results of `t.g` taken before are stale.
///
/// The GPU work that an earlier iteration left queued goes with it, so keep one
/// iteration before the ones to study when the GPU lags behind the CPU:
///
///     auto t = daydream::io::load_kineto(path);
///     daydream::io::keep_iterations(t, 103, 104);   // study 104, with 103 before it
inline void keep_iterations(kineto_trace& t, std::int32_t first, std::int32_t last) {
  if (first > last) throw error("daydream: keep_iterations: first (" + std::to_string(first) +
                                ") is after last (" + std::to_string(last) + ")");
  time_ns begin = 0, end = 0;
  bool any = false;
  for (auto& it : t.iterations)
    if (it.number >= first && it.number <= last) {
      begin = any ? std::min(begin, it.trace_begin) : it.trace_begin;
      end = any ? std::max(end, it.trace_end) : it.trace_end;
      any = true;
    }
  if (!any) throw error("daydream: keep_iterations: " + t.info.path + " has no iteration in " +
                        std::to_string(first) + ".." + std::to_string(last));
  std::vector<task_id> drop;
  t.g.for_each_task([&](task_id id) {
    const auto n = t.g.iteration(id);
    const bool keep = n >= 0 ? (n >= first && n <= last)
                             : (t.g.trace_start(id) >= begin && t.g.trace_start(id) < end);
    if (!keep) drop.push_back(id);
  });
  for (auto id : drop) daydream::remove(t.g, id);
  t.g.compact();
  std::erase_if(t.iterations, [&](const iteration_info& it) { return it.number < first || it.number > last; });
}

} // namespace daydream::io

#endif
