// Defines the dataloader pass: batches loaded by worker processes instead of the main thread.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_DATALOADER_HPP
#define DAYDREAM_PASSES_DATALOADER_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/insert.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/resource.hpp>
#include <daydream/select.hpp>
#include <daydream/trace_order.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/format.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace daydream::passes {

/// One call of a PyTorch DataLoader iterator's `__next__` on a CPU thread, as the trace
/// shows it (see dataloader_fetches).
struct dataloader_fetch {
  resource_id thread = no_resource; ///< the thread that called it
  task_id first = no_task;          ///< its first slice (a task named `...__next__`)
  task_id last = no_task;           ///< its last slice; first..last is its program-order run
  time_ns span = 0;                 ///< trace time from the start of `first` to the end of `last`
  bool worker_processes = false;    ///< the iterator is _MultiProcessingDataLoaderIter
};

/// The DataLoader fetches of `g`: every run of CPU tasks named
/// `enumerate(DataLoader)#<iterator>.__next__` (the profiler's annotation of a batch
/// fetch), grouped into one fetch per call, per thread in trace order. The ingest splits
/// a call into slices around the operators nested in it (collation's `aten::stack`,
/// pinning); two slices on one thread belong to the same call when they are in the same
/// iteration and no task between them in the thread's program order launches GPU work
/// (a training step between two fetches always does). O(V).
inline std::vector<dataloader_fetch> dataloader_fetches(const graph& g) {
  std::vector<task_id> slices;
  for (auto t : tasks<cpu_task>(g) | where(pred([](const auto& r) { return is_dataloader_fetch(r.name()); })))
    slices.push_back(t);
  std::stable_sort(slices.begin(), slices.end(), [&, before = trace_order(g)](task_id a, task_id b) {
    if (g.resource_of(a) != g.resource_of(b)) return g.resource_of(a) < g.resource_of(b);
    return before(a, b);
  });
  auto launches = [&](task_id t) {
    for (auto d : g.successors(t))
      if (d.kind == dep_kind::launch) return true;
    return false;
  };
  // Whether b continues the call that a is part of: nothing between launches GPU work.
  auto same_call = [&](task_id a, task_id b) {
    if (g.resource_of(a) != g.resource_of(b) || g.iteration(a) != g.iteration(b)) return false;
    for (auto u = next_on_resource(g, a); u != no_task; u = next_on_resource(g, u)) {
      if (u == b) return true;
      if (launches(u) || g.trace_start(u) > g.trace_start(b)) return false;
    }
    return false;
  };
  std::vector<dataloader_fetch> out;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const auto t = slices[i];
    if (i > 0 && same_call(out.back().last, t)) {
      out.back().last = t;
    } else {
      out.push_back({.thread = g.resource_of(t), .first = t, .last = t,
                     .worker_processes = g.name(t).find("MultiProcessing") != std::string_view::npos});
    }
    auto& f = out.back();
    f.span = g.trace_start(f.last) + g.duration(f.last) - g.trace_start(f.first);
  }
  return out;
}

