// Tests of passes/daydream/strategy: cluster and strategy specs, the model read from a
// single-GPU graph, and the compiled strategies' identities on uniform layers.
// SPDX-License-Identifier: MIT
#include <daydream/strategy/cluster_spec.hpp>
#include <daydream/strategy/compile.hpp>
#include <daydream/strategy/compiled.hpp>
#include <daydream/strategy/device_spans.hpp>
#include <daydream/strategy/grid.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/options.hpp>
#include <daydream/strategy/simulate.hpp>
#include <daydream/strategy/stages.hpp>
#include <daydream/strategy/strategy_spec.hpp>

#include "fixtures.hpp"

#include <daydream/net/cluster.hpp>
#include <daydream/net/collective_steps.hpp>
#include <daydream/dependency.hpp>
#include <daydream/net/fine_collective.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ds = daydream::strategy;
using daydream::phase;
using daydream::task_id;
using daydream::time_ns;

namespace {

// One iteration of `layers` uniform layers on one GPU: per layer a forward GEMM of `f` ns,
// and in reverse order a backward GEMM of `b` ns followed by the AccumulateGrad of its
// `param` bytes; then the optimizer kernel of `update` ns. Each kernel's launch takes
// `launch` ns on one thread; the GPU is the bottleneck when launch < kernel.
struct uniform_trace {
  daydream::graph g;
  daydream::resource_id thread = g.add_resource({"thread 1", daydream::resource_kind::cpu_thread});
  daydream::resource_id stream =
      g.add_resource({"stream 7", daydream::resource_kind::gpu_stream, daydream::sharing::exclusive, 0, 0});
  task_id last_cpu = daydream::no_task, last_gpu = daydream::no_task;
  time_ns clock = 0;

  task_id cpu(std::string_view name, time_ns dur, std::string_view layer, phase ph, std::uint64_t bytes = 0) {
    auto c = g.add(daydream::cpu_task{daydream::cpu_call::launch, daydream::no_name, 0, bytes},
                   {.name = name, .duration = dur, .resource = thread, .trace_start = clock++, .layer = layer,
                    .phase = ph});
    if (last_cpu != daydream::no_task) g.add_dependency(last_cpu, c, daydream::dep_kind::cpu_order);
    last_cpu = c;
    return c;
  }
  void kernel(std::string_view name, time_ns dur, std::string_view layer, phase ph, time_ns launch,
              std::uint64_t bytes = 0) {
    auto c = cpu("cudaLaunchKernel", launch, layer, ph, bytes);
    auto k = g.add(daydream::gpu_kernel{0, 7, 0, 0}, {.name = name, .duration = dur, .resource = stream,
                                                      .trace_start = clock++, .layer = layer, .phase = ph});
    if (last_gpu != daydream::no_task) g.add_dependency(last_gpu, k, daydream::dep_kind::stream_order);
    g.add_dependency(c, k, daydream::dep_kind::launch);
    last_gpu = k;
  }
  uniform_trace(int layers, time_ns f, time_ns b, time_ns update, std::uint64_t param, time_ns launch = 0,
                std::uint64_t stash = 0) {
    for (int i = 0; i < layers; ++i)
      kernel("volta_sgemm_128x64_tn", f, "layer" + std::to_string(i), phase::forward, launch, stash);
    for (int i = layers; i-- > 0;) {
      cpu("autograd::engine::evaluate_function: MmBackward0", 0, "layer" + std::to_string(i), phase::backward);
      kernel("volta_sgemm_128x64_nt", b, "layer" + std::to_string(i), phase::backward, launch);
      cpu("torch::autograd::AccumulateGrad", 0, "layer" + std::to_string(i), phase::backward, param);
    }
    kernel("multi_tensor_apply_kernel<adam>", update, "", phase::weight_update, launch);
  }
};

using daydream::testing::free_links;

// A model of uniform layers with given sizes (no graph needed for volumes and memory).
ds::model_profile uniform_model(int layers, std::uint64_t param, std::uint64_t output, std::uint64_t stash) {
  ds::model_profile m;
  for (int i = 0; i < layers; ++i) {
    ds::layer_profile l;
    l.name = "block" + std::to_string(i);
    l.forward_split = 1000;
    l.backward_split = 2000;
    l.param_bytes = param;
    l.output_bytes = output;
    l.stash_bytes = stash;
    m.layers.push_back(l);
  }
  m.update = 100;
  return m;
}

using daydream::testing::error_of;

} // namespace

