// Defines the libFuzzer target for graph edits: random primitives and bundled passes on random graphs.
// SPDX-License-Identifier: MIT
//
// The input bytes pick a starting graph (a random DAG or a synthetic training step) and a
// sequence of steps: the insert, remove, update, reschedule, move and compact primitives,
// raw dependency edits, unrolling, and every bundled pass (daydream::passes::bundled(),
// with its default parameters or its what-if scenario's) through daydream::apply. After
// every step the graph keeps its invariants (check_invariants: acyclic, every dependency
// between live tasks, consistent adjacency; ids dense after compact) and replays to the
// end with every task placed after its dependencies. A step that may close a cycle runs
// through apply(): refused, it leaves the graph exactly as it was and names the cycle.
// Steps given bad arguments (removed ids, missing resources, negative durations) must
// throw daydream::error and change nothing.
#include <daydream/daydream.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>
#include <support/compare.hpp>
#include <support/fixtures.hpp>
#include <support/random_dag.hpp>
#include <support/reference_replay.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace daydream;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_graph: %s\n", what.c_str());
  std::abort();
}

/// The replay ends, places every live task, and starts each after its dependencies.
void check_replay(const graph& g, const replay_result& r, const char* which) {
  if (r.tasks != g.size()) fail(std::string(which) + ": replayed " + std::to_string(r.tasks) + " of " +
                                std::to_string(g.size()) + " tasks");
  for (task_id t = 0; t < g.id_bound(); ++t) {
    if (!g.contains(t)) {
      if (r.start[t] != -1) fail(std::string(which) + ": removed task #" + std::to_string(t) + " was replayed");
      continue;
    }
    if (r.start[t] < 0 || r.end[t] - r.start[t] < g.duration(t))
      fail(std::string(which) + ": task #" + std::to_string(t) + " not replayed or too short");
    if (r.end[t] > r.makespan) fail(std::string(which) + ": a task ends after the makespan");
    for (auto d : g.successors(t))
      if (r.start[d.to] < r.end[t])
        fail(std::string(which) + ": dependency #" + std::to_string(t) + " -> #" + std::to_string(d.to) +
             " not respected");
  }
}

/// Everything that must hold after every step.
void check_graph(const graph& g, std::uint8_t replays) {
  try {
    check_invariants(g);
  } catch (const error& e) {
    fail(std::string("invariant broken: ") + e.what());
  }
  try {
    auto r = replay(g);
    check_replay(g, r, "trace-order replay");
    if (replays & 1) check_replay(g, replay(g, priority_policy{}), "priority replay");
    if (replays & 2) {
      // The reference event loop must agree with the replay kernel.
      auto key = [&](task_id t, time_ns ready) { return trace_order_policy{}.key(g, t, ready); };
      auto general = testing::reference_replay(g.core(), key, {});
      auto diff = testing::replay_difference(r, general);
      if (!diff.empty()) fail("the reference replay and replay() disagree: " + diff);
      if (r.peak_memory != general.peak_memory) fail("the reference replay and replay() disagree on peak memory");
      const replay_options slow{.overlap_slowdown = 1.75};
      auto slowed = replay(g, trace_order_policy{}, slow);
      auto slowed_reference = testing::reference_replay(g.core(), key, slow);
      diff = testing::replay_difference(slowed, slowed_reference);
      if (!diff.empty()) fail("the reference replay and replay() disagree with an overlap slowdown: " + diff);
    }
    if (replays & 4) check_replay(g, replay(g, trace_order_policy{}, {.overlap_slowdown = 1.75}), "slowed replay");
  } catch (const error& e) {
    fail(std::string("replay of a valid graph failed: ") + e.what());
  }
}

/// A refused edit left the graph as it was, and a refusal for a cycle names its tasks.
void check_refusal(const graph& before, const graph& after, const error& e) {
  auto diff = testing::graph_difference(before, after, true);
  if (!diff.empty()) fail(std::string("a refused edit changed the graph (") + e.what() + "): " + diff);
  std::string_view msg = e.what();
  if (msg.find("cycle") != std::string_view::npos && msg.find(" -> #") == std::string_view::npos)
    fail(std::string("a cycle refusal does not name the cycle: ") + e.what());
}