/// Data loading in worker processes (PyTorch `DataLoader(num_workers=W)`): what if the
/// batches the main thread loads itself (`num_workers=0`, the iterator
/// `_SingleProcessDataLoaderIter`) were loaded by `workers` worker processes.
///
/// Cost model. The fetches are found by dataloader_fetches. Fetch `i` of a thread loads
/// one batch in `L_i`: its span in the trace (from the start of its first `__next__`
/// slice to the end of its last, with the operators nested in it: collation runs in the
/// workers too), or `load_time` when given. With workers, the main thread's fetch costs
/// only `handoff` (receiving the batch from a worker: unpickling its tensors from shared
/// memory; 100 us by default, about what traces of `num_workers=4` show when the batch
/// is ready) plus any wait for the batch: every task of the fetch but the first gets
/// duration 0 and the idle gaps inside it go. The loading moves to `W` new CPU
/// resources "dataloader worker k", one per process, as one task per batch (iteration
/// -1: outside every iteration, so spans measure the training loop), with PyTorch's
/// round-robin and prefetch rules:
/// - batch `i` is loaded by worker `i mod W`, after that worker's previous batch `i - W`;
/// - at most `prefetch x W` batches are outstanding: batch `i` is requested when the
///   main thread has received batch `i - prefetch x W` (a dependency from that fetch);
/// - the main thread's fetch `i` waits for batch `i` (a dependency from its load).
///
/// The trace starts mid-training, so the workers are already running when it begins:
/// the first `W` batches are taken to be in steady state, each `1/W` of its load further
/// along than the one before (batch `j < W` needs `(j + 1) x L_j / W` more). So when
/// loading is the bottleneck the main thread receives a batch every `L / W` and waits
/// `max(0, L/W - time since its previous fetch)` at each fetch, plus `handoff`; when
/// it is not, it waits only `handoff`.
///
/// CPU contention. The workers run on the same host as the training process, and
/// their loading slows its CPU work: on the ResNet-50/V100 pair of tests/data the same
/// operators take 5% (forward, main thread) to 25% (backward thread) longer with four
/// workers loading, and launch calls 50% longer (shared cores, caches, memory bandwidth
/// and a lower turbo clock with more cores busy). The pass scales every CPU task of the
/// traced threads in an iteration by `1 + contention x u`, where `u` is the share of a
/// core busy loading on average: the load time per step over the main thread's
/// training time per step (its busy time without the fetches), at most 1 (what the
/// training threads share with the workers, caches, memory bandwidth and clock,
/// saturates; the number of workers then changes the step only through the loading
/// bound, so more workers never predict a slower step).
/// A trace that already loads in workers has their contention in its times: there
/// nothing is scaled. `contention` (0.25) is a property of the host the trace cannot tell;
/// its default comes from that pair (docs/validation.md says so), and 0 turns it off.
///
/// Not modelled: worker start-up (the iterator is created before the trace), and
/// `pin_memory`'s thread. A trace whose iterator already uses workers
/// (`_MultiProcessingDataLoaderIter`) shows how long the main thread waited, not how
/// long a batch takes to load: there the pass needs `load_time`, and without it
/// changes nothing and says so (pass_report::not_applied), as it does for a trace
/// without fetches.
///
///     daydream::apply(g, daydream::passes::dataloader{.workers = 4});
///     daydream::apply(g, daydream::passes::dataloader{.workers = 8, .load_time = 40'000'000});
struct dataloader {
  static constexpr std::string_view name = "dataloader"; ///< the --pass name
  std::int64_t workers = 4;     ///< worker processes (num_workers)
  time_ns load_time = 0;        ///< time to load one batch; 0: each fetch's span in the trace
  time_ns handoff = 100'000;    ///< main-thread cost of receiving a batch from a worker
  std::int64_t prefetch = 2;    ///< batches requested ahead per worker (prefetch_factor)
  double contention = 0.25;     ///< slowdown of the training threads' CPU work per core busy loading

  /// Why the pass would change nothing on `g` with its default parameters, or "" when
  /// it would change something.
  static std::string not_applicable(const graph& g) { return dataloader{}.nothing_to_do(dataloader_fetches(g)); }

  /// Whether `g` shows batches loaded on the main thread.
  static bool applicable(const graph& g) { return not_applicable(g).empty(); }

  /// Moves each fetch's loading to the worker resources; returns the fetches, the load
  /// time per batch and the bound. Adds `workers` resources per thread that fetches.
  /// Invalidates nothing.
  pass_report operator()(graph& g) const {
    check();
    pass_report rep;
    rep.pass = std::string(name);
    const auto fetches = dataloader_fetches(g);
    if (auto why = nothing_to_do(fetches); !why.empty()) {
      rep.not_applied(why);
      return rep;
    }
    std::map<resource_id, std::vector<const dataloader_fetch*>> by_thread;
    for (auto& f : fetches)
      if (load_time > 0 || !f.worker_processes) by_thread[f.thread].push_back(&f);
    const auto w = static_cast<std::size_t>(workers);
    const auto ahead = static_cast<std::size_t>(workers * prefetch);
    time_ns main_before = 0, loaded = 0;
    std::size_t moved = 0;
    for (auto& [thread, fs] : by_thread) {
      const auto th = g.resource_at(thread); // a copy: add_resource may move the table
      std::vector<resource_id> procs(w);
      for (std::size_t k = 0; k < w; ++k)
        procs[k] = g.add_resource({"dataloader worker " + std::to_string(k) + " (" + th.name + ")",
                                   resource_kind::cpu_thread, sharing::exclusive, th.node});
      std::vector<task_id> loads(fs.size(), no_task);
      for (std::size_t i = 0; i < fs.size(); ++i) {
        const auto& f = *fs[i];
        const time_ns load = load_time > 0 ? load_time : f.span;
        const time_ns d = i < w ? static_cast<time_ns>(std::llround(double(load) * double(i + 1) / double(w)))
                                : load;
        task_fields lf{.name = "dataloader: load batch", .duration = d, .resource = procs[i % w],
                       .trace_start = g.trace_start(f.first), .phase = phase::other, .iteration = -1};
        // A worker's first load starts its program order; the fetch waits for its batch, and a
        // load waits until the batch `ahead` before it has been handed over.
        std::vector<dependency> deps;
        if (i >= ahead) deps.push_back(edge_from(fs[i - ahead]->last, dep_kind::control));
        deps.push_back(edge_to(f.first, dep_kind::data));
        loads[i] = insert_at(g, cpu_task{}, lf, i < w ? position{} : just_after(loads[i - w]), deps).id;
        // The main thread's part: the handoff, then nothing until the call returns.
        for (auto u = f.first;; u = next_on_resource(g, u)) {
          main_before += g.duration(u) + (u == f.last ? 0 : g.gap(u));
          set_duration(g, u, u == f.first ? handoff : 0);
          if (u == f.last) break;
          set_gap(g, u, 0);
        }
        loaded += load;
        ++moved;
      }
    }
    const time_ns per_batch = moved ? loaded / static_cast<time_ns>(moved) : 0;
    const double slowdown = apply_contention(g, fetches, loaded, moved);
    rep.add_count("fetches moved to workers", std::int64_t(moved));
    rep.add("load time per batch",
            format_time(per_batch) + (load_time > 0 ? " (given)" : " (mean __next__ time in the trace)"),
            report_value::of_time(double(per_batch)));
    rep.add("workers", std::to_string(workers) + ", " + std::to_string(prefetch) + " batches ahead each",
            report_value::of_count(workers));
    const time_ns handed = handoff * static_cast<time_ns>(moved);
    rep.add("main-thread fetch time", format_time(main_before) + " -> " + format_time(handed) + " + waits",
            report_value::of_change(report_kind::time, double(main_before), double(handed)));
    rep.add("bound",
            "the workers deliver a batch every " + format_time(per_batch / workers) +
                "; the main thread waits when a step is shorter than that",
            report_value::of_time(double(per_batch / workers)));
    if (slowdown > 1)
      rep.add("CPU contention",
              "the training threads' CPU work runs " + format_ratio(slowdown) +
                  " slower while the workers load (contention=" + format_ratio(contention) + " per busy core)",
              report_value::of_ratio(slowdown));
    std::size_t skipped = fetches.size() - moved;
    if (skipped > 0)
      rep.note(std::to_string(skipped) + " fetches already load in worker processes "
               "(_MultiProcessingDataLoaderIter) and were left as traced");
    return rep;
  }

