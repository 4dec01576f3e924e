// Tests of the strategy tree (passes/daydream/strategy/tree.hpp, tree_json.hpp): the module
// hierarchy read from a trace, propagation, the plan per layer and what compile makes of it,
// the JSON file format and its errors.
// SPDX-License-Identifier: MIT
#include <daydream/io/kineto.hpp>
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compile.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>
#include <daydream/strategy/tree_json.hpp>
#include <daydream/strategy/validate.hpp>

#include "fixtures.hpp"
#include <support/corpus.hpp>

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ds = daydream::strategy;
using daydream::phase;

namespace {

using daydream::testing::free_links;

ds::layer_profile layer(std::string name, daydream::time_ns f_split, daydream::time_ns b_split,
                        std::uint64_t param, std::uint64_t output, std::uint64_t stash,
                        daydream::time_ns f_other = 0, daydream::time_ns b_other = 0) {
  ds::layer_profile l;
  l.name = std::move(name);
  l.forward_split = f_split;
  l.backward_split = b_split;
  l.forward_other = f_other;
  l.backward_other = b_other;
  l.param_bytes = param;
  l.output_bytes = output;
  l.stash_bytes = stash;
  return l;
}

// A hierarchy as the ingest gives it: names and parent indices, parents first.
struct modules {
  std::vector<std::string> names;
  std::vector<std::int32_t> parents;
  std::int32_t add(std::string n, std::int32_t parent = -1) {
    names.push_back(std::move(n));
    parents.push_back(parent);
    return std::int32_t(names.size() - 1);
  }
};

ds::node_config with_part(ds::partition p) {
  ds::node_config c;
  c.part = p;
  return c;
}
ds::node_config with_recompute(bool on) {
  ds::node_config c;
  c.recompute = on;
  return c;
}
ds::node_config with_stage(std::uint32_t k) {
  ds::node_config c;
  c.stage = k;
  return c;
}

using daydream::testing::error_of;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The tensor-parallel collectives device 0 issues in a compiled graph, in issue order:
// (op, phase, bytes, layer).
struct tp_comm {
  daydream::comm_op op;
  phase ph;
  std::uint64_t bytes;
  std::string layer;
};
std::vector<tp_comm> tp_comms(const ds::compiled_strategy& cs) {
  std::vector<tp_comm> out;
  for (auto& u : cs.queue_uses) {
    if (u.device != 0 || u.kind != ds::comm_kind::tp) continue;
    const auto& c = cs.g.payload(cs.g.as<daydream::comm_task>(u.issue));
    out.push_back({c.op, cs.g.phase_of(u.issue), c.bytes, std::string(cs.g.layer(u.issue))});
  }
  return out;
}

} // namespace

TEST_CASE("io: the module hierarchy of a trace with nested modules (BERT-small, TraceLens H100)") {
  auto t = daydream::io::load_kineto(
      daydream::testing::bundled("tracelens_h100_inference/gaunernst_bert-small-uncased__1016001.json.gz"));
  // 84 nn.Module events, one call each; one top-level module.
  REQUIRE(t.modules.size() == 84);
  CHECK(t.modules[0].name == "BertLMHeadModel_0");
  CHECK(t.modules[0].parent == -1);
  std::size_t top = 0;
  for (auto& m : t.modules) top += m.parent < 0;
  CHECK(top == 1);
  auto find = [&](const std::string& n) {
    for (std::size_t i = 0; i < t.modules.size(); ++i)
      if (t.modules[i].name == n) return std::int32_t(i);
    return std::int32_t(-1);
  };
  auto names_of = [&](const std::vector<std::uint32_t>& ids) {
    std::vector<std::string> v;
    for (auto i : ids) v.push_back(t.modules[i].name);
    return v;
  };
  CHECK(names_of(t.modules[0].children) == std::vector<std::string>{"BertModel_0", "BertOnlyMLMHead_0"});
  const auto enc = find("BertEncoder_0");
  REQUIRE(enc >= 0);
  CHECK(t.modules[std::size_t(t.modules[std::size_t(enc)].parent)].name == "BertModel_0");
  CHECK(names_of(t.modules[std::size_t(enc)].children) ==
        std::vector<std::string>{"BertLayer_0", "BertLayer_1", "BertLayer_2", "BertLayer_3"});
  const auto l0 = find("BertLayer_0");
  CHECK(names_of(t.modules[std::size_t(l0)].children) ==
        std::vector<std::string>{"BertAttention_0", "BertIntermediate_0", "BertOutput_0"});
  std::size_t leaves = 0;
  for (std::size_t i = 0; i < t.modules.size(); ++i) {
    leaves += t.modules[i].children.empty();
    if (t.modules[i].parent >= 0) CHECK(std::size_t(t.modules[i].parent) < i); // parents first
  }
  CHECK(leaves == 53);
}

