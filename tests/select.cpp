// Tests of select: lazy typed views of tasks and predicates composed with &&, || and !.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/remove.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace daydream;

namespace {

struct model {
  graph g;
  resource_id thr, st, side, ce;
  model() {
    thr = g.add_resource({"thread 1", resource_kind::cpu_thread});
    st = g.add_resource({"stream 7", resource_kind::gpu_stream});
    side = g.add_resource({"stream 13", resource_kind::gpu_stream});
    ce = g.add_resource({"copy engine", resource_kind::copy_engine});
    // id 0..2: CPU ops; 3..6: kernels; 7: a copy; 8: an all-reduce
    g.add(cpu_task{}, {.name = "aten::conv2d", .resource = thr, .layer = "conv1", .phase = phase::forward});
    g.add(cpu_task{.call = cpu_call::launch}, {.name = "cudaLaunchKernel", .resource = thr, .layer = "conv1",
                                               .phase = phase::forward});
    g.add(cpu_task{}, {.name = "Optimizer.step#SGD.step", .resource = thr, .phase = phase::weight_update,
                       .iteration = 1});
    g.add(gpu_kernel{}, {.name = "volta_sgemm_128x64_nn", .duration = 100, .resource = st, .layer = "conv1",
                         .phase = phase::forward});
    g.add(gpu_kernel{}, {.name = "volta_sgemm_128x64_nt", .duration = 200, .resource = st, .layer = "conv1",
                         .phase = phase::backward});
    g.add(gpu_kernel{}, {.name = "cudnn::bn_bw_1C11_kernel_new", .duration = 50, .resource = side,
                         .layer = "bn1", .phase = phase::backward});
    g.add(gpu_kernel{}, {.name = "multi_tensor_apply_kernel", .duration = 30, .resource = st,
                         .phase = phase::weight_update, .iteration = 1});
    g.add(memcpy_task{.direction = copy_kind::h2d, .bytes = 1024},
          {.name = "Memcpy HtoD", .resource = ce, .phase = phase::forward});
    g.add(comm_task{.op = comm_op::all_reduce, .bytes = 4096},
          {.name = "ncclKernel_AllReduce_RING_LL_Sum_float", .resource = side, .layer = "conv1",
           .phase = phase::backward});
  }
};

template <class View> std::vector<task_id> ids(View&& v) {
  std::vector<task_id> out;
  for (auto t : v) out.push_back(t.id);
  return out;
}

} // namespace

