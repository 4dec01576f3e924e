// Defines testing::random_dag: seeded, deterministic random task graphs for property tests.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_RANDOM_DAG_HPP
#define DAYDREAM_TESTS_SUPPORT_RANDOM_DAG_HPP

#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace daydream::testing {

/// A small deterministic generator (splitmix64): the same seed gives the same numbers
/// with every compiler and standard library, unlike std::uniform_int_distribution.
class rng {
public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  /// The next 64 random bits.
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// A number in [0, n); 0 when n is 0.
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  /// A number in [lo, hi].
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  /// True with probability `p`.
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }

private:
  std::uint64_t s_;
};

/// The shape of a random graph.
struct dag_options {
  std::size_t tasks = 30;          ///< number of tasks
  double edge_probability = 0.08;  ///< chance of an edge i -> j for each pair i < j
  std::size_t threads = 2;         ///< CPU threads (cpu_task, with gaps)
  std::size_t streams = 2;         ///< GPU streams (gpu_kernel)
  std::size_t copy_engines = 1;    ///< copy engines (memcpy_task)
  std::size_t links = 1;           ///< fair-share links (comm_task)
  bool program_order = true;       ///< chain the tasks of each exclusive resource in id order
  /// Put every task on a resource of its own (no two tasks ever compete): the replay
  /// then equals the longest path.
  bool own_resources = false;
  double no_resource = 0.0;        ///< chance that a task has no resource at all
  time_ns max_duration = 100;      ///< durations are drawn from [0, max_duration]
  time_ns max_gap = 20;            ///< gaps of CPU tasks are drawn from [0, max_gap]
  std::int64_t max_mem = 1000;     ///< mem_delta drawn from [-max_mem, max_mem]
};

/// A random acyclic graph: ids are a topological order (every edge goes from a smaller
/// to a larger id). Kinds follow resources (thread: cpu_task, stream: gpu_kernel, copy
/// engine: memcpy_task, link: comm_task); edge kinds follow the kinds they join (CPU to
/// GPU: launch, GPU to CPU: sync, to or from a transfer: comm, else data); program order
/// chains the tasks of each exclusive resource. Names are "t<id>", layers "layer<k>",
/// phases and iterations vary. The same seed and options give the same graph.
inline graph random_dag(std::uint64_t seed, const dag_options& o = {}) {
  rng r(seed);
  graph g;
  enum class slot : std::uint8_t { thread, stream, copy, link };
  std::vector<slot> slots;
  auto add_res = [&](slot s, std::size_t i) {
    switch (s) {
    case slot::thread:
      g.add_resource({"thread " + std::to_string(i), resource_kind::cpu_thread});
      break;
    case slot::stream:
      g.add_resource({"stream " + std::to_string(i), resource_kind::gpu_stream, sharing::exclusive, 0, 0});
      break;
    case slot::copy:
      g.add_resource({"copy engine " + std::to_string(i), resource_kind::copy_engine, sharing::exclusive, 0, 0});
      break;
    case slot::link:
      g.add_resource({"link " + std::to_string(i), resource_kind::link, sharing::fair, 0, -1, 1e9});
      break;
    }
    slots.push_back(s);
  };
  std::vector<slot> menu;
  for (std::size_t i = 0; i < o.threads; ++i) menu.push_back(slot::thread);
  for (std::size_t i = 0; i < o.streams; ++i) menu.push_back(slot::stream);
  for (std::size_t i = 0; i < o.copy_engines; ++i) menu.push_back(slot::copy);
  for (std::size_t i = 0; i < o.links; ++i) menu.push_back(slot::link);
  if (menu.empty()) menu.push_back(slot::thread);
  if (!o.own_resources)
    for (std::size_t i = 0; i < menu.size(); ++i) add_res(menu[i], i);

  std::vector<slot> task_slot(o.tasks);
  std::vector<task_id> last_on(g.resource_count(), no_task);
  time_ns clock = 0;
  for (std::size_t i = 0; i < o.tasks; ++i) {
    auto pick = static_cast<std::size_t>(r.below(menu.size()));
    slot s = menu[pick];
    resource_id res = no_resource;
    if (o.own_resources) {
      add_res(s, i);
      res = static_cast<resource_id>(g.resource_count() - 1);
    } else if (!r.chance(o.no_resource)) {
      res = static_cast<resource_id>(pick);
    }
    task_slot[i] = s;
    auto name = "t" + std::to_string(i);
    auto layer = "layer" + std::to_string(r.below(4));
    task_fields f{.name = name,
                  .duration = r.between(0, o.max_duration),
                  .resource = res,
                  .gap = s == slot::thread ? r.between(0, o.max_gap) : 0,
                  .trace_start = clock,
                  .layer = layer,
                  .phase = static_cast<phase>(r.below(4)),
                  .iteration = static_cast<std::int32_t>(i * 2 / (o.tasks ? o.tasks : 1))};
    clock += r.between(0, 50);
    task_id id = no_task;
    switch (s) {
    case slot::thread:
      id = g.add(cpu_task{static_cast<cpu_call>(r.below(5)), no_name, i, 0}, f).id;
      break;
    case slot::stream:
      id = g.add(gpu_kernel{0, static_cast<std::int32_t>(pick), i, r.below(1 << 20)}, f).id;
      break;
    case slot::copy:
      id = g.add(memcpy_task{static_cast<copy_kind>(r.below(5)), r.below(1 << 24), 0, 0, i}, f).id;
      break;
    case slot::link:
      id = g.add(comm_task{comm_op::all_reduce, r.below(1 << 24), 4, 0, 0, i}, f).id;
      break;
    }
    g.set_mem_delta(id, r.between(-o.max_mem, o.max_mem));
    if (o.program_order && res != no_resource && !o.own_resources &&
        g.resource_at(res).share == sharing::exclusive) {
      if (last_on[res] != no_task)
        g.add_dependency(last_on[res], id,
                         s == slot::thread ? dep_kind::cpu_order : dep_kind::stream_order);
      last_on[res] = id;
    }
  }
  auto edge_kind = [&](slot a, slot b) {
    if (a == slot::link || b == slot::link) return dep_kind::comm;
    if (a == slot::thread && b != slot::thread) return dep_kind::launch;
    if (a != slot::thread && b == slot::thread) return dep_kind::sync;
    return dep_kind::data;
  };
  for (std::size_t i = 0; i < o.tasks; ++i)
    for (std::size_t j = i + 1; j < o.tasks; ++j)
      if (r.chance(o.edge_probability))
        g.add_dependency(static_cast<task_id>(i), static_cast<task_id>(j),
                         edge_kind(task_slot[i], task_slot[j]));
  return g;
}

} // namespace daydream::testing

#endif