TEST_CASE("io: modules seen again (iterations, re-computation, a shared module) are one node under their first parent") {
  // ResNet with activation checkpointing under DDP, 3 profiled steps: the checkpointed
  // Sequential blocks run again on the autograd thread, under no CheckpointWrapper there.
  auto t = daydream::io::load_kineto(
      daydream::testing::bundled("tracelens_mi300_ddp_8rank/resnet_act_checkpoint.json.gz"));
  REQUIRE(t.modules.size() == 73);
  auto at = [&](const std::string& n) -> const daydream::io::module_node& {
    for (auto& m : t.modules)
      if (m.name == n) return m;
    FAIL("no module " << n);
    return t.modules[0];
  };
  CHECK(t.modules[0].name == "DistributedDataParallel_0");
  CHECK(at("DistributedDataParallel_0").calls == 3);
  CHECK(t.modules[std::size_t(at("Sequential_0").parent)].name == "CheckpointWrapper_0");
  CHECK(at("Sequential_0").calls == 6); // 3 forwards, 3 re-computations
  CHECK(at("ResNet_0").children.size() == 10);

  // GPT-OSS on B200: one rotary embedding shared by every attention block.
  auto b = daydream::io::load_kineto(daydream::testing::bundled("tracelens_b200_eager/eager_trace.json.gz"));
  REQUIRE(b.modules.size() == 401);
  std::vector<std::string> top;
  for (auto& m : b.modules)
    if (m.parent < 0) top.push_back(m.name);
  CHECK(top == std::vector<std::string>{"GptOssForCausalLM_0", "LogitsProcessor_0"});
  for (auto& m : b.modules)
    if (m.name == "YaRNScalingRotaryEmbedding_0") {
      CHECK(m.calls == 36);
      CHECK(b.modules[std::size_t(m.parent)].name == "OAIAttention_0");
    }
}

TEST_CASE("strategy_tree: the trace's modules over the model's layers; layers of no module hang from the root") {
  ds::model_profile m;
  m.layers = {layer("embed", 10, 10, 0, 8, 8), layer("fc1", 100, 200, 64, 8, 8), layer("act", 0, 0, 0, 8, 8, 5, 5),
              layer("fc2", 100, 200, 64, 8, 8), layer("op#3", 0, 0, 0, 8, 8, 1, 1)};
  modules h;
  auto net = h.add("Net_0");
  h.add("embed", net);
  auto mlp = h.add("MLP_0", net);
  h.add("fc1", mlp);
  h.add("act", mlp);
  h.add("fc2", mlp);
  h.add("Unused_0", net); // no layer: left out
  auto t = ds::strategy_tree::build(m, h.names, h.parents);
  // model, Net_0, embed, MLP_0, fc1, act, fc2, op#3
  REQUIRE(t.nodes().size() == 8);
  CHECK(t.root().name == "model");
  CHECK(t.find("Unused_0") == -1);
  const auto fc2 = t.find("fc2");
  REQUIRE(fc2 >= 0);
  CHECK(t.nodes()[std::size_t(fc2)].path == "Net_0.MLP_0.fc2");
  CHECK(t.nodes()[std::size_t(fc2)].layer == 3);
  CHECK(t.find("Net_0.MLP_0.fc2") == fc2);
  const auto loose = t.find("op#3");
  REQUIRE(loose >= 0);
  CHECK(t.nodes()[std::size_t(loose)].parent == 0);
  CHECK(t.match("MLP_0.*").size() == 3);
  CHECK(t.match("fc?").size() == 2);
  CHECK(t.match("*").size() == 7);

  // A trace without modules: root -> layers.
  auto flat = ds::strategy_tree::flat(m);
  CHECK(flat.nodes().size() == 6);
  CHECK(flat.root().children.size() == 5);
}

