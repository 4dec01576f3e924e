// Tests the thread-flattening and layer stages alone: slices of nested events, inherited attributes, layer names.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/io/detail/kineto_flatten.hpp>
#include <daydream/io/detail/kineto_iterations.hpp>
#include <daydream/io/detail/kineto_layers.hpp>
#include <daydream/io/detail/kineto_links.hpp>
#include <daydream/io/detail/kineto_threads.hpp>

#include "stages.hpp"
#include "trace_text.hpp"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

using namespace daydream;
using namespace daydream::io::detail;
using namespace daydream::testing;
using namespace daydream::testing::trace_text;

namespace {
/// (start, end) in us of a thread's slices.
std::vector<std::pair<time_ns, time_ns>> spans(const thread_rec& th) {
  std::vector<std::pair<time_ns, time_ns>> out;
  for (auto& s : th.slices) out.push_back({s.start / 1000, s.end / 1000});
  return out;
}
} // namespace

TEST_CASE("flattening: nested events become slices of the innermost event running") {
  auto t = decode(trace({
      X("cpu_op", "aten::linear", 1, 1, "0", "100"),
      X("cpu_op", "aten::t", 1, 1, "10", "20"),
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "50", "10", corr(1)),
      X("cpu_op", "aten::empty", 1, 1, "70", "0"),                         // zero-length, launches nothing
      X("cuda_runtime", "cudaLaunchKernel", 1, 1, "80", "0", corr(2)),     // zero-length, launches k2
      X("cpu_op", "aten::relu", 1, 1, "90", "30"),                         // ends after its parent: clamped
      X("kernel", "k1", 0, 7, "65", "10", gpu(1)),
      X("kernel", "k2", 0, 7, "85", "10", gpu(2)),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  auto& F = f.F;
  auto& th = tt.threads[0];
  // (the zero-length aten::empty leaves no slice, but linear's time is split at it)
  CHECK(spans(th) == std::vector<std::pair<time_ns, time_ns>>{
                         {0, 10}, {10, 30}, {30, 50}, {50, 60}, {60, 70}, {70, 80}, {80, 80}, {80, 90}, {90, 100}});
  CHECK(F.clamped == 1);
  const auto linear = cpu_named(d, "aten::linear"), relu = cpu_named(d, "aten::relu");
  CHECK(F.end_of(relu) == 100'000);
  CHECK(F.attr[relu].parent == linear);
  CHECK(F.attr[cpu_named(d, "aten::t")].top_op == linear);
  CHECK(F.attr[cpu_named(d, "aten::t")].op == cpu_named(d, "aten::t"));
  CHECK(!F.attr[cpu_named(d, "aten::empty")].sliced);
  CHECK(F.attr[cpu_named(d, "cudaLaunchKernel", 80)].sliced);
  // the innermost event at a time, and the one starting exactly then
  CHECK(F.event_at(d, th, 15'000, false) == cpu_named(d, "aten::t"));
  CHECK(F.event_at(d, th, 35'000, false) == linear);
  CHECK(F.event_at(d, th, 50'000, true) == cpu_named(d, "cudaLaunchKernel", 50));
  CHECK(F.event_at(d, th, 51'000, true) == no_index);
  CHECK(!th.backward);
}

TEST_CASE("flattening: a record_function range outlives the Python call that opens it, and marks what runs inside") {
  // with_stack traces: `Optimizer.step#SGD.step` starts inside `_record_function_enter_new`
  // (100-110 us) and lasts to 500; the optimizer's operators run inside the range.
  auto t = decode(trace({
      X("python_function", "torch/optim/optimizer.py(512): wrapper", 1, 1, "90", "420"),
      X("python_function", "<built-in method _record_function_enter_new>", 1, 1, "100", "10"),
      X("user_annotation", "Optimizer.step#SGD.step", 1, 1, "105", "395"),
      X("cpu_op", "aten::_foreach_add_", 1, 1, "200", "100"),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& F = f.F;
  const auto step = cpu_named(d, "Optimizer.step#SGD.step"), add = cpu_named(d, "aten::_foreach_add_");
  CHECK(F.attr[step].parent == cpu_named(d, "torch/optim/optimizer.py(512): wrapper"));
  CHECK(F.end_of(step) == 500'000); // not clamped to the enter call's end
  CHECK(F.clamped == 0);
  CHECK(F.attr[add].parent == step);
  CHECK(F.attr[add].mark == 1 + static_cast<int>(phase::weight_update));
}

TEST_CASE("flattening: top-level operators are numbered per name in their iteration; autograd marks a backward thread") {
  auto t = decode(trace({
      X("user_annotation", "ProfilerStep#1", 1, 1, "0", "100"),
      X("cpu_op", "aten::add", 1, 1, "10", "10"),
      X("cpu_op", "aten::add", 1, 1, "30", "10"),
      X("user_annotation", "ProfilerStep#2", 1, 1, "100", "100"),
      X("cpu_op", "aten::add", 1, 1, "110", "10"),
      X("cpu_op", "autograd::engine::evaluate_function: AddBackward0", 1, 2, "50", "10"),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  auto& F = f.F;
  CHECK(F.top_ordinal[cpu_named(d, "aten::add", 10)] == 0);
  CHECK(F.top_ordinal[cpu_named(d, "aten::add", 30)] == 1);
  CHECK(F.top_ordinal[cpu_named(d, "aten::add", 110)] == 0); // the next iteration counts again
  CHECK(tt.threads[tt.find({1, 2})].backward);
  CHECK(!tt.threads[tt.find({1, 1})].backward);
}

TEST_CASE("layers: backward roots map to forward operators by fwdbwd flow, else by sequence number") {
  auto t = decode(trace({
      X("python_function", "nn.Module: Net_0", 1, 1, "0", "50"),
      X("cpu_op", "aten::linear", 1, 1, "10", "10", R"({"Sequence number": 3})"),
      X("cpu_op", "aten::relu", 1, 1, "30", "10", R"({"Sequence number": 4})"),
      X("cpu_op", "aten::sum", 1, 1, "60", "10", R"({"Sequence number": 5})"),
      X("cpu_op", "autograd::engine::evaluate_function: SumBackward0", 1, 2, "100", "10", R"({"Sequence number": 5})"),
      X("cpu_op", "autograd::engine::evaluate_function: ReluBackward0", 1, 2, "120", "10", R"({"Sequence number": 4})"),
      X("cpu_op", "autograd::engine::evaluate_function: LinearBackward0", 1, 2, "140", "10"),
      flow('s', "fwdbwd", 9, 1, 1, "10"),
      flow('f', "fwdbwd", 9, 1, 2, "140"),
  }));
  flattened f(std::move(t));
  auto& d = f.src->d;
  auto& tt = f.tt;
  auto& F = f.F;
  auto B = resolve_backward_layers(d, tt, F);
  const auto lin_bwd = cpu_named(d, "autograd::engine::evaluate_function: LinearBackward0");
  const auto relu_bwd = cpu_named(d, "autograd::engine::evaluate_function: ReluBackward0");
  const auto sum_bwd = cpu_named(d, "autograd::engine::evaluate_function: SumBackward0");
  CHECK(B.forward_of[lin_bwd] == cpu_named(d, "aten::linear"));   // by the flow
  CHECK(B.forward_of[relu_bwd] == cpu_named(d, "aten::relu"));    // by sequence number
  CHECK(B.fwd_state[0] == 1);
  CHECK(B.fwd_state[1] == 1);
  graph g;
  layer_namer names(d, F, B, g);
  bool unmapped = true;
  CHECK(g.str(names.layer_of(lin_bwd, unmapped)) == "Net_0"); // the module of the forward op
  CHECK(!unmapped);
  CHECK(g.str(names.layer_of(sum_bwd, unmapped)) == "aten::sum#0"); // no module: op#k
  CHECK(g.str(names.forward_layer(cpu_named(d, "aten::relu"))) == "Net_0");
}