TEST_CASE("cluster_spec: NODESxDEVICES with link keys, presets, and bad specs named") {
  auto c = ds::cluster_spec::parse("4x8:nvlink=300GB/s,nic=100Gbps,mem=32GiB");
  CHECK(c.links.machines == 4);
  CHECK(c.links.workers_per_machine == 8);
  CHECK(c.devices() == 32);
  CHECK(c.links.nvlink.bandwidth == doctest::Approx(300e9));
  CHECK(c.links.network.bandwidth == doctest::Approx(12.5e9));
  CHECK(c.memory_bytes == doctest::Approx(32.0 * (1ull << 30)));
  auto d = ds::cluster_spec::parse("dgx-a100:nodes=4");
  CHECK(d.devices() == 32);
  CHECK(d.links.nvlink.bandwidth == doctest::Approx(300e9));
  CHECK(d.memory_bytes == doctest::Approx(80.0 * (1ull << 30)));
  CHECK(ds::cluster_spec::parse("proteus-titanxp").links.nvlink.bandwidth == 0);
  for (auto& p : ds::cluster_spec::presets()) CHECK(ds::cluster_spec::parse(p.name).devices() >= 8);
  CHECK(error_of([] { ds::cluster_spec::parse("4y8"); }).find("expected NODESxDEVICES") != std::string::npos);
  CHECK(error_of([] { ds::cluster_spec::parse("0x8"); }).find("node count") != std::string::npos);
  CHECK(error_of([] { ds::cluster_spec::parse("2x8:nvlnk=300GB/s"); }).find("nvlnk") != std::string::npos);
  CHECK(error_of([] { ds::cluster_spec::parse("2x8:nic=fast"); }).find("cluster '2x8:nic=fast'") !=
        std::string::npos);
}