TEST_CASE("resolve: Megatron pairs form from column + auto; gathers where a split activation meets a whole one") {
  ds::model_profile m;
  // embed (no tp work), fc1, act (element-wise), fc2, norm (element-wise), fc3
  m.layers = {layer("embed", 0, 0, 0, 8, 8, 3, 3), layer("fc1", 100, 200, 64, 8, 8), layer("act", 0, 0, 0, 8, 8, 5, 5),
              layer("fc2", 100, 200, 64, 8, 8), layer("norm", 0, 0, 0, 8, 8, 1, 1), layer("fc3", 100, 200, 64, 8, 8)};
  auto t = ds::strategy_tree::flat(m);
  t.root_spec.tp = 2;
  t.set("fc1", with_part(ds::partition::column));
  auto p = t.resolve(m);
  REQUIRE(p.size() == 6);
  using ds::partition;
  CHECK(p[0].part == partition::replicate);
  CHECK(p[1].part == partition::column);
  CHECK(p[2].part == partition::through); // runs on fc1's split output
  CHECK(p[3].part == partition::row);     // auto after a split input
  CHECK(p[4].part == partition::replicate);
  CHECK(p[5].part == partition::block);   // auto on a whole input: a pair in itself, as a uniform spec
  // Megatron's f and g: fc1's input gradient all-reduced in backward, fc2's output in forward.
  CHECK(p[1].bwd_all_reduce);
  CHECK_FALSE(p[1].fwd_all_reduce);
  CHECK_FALSE(p[1].fwd_all_gather);
  CHECK_FALSE(p[2].fwd_all_gather);
  CHECK(p[3].fwd_all_reduce);
  CHECK_FALSE(p[3].bwd_all_reduce);
  CHECK_FALSE(p[3].bwd_all_gather);
  CHECK(p[5].fwd_all_reduce);
  CHECK(p[5].bwd_all_reduce);
  for (std::size_t i : {0u, 2u, 4u}) CHECK_FALSE(p[i].split);
  for (std::size_t i : {1u, 3u, 5u}) CHECK(p[i].split);

  // Column followed by an explicitly replicated consumer: the output is gathered; the next
  // GEMM then sees a whole input and is a block again.
  t.set("act", with_part(partition::replicate));
  p = t.resolve(m);
  CHECK(p[1].fwd_all_gather);
  CHECK(p[2].part == partition::replicate);
  CHECK(p[3].part == partition::block);
  // A row layer fed a whole activation: its input gradient is gathered back.
  t.set("fc3", with_part(partition::row));
  p = t.resolve(m);
  CHECK(p[5].part == partition::row);
  CHECK(p[5].bwd_all_gather);
  // A column layer last: its output goes to the loss whole.
  t.set("fc3", with_part(partition::column));
  p = t.resolve(m);
  CHECK(p[5].fwd_all_gather);
  CHECK(p[5].bwd_all_reduce);
  // Replicate on a tp group: no split, no communication.
  t.set("fc3", with_part(partition::replicate));
  p = t.resolve(m);
  CHECK_FALSE(p[5].split);
  CHECK_FALSE((p[5].fwd_all_reduce || p[5].fwd_all_gather || p[5].bwd_all_reduce || p[5].bwd_all_gather));
  // tp = 1: everything replicated whatever the tree says.
  t.root_spec.tp = 1;
  for (auto& l : t.resolve(m)) {
    CHECK(l.part == partition::replicate);
    CHECK_FALSE(l.split);
  }
}