class session {
public:
  explicit session(FuzzedDataProvider& in) : in_(in) {}

  graph start() {
    if (in_.ConsumeBool()) {
      testing::training_options o;
      o.layers = in_.ConsumeIntegralInRange(1, 4);
      o.iterations = in_.ConsumeIntegralInRange(1, 2);
      o.data_parallel = in_.ConsumeBool();
      o.input_copy = in_.ConsumeBool();
      return testing::training_step(o);
    }
    testing::dag_options o;
    const auto seed = in_.ConsumeIntegral<std::uint64_t>();
    o.tasks = in_.ConsumeIntegralInRange<std::size_t>(0, 48);
    o.edge_probability = in_.ConsumeIntegralInRange(0, 40) / 100.0;
    o.threads = in_.ConsumeIntegralInRange<std::size_t>(0, 3);
    o.streams = in_.ConsumeIntegralInRange<std::size_t>(0, 3);
    o.copy_engines = in_.ConsumeIntegralInRange<std::size_t>(0, 1);
    o.links = in_.ConsumeIntegralInRange<std::size_t>(0, 2);
    o.program_order = in_.ConsumeBool();
    o.own_resources = in_.ConsumeIntegralInRange(0, 7) == 0;
    o.no_resource = in_.ConsumeIntegralInRange(0, 3) / 10.0;
    o.max_duration = in_.ConsumeIntegralInRange<time_ns>(0, 1'000'000);
    o.max_gap = in_.ConsumeIntegralInRange<time_ns>(0, 1000);
    o.max_mem = in_.ConsumeIntegralInRange<std::int64_t>(0, 1 << 30);
    return testing::random_dag(seed, o);
  }

  /// A live task, a removed one, or no_task (mostly live when there is one).
  task_id any_task(const graph& g) {
    const auto choice = in_.ConsumeIntegralInRange(0, 15);
    if (choice == 0) return no_task;
    if (g.id_bound() == 0) return choice == 1 ? 0 : no_task;
    auto t = in_.ConsumeIntegralInRange<task_id>(0, g.id_bound() - 1);
    if (choice == 1) return t; // whatever it is
    for (task_id k = 0; k < g.id_bound(); ++k) {
      auto u = (t + k) % g.id_bound();
      if (g.contains(u)) return u;
    }
    return t;
  }
  task_id live_task(const graph& g) {
    if (g.empty()) return no_task;
    auto t = in_.ConsumeIntegralInRange<task_id>(0, g.id_bound() - 1);
    for (task_id k = 0; k < g.id_bound(); ++k)
      if (g.contains((t + k) % g.id_bound())) return (t + k) % g.id_bound();
    return no_task;
  }
  resource_id any_resource(const graph& g) {
    const auto n = static_cast<resource_id>(g.resource_count());
    const auto choice = in_.ConsumeIntegralInRange(0, 9);
    if (choice == 0) return no_resource;
    if (choice == 1) return n + in_.ConsumeIntegralInRange<resource_id>(0, 3); // missing
    return n ? in_.ConsumeIntegralInRange<resource_id>(0, n - 1) : no_resource;
  }
  time_ns duration() {
    switch (in_.ConsumeIntegralInRange(0, 7)) {
    case 0: return 0;
    case 1: return -in_.ConsumeIntegralInRange<time_ns>(1, 1000); // refused
    default: return in_.ConsumeIntegralInRange<time_ns>(0, time_ns(1) << 36);
    }
  }
  dep_kind kind() { return static_cast<dep_kind>(in_.ConsumeIntegralInRange(0, dep_kind_count - 1)); }
  task_fields fields(const graph& g, std::string& name) {
    name = "fuzz" + std::to_string(in_.ConsumeIntegralInRange(0, 99));
    task_fields f;
    f.name = name;
    f.duration = duration();
    f.resource = any_resource(g);
    f.gap = in_.ConsumeIntegralInRange<time_ns>(0, 1000);
    f.trace_start = in_.ConsumeIntegralInRange<time_ns>(0, 1'000'000);
    f.layer = in_.ConsumeBool() ? "layer0" : "";
    f.phase = static_cast<phase>(in_.ConsumeIntegralInRange(0, 3));
    f.iteration = in_.ConsumeIntegralInRange(-1, 2);
    return f;
  }

