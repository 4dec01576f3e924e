// Tests of the graph model: typed tasks over the flat core, dependencies, visits, compact, invariants and concepts.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/resource.hpp>
#include <daydream/select.hpp>
#include <daydream/task.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>
#include <support/compare.hpp>
#include <support/print.hpp>
#include <support/user_kinds.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

using namespace daydream;

namespace {

using testing::decode_task;
using testing::marker;
using testing::my_graph;

struct noop_pass {
  void operator()(graph&) const {}
};
struct not_a_pass {};

} // namespace

// The concepts the library promises.
static_assert(task_kind<cpu_task> && task_kind<gpu_kernel> && task_kind<memcpy_task> &&
              task_kind<comm_task> && task_kind<decode_task> && task_kind<marker>);
static_assert(!task_kind<int> && !task_kind<std::string&>);
static_assert(selection_policy<trace_order_policy, graph>);
static_assert(selection_policy<priority_policy, graph>);
static_assert(selection_policy<trace_order_policy, my_graph>);
static_assert(!selection_policy<noop_pass, graph>);
static_assert(pass_for<noop_pass, graph>);
static_assert(!pass_for<not_a_pass, graph>);
static_assert(!pass_for<noop_pass, my_graph>);
// Handles are trivially copyable ids; kinds know their traits.
static_assert(std::is_trivially_copyable_v<handle<gpu_kernel>>);
static_assert(sizeof(handle<gpu_kernel>) == sizeof(task_id));
static_assert(kind_traits<memcpy_task>::has_bytes && kind_traits<comm_task>::has_bytes &&
              kind_traits<gpu_kernel>::has_bytes && !kind_traits<cpu_task>::has_bytes);
static_assert(kind_traits<decode_task>::has_bytes && !kind_traits<marker>::has_bytes);
static_assert(kind_traits<marker>::name == "user_kind");
static_assert(kind_traits<gpu_kernel>::resource == resource_kind::gpu_stream);
static_assert(kind_traits<decode_task>::resource == resource_kind::copy_engine);
static_assert(kind_traits<marker>::resource == resource_kind::other);
static_assert(graph::has_kind<comm_task> && !graph::has_kind<decode_task>);
static_assert(my_graph::kind_index<marker> == 2 && my_graph::kind_count == 3);
static_assert(dep_mask::order().contains(dep_kind::cpu_order) && !dep_mask::order().contains(dep_kind::launch));
static_assert(to_string(dep_kind::sync) == "sync" && to_string(phase::weight_update) == "weight_update");