TEST_CASE("resolve: query, key and value projections set column are branches on one input") {
  ds::model_profile m;
  m.layers = {layer("norm", 0, 0, 0, 8, 8, 2, 2), layer("q", 100, 200, 64, 8, 8), layer("k", 100, 200, 64, 8, 8),
              layer("v", 100, 200, 64, 8, 8), layer("core", 300, 600, 0, 8, 8), layer("proj", 100, 200, 64, 8, 8),
              layer("gate", 0, 0, 0, 8, 8, 1, 1)};
  modules h;
  auto attn = h.add("Attention_0");
  for (auto n : {"q", "k", "v", "core", "proj"}) h.add(n, attn);
  auto t = ds::strategy_tree::build(m, h.names, h.parents);
  t.root_spec.tp = 4;
  t.set("Attention_0.?", with_part(ds::partition::column));
  t.set("core", with_part(ds::partition::through));
  // An explicit partition holds on a layer without tensor-parallel work: its parameters split.
  t.set("gate", with_part(ds::partition::column));
  auto p = t.resolve(m);
  CHECK(p[1].part == ds::partition::column);
  CHECK(p[3].part == ds::partition::column);
  CHECK(p[1].bwd_all_reduce); // the first branch's backward runs last: one all-reduce of the sum
  CHECK_FALSE(p[2].bwd_all_reduce);
  CHECK_FALSE(p[3].bwd_all_reduce);
  for (std::size_t i : {1u, 2u, 3u}) CHECK_FALSE(p[i].fwd_all_gather);
  CHECK(p[4].part == ds::partition::through);
  CHECK(p[4].split); // attention on its share of the heads
  CHECK_FALSE((p[4].fwd_all_gather || p[4].bwd_all_gather));
  CHECK(p[5].part == ds::partition::row);
  CHECK(p[5].fwd_all_reduce);
  CHECK(p[6].part == ds::partition::column);
  CHECK(p[6].split);
  CHECK(p[6].fwd_all_gather); // the model's output goes to the loss whole
  CHECK(p[6].bwd_all_reduce);
}