  /// Runs `edit` on `g` as a transaction: either it succeeds or it throws daydream::error
  /// and `g` is unchanged.
  template <class Edit> void transact(graph& g, Edit&& edit, std::string_view name) {
    const graph before = g;
    try {
      apply(g, [&](graph& gg) { edit(gg); }, name);
    } catch (const error& e) {
      check_refusal(before, g, e);
    }
  }
  /// Runs an edit that must keep the graph acyclic by itself; bad arguments must be
  /// refused before anything changes.
  template <class Edit> void direct(graph& g, Edit&& edit) {
    const graph before = g;
    try {
      edit(g);
    } catch (const error& e) {
      check_refusal(before, g, e);
    }
  }

  void step(graph& g, const passes::registry<graph>& reg) {
    // DAYDREAM_FUZZ_VERBOSE=1 prints the steps, to read a reproducer.
    static const bool verbose = std::getenv("DAYDREAM_FUZZ_VERBOSE") != nullptr;
    std::string name;
    const int op = in_.ConsumeIntegralInRange(0, 17);
    if (verbose) std::fprintf(stderr, "step %d on %zu tasks, %zu dependencies\n", op, g.size(), g.dependency_count());
    switch (op) {
    case 0: { // insert with dependencies on both sides: may close a cycle
      auto f = fields(g, name);
      auto a = any_task(g), b = any_task(g), c = any_task(g);
      auto ka = kind(), kb = kind();
      transact(g, [&](graph& gg) {
        switch (in_.ConsumeIntegralInRange(0, 3)) {
        case 0: insert(gg, cpu_task{cpu_call::launch}, f, {{a, no_task, ka}, {no_task, b, kb}}); break;
        case 1: insert(gg, gpu_kernel{}, f, {{a, no_task, ka}, {c, no_task, ka}, {no_task, b, kb}}); break;
        case 2: insert(gg, memcpy_task{copy_kind::h2d, 1 << 20}, f, {{no_task, b, kb}}); break;
        default: insert(gg, comm_task{comm_op::all_reduce, 1 << 20}, f, {{a, no_task, ka}}); break;
        }
      }, "insert");
      break;
    }
    case 1: { // insert_between two arbitrary tasks: may close a cycle
      auto f = fields(g, name);
      auto a = any_task(g), b = any_task(g);
      transact(g, [&](graph& gg) { insert_between(gg, gpu_kernel{}, f, a, b); }, "insert_between");
      break;
    }
    case 2: { // insert_after / insert_before: splice into a program order, never a cycle
      auto f = fields(g, name);
      auto t = any_task(g);
      const bool after = in_.ConsumeBool();
      direct(g, [&](graph& gg) {
        if (after) insert_after(gg, cpu_task{}, f, t);
        else insert_before(gg, gpu_kernel{}, f, t);
      });
      break;
    }
    case 3: { // a kernel with its launch call
      auto f = fields(g, name);
      auto cpu = any_task(g), gpu = in_.ConsumeBool() ? any_task(g) : no_task;
      transact(g, [&](graph& gg) { insert_launched(gg, gpu_kernel{}, f, cpu, gpu); }, "insert_launched");
      break;
    }
    case 4: { // bridging removal of one task, or of several
      if (in_.ConsumeBool()) {
        auto t = any_task(g);
        direct(g, [&](graph& gg) { remove(gg, t); });
      } else {
        std::vector<task_id> ids;
        for (int n = in_.ConsumeIntegralInRange(0, 6); n > 0; --n) {
          auto t = live_task(g);
          if (t != no_task && std::find(ids.begin(), ids.end(), t) == ids.end()) ids.push_back(t);
        }
        direct(g, [&](graph& gg) { remove(gg, ids); });
      }
      break;
    }
    case 5: { // durations
      auto t = any_task(g);
      switch (in_.ConsumeIntegralInRange(0, 2)) {
      case 0: { auto d = duration(); direct(g, [&](graph& gg) { set_duration(gg, t, d); }); break; }
      case 1: {
        static constexpr double factors[] = {0.0, 0.5, 1.0 / 3, 2.0, 1e3, 1e30, -1.0,
                                             std::numeric_limits<double>::quiet_NaN(),
                                             std::numeric_limits<double>::infinity()};
        auto x = factors[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(factors) - 1)];
        direct(g, [&](graph& gg) { scale_duration(gg, t, x); });
        break;
      }
      default: { auto d = duration(); direct(g, [&](graph& gg) { set_gap(gg, t, d); }); break; }
      }
      break;
    }
    case 6: { // move to another resource: bridges the old program order
      auto t = any_task(g);
      auto r = any_resource(g);
      direct(g, [&](graph& gg) { move_to(gg, t, r); });
      break;
    }
    case 7: { // bytes, by kind
      auto t = live_task(g);
      auto n = in_.ConsumeIntegral<std::uint64_t>();
      if (t != no_task)
        direct(g, [&](graph& gg) {
          gg.visit(t, [&]<class K>(handle<K> h, K&) {
            if constexpr (kind_traits<K>::has_bytes) set_bytes(gg, h, n);
          });
        });
      break;
    }
    case 8: { // replay priorities
      auto t = any_task(g);
      static constexpr std::int64_t prios[] = {as_soon_as_ready, -1, default_priority, 1, 1000,
                                               std::numeric_limits<std::int64_t>::max()};
      auto p = prios[in_.ConsumeIntegralInRange<std::size_t>(0, std::size(prios) - 1)];
      direct(g, [&](graph& gg) { reschedule(gg, t, p); });
      break;
    }
    case 9: { // a raw dependency: may close a cycle, or join a task to itself
      auto a = any_task(g), b = any_task(g);
      auto k = kind();
      transact(g, [&](graph& gg) { gg.add_dependency(a, b, k); }, "add_dependency");
      break;
    }
    case 10: { // dropping a dependency never closes a cycle
      auto a = any_task(g), b = any_task(g);
      direct(g, [&](graph& gg) { gg.remove_dependency(a, b); });
      break;
    }
    case 11: { // compact: ids dense, order, names and dependencies kept
      const graph before = g;
      auto map = g.compact();
      if (g.id_bound() != g.size() || g.size() != before.size() ||
          g.dependency_count() != before.dependency_count())
        fail("compact: ids are not dense or tasks/dependencies were lost");
      if (map.size() != before.id_bound()) fail("compact: the id map has the wrong size");
      task_id next = 0;
      for (task_id t = 0; t < before.id_bound(); ++t) {
        if (!before.contains(t)) {
          if (map[t] != no_task) fail("compact: a removed task was mapped");
          continue;
        }
        if (map[t] != next++) fail("compact: live tasks were not renumbered in order");
        if (g.name(map[t]) != before.name(t) || g.duration(map[t]) != before.duration(t) ||
            g.kind_name(map[t]) != before.kind_name(t) || g.priority(map[t]) != before.priority(t) ||
            g.mem_delta(map[t]) != before.mem_delta(t))
          fail("compact: task #" + std::to_string(t) + " changed");
        for (auto d : before.successors(t))
          if (!g.has_dependency(map[t], map[d.to]) || g.dependency_kind(map[t], map[d.to]) != d.kind)
            fail("compact: a dependency was lost");
      }
      break;
    }
    case 12: { // a bundled pass, run transactionally by its registry entry
      // Passes that copy work (grad_accum's micro-batches, recompute) multiply the graph:
      // applied again and again, they would grow it past any memory limit.
      if (g.size() > 4096) break;
      const auto& entries = reg.entries();
      const auto& e = entries[in_.ConsumeIntegralInRange<std::size_t>(0, entries.size() - 1)];
      std::string spec(e.name);
      if (!e.scenario_params.empty() && in_.ConsumeBool()) spec += ":" + std::string(e.scenario_params);
      passes::erased_pass<graph> p;
      try {
        p = reg.make(spec);
      } catch (const error&) {
        return; // needs parameters (substitute without layers=)
      }
      if (!e.applicable(g) && in_.ConsumeBool()) return;
      const graph before = g;
      try {
        (void)p.run(g);
      } catch (const error& ex) {
        check_refusal(before, g, ex);
        return;
      }
      try {
        check_invariants(g);
        check_replay(g, p.replay(g, {}), "replay with the pass's policy");
      } catch (const error& ex) {
        fail("pass '" + spec + "' left a graph that does not replay: " + ex.what());
      }
      break;
    }
    case 13: { // a pass that breaks the graph midway is rolled back
      const graph before = g;
      auto t = live_task(g);
      try {
        apply(g, [&](graph& gg) {
          if (t != no_task) { set_duration(gg, t, 7); remove(gg, t); }
          throw error("daydream: fuzz: a failing pass");
        }, "failing");
        fail("apply returned after the pass threw");
      } catch (const error& e) {
        check_refusal(before, g, e);
      }
      break;
    }
    case 14: { // unrolled copies stay acyclic and replay
      if (g.size() > 64) break;
      const auto n = in_.ConsumeIntegralInRange<std::uint32_t>(1, 3);
      dep_mask carried;
      carried.bits = in_.ConsumeIntegral<std::uint8_t>() & dep_mask::all().bits;
      unrolled<graph> u;
      try {
        u = unroll(g, n, carried);
      } catch (const error&) {
        break; // iteration numbers or trace times beyond their integer types
      }
      if (u.graph.size() != g.size() * n) fail("unroll: wrong number of tasks");
      check_graph(u.graph, 0);
      break;
    }
    case 15: { // names, layers, phases, iterations, memory
      auto t = live_task(g);
      if (t == no_task) break;
      switch (in_.ConsumeIntegralInRange(0, 4)) {
      case 0: g.set_name(t, in_.ConsumeRandomLengthString(16)); break;
      case 1: g.set_layer(t, in_.ConsumeRandomLengthString(16)); break;
      case 2: g.set_phase(t, static_cast<phase>(in_.ConsumeIntegralInRange(0, 3))); break;
      case 3: g.set_iteration(t, in_.ConsumeIntegral<std::int32_t>()); break;
      default: g.set_mem_delta(t, in_.ConsumeIntegralInRange<std::int64_t>(-(std::int64_t(1) << 40),
                                                                            std::int64_t(1) << 40)); break;
      }
      break;
    }
    case 16: { // a new resource
      resource r;
      r.name = "fuzz resource";
      r.kind = static_cast<resource_kind>(in_.ConsumeIntegralInRange(0, 4));
      r.share = in_.ConsumeBool() ? sharing::fair : sharing::exclusive;
      g.add_resource(r);
      break;
    }
    default: { // erase without bridging: a removal that drops the order through the task
      auto t = any_task(g);
      direct(g, [&](graph& gg) { gg.erase(t); });
      break;
    }
    }
  }

private:
  FuzzedDataProvider& in_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto reg = passes::bundled();
  FuzzedDataProvider in(data, size);
  session s(in);
  graph g = s.start();
  check_graph(g, 7);
  for (int steps = 0; steps < 24 && in.remaining_bytes() > 0; ++steps) {
    s.step(g, reg);
    check_graph(g, in.ConsumeIntegral<std::uint8_t>());
  }
  return 0;
}