TEST_CASE("a graph stores typed tasks with dense ids and interned names") {
  graph g;
  CHECK(g.empty());
  auto thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  CHECK(g.resource_count() == 2);
  CHECK(g.find_resource("stream 7") == st);
  CHECK(g.find_resource("nope") == no_resource);
  CHECK(g.resource_at(thr).kind == resource_kind::cpu_thread);

  auto l = g.add(cpu_task{.call = cpu_call::launch, .correlation = 42},
                 {.name = "cudaLaunchKernel", .duration = 5'000, .resource = thr, .gap = 1'000,
                  .trace_start = 100, .layer = "fc1", .phase = phase::forward, .iteration = 3});
  auto k = g.add(gpu_kernel{.device = 0, .stream = 7, .correlation = 42},
                 {.name = "volta_sgemm", .duration = 30'000, .resource = st, .layer = "fc1"});
  CHECK(l.id == 0);
  CHECK(k.id == 1);
  CHECK(g.size() == 2);
  CHECK(g.id_bound() == 2);
  CHECK(g.name(l) == "cudaLaunchKernel");
  CHECK(g.layer(k) == "fc1");
  CHECK(g.layer_id(l) == g.layer_id(k)); // interned once
  CHECK(g.duration(l) == 5'000);
  CHECK(g.gap(l) == 1'000);
  CHECK(g.trace_start(l) == 100);
  CHECK(g.resource_of(k) == st);
  CHECK(g.phase_of(l) == phase::forward);
  CHECK(g.phase_of(k) == phase::other);
  CHECK(g.iteration(l) == 3);
  CHECK(g.priority(k) == default_priority);
  CHECK(g.kind_name(k) == "gpu_kernel");
  CHECK(g.is<gpu_kernel>(k));
  CHECK_FALSE(g.is<cpu_task>(k));
  CHECK(g.as<cpu_task>(l) == l);
  CHECK_FALSE(g.as<cpu_task>(k));
  CHECK(g.payload(l).correlation == 42);
  g.payload(k).stream = 13;
  CHECK(g.payload(k).stream == 13);
  CHECK(g.str(g.intern("fc1")) == "fc1");

  g.set_name(k, "relu");
  g.set_layer(k, "fc2");
  g.set_phase(k, phase::backward);
  g.set_iteration(k, 4);
  g.set_mem_delta(k, -64);
  CHECK(g.name(k) == "relu");
  CHECK(g.layer(k) == "fc2");
  CHECK(g.phase_of(k) == phase::backward);
  CHECK(g.iteration(k) == 4);
  CHECK(g.mem_delta(k) == -64);

  SUBCASE("bad fields are refused") {
    CHECK_THROWS_AS(g.add(cpu_task{}, {.name = "x", .duration = -1}), error);
    CHECK_THROWS_AS(g.add(cpu_task{}, {.name = "x", .gap = -1}), error);
    CHECK_THROWS_WITH_AS(g.add(cpu_task{}, {.name = "x", .resource = 7}),
                         doctest::Contains("resource #7"), error);
    CHECK(g.size() == 2);
  }
}

TEST_CASE("reserve<K> makes room for a kind's payloads: adding that many keeps payload references") {
  graph g;
  auto st = g.add_resource({"stream 7", resource_kind::gpu_stream, sharing::exclusive, 0, 0});
  auto first = g.add(gpu_kernel{.device = 0, .stream = 7}, {.name = "k0", .duration = 1, .resource = st});
  g.reserve(1000);
  g.reserve<gpu_kernel>(1000);
  const gpu_kernel* p = &g.payload(first);
  for (int i = 1; i <= 1000; ++i) g.add(gpu_kernel{.device = 0, .stream = i}, {.name = "k", .duration = 1, .resource = st});
  CHECK(&g.payload(first) == p); // no reallocation: the room was there
  CHECK(g.ids_of<gpu_kernel>().size() == 1001);
  CHECK(g.payload(g.as<gpu_kernel>(1000)).stream == 1000);
  g.reserve<cpu_task>(0); // nothing to do, and fine
  CHECK(g.ids_of<cpu_task>().empty());
}

TEST_CASE("add_defaults<K> appends tasks with default fields at once, to be filled in place") {
  graph g;
  auto th = g.add_resource({"thread 1", resource_kind::cpu_thread, sharing::exclusive, 0, -1});
  auto k = g.add(gpu_kernel{.device = 0, .stream = 7}, {.name = "k", .duration = 5});
  g.core().priority[k.id] = 3; // a stored lazy column grows with the new tasks
  auto m = g.add(cpu_task{.call = cpu_call::launch}, {.name = "m", .duration = 2, .resource = th, .layer = "L"});
  const task_id first = g.add_defaults<cpu_task>(3);
  CHECK(first == 2);
  CHECK(g.size() == 5);
  CHECK(g.id_bound() == 5);
  CHECK(g.ids_of<cpu_task>() == std::vector<task_id>{m.id, 2, 3, 4});
  for (task_id t = first; t < first + 3; ++t) {
    CHECK(g.is<cpu_task>(t));
    CHECK(g.name(t) == "");
    CHECK(g.layer(t) == "");
    CHECK(g.duration(t) == 0);
    CHECK(g.gap(t) == 0);
    CHECK(g.resource_of(t) == no_resource);
    CHECK(g.phase_of(t) == phase::other);
    CHECK(g.iteration(t) == 0);
    CHECK(g.priority(t) == 0);
    CHECK(g.mem_delta(t) == 0);
    CHECK(g.payload(g.as<cpu_task>(t)) == cpu_task{});
    CHECK(g.predecessors(t).empty());
  }
  CHECK(g.priority(k.id) == 3);
  CHECK(g.payload(m).call == cpu_call::launch); // the tasks there before keep their payloads
  // filled in place, they are tasks like any other
  set_duration(g, first + 1, 4);
  g.set_name(first + 1, "n");
  g.payload(g.as<cpu_task>(first + 1)).call = cpu_call::memcpy;
  CHECK(g.add_dependency(m, g.as<cpu_task>(first + 1), dep_kind::cpu_order));
  CHECK_NOTHROW(check_invariants(g));
  CHECK(g.payload(g.as<cpu_task>(3)).call == cpu_call::memcpy);
  CHECK(g.add_defaults<gpu_kernel>(0) == 5); // none: the next id, nothing added
  CHECK(g.size() == 5);
  auto h = g.add(cpu_task{}, {.name = "after"});
  CHECK(h.id == 5);
  CHECK(g.ids_of<cpu_task>().back() == 5);
}

TEST_CASE("dependencies are typed, deduplicated and filterable") {
  graph g;
  auto a = g.add(cpu_task{}, {.name = "a"});
  auto b = g.add(gpu_kernel{}, {.name = "b"});
  auto c = g.add(cpu_task{}, {.name = "c"});
  CHECK(g.add_dependency(a, b, dep_kind::launch));
  CHECK_FALSE(g.add_dependency(a, b, dep_kind::data)); // second edge ignored
  CHECK(g.add_dependency(b, c, dep_kind::sync));
  CHECK(g.add_dependency(a, c, dep_kind::cpu_order));
  CHECK(g.dependency_count() == 3);
  CHECK(g.dependency_kind(a, b) == dep_kind::launch);
  CHECK(g.has_dependency(b, c));
  CHECK_FALSE(g.has_dependency(c, b));
  CHECK(g.out_degree(a) == 2);
  CHECK(g.in_degree(c) == 2);
  CHECK_THROWS_AS(g.dependency_kind(c, a), error);
  CHECK_THROWS_AS(g.add_dependency(a, a, dep_kind::control), error);

  std::vector<dependency> outs(g.successors(a).begin(), g.successors(a).end());
  REQUIRE(outs.size() == 2);
  dep_mask launches = dep_kind::launch;
  int n_launch = 0;
  for (auto d : g.successors(a)) n_launch += launches.contains(d.kind);
  CHECK(n_launch == 1);
  std::vector<dependency> ins(g.predecessors(c).begin(), g.predecessors(c).end());
  CHECK(ins.size() == 2);
  for (auto d : ins) CHECK(d.to == c.id);

  CHECK(g.remove_dependency(a, c));
  CHECK_FALSE(g.remove_dependency(a, c));
  CHECK_FALSE(g.remove_dependency(a, 1000)); // unknown ids are not an error
  CHECK(g.dependency_count() == 2);
  CHECK_NOTHROW(check_invariants(g));

  dep_mask m{dep_kind::launch, dep_kind::sync};
  CHECK(m.contains(dep_kind::sync));
  CHECK_FALSE(m.contains(dep_kind::comm));
  CHECK((m | dep_kind::comm).contains(dep_kind::comm));
  CHECK(dep_mask{}.empty());
  CHECK(dep_mask::all().contains(dep_kind::control));
}

TEST_CASE("visit dispatches on the real kind of a task") {
  graph g;
  g.add(cpu_task{}, {.name = "cpu"});
  g.add(memcpy_task{.direction = copy_kind::h2d, .bytes = 4096}, {.name = "copy"});
  g.add(comm_task{.op = comm_op::all_reduce, .bytes = 1 << 20}, {.name = "ar"});
  g.add(gpu_kernel{}, {.name = "k"});
  std::vector<std::string_view> kinds;
  std::uint64_t bytes = 0;
  g.for_each_task([&](task_id t) {
    g.visit(t, [&]<class K>(handle<K> h, K& p) {
      kinds.push_back(kind_traits<K>::name);
      CHECK(h.id == t);
      if constexpr (kind_traits<K>::has_bytes) bytes += p.bytes;
    });
  });
  CHECK(kinds == std::vector<std::string_view>{"cpu_task", "memcpy_task", "comm_task", "gpu_kernel"});
  CHECK(bytes == 4096 + (1 << 20));
  const graph& cg = g;
  auto n = cg.visit(2, [](auto, const auto& p) { return sizeof(p); });
  CHECK(n == sizeof(comm_task));
  int kernels = 0;
  g.for_each<gpu_kernel>([&](handle<gpu_kernel>) { ++kernels; });
  CHECK(kernels == 1);
  CHECK(g.ids_of<memcpy_task>() == std::vector<task_id>{1});
}

TEST_CASE("erase drops a task without bridging, compact renumbers densely") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  std::vector<task_id> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(g.add(cpu_task{.correlation = std::uint64_t(i)},
                        {.name = "t" + std::to_string(i), .duration = 10 * (i + 1), .resource = thr}));
  auto k = g.add(gpu_kernel{.stream = 9}, {.name = "k", .duration = 3});
  for (int i = 0; i + 1 < 5; ++i) g.add_dependency(ids[i], ids[i + 1], dep_kind::cpu_order);
  g.add_dependency(ids[1], k, dep_kind::launch);
  reschedule(g, ids[4], 7);
  g.set_mem_delta(ids[3], 99);

  g.erase(ids[2]);
  CHECK_FALSE(g.contains(ids[2]));
  CHECK(g.size() == 5);
  CHECK_FALSE(g.has_dependency(ids[1], ids[3])); // no bridge
  CHECK_THROWS_AS(g.erase(ids[2]), error);
  CHECK_NOTHROW(check_invariants(g));
  auto before = replay(g);

  auto map = g.compact();
  REQUIRE(map.size() == 6);
  CHECK(map == std::vector<task_id>{0, 1, no_task, 2, 3, 4});
  CHECK(g.id_bound() == 5);
  CHECK(g.size() == 5);
  CHECK(g.name(2) == "t3");
  CHECK(g.payload(g.as<cpu_task>(2)).correlation == 3);
  CHECK(g.mem_delta(2) == 99);
  CHECK(g.priority(3) == 7);
  CHECK(g.payload(g.as<gpu_kernel>(4)).stream == 9);
  CHECK(g.dependency_kind(1, 4) == dep_kind::launch);
  CHECK(g.has_dependency(2, 3));
  CHECK(g.dependency_count() == 3);
  CHECK(g.core().dead_edges == 0);
  CHECK(g.ids_of<cpu_task>() == std::vector<task_id>{0, 1, 2, 3});
  CHECK_NOTHROW(check_invariants(g));
  auto after = replay(g);
  for (task_id old = 0; old < map.size(); ++old)
    if (map[old] != no_task) {
      CHECK(after.start[map[old]] == before.start[old]);
      CHECK(after.end[map[old]] == before.end[old]);
    }
}

TEST_CASE("graphs are regular values: copies are deep") {
  graph g;
  auto a = g.add(cpu_task{}, {.name = "a", .duration = 1});
  graph h = g;
  h.set_name(a, "changed");
  h.add(cpu_task{}, {.name = "b"});
  CHECK(g.name(a) == "a");
  CHECK(g.size() == 1);
  CHECK(h.size() == 2);
  g = h;
  CHECK(g.name(a) == "changed");
  CHECK(testing::graph_difference(g, h).empty());
}

namespace {

//! [crash course]
// thread 1:  cudaLaunchKernel (5 us, then 1 us idle) ------------> cudaDeviceSynchronize (2 us)
//                   | launch                                          ^ sync
// stream 7:         +---> volta_sgemm_128x64_nn (30 us) --------------+
daydream::graph one_step() {
  daydream::graph g;
  auto thread = g.add_resource({"thread 1", daydream::resource_kind::cpu_thread});
  auto stream = g.add_resource({"stream 7", daydream::resource_kind::gpu_stream});
  auto launch = g.add(daydream::cpu_task{daydream::cpu_call::launch},
                      {.name = "cudaLaunchKernel", .duration = 5'000, .resource = thread, .gap = 1'000});
  auto sync = g.add(daydream::cpu_task{daydream::cpu_call::sync},
                    {.name = "cudaDeviceSynchronize", .duration = 2'000, .resource = thread});
  auto gemm = g.add(daydream::gpu_kernel{}, {.name = "volta_sgemm_128x64_nn", .duration = 30'000,
                                             .resource = stream, .phase = daydream::phase::forward});
  g.add_dependency(launch, sync, daydream::dep_kind::cpu_order);
  g.add_dependency(launch, gemm, daydream::dep_kind::launch);
  g.add_dependency(gemm, sync, daydream::dep_kind::sync);
  return g;
}
//! [crash course]

//! [what if]
// What if forward GEMMs ran 3x faster on tensor cores?
void tensor_cores(daydream::graph& g) {
  using namespace daydream;
  for (auto k : tasks<gpu_kernel>(g) | where(name_matches("gemm") && in_phase(phase::forward)))
    scale_duration(g, k, 1.0 / 3);
}
//! [what if]

} // namespace

TEST_CASE("the crash course: a launch, a kernel and a sync, then a what-if") {
  auto g = one_step();
  const task_id launch = 0, sync = 1, gemm = 2;
  auto r = replay(g);
  // launch [0, 5 us), gemm [5 us, 35 us), sync [35 us, 37 us): the GPU bounds the step
  CHECK(r.start[launch] == 0);
  CHECK(r.start[gemm] == 5'000);
  CHECK(r.end[gemm] == 35'000);
  CHECK(r.start[sync] == 35'000);
  CHECK(r.makespan == 37'000);
  tensor_cores(g);
  auto faster = replay(g);
  // gemm [5 us, 15 us), sync [15 us, 17 us): 37 us -> 17 us per step
  CHECK(faster.end[gemm] == 15'000);
  CHECK(faster.makespan == 17'000);
  auto cp = faster.critical_path();
  REQUIRE(cp.size() == 3);
  CHECK(cp[0] == critical_step{launch, binding::none, dep_kind::control});
  CHECK(cp[1] == critical_step{gemm, binding::dependency, dep_kind::launch});
  CHECK(cp[2] == critical_step{sync, binding::dependency, dep_kind::sync});
}