TEST_CASE("resolve follows the data order: a module's own work after its children's") {
  // The attention module's own layer (the score computation) is first in forward order
  // (its first operator ran before the projections'), but consumes their outputs.
  ds::model_profile m;
  m.layers = {layer("Attn_0", 300, 600, 0, 8, 8), layer("q", 100, 200, 64, 8, 8), layer("k", 100, 200, 64, 8, 8),
              layer("v", 100, 200, 64, 8, 8), layer("proj", 100, 200, 64, 8, 8)};
  modules h;
  auto attn = h.add("Attn_0");
  for (auto n : {"q", "k", "v"}) h.add(n, attn);
  auto t = ds::strategy_tree::build(m, h.names, h.parents);
  CHECK(t.data_order() == std::vector<std::size_t>{1, 2, 3, 0, 4});
  t.root_spec.tp = 2;
  t.set("Attn_0", with_part(ds::partition::through));
  t.set("Attn_0.?", with_part(ds::partition::column));
  auto p = t.resolve(m);
  CHECK(p[0].part == ds::partition::through);
  CHECK(p[1].part == ds::partition::column);
  CHECK(p[4].part == ds::partition::row);
  std::size_t collectives = 0;
  for (auto& l : p) collectives += l.fwd_all_reduce + l.fwd_all_gather + l.bwd_all_reduce + l.bwd_all_gather;
  CHECK(collectives == 2); // Megatron's f (q's input gradient) and g (proj's output)
  CHECK(p[1].bwd_all_reduce);
  CHECK(p[4].fwd_all_reduce);
  // A flat tree's data order is the forward order.
  CHECK(ds::strategy_tree::flat(m).data_order() == std::vector<std::size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("resolve: a parent's settings reach its children unless they set their own") {
  ds::model_profile m;
  m.layers = {layer("fc1", 100, 200, 64, 8, 8), layer("act", 0, 0, 0, 8, 8, 5, 5), layer("fc2", 100, 200, 64, 8, 8),
              layer("head", 100, 200, 64, 8, 8)};
  modules h;
  auto mlp = h.add("MLP_0");
  h.add("fc1", mlp);
  h.add("act", mlp);
  h.add("fc2", mlp);
  auto t = ds::strategy_tree::build(m, h.names, h.parents);
  t.root_spec.tp = 2;
  t.root_spec.pp = 2;
  t.set("MLP_0", ds::node_config{ds::partition::replicate, true, 0u});
  t.set("fc2", with_recompute(false));
  auto p = t.resolve(m);
  CHECK(p[0].part == ds::partition::replicate);
  CHECK(p[1].part == ds::partition::replicate);
  CHECK(p[2].part == ds::partition::replicate);
  CHECK(p[3].part == ds::partition::block); // outside MLP_0: auto
  CHECK(p[0].recompute);
  CHECK(p[1].recompute);
  CHECK_FALSE(p[2].recompute);
  CHECK_FALSE(p[3].recompute);
  CHECK(p[0].stage == 0);
  CHECK(p[2].stage == 0);
  CHECK(p[3].stage == -1);
  CHECK(p[2].node == "MLP_0.fc2");
  // A column partition on a subtree cuts only the layers with tensor-parallel work.
  t.set("MLP_0", with_part(ds::partition::column));
  p = t.resolve(m);
  CHECK(p[0].part == ds::partition::column);
  CHECK(p[1].part == ds::partition::through);
  CHECK(p[2].part == ds::partition::column);
  CHECK(p[1].fwd_all_gather); // fc2 is column: takes its input whole
  CHECK_FALSE(p[2].fwd_all_gather);
  CHECK(p[3].part == ds::partition::row); // auto after fc2's split output
  // The root's recompute (the spec's) is every layer's default.
  auto u = ds::strategy_tree::flat(m);
  u.root_spec.recompute = ds::recompute_mode::blocks;
  for (auto& l : u.resolve(m)) CHECK(l.recompute);
}

TEST_CASE("compile: column then row on tp=2 makes exactly one all-reduce of b*s*h forward and one backward") {
  // A 2-layer MLP block: h -> 4h (column) -> h (row); b*s*h = 4096 bytes in and out.
  const std::uint64_t bsh = 4096;
  ds::model_profile m;
  m.layers = {layer("fc1", 1000, 2000, 1 << 20, 4 * bsh, bsh), layer("fc2", 1000, 2000, 1 << 20, bsh, 4 * bsh)};
  m.batch = 1;
  auto t = ds::strategy_tree::flat(m);
  t.root_spec.tp = 2;
  t.set("fc1", with_part(ds::partition::column));
  t.set("fc2", with_part(ds::partition::row));
  ds::simulate_options o;
  o.global_batch = 1; // one profiled batch, one micro-batch: bytes as profiled
  auto cs = ds::compile(t.plan(m, "megatron"), free_links(1, 2), m, o);
  auto comms = tp_comms(cs);
  REQUIRE(comms.size() == 2);
  CHECK(comms[0].op == daydream::comm_op::all_reduce);
  CHECK(comms[0].ph == phase::forward);
  CHECK(comms[0].bytes == bsh);
  CHECK(comms[0].layer == "fc2");
  CHECK(comms[1].op == daydream::comm_op::all_reduce);
  CHECK(comms[1].ph == phase::backward);
  CHECK(comms[1].bytes == bsh); // fc1's input gradient
  CHECK(comms[1].layer == "fc1");
  // Ring all-reduce over 2 ranks: each sends 2 (2-1)/2 = 1 x the bytes, twice.
  CHECK(cs.comm.tp == doctest::Approx(2.0 * bsh));
  CHECK(cs.name == "megatron");

  // The uniform spec treats each layer as a pair in itself: two all-reduces per direction,
  // sized by each layer's output.
  auto u = ds::compile(ds::strategy_spec::parse("tp=2"), free_links(1, 2), m, o);
  auto uc = tp_comms(u);
  REQUIRE(uc.size() == 4);
  CHECK(u.comm.tp == doctest::Approx(2.0 * (4 * bsh + bsh)));

  // Column then a replicated consumer: an all-gather of fc1's output (4 b*s*h) in forward.
  t.set("fc2", with_part(ds::partition::replicate));
  auto g = tp_comms(ds::compile(t.plan(m), free_links(1, 2), m, o));
  REQUIRE(g.size() == 2);
  CHECK(g[0].op == daydream::comm_op::all_gather);
  CHECK(g[0].ph == phase::forward);
  CHECK(g[0].bytes == 4 * bsh);
  CHECK(g[1].op == daydream::comm_op::all_reduce);
  CHECK(g[1].ph == phase::backward);
}

TEST_CASE("a tree with only the root set predicts exactly what its uniform spec does") {
  ds::model_profile m;
  for (int i = 0; i < 8; ++i)
    m.layers.push_back(layer("block" + std::to_string(i), 1000 + 100 * i, 2000, 1 << 22, 1 << 16, 1 << 18, 50, 70));
  m.update = 300;
  m.other = 40;
  m.batch = 1;
  auto c = ds::cluster_spec::parse("2x4:nvlink=100GB/s,nic=10Gbps");
  for (const char* spec : {"dp=2,tp=2,pp=2,micro=4,zero=1,recompute=blocks", "tp=4,pp=2,micro=2,schedule=gpipe",
                           "dp=8,zero=3", "tp=8"}) {
    CAPTURE(spec);
    const auto s = ds::strategy_spec::parse(spec);
    auto t = ds::strategy_tree::flat(m);
    ds::configure_tree(t, "{\"strategy\": \"" + std::string(spec) + "\"}", "uniform.json");
    CHECK(t.uniform());
    CHECK(t.root_spec == s);
    auto a = ds::simulate_strategy(s, c, m);
    auto b = ds::simulate_strategy(t.plan(m, "tree"), c, m);
    CHECK(a.predicted == b.predicted);
    CHECK(a.peak_memory == b.peak_memory);
    CHECK(a.comm.tp == b.comm.tp);
    CHECK(a.comm.dp == b.comm.dp);
    CHECK(a.comm.pp == b.comm.pp);
    CHECK(a.comm.zero == b.comm.zero);
    CHECK(a.stages == b.stages);
    CHECK(a.name == s.to_string());
    CHECK(b.name == "tree");
  }
}

TEST_CASE("a node pinned to a stage moves the pipeline cut; pins that cannot hold are errors naming the node") {
  ds::model_profile m;
  for (int i = 0; i < 4; ++i) m.layers.push_back(layer("block" + std::to_string(i), 1000, 2000, 1024, 64, 64));
  m.batch = 1;
  auto t = ds::strategy_tree::flat(m);
  t.root_spec = ds::strategy_spec::parse("pp=2,micro=2");
  auto balanced = ds::compile(t.plan(m), free_links(1, 2), m);
  CHECK(balanced.stages == std::vector<std::pair<std::size_t, std::size_t>>{{0, 2}, {2, 4}});
  t.set("block1", with_stage(1));
  auto pinned = ds::compile(t.plan(m), free_links(1, 2), m);
  CHECK(pinned.stages == std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {1, 4}});
  t.set("block3", with_stage(0));
  CHECK(has(error_of([&] { (void)t.resolve(m); }), "node 'block3' is pinned to stage 0 but runs after 'block1' on stage 1"));
  t.set("block3", with_stage(2));
  CHECK(has(error_of([&] { (void)t.resolve(m); }), "node 'block3' is pinned to stage 2, the pipeline has 2 stages"));
  // Every layer pinned to stage 1: stage 0 would be empty.
  auto all = ds::strategy_tree::flat(m);
  all.root_spec = t.root_spec;
  all.set("*", with_stage(1));
  CHECK(has(error_of([&] { (void)ds::compile(all.plan(m), free_links(1, 2), m); }), "honours the stage pins"));
}

TEST_CASE("re-computation on one subtree changes that subtree's time and memory only, by hand-computed amounts") {
  // 4 layers, forward 1000 and backward 2000 each; stash 1000 bytes, output 100 bytes.
  // Subtree A = block0, block1; B = block2, block3. One device, one micro-batch, free links.
  ds::model_profile m;
  for (int i = 0; i < 4; ++i) m.layers.push_back(layer("block" + std::to_string(i), 1000, 2000, 0, 100, 1000));
  m.batch = 1;
  modules h;
  auto a = h.add("A");
  h.add("block0", a);
  h.add("block1", a);
  auto b = h.add("B");
  h.add("block2", b);
  h.add("block3", b);
  auto t = ds::strategy_tree::build(m, h.names, h.parents);
  ds::simulate_options o;
  o.global_batch = 1;
  auto base = ds::simulate_strategy(t.plan(m), free_links(1, 1), m, o);
  CHECK(base.predicted == 4 * 3000);
  CHECK(base.memory[0].activations == 4000); // every stash
  t.set("B", with_recompute(true));
  auto rb = ds::simulate_strategy(t.plan(m), free_links(1, 1), m, o);
  // B's two backwards run their forward again: + 2 x 1000 ns.
  CHECK(rb.predicted == 4 * 3000 + 2 * 1000);
  // A keeps its stashes (2000); B keeps its inputs (block1's and block2's outputs: 200)
  // plus the largest stash of B while it re-runs (1000).
  CHECK(rb.memory[0].activations == 2000 + 200 + 1000);
  // The uniform recompute: every layer's input (block0's is its own stash, 1000) + 3 x 100 + 1000.
  auto all = ds::simulate_strategy(ds::strategy_spec::parse("recompute=blocks"), free_links(1, 1), m, o);
  CHECK(all.predicted == 4 * 3000 + 4 * 1000);
  CHECK(all.memory[0].activations == 1000 + 300 + 1000);
}

TEST_CASE("configure_tree: the JSON file's root and nodes") {
  ds::model_profile m;
  m.layers = {layer("fc1", 100, 200, 64, 8, 8), layer("act", 0, 0, 0, 8, 8, 5, 5), layer("fc2", 100, 200, 64, 8, 8)};
  modules h;
  auto mlp = h.add("MLP_0");
  h.add("fc1", mlp);
  h.add("act", mlp);
  h.add("fc2", mlp);
  auto t = ds::strategy_tree::build(m, h.names, h.parents);
  ds::configure_tree(t, R"({
    "dp": 2, "tp": 2, "pp": 1, "zero": 1, "recompute": false,
    "nodes": {
      "MLP_0": {"recompute": true},
      "fc1": {"partition": "column"},
      "MLP_0.fc2": {"recompute": "off"}
    }
  })", "mlp.json");
  CHECK(t.root_spec.to_string() == "dp=2,tp=2,pp=1,micro=1,zero=1");
  CHECK_FALSE(t.uniform());
  auto p = t.resolve(m);
  CHECK(p[0].part == ds::partition::column);
  CHECK(p[1].part == ds::partition::through);
  CHECK(p[2].part == ds::partition::row);
  CHECK(p[0].recompute);
  CHECK(p[1].recompute);
  CHECK_FALSE(p[2].recompute);
  // micro defaults to pp, as in a spec.
  auto u = ds::strategy_tree::flat(m);
  ds::configure_tree(u, R"({"strategy": "dp=1", "pp": 2})", "x.json");
  CHECK(u.root_spec.micro == 2); // neither the base spec nor the file sets it
  ds::configure_tree(u, R"({"strategy": "pp=2,micro=1"})", "x.json");
  CHECK(u.root_spec.micro == 1);
  ds::configure_tree(u, R"({"pp": 3})", "x.json");
  CHECK(u.root_spec.micro == 3);
}

