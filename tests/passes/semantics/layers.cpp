// Tests of layer_instances, layer_filter and no_stashing_layer_reason (with the passes on
// stashed activations that say it: gist, vdnn, recompute).
// SPDX-License-Identifier: MIT
#include <daydream/graph.hpp>
#include <daydream/pass.hpp>
#include <daydream/passes/gist.hpp>
#include <daydream/passes/grad_accum.hpp>
#include <daydream/passes/reconstruct_bn.hpp>
#include <daydream/passes/recompute.hpp>
#include <daydream/semantics/layers.hpp>
#include <daydream/passes/vdnn.hpp>
#include "../builder.hpp"
#include <support/pass_laws.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace daydream;
using namespace daydream::passes;
using namespace daydream::testing::pass_graphs;

TEST_CASE("layer instances group forward and backward tasks and estimate the stash") {
  mlp m;
  auto ls = layer_instances(m.b.g);
  REQUIRE(ls.size() == 2);
  CHECK(m.b.g.str(ls[0].layer) == "fc1");
  CHECK(ls[0].forward_gpu == std::vector<task_id>{m.fc1_f.kernel});
  CHECK(ls[0].backward_cpu == std::vector<task_id>{m.fc1_b.call});
  CHECK(ls[0].stash_bytes == 1000);
  CHECK(m.b.g.str(ls[1].layer) == "relu");
  CHECK(ls[1].stash_bytes == 400);
  CHECK(ls[1].stashes());
  CHECK(layer_filter("fc.")("fc1"));
  CHECK_FALSE(layer_filter("fc")("fc1")); // the whole name must match
  CHECK(layer_filter()("anything"));
  CHECK(layer_filter(".*relu.*")("ReLU_0")); // case is ignored: module names as PyTorch writes them
  CHECK(layer_filter("batchnorm2d_0")("BatchNorm2d_0"));
  CHECK_THROWS_AS(layer_filter("(("), daydream::usage_error);
}

TEST_CASE("a pass on stashed activations that cannot act says what the trace lacks and how to record it") {
  SUBCASE("no layer names: record with_stack or with_modules") {
    builder b;
    b.op("k", 10, "", phase::forward);
    b.op("k", 10, "", phase::backward);
    for (auto why : {gist::not_applicable(b.g), vdnn::not_applicable(b.g), recompute::not_applicable(b.g)})
      CHECK(why.find("record with with_stack=True, or with_modules=True") != std::string::npos);
    auto rep = apply(b.g, vdnn{});
    CHECK_FALSE(rep.applied);
    CHECK(rep.reason.ends_with(": nothing offloaded"));
  }
  SUBCASE("no backward: an inference trace") {
    builder b;
    b.op("gemm", 10, "fc1", phase::forward, 0, 1000);
    CHECK(gist::not_applicable(b.g).starts_with("the trace has no backward pass"));
    CHECK(recompute::not_applicable(b.g).starts_with("the trace has no backward pass"));
    CHECK_FALSE(recompute::applicable(b.g));
  }
  SUBCASE("no tensor sizes: record_shapes, which recompute does not need") {
    builder b;
    b.op("gemm", 10, "fc1", phase::forward);
    b.op("gemm_bwd", 20, "fc1", phase::backward);
    CHECK(vdnn::not_applicable(b.g) == "none of the 1 layer instances that stash activations has a known size: "
                                       "the trace recorded no tensor shapes (record with record_shapes=True)");
    CHECK(recompute::applicable(b.g));
    CHECK(recompute::not_applicable(b.g).empty());
  }
  SUBCASE("a layer pattern that selects nothing names the pattern") {
    mlp m;
    CHECK(gist::applicable(m.b.g));
    auto rep = apply(m.b.g, gist{.layers = "conv.*"});
    CHECK_FALSE(rep.applied);
    CHECK(rep.reason == "no layer matches layers='conv.*' (2 layer instances stash activations of known size): "
                        "nothing encoded");
    auto rc = apply(m.b.g, recompute{.layers = "conv.*"});
    CHECK(rc.reason == "no layer matches layers='conv.*' (2 layer instances stash activations): nothing re-computed");
  }
}

TEST_CASE("recompute says when the trace re-computes activations already") {
  mlp m;
  CHECK(recompute::traced_checkpoint_calls(m.b.g) == 0);
  m.b.cpu("torch/utils/checkpoint.py(343): checkpoint", 5, "fc1", phase::forward);
  CHECK(recompute::traced_checkpoint_calls(m.b.g) == 1);
  auto rep = apply(m.b.g, recompute{.layers = "fc1"});
  CHECK(rep.applied);
  REQUIRE(rep.notes.size() >= 1);
  bool said = false;
  for (auto& n : rep.notes) said = said || n.starts_with("the trace re-computes activations already (1 call of");
  CHECK(said);
}

TEST_CASE("reconstruct_bn and grad_accum say what the trace lacks") {
  builder b;
  b.op("volta_sgemm_128x64_tn", 10, "fc1", phase::forward);
  CHECK(reconstruct_bn::not_applicable(b.g).starts_with("no batch-norm kernel (no kernel or operator name matches"));
  CHECK(apply(b.g, reconstruct_bn{}).reason.ends_with(": nothing to reconstruct"));
  CHECK(grad_accum::not_applicable(b.g).starts_with("the trace has no backward pass"));
  CHECK_FALSE(grad_accum::applicable(b.g));
  mlp m;
  CHECK(grad_accum::not_applicable(m.b.g).empty());
}