TEST_CASE("a task_ref reads every per-task field of its task") {
  graph g;
  auto thr = g.add_resource({"thread", resource_kind::cpu_thread});
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto l = g.add(cpu_task{.call = cpu_call::launch}, {.name = "launch", .duration = 5, .resource = thr});
  auto k = g.add(gpu_kernel{.stream = 7},
                 {.name = "sgemm", .duration = 30, .resource = st, .gap = 4, .trace_start = 1'000,
                  .layer = "fc1", .phase = phase::backward, .iteration = 2});
  g.add_dependency(l, k, dep_kind::launch);
  g.set_mem_delta(k, -64);
  reschedule(g, k, 9);
  for (auto t : tasks<gpu_kernel>(g)) {
    CHECK(t.id == k.id);
    CHECK(t.name() == "sgemm");
    CHECK(t.layer() == "fc1");
    CHECK(t.phase() == phase::backward);
    CHECK(t.duration() == 30);
    CHECK(t.resource() == st);
    CHECK(t.iteration() == 2);
    CHECK(t.trace_start() == 1'000);
    CHECK(t.gap() == 4);
    CHECK(t.priority() == 9);
    CHECK(t.mem_delta() == -64);
    CHECK(t.name_id_of() == g.name_id_of(k));
    CHECK(t.layer_id() == g.intern("fc1"));
    CHECK(t.kind_name() == "gpu_kernel");
    CHECK(t.in_degree() == 1);
    CHECK(t.out_degree() == 0);
    CHECK(t.payload().stream == 7);
    CHECK(t.typed() == k);
  }
  std::vector<time_ns> starts;
  for (auto t : tasks(g) | where(pred([](const auto& t) { return t.trace_start() >= 0; })))
    starts.push_back(t.trace_start());
  CHECK(starts == std::vector<time_ns>{0, 1'000});
}

TEST_CASE("tasks<K> views the live tasks of one kind, in id order") {
  model m;
  CHECK(ids(tasks<gpu_kernel>(m.g)) == std::vector<task_id>{3, 4, 5, 6});
  CHECK(ids(tasks<comm_task>(m.g)) == std::vector<task_id>{8});
  CHECK(ids(tasks(m.g)).size() == 9);
  for (auto k : tasks<gpu_kernel>(m.g)) {
    static_assert(std::is_same_v<decltype(k.typed()), handle<gpu_kernel>>);
    CHECK(k.typed().id == k.id);
    CHECK(&k.payload() == &m.g.payload(k.typed()));
    CHECK(k.is<gpu_kernel>());
    CHECK(&k.graph() == &m.g);
  }
  const graph& cg = m.g;
  CHECK(ids(tasks<memcpy_task>(cg)) == std::vector<task_id>{7});
}

TEST_CASE("built-in predicates select by phase, layer, kind, resource, iteration and name") {
  model m;
  auto& g = m.g;
  CHECK(ids(tasks(g) | where(in_phase(phase::backward))) == std::vector<task_id>{4, 5, 8});
  CHECK(ids(tasks(g) | where(in_layer("conv1"))) == std::vector<task_id>{0, 1, 3, 4, 8});
  CHECK(ids(tasks(g) | where(of_kind<memcpy_task>)) == std::vector<task_id>{7});
  CHECK(ids(tasks(g) | where(on_gpu)) == std::vector<task_id>{3, 4, 5, 6, 7, 8});
  CHECK(ids(tasks(g) | where(on_cpu)) == std::vector<task_id>{0, 1, 2});
  CHECK(ids(tasks(g) | where(on_resource(m.side))) == std::vector<task_id>{5, 8});
  CHECK(ids(tasks(g) | where(in_iteration(1))) == std::vector<task_id>{2, 6});
  CHECK(ids(tasks(g) | where(name_matches("sgemm"))) == std::vector<task_id>{3, 4});
  CHECK(ids(tasks(g) | where(name_matches("^cud"))) == std::vector<task_id>{1, 5});
  CHECK(ids(tasks(g) | where(name_matches("_n[nt]$"))) == std::vector<task_id>{3, 4});
  CHECK_THROWS_AS(name_matches("(unclosed"), std::regex_error);
}

TEST_CASE("predicates compose with &&, || and !") {
  model m;
  auto& g = m.g;
  auto backward_gemm = name_matches("gemm") && in_phase(phase::backward);
  CHECK(ids(tasks<gpu_kernel>(g) | where(backward_gemm)) == std::vector<task_id>{4});
  auto update_or_bn = in_phase(phase::weight_update) || in_layer("bn1");
  CHECK(ids(tasks(g) | where(update_or_bn)) == std::vector<task_id>{2, 5, 6});
  CHECK(ids(tasks<gpu_kernel>(g) | where(!in_phase(phase::backward))) == std::vector<task_id>{3, 6});
  CHECK(ids(tasks(g) | where(!(on_cpu || of_kind<gpu_kernel>))) == std::vector<task_id>{7, 8});
  // De Morgan, on every task.
  auto lhs = !(in_layer("conv1") && on_gpu);
  auto rhs = !in_layer("conv1") || !on_gpu;
  CHECK(ids(tasks(g) | where(lhs)) == ids(tasks(g) | where(rhs)));
  // Chained filters are a conjunction too.
  CHECK(ids(tasks(g) | where(on_gpu) | where(in_layer("conv1"))) ==
        ids(tasks(g) | where(on_gpu && in_layer("conv1"))));
}

TEST_CASE("user lambdas become predicates with pred()") {
  model m;
  auto& g = m.g;
  auto long_kernel = pred([](const auto& t) { return t.duration() >= 100; });
  CHECK(ids(tasks<gpu_kernel>(g) | where(long_kernel)) == std::vector<task_id>{3, 4});
  CHECK(ids(tasks<gpu_kernel>(g) | where(long_kernel && !name_matches("_nt"))) == std::vector<task_id>{3});
  auto on_stream = [&](const task_ref<graph, gpu_kernel>& t) { return t.resource() == m.st; };
  CHECK(ids(tasks<gpu_kernel>(g) | where(on_stream)) == std::vector<task_id>{3, 4, 6}); // a plain lambda
  auto copy_bytes = pred([](const task_ref<graph, memcpy_task>& t) { return t.payload().bytes > 512; });
  CHECK(ids(tasks<memcpy_task>(g) | where(copy_bytes)) == std::vector<task_id>{7});
  // A task_ref reads every common field.
  for (auto t : tasks(g) | where(name_matches("bn_bw"))) {
    CHECK(t.name() == "cudnn::bn_bw_1C11_kernel_new");
    CHECK(t.layer() == "bn1");
    CHECK(t.phase() == phase::backward);
    CHECK(t.duration() == 50);
    CHECK(t.resource() == m.side);
    CHECK(t.iteration() == 0);
    CHECK(fmt::format("{}", t) == "gpu_kernel#5 \"cudnn::bn_bw_1C11_kernel_new\"");
  }
}

TEST_CASE("views are lazy: they see removals and the updates made while iterating") {
  model m;
  auto& g = m.g;
  auto kernels = tasks<gpu_kernel>(g) | where(in_layer("conv1"));
  remove(g, task_id{3});
  CHECK(ids(kernels) == std::vector<task_id>{4});

  SUBCASE("removing the current task while iterating") {
    int seen = 0;
    for (auto t : tasks(g) | where(on_gpu)) {
      ++seen;
      remove(g, t);
    }
    CHECK(seen == 5);
    CHECK(ids(tasks(g)) == std::vector<task_id>{0, 1, 2});
  }
  SUBCASE("adding tasks while iterating does not visit them") {
    int seen = 0;
    for (auto t : tasks<gpu_kernel>(g)) {
      ++seen;
      g.add(gpu_kernel{}, {.name = "added", .resource = t.resource()});
    }
    CHECK(seen == 3);
    CHECK(ids(tasks<gpu_kernel>(g)).size() == 6);
  }
  SUBCASE("updating through a selection") {
    for (auto k : tasks<gpu_kernel>(g) | where(in_phase(phase::backward))) scale_duration(g, k, 0.5);
    CHECK(g.duration(4) == 100);
    CHECK(g.duration(5) == 25);
    CHECK(g.duration(6) == 30);
  }
  SUBCASE("removing a whole selection") {
    remove(g, tasks(g) | where(in_phase(phase::backward)));
    CHECK(ids(tasks(g)) == std::vector<task_id>{0, 1, 2, 6, 7});
  }
}