TEST_CASE("configure_tree: bad files are usage errors naming the file, the node and the problem") {
  ds::model_profile m;
  m.layers = {layer("fc1", 100, 200, 64, 8, 8), layer("fc2", 100, 200, 64, 8, 8)};
  m.layers[0].width = 3;
  m.batch = 1;
  auto err = [&](const std::string& json) {
    return error_of([&] {
      auto t = ds::strategy_tree::flat(m);
      ds::configure_tree(t, json, "bad.json");
      ds::validate(t.plan(m, "t"), free_links(1, 8), m);
    });
  };
  CHECK(has(err(R"({"tp": 2, "nodes": {"nope": {"partition": "row"}}})"),
            "strategy tree bad.json: node 'nope': no such node"));
  CHECK(has(err(R"({"nodes": {"layer_*": {}}})"), "node 'layer_*': the pattern matches no node"));
  CHECK(has(err(R"({"nodes": {"fc1": {"partition": "diagonal"}}})"),
            "bad.json: node 'fc1': partition must be \"auto\", \"replicate\", \"column\", \"row\", \"block\" or "
            "\"through\", not \"diagonal\""));
  CHECK(has(err(R"({"nodes": {"fc1": {"colour": 1}}})"), "node 'fc1': unknown key 'colour'"));
  CHECK(has(err(R"({"nodes": {"fc1": {"micro": 4}}})"), "node 'fc1': 'micro' can be set on the root only"));
  CHECK(has(err(R"({"nodes": {"fc1": {"stage": -1}}})"), "node 'fc1': stage must be a whole number"));
  CHECK(has(err(R"({"tp": 0})"), "bad.json: root: tp must be a whole number from 1"));
  CHECK(has(err(R"({"zero": 4})"), "zero must be 0, 1, 2 or 3"));
  CHECK(has(err(R"({"schedule": "zigzag"})"), "schedule must be \"1f1b\" or \"gpipe\""));
  CHECK(has(err(R"({"dpp": 2})"), "root: unknown key 'dpp'"));
  CHECK(has(err(R"({"strategy": "dp=x"})"), "bad.json: root: daydream: strategy 'dp=x'"));
  CHECK(has(err(R"({"tp": 2,)"), "bad.json: not valid JSON"));
  CHECK(has(err(R"([1, 2])"), "bad.json: the top level must be an object"));
  // tp=2 does not divide fc1's width 3 when fc1 is split; replicated it is fine.
  CHECK(has(err(R"({"tp": 2})"), "tp=2 does not divide layer 'fc1' (width 3), tree node 'fc1'"));
  CHECK(err(R"({"tp": 2, "nodes": {"fc1": {"partition": "replicate"}}})") == "(no error)");
  // A uniform spec keeps its message.
  CHECK(error_of([&] { ds::validate(ds::strategy_spec::parse("tp=2"), free_links(1, 8), m); }) ==
        "daydream: strategy 'dp=1,tp=2,pp=1,micro=1': tp=2 does not divide layer 'fc1' (width 3)");
}