  /// Throws daydream::usage_error when a parameter is out of range; the call operator
  /// checks them too.
  void check() const {
    if (workers < 1) throw usage_error("daydream: pass 'dataloader': workers must be at least 1");
    if (prefetch < 1) throw usage_error("daydream: pass 'dataloader': prefetch must be at least 1");
    if (load_time < 0 || handoff < 0)
      throw usage_error("daydream: pass 'dataloader': load_time and handoff cannot be negative");
    if (!(contention >= 0)) throw usage_error("daydream: pass 'dataloader': contention cannot be negative");
  }

private:
  static std::string format_ratio(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
  }

  /// Scales the CPU tasks of the traced threads in every iteration by the contention
  /// of the loading workers; returns the factor (1: none). `loaded` is the moved
  /// batches' load time; the fetches have already been cut to their handoff, so the
  /// fetching threads' busy time is the training loop's.
  double apply_contention(graph& g, const std::vector<dataloader_fetch>& fetches, time_ns loaded,
                          std::size_t moved) const {
    if (contention <= 0 || moved == 0) return 1;
    // A trace that already loads in workers has their contention in its times.
    std::set<resource_id> fetching;
    for (auto& f : fetches)
      if (!f.worker_processes) fetching.insert(f.thread);
    if (fetching.empty()) return 1;
    time_ns training = 0;
    for (auto t : tasks<cpu_task>(g))
      if (g.iteration(t) >= 0 && fetching.count(g.resource_of(t))) training += g.duration(t) + g.gap(t);
    if (training <= 0) return 1;
    const double u = std::min(1.0, double(loaded) / double(training));
    const double factor = 1.0 + contention * u;
    std::set<resource_id> traced; // every CPU thread of the trace, not the workers
    for (resource_id r = 0; r < g.resource_count(); ++r)
      if (is_cpu(g.resource_at(r).kind) && g.resource_at(r).name.rfind("dataloader worker", 0) != 0)
        traced.insert(r);
    for (auto t : tasks<cpu_task>(g))
      if (g.iteration(t) >= 0 && traced.count(g.resource_of(t)) && g.duration(t) > 0) scale_duration(g, t, factor);
    return factor;
  }

  /// Why these fetches give nothing to do, or "".
  std::string nothing_to_do(const std::vector<dataloader_fetch>& fs) const {
    if (fs.empty())
      return "the trace shows no data loading on a CPU thread (no enumerate(DataLoader)#...__next__ "
             "events): the input pipeline is not on the critical path it recorded";
    if (load_time > 0) return "";
    for (auto& f : fs)
      if (!f.worker_processes) return "";
    return "the trace already loads in worker processes (_MultiProcessingDataLoaderIter): its "
           "__next__ time is the wait for them, not the load time of a batch; give load_time= to "
           "model another number of workers";
  }
};

} // namespace daydream::passes

#endif
