// Tests of the reconstruct_bn pass on hand-built graphs with hand-computed replays.
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/specs/reconstruct_bn.hpp>
#include <daydream/replay.hpp>
#include <daydream/validate.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include "builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("reconstruct_bn removes activations next to batch norm and halves batch norm") {
  // conv, bn, relu (with an extra CPU slice of its operator), add, relu again (after the
  // add: stays), then the backward: relu grad of the second relu (stays), relu grad next
  // to bn's (goes), bn grad, conv grad. Baseline: CPU [0,95); kernels conv [10,110)
  // bn [110,150) relu [150,170) add [170,190) relu2 [190,210) relu2' [210,230)
  // relu' [230,250) bn' [250,310) conv' [310,510).
  builder b;
  b.op("cudnn_volta_scudnn_128x64_relu_small_nn_v1", 100, "conv", phase::forward, 0, 0, "aten::cudnn_convolution");
  auto bn = b.op("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>", 40, "bn", phase::forward, 0, 0, "aten::cudnn_batch_norm");
  auto slice = b.cpu("aten::clamp_min_", 5, "relu", phase::forward);
  auto relu = b.op("vectorized_elementwise_kernel<clamp>", 20, "relu", phase::forward, 0, 0, "aten::clamp_min_");
  auto add = b.op("vectorized_elementwise_kernel<add>", 20, "", phase::forward, 0, 0, "aten::add_");
  auto relu2 = b.op("vectorized_elementwise_kernel<clamp>", 20, "relu", phase::forward, 0, 0, "aten::clamp_min_");
  auto relu2_b = b.op("vectorized_elementwise_kernel<threshold>", 20, "relu", phase::backward, 0, 0, "aten::threshold_backward");
  auto relu_b = b.op("vectorized_elementwise_kernel<threshold>", 20, "relu", phase::backward, 0, 0, "aten::threshold_backward");
  auto bn_b = b.op("void cudnn::bn_bw_1C11_kernel_new<float>", 60, "bn", phase::backward, 0, 0, "aten::cudnn_batch_norm_backward");
  b.op("void cudnn::detail::dgrad_engine<float>", 200, "conv", phase::backward, 0, 0, "aten::convolution_backward");
  auto& g = b.g;
  CHECK(makespan(g) == 510);
  CHECK(reconstruct_bn::applicable(g));
  auto rep = reconstruct_bn{}(g);
  CHECK(g.duration(bn.kernel) == 20);
  CHECK(g.duration(bn_b.kernel) == 30);
  for (auto t : {relu.kernel, relu.call, slice, relu_b.kernel, relu_b.call}) CHECK_FALSE(g.contains(t));
  for (auto t : {add.kernel, relu2.kernel, relu2.call, relu2_b.kernel, relu2_b.call}) CHECK(g.contains(t));
  // CPU: 7 launches [0,70); kernels conv [10,110) bn [110,130) add [130,150)
  // relu2 [150,170) relu2' [170,190) bn' [190,220) conv' [220,420)
  CHECK(makespan(g) == 420);
  CHECK(rep.value("activation kernels removed") == "2, 40 ns");
  CHECK(rep.at("activation kernels removed").value == report_value::of_time(40).with_count(2));
  CHECK(rep.value("CPU tasks removed") == "3, 25 ns");
  CHECK(rep.at("CPU tasks removed").value.count == 3);
  check_invariants(g);
}

TEST_CASE("reconstruct_bn does not apply to a graph without batch norm") {
  mlp m;
  CHECK_FALSE(reconstruct_bn::applicable(m.b.g));
  auto rep = reconstruct_bn{}(m.b.g);
  CHECK(makespan(m.b.g) == 510);
  CHECK_FALSE(rep.applied);
  CHECK(rep.reason == "no batch-norm kernel (no kernel or operator name matches bn_fw|bn_bw|batch_?norm): the model "
                      "normalizes otherwise (LayerNorm, RMSNorm) or not at all: nothing to reconstruct");
  CHECK(rep.notes.empty());
  CHECK(from_params<reconstruct_bn>(pass_params::parse("reconstruct_bn", "bn_speedup=1.5")).bn_speedup == 1.5);
}

TEST_CASE("reconstruct_bn obeys the pass laws") {
  testing::check_pass_laws(reconstruct_bn{}, pass_fixtures(), {.allow_refusal = false});
}