TEST_CASE("the strategy tree of a real trace: every layer once, under its module's path") {
  auto t = daydream::io::load_kineto(
      daydream::testing::bundled("tracelens_mi300_ddp_8rank/resnet_act_checkpoint.json.gz"));
  ds::profile_options po;
  po.iteration = t.default_iteration();
  po.model_bytes = 46e6;
  auto m = ds::profile_model(t.g, po);
  std::vector<std::string> names;
  std::vector<std::int32_t> parents;
  for (auto& n : t.modules) {
    names.push_back(n.name);
    parents.push_back(n.parent);
  }
  auto tree = ds::strategy_tree::build(m, names, parents);
  std::vector<int> seen(m.layers.size(), 0);
  for (auto& n : tree.nodes())
    if (n.layer >= 0) ++seen[std::size_t(n.layer)];
  for (auto s : seen) CHECK(s == 1);
  const auto fc = tree.find("Linear_0");
  REQUIRE(fc >= 0);
  CHECK(tree.nodes()[std::size_t(fc)].path == "DistributedDataParallel_0.ResNet_0.Linear_0");
  CHECK(tree.nodes()[std::size_t(fc)].layer >= 0);
  // Recompute the checkpointed blocks only, as the traced run did; tp=2 splits the convolutions.
  tree.root_spec = ds::strategy_spec::parse("dp=2,tp=2,pp=2,micro=4");
  ds::configure_tree(tree, R"({"dp": 2, "tp": 2, "pp": 2, "micro": 4,
                               "nodes": {"CheckpointWrapper_*": {"recompute": true}}})", "resnet.json");
  auto plan = tree.plan(m, "resnet");
  std::size_t recomputed = 0;
  for (auto& l : plan.layers) recomputed += l.recompute;
  CHECK(recomputed > 0);
  CHECK(recomputed < m.layers.size());
  auto e = ds::simulate_strategy(plan, ds::cluster_spec::parse("dgx1-v100"), m);
  auto u = ds::simulate_strategy(ds::strategy_spec::parse("dp=2,tp=2,pp=2,micro=4"), ds::cluster_spec::parse("dgx1-v100"), m);
  CHECK(e.predicted > u.predicted); // the same strategy, plus the re-computed forwards
}