TEST_CASE("cluster_spec: the distributed passes' names for the same quantities are synonyms") {
  // bandwidth= is nic=, latency= is nic_latency=, machines= is a preset's nodes=.
  auto a = ds::cluster_spec::parse("4x8:nvlink=300GB/s,bandwidth=100Gbps,latency=10us");
  auto b = ds::cluster_spec::parse("4x8:nvlink=300GB/s,nic=100Gbps,nic_latency=10us");
  CHECK(a.links.network.bandwidth == doctest::Approx(12.5e9));
  CHECK(a.links.network.latency == doctest::Approx(10'000));
  CHECK(a.links.network.bandwidth == b.links.network.bandwidth);
  CHECK(a.links.network.latency == b.links.network.latency);
  auto m = ds::cluster_spec::parse("dgx-a100:machines=4");
  CHECK(m.links.machines == 4);
  CHECK(m.devices() == ds::cluster_spec::parse("dgx-a100:nodes=4").devices());
  CHECK(error_of([] { ds::cluster_spec::parse("dgx-a100:machines=0"); }).find("nodes must be at least 1") !=
        std::string::npos);
  SUBCASE("a quantity given under both names is a usage error naming the spec and both keys") {
    auto both = [](const char* spec) {
      try {
        (void)ds::cluster_spec::parse(spec);
      } catch (const daydream::usage_error& e) {
        return std::string(e.what());
      }
      return std::string("no usage_error");
    };
    CHECK(both("2x8:nic=100Gbps,bandwidth=25Gbps") ==
          "daydream: cluster '2x8:nic=100Gbps,bandwidth=25Gbps': nic= and bandwidth= name the same quantity; "
          "give one of them");
    CHECK(both("2x8:nic_latency=5us,latency=5us").find("nic_latency= and latency= name the same quantity") !=
          std::string::npos);
    CHECK(both("dgx-h100:nodes=2,machines=2").find("nodes= and machines= name the same quantity") !=
          std::string::npos);
  }
  SUBCASE("a shape NODESxDEVICES takes no node count, under either name") {
    CHECK(error_of([] { ds::cluster_spec::parse("2x8:machines=4"); }).find("no parameter named: machines") !=
          std::string::npos);
  }
}

TEST_CASE("strategy_spec: parse, canonical form, bad items named") {
  auto s = ds::strategy_spec::parse("tp=2,dp=8,pp=4,micro=16,zero=1,recompute=blocks");
  CHECK(s.dp == 8);
  CHECK(s.tp == 2);
  CHECK(s.pp == 4);
  CHECK(s.micro == 16);
  CHECK(s.devices() == 64);
  CHECK(s.to_string() == "dp=8,tp=2,pp=4,micro=16,zero=1,recompute=blocks");
  CHECK(ds::strategy_spec::parse(s.to_string()) == s);
  CHECK(ds::strategy_spec::parse("pp=4").micro == 4);
  CHECK(ds::strategy_spec::parse("dp=2,schedule=gpipe").to_string() == "dp=2,tp=1,pp=1,micro=1,schedule=gpipe");
  CHECK(error_of([] { ds::strategy_spec::parse("dp=2,zero=4"); }).find("zero must be 0, 1, 2 or 3") !=
        std::string::npos);
  CHECK(error_of([] { ds::strategy_spec::parse("dp=0"); }).find("dp must be a positive whole number") !=
        std::string::npos);
  CHECK(error_of([] { ds::strategy_spec::parse("dp=2,recompute=some"); }).find("recompute must be") !=
        std::string::npos);
  CHECK(error_of([] { ds::strategy_spec::parse("dp=2,mp=2"); }).find("mp") != std::string::npos);
}

TEST_CASE("profile_model: per-layer times, parameter bytes and the time outside the layers") {
  uniform_trace t(4, 100, 200, 50, 4096, 5);
  auto m = ds::profile_model(t.g);
  REQUIRE(m.layers.size() == 4);
  CHECK(m.layers[0].name == "layer0");
  CHECK(m.layers[3].name == "layer3");
  for (auto& l : m.layers) {
    CHECK(l.forward_split == 100);
    CHECK(l.forward_other == 0);
    CHECK(l.backward_split == 200);
    CHECK(l.param_bytes == 4096);
  }
  CHECK(m.update == 50);
  // The step is the GPU's work: the first launch (5 ns) before it starts is no part of a
  // loop's step, and nothing else is exposed.
  CHECK(m.iteration == daydream::replay(t.g).makespan - 5);
  CHECK(m.other == 0);
  CHECK(m.gradient_source == "trace (AccumulateGrad input shapes)");
}

TEST_CASE("dp=tp=pp=1 predicts the single-GPU replay") {
  for (time_ns launch : {0, 5, 150}) {
    CAPTURE(launch);
    uniform_trace t(6, 100, 200, 50, 4096, launch);
    auto m = ds::profile_model(t.g);
    auto e = ds::simulate_strategy(ds::strategy_spec{}, free_links(1, 1), m);
    const auto spans = daydream::iteration_spans(t.g, daydream::replay(t.g));
    REQUIRE(spans.size() == 1);
    CHECK(e.predicted == spans[0].duration());
    CHECK(e.comm.total() == 0);
  }
}

TEST_CASE("a pipeline of p uniform stages and m micro-batches with free links takes (m+p-1)/(m p) of the compute") {
  const time_ns f = 400, b = 800, update = 800;
  uniform_trace t(8, f, b, update, 1024);
  auto m = ds::profile_model(t.g);
  const time_ns compute = 8 * (f + b);
  for (std::uint32_t p : {1u, 2u, 4u, 8u})
    for (std::uint32_t mb : {1u, 2u, 4u, 8u})
      for (auto sched : {ds::pipeline_schedule::one_f_one_b, ds::pipeline_schedule::gpipe}) {
        ds::strategy_spec s;
        s.pp = p;
        s.micro = mb;
        s.schedule = sched;
        CAPTURE(s.to_string());
        ds::simulate_options o;
        o.global_batch = 1; // the profiled batch, cut into m micro-batches
        auto e = ds::simulate_strategy(s, free_links(1, 8), m, o);
        // Each stage updates its own layers' parameters: update / p after its last backward.
        CHECK(e.predicted == compute * (mb + p - 1) / (mb * p) + update / p);
        auto stages = ds::balance_stages(m, p);
        for (auto& [a, z] : stages) CHECK(z - a == 8 / p);
      }
}

TEST_CASE("data-parallel ring all-reduce sends 2(n-1)/n of the gradient bytes per worker; ZeRO-3 1.5x") {
  auto m = uniform_model(4, 1'000'000, 1000, 1000);
  const double grads = 4'000'000;
  for (std::uint32_t n : {2u, 4u, 8u}) {
    CAPTURE(n);
    ds::strategy_spec s;
    s.dp = n;
    auto plain = ds::simulate_strategy(s, free_links(1, 8), m);
    CHECK(plain.comm.dp == doctest::Approx(2.0 * (n - 1) / n * grads));
    CHECK(plain.comm.zero == 0);
    CHECK(plain.comm.tp == 0);
    CHECK(plain.comm.pp == 0);
    for (std::uint32_t z : {1u, 2u}) {
      s.zero = z;
      auto e = ds::simulate_strategy(s, free_links(1, 8), m);
      CHECK(e.comm.dp + e.comm.zero == doctest::Approx(plain.comm.dp));
    }
    s.zero = 3;
    auto z3 = ds::simulate_strategy(s, free_links(1, 8), m);
    CHECK(z3.comm.dp + z3.comm.zero == doctest::Approx(1.5 * plain.comm.dp));
  }
}

TEST_CASE("Megatron tensor parallelism: 2 all-reduces of b*s*h in forward and 2 in backward per transformer layer") {
  // 3 transformer layers, each recorded as two layers (attention, MLP) whose output is b*s*h bytes.
  const std::uint64_t bsh = 8 * 512 * 1024 * 2;
  auto m = uniform_model(6, 1 << 20, bsh, bsh);
  for (std::uint32_t t : {2u, 4u, 8u})
    for (std::uint32_t mb : {1u, 4u}) {
      ds::strategy_spec s;
      s.tp = t;
      s.micro = mb;
      CAPTURE(s.to_string());
      ds::simulate_options o;
      o.global_batch = 1; // one batch b, cut into m micro-batches
      auto e = ds::simulate_strategy(s, free_links(1, 8), m, o);
      // Per micro-batch b/m: 4 all-reduces per transformer layer, each 2(t-1)/t of its bytes.
      const double per_micro = double(bsh) / mb;
      CHECK(e.comm.tp == doctest::Approx(3 * 4 * mb * 2.0 * (t - 1) / t * per_micro));
    }
}

TEST_CASE("pipeline sends: each boundary carries the activations forward and their gradients back") {
  auto m = uniform_model(8, 1 << 20, 1000, 2000);
  ds::strategy_spec s;
  s.pp = 4;
  s.micro = 8;
  ds::simulate_options o;
  o.global_batch = 1;
  auto e = ds::simulate_strategy(s, free_links(1, 8), m, o);
  // 3 boundaries x 8 micro-batches x (1000 / 8) bytes x 2 directions, over 4 devices.
  CHECK(e.comm.pp == doctest::Approx(3.0 * 8 * 125 * 2 / 4));
}

TEST_CASE("ZeRO stages cut per-device optimizer state, then gradients, then parameters by 1/dp") {
  auto m = uniform_model(4, 1'000'000, 1000, 1000);
  ds::strategy_spec s;
  s.dp = 4;
  auto z0 = ds::simulate_strategy(s, free_links(1, 8), m);
  CHECK(z0.memory[0].params == doctest::Approx(4e6));
  CHECK(z0.memory[0].gradients == doctest::Approx(4e6));
  CHECK(z0.memory[0].optimizer == doctest::Approx(12e6)); // 1e6 parameters x 12 bytes
  s.zero = 1;
  auto z1 = ds::simulate_strategy(s, free_links(1, 8), m);
  CHECK(z1.memory[0].optimizer == doctest::Approx(z0.memory[0].optimizer / 4));
  CHECK(z1.memory[0].gradients == doctest::Approx(4e6));
  s.zero = 2;
  auto z2 = ds::simulate_strategy(s, free_links(1, 8), m);
  CHECK(z2.memory[0].gradients == doctest::Approx(1e6));
  CHECK(z2.memory[0].params == doctest::Approx(4e6));
  s.zero = 3;
  auto z3 = ds::simulate_strategy(s, free_links(1, 8), m);
  CHECK(z3.memory[0].params == doctest::Approx(1e6));
  CHECK(z3.peak_memory < z2.peak_memory);
  CHECK(z2.peak_memory < z1.peak_memory);
  CHECK(z1.peak_memory < z0.peak_memory);
}

TEST_CASE("activations in flight: GPipe holds every micro-batch, 1F1B at most the stages after it; recompute keeps inputs") {
  auto m = uniform_model(8, 0, 100, 1000);
  ds::strategy_spec s;
  s.pp = 4;
  s.micro = 8;
  ds::simulate_options o;
  o.global_batch = 1;
  auto one = ds::simulate_strategy(s, free_links(1, 8), m, o);
  for (std::uint32_t k = 0; k < 4; ++k) CHECK(one.memory[k].in_flight == 4 - k);
  // 2 layers of stage 0 x 1000 bytes / 8 per micro-batch x 4 in flight.
  CHECK(one.memory[0].activations == doctest::Approx(4 * 2 * 125.0));
  s.schedule = ds::pipeline_schedule::gpipe;
  auto gp = ds::simulate_strategy(s, free_links(1, 8), m, o);
  for (auto& mem : gp.memory) CHECK(mem.in_flight == 8);
  s.schedule = ds::pipeline_schedule::one_f_one_b;
  s.recompute = ds::recompute_mode::blocks;
  auto rc = ds::simulate_strategy(s, free_links(1, 8), m, o);
  // Stage 1: the inputs of its 2 layers (100 / 8 each) x 3 in flight, plus one layer's stash
  // while it is recomputed. Stage 0's first input is the model's input: its stash (1000 / 8).
  CHECK(rc.memory[1].activations == doctest::Approx(3 * 2 * 12.5 + 125));
  CHECK(rc.memory[0].activations == doctest::Approx(4 * (125 + 12.5) + 125));
  CHECK(rc.predicted > one.predicted); // the forward runs again
  ds::cluster_spec small = free_links(1, 8);
  small.memory_bytes = 700;
  CHECK(ds::simulate_strategy(s, small, m, o).oom == false);
  s.recompute = ds::recompute_mode::none;
  CHECK(ds::simulate_strategy(s, small, m, o).oom == true);
}

TEST_CASE("bad strategies: too many devices, a pipeline deeper than the layers, tp not dividing a width") {
  auto m = uniform_model(4, 1000, 1000, 1000);
  m.layers[2].width = 1020;
  auto c = free_links(1, 8);
  CHECK(error_of([&] { ds::simulate_strategy(ds::strategy_spec::parse("dp=4,tp=1,pp=4"), c, m); })
            .find("needs 16 devices (dp x tp x pp), the cluster 'free' has 8") != std::string::npos);
  CHECK(error_of([&] { ds::simulate_strategy(ds::strategy_spec::parse("pp=8"), c, m); })
            .find("a pipeline of 8 stages is deeper than the model's 4 layers") != std::string::npos);
  CHECK(error_of([&] { ds::simulate_strategy(ds::strategy_spec::parse("tp=8"), c, m); })
            .find("tp=8 does not divide layer 'block2' (width 1020)") != std::string::npos);
  CHECK(error_of([&] { ds::simulate_strategy(ds::strategy_spec::parse("tp=4"), c, m); }) == "(no error)");
  ds::simulate_options o;
  o.global_batch = 12;
  m.batch = 4; // samples: a micro-batch must hold whole samples
  CHECK(error_of([&] { ds::simulate_strategy(ds::strategy_spec::parse("dp=8"), c, m, o); })
            .find("does not split into dp x micro") != std::string::npos);
}

TEST_CASE("links: a group inside a node uses NVLink, across nodes the NIC shared by the groups on it") {
  auto m = uniform_model(4, 1'000'000, 1000, 1000);
  auto c = ds::cluster_spec::parse("4x8:nvlink=300GB/s,nic=100Gbps");
  auto inside = ds::simulate_strategy(ds::strategy_spec::parse("dp=8"), c, m);
  CHECK(inside.dp_link.name == "NVLink");
  auto across = ds::simulate_strategy(ds::strategy_spec::parse("dp=4,tp=8"), c, m);
  CHECK(across.tp_link.name == "NVLink");
  CHECK(across.dp_link.name == "NIC");
  // The 8 tp ranks of a node each belong to another dp group: their rings cross its NIC at
  // once, in step, and split it 8 ways (measured in the replay, not assumed).
  CHECK(across.dp_link.link.bandwidth == doctest::Approx(12.5e9));
  CHECK(across.dp_link.share == doctest::Approx(1.0 / 8).epsilon(1e-3));
  CHECK(across.dp_link.resource.find("NIC") != std::string::npos);
  auto pipe = ds::simulate_strategy(ds::strategy_spec::parse("tp=8,pp=4,micro=4"), c, m);
  CHECK(pipe.pp_link.name == "NIC");
  CHECK(pipe.pp_link.share == doctest::Approx(1.0 / 8).epsilon(1e-3));
  // Slower links never make an iteration faster.
  CHECK(across.predicted >= ds::simulate_strategy(ds::strategy_spec::parse("dp=4,tp=8"), free_links(4, 8), m).predicted);
}

TEST_CASE("grid: every dp x tp x pp x micro for the device count") {
  auto m = uniform_model(4, 1000, 1000, 1000);
  auto g = ds::grid(8, m);
  // (dp,tp,pp): pp=1: 4 (tp 1,2,4,8) x micro 1; pp=2: 3 x 3 micros; pp=4: 2 x 3; pp=8 > 4 layers.
  CHECK(g.size() == 4 + 9 + 6);
  for (auto& s : g) CHECK(s.devices() == 8);
  // add_grid keeps the named plans first and adds the grid's others once, in its order.
  auto named = ds::strategy_spec::parse("dp=4,tp=2");
  std::vector<ds::strategy_plan> plans{ds::uniform_plan(named, m)};
  ds::add_grid(plans, {named}, 8, m);
  REQUIRE(plans.size() == g.size());
  CHECK(plans[0].name == ds::uniform_plan(named, m).name);
  for (std::size_t i = 1, j = 0; i < plans.size(); ++i, ++j) {
    if (g[j] == named) ++j;
    CHECK(plans[i].name == ds::uniform_plan(g[j], m).name);
  }
}

TEST_CASE("the busiest stage's breakdown adds up to the iteration time") {
  auto m = uniform_model(8, 4'000'000, 1 << 20, 1 << 20);
  m.other = 5000;
  auto c = ds::cluster_spec::parse("2x8:nvlink=150GB/s,nic=25Gbps");
  for (std::string spec : {"dp=16", "dp=16,zero=1", "dp=16,zero=3", "dp=4,tp=2,pp=2,micro=4", "tp=8,pp=2,micro=8",
                    "dp=2,pp=8,micro=16,schedule=gpipe", "dp=8,tp=2,recompute=blocks"}) {
    CAPTURE(spec);
    for (double overlap : {1.0, 1.3}) {
      ds::simulate_options o;
      o.overlap_slowdown = overlap;
      auto e = ds::simulate_strategy(ds::strategy_spec::parse(spec), c, m, o);
      CHECK(e.compute + e.tp_comm + e.dp_exposed + e.update + e.other + e.bubble == e.predicted);
      CHECK(e.bubble >= 0);
      CHECK(!e.bound.empty());
    }
  }
}

namespace {

// Links with given figures: NIC `nic` bytes/s, each GPU's port `intra` bytes/s (NVLink when
// `nvlink`, else PCIe), `latency` ns on both.
ds::cluster_spec links(std::uint32_t nodes, std::uint32_t per_node, double nic, double intra, double latency,
                       bool nvlink = true) {
  auto c = free_links(nodes, per_node);
  c.name = "hand";
  c.links.network = {nic, latency};
  c.links.nvlink = nvlink ? daydream::link_spec{intra, latency} : daydream::link_spec{0, 0};
  c.links.pcie = {intra, latency};
  return c;
}

// One layer that tensor parallelism leaves whole (no split work): forward f, backward b,
// `param` bytes of parameters, no update.
ds::model_profile whole_layer(time_ns f, time_ns b, std::uint64_t param) {
  ds::model_profile m;
  ds::layer_profile l;
  l.name = "whole";
  l.forward_other = f;
  l.backward_other = b;
  l.param_bytes = param;
  l.output_bytes = 1000;
  l.stash_bytes = 1000;
  m.layers.push_back(l);
  return m;
}

} // namespace

TEST_CASE("two data-parallel groups crossing one NIC take the max-min fair share of it") {
  // 1 MB of gradients, a 1 GB/s NIC, 1 us latency. A ring all-reduce of 2 ranks is 2 steps,
  // each rank sending 0.5 MB to the other: alone 1 us + 0.5 ms per step.
  auto m = whole_layer(30'000, 70'000, 1'000'000);
  ds::simulate_options o;
  o.global_batch = 2; // each replica runs the profiled batch
  // One group (dp=2, one GPU per machine): nothing shares the NIC.
  auto one = ds::simulate_strategy(ds::strategy_spec::parse("dp=2"), links(2, 1, 1e9, 1e12, 1000), m, o);
  CHECK(one.predicted == 100'000 + 2 * (1000 + 500'000));
  CHECK(one.dp_link.name == "NIC");
  CHECK(one.dp_link.share == doctest::Approx(1.0));
  // Two groups (dp=2, tp=2, 2 GPUs per machine): ranks {0, 2} and {1, 3} both send through
  // machine 0's NIC out (and receive through machine 1's), in step: each transfer gets half
  // of it, 0.5 MB / 0.5 GB/s = 1 ms per step.
  auto two = ds::simulate_strategy(ds::strategy_spec::parse("dp=2,tp=2"), links(2, 2, 1e9, 1e12, 1000), m, o);
  CHECK(two.predicted == 100'000 + 2 * (1000 + 1'000'000));
  CHECK(two.dp_link.name == "NIC");
  CHECK(two.dp_link.share == doctest::Approx(0.5));
  CHECK(two.dp_link.load == doctest::Approx(2 * 1'000'000.0 / double(two.predicted)));
  CHECK(two.bound.find("data-parallel gradient sync over NIC 1 GB/s") != std::string::npos);
  CHECK(two.tp_link.name == "none");
}

TEST_CASE("a tensor-parallel group inside a node uses its NVLink or PCIe ports, never a NIC") {
  // One split layer: forward 400 us, backward 800 us over tp=4; its 4 MB output all-reduced
  // after each in a ring of 4: 6 steps of 1 MB over 1 GB/s ports (1 ms) plus 2 us latency.
  ds::model_profile m;
  ds::layer_profile l;
  l.name = "gemm";
  l.forward_split = 400'000;
  l.backward_split = 800'000;
  l.param_bytes = 4000;
  l.output_bytes = 4'000'000;
  l.stash_bytes = 1000;
  m.layers.push_back(l);
  ds::simulate_options o;
  o.global_batch = 1;
  for (bool nvlink : {true, false}) {
    CAPTURE(nvlink);
    auto c = links(2, 4, 1e6, 1e9, 2000, nvlink);
    auto s = ds::strategy_spec::parse("tp=4");
    auto cs = ds::compile(s, c, m, o);
    CHECK(cs.links.nic_out.empty());
    CHECK(cs.links.nic_in.empty());
    CHECK(cs.compute.size() == 4);
    auto e = ds::simulate_strategy(s, c, m, o);
    CHECK(e.predicted == 100'000 + 200'000 + 2 * 6 * (2000 + 1'000'000));
    CHECK(e.tp_link.name == (nvlink ? "NVLink" : "PCIe"));
    CHECK(e.tp_link.share == doctest::Approx(1.0));
    CHECK(e.dp_link.name == "none");
    CHECK(e.pp_link.name == "none");
    CHECK(e.tp_comm == 2 * 6 * (2000 + 1'000'000));
  }
}

TEST_CASE("symmetric devices of a strategy run identical timelines") {
  auto m = uniform_model(8, 2'000'000, 1 << 20, 1 << 20);
  auto c = ds::cluster_spec::parse("2x8:nvlink=150GB/s,nic=25Gbps");
  for (std::string spec : {"dp=4,tp=2,pp=2,micro=4", "dp=8,tp=2,zero=3", "dp=2,tp=2,pp=4,micro=8,schedule=gpipe"}) {
    CAPTURE(spec);
    ds::simulate_options o;
    o.overlap_slowdown = 1.2;
    auto s = ds::strategy_spec::parse(spec);
    auto cs = ds::compile(s, c, m, o);
    REQUIRE(cs.compute.size() == s.devices());
    daydream::replay_options ro;
    ro.overlap_slowdown = o.overlap_slowdown;
    auto r = daydream::replay(cs.g, daydream::trace_order_policy{}, ro);
    auto spans = ds::device_spans(cs, r);
    // By device: its spans (track, start, end), in order.
    std::vector<std::vector<std::tuple<int, time_ns, time_ns>>> by(s.devices());
    for (auto& sp : spans) by[sp.device].emplace_back(sp.track, sp.start, sp.end);
    const std::uint32_t per_stage = s.dp * s.tp;
    // Tensor-parallel partners are always alike. With the data-parallel rings inside a
    // machine every device of a stage is; with them across the 2 machines (dp=8), device d
    // and device d + 8 are (the ring maps onto itself, machine 0 onto machine 1).
    const bool whole_stage = s.dp * s.tp <= 8 && per_stage * 2 <= 16;
    for (std::uint32_t d = 0; d < s.devices(); ++d) {
      CAPTURE(d);
      CHECK(!by[d].empty());
      CHECK(cs.stage_of[d] == d / per_stage);
      CHECK(by[d] == by[d - d % s.tp]);
      if (whole_stage) CHECK(by[d] == by[cs.stage_of[d] * per_stage]);
      else CHECK(by[d] == by[(d + 8) % 16]);
    }
  }
}

TEST_CASE("the strategy's graph holds every device: one computation stream and two queues each") {
  auto m = uniform_model(4, 1'000'000, 1000, 1000);
  auto c = ds::cluster_spec::parse("2x8:nvlink=150GB/s,nic=25Gbps");
  auto s = ds::strategy_spec::parse("dp=2,tp=2,pp=2,micro=2,zero=1");
  auto cs = ds::compile(s, c, m);
  REQUIRE(cs.compute.size() == 8);
  REQUIRE(cs.features.size() == 8);
  REQUIRE(cs.gradients.size() == 8);
  for (std::uint32_t d = 0; d < 8; ++d) {
    CHECK(cs.g.resource_at(cs.compute[d]).node == std::int32_t(d));
    CHECK(cs.g.resource_at(cs.features[d]).node == std::int32_t(d));
    CHECK(cs.g.resource_at(cs.gradients[d]).node == std::int32_t(d));
  }
  // Per device: 4 tp all-reduces (2 layers x 2 micro-batches) and 2 pipeline sends (or
  // receives) on its feature queue, forward and backward; a reduce-scatter and a ZeRO
  // all-gather on its gradient queue.
  std::vector<int> feat(8, 0), grad(8, 0);
  for (auto& u : cs.queue_uses) ++(u.queue == ds::device_queue::features ? feat : grad)[u.device];
  for (std::uint32_t d = 0; d < 8; ++d) {
    CAPTURE(d);
    CHECK(feat[d] == 2 * 2 * 2 + 2);
    CHECK(grad[d] == 2);
  }
  auto r = daydream::replay(cs.g);
  std::set<std::pair<std::uint32_t, int>> tracks;
  for (auto& sp : ds::device_spans(cs, r)) {
    CHECK(sp.end >= sp.start);
    tracks.emplace(sp.device, sp.track);
  }
  CHECK(tracks.size() == 8 * 3);
}

TEST_CASE("a pipelined ring alone takes exactly the step-by-step ring's time, on any placement") {
  // Random rings over 2 machines x 4 GPUs with links whose latencies and per-step transfer
  // times are whole nanoseconds (so that rounding per step and per hop agree).
  daydream::cluster c;
  c.machines = 2;
  c.workers_per_machine = 4;
  c.network = {1e9, 3000};
  c.nvlink = {1e10, 700};
  const auto h = daydream::link_hierarchy::of(c, 8);
  std::uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 40; ++trial) {
    const std::uint32_t p = 2 + next() % 7;
    std::vector<std::int32_t> ranks;
    for (std::int32_t r = 0; r < 8; ++r) ranks.push_back(r);
    for (std::uint32_t i = 7; i > 0; --i) std::swap(ranks[i], ranks[next() % (i + 1)]);
    ranks.resize(p);
    std::sort(ranks.begin(), ranks.end());
    const double bytes = double(p) * 1000.0 * (1 + next() % 50); // chunk: whole microseconds on the NIC
    for (auto op : {daydream::comm_op::all_reduce, daydream::comm_op::reduce_scatter, daydream::comm_op::all_gather}) {
      CAPTURE(trial);
      CAPTURE(p);
      const auto ring = ds::pipelined_ring(op, bytes, p);
      CHECK(ring.transfers.size() == p);
      daydream::graph g;
      daydream::fine_links links;
      daydream::fine_transfer_options fo;
      fo.op = op;
      fo.latency_count = ring.steps;
      auto built = daydream::add_fine_transfers(g, links, h, ranks, ring.transfers,
                                                std::vector<task_id>(p, daydream::no_task), fo);
      const auto stepwise = daydream::uncontended_time(op, bytes, ranks, h);
      CHECK(built.alone == stepwise);
      CHECK(daydream::replay(g).makespan == stepwise); // alone: no hop shares a link
    }
  }
}

TEST_CASE("add_fine_transfers: each participant's first transfer waits for its own start") {
  daydream::cluster c;
  c.machines = 1;
  c.workers_per_machine = 2;
  c.nvlink = {1e9, 0};
  const auto h = daydream::link_hierarchy::of(c, 2);
  daydream::graph g;
  auto r = g.add_resource({"wait", daydream::resource_kind::other});
  auto late = g.add(daydream::cpu_task{}, {.name = "late", .duration = 5000, .resource = r}).id;
  daydream::fine_links links;
  // A 2-rank ring all-reduce step by step: 2 steps of 500 bytes each way, 500 ns each.
  auto steps = daydream::collective_transfers(daydream::comm_op::all_reduce, 1000, 2);
  auto built = daydream::add_fine_transfers(g, links, h, {0, 1}, steps, {daydream::no_task, late});
  CHECK(built.transfers == 4);
  CHECK(built.alone == 1000);
  CHECK(built.last.size() == 2);
  auto rr = daydream::replay(g);
  CHECK(rr.makespan == 5000 + 1000); // rank 1 starts late, and the first step needs both ends
  CHECK(links.port_out.size() == 2);
  CHECK(links.nic_out.empty());
}
