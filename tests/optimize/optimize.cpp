// Tests of the strategy search (daydream/optimize): plans, baselines, Algorithm 1 against brute force, op fusion, memory, bad input.
// SPDX-License-Identifier: MIT
#include <daydream/daydream.hpp>
#include <daydream/optimize/plan.hpp>
#include <daydream/optimize/search.hpp>
#include <daydream/optimize/strategies.hpp>
#include <daydream/registry/cluster_params.hpp>
#include <daydream/semantics/data_parallel.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace daydream;
namespace opt = daydream::optimize;

namespace {

cluster make_cluster(const std::string& spec) {
  return cluster_from_params(pass_params::parse("test", spec));
}

// One iteration on one GPU stream: a forward kernel per layer, the backward kernels in
// reverse layer order (the last backward kernel of a layer makes its gradient ready), an
// optimizer kernel. Layer i is "layer<i>" with gradient bytes[i].
struct model {
  graph g;
  passes::layer_bytes sizes;
};

model make_model(const std::vector<time_ns>& fwd, const std::vector<time_ns>& bwd,
                 const std::vector<std::uint64_t>& bytes) {
  model m;
  auto& g = m.g;
  auto s = g.add_resource({"stream 7", resource_kind::gpu_stream});
  time_ns at = 0;
  task_id prev = no_task;
  auto add = [&](std::string_view name, time_ns d, const std::string& layer, phase ph) {
    auto k = g.add(gpu_kernel{}, {.name = name, .duration = d, .resource = s, .trace_start = at,
                                  .layer = layer, .phase = ph});
    at += d;
    if (prev != no_task) g.add_dependency(prev, k, dep_kind::stream_order);
    prev = k;
    return k.id;
  };
  for (std::size_t i = 0; i < fwd.size(); ++i) add("fwd", fwd[i], "layer" + std::to_string(i), phase::forward);
  for (std::size_t i = bwd.size(); i-- > 0;) add("bwd", bwd[i], "layer" + std::to_string(i), phase::backward);
  add("sgd", 500'000, "", phase::weight_update);
  for (std::size_t i = 0; i < bytes.size(); ++i) m.sizes.push_back({"layer" + std::to_string(i), bytes[i]});
  return m;
}

// A random model of `n` layers (compute 0.1-3 ms per kernel, gradients 0.05-16 MB).
model random_model(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<time_ns> dur(100'000, 3'000'000);
  std::uniform_int_distribution<std::uint64_t> size(50'000, 16'000'000);
  std::vector<time_ns> f, b;
  std::vector<std::uint64_t> s;
  for (std::size_t i = 0; i < n; ++i) { f.push_back(dur(rng) / 3); b.push_back(dur(rng)); s.push_back(size(rng)); }
  return make_model(f, b, s);
}

opt::problem problem_of(const model& m, const std::string& cluster_spec) {
  return opt::make_problem(m.g, 0, make_cluster(cluster_spec), "test model", m.sizes);
}

double best_baseline(const std::vector<opt::baseline>& bs) {
  double best = std::numeric_limits<double>::infinity();
  for (auto& b : bs) {
    REQUIRE(b.error.empty());
    REQUIRE(b.time > 0);
    best = std::min(best, double(b.time));
  }
  return best;
}

} // namespace

TEST_CASE("the plan of a known system replays exactly as its bundled pass") {
  std::mt19937 rng(7);
  auto m = random_model(rng, 8);
  auto p = problem_of(m, "workers=16,bandwidth=10Gbps");
  REQUIRE(p.gs.grads.size() == 8);
  auto bs = opt::run_baselines(p);
  REQUIRE(bs.size() == 4);
  CHECK(bs[0].name == "pytorch_ddp");
  CHECK(opt::evaluate(p, opt::ddp_plan(p)).time == bs[0].time);
  CHECK(bs[2].name == "byteps");
  CHECK(opt::evaluate(p, opt::byteps_plan(p)).time == bs[2].time);
  CHECK(bs[3].name == "fuse_all");
  CHECK(opt::evaluate(p, opt::fuse_all_plan()).time == bs[3].time);
}

TEST_CASE("two gradients: fusing saves one latency exactly when the second is ready before the first's sync ends") {
  // Backward kernels of 1 ms; gradients of 1 MB; a 1 ms latency makes each all-reduce
  // cost far more than the compute between them, so one bucket wins by about one
  // all-reduce latency term.
  auto m = make_model({100'000, 100'000}, {1'000'000, 1'000'000}, {1'000'000, 1'000'000});
  auto p = problem_of(m, "workers=8,bandwidth=100Gbps,latency=1ms");
  auto two = opt::evaluate(p, opt::greedy_cap_plan(p, 1)).time;
  auto one = opt::evaluate(p, opt::fuse_all_plan()).time;
  CHECK(one < two);
  // Ring all-reduce: 2(p-1) latency terms per all-reduce; the second all-reduce starts
  // when the first ends (after its gradient was ready), so one fewer all-reduce saves
  // 2(p-1) latencies less the shorter transfer of the second half.
  CHECK(two - one > 10'000'000);
  auto res = opt::search(p, opt::bundled_strategies().select({"tensor_fusion"}));
  CHECK(res.best_time == one);
  CHECK(res.best.buckets() == 1);
}

TEST_CASE("the search is within 1% of the brute-force optimum and never worse than the best baseline") {
  // Classes of input: few and many tensors, slow and fast networks, high and low latency,
  // small and large clusters. Brute force tries every bucketing (2^(n-1) plans).
  const std::vector<std::string> clusters = {
      "workers=8,bandwidth=10Gbps", "workers=64,bandwidth=10Gbps,latency=50us",
      "workers=8,bandwidth=100Gbps", "workers=64,bandwidth=100Gbps,latency=2us",
  };
  std::mt19937 rng(2024);
  for (std::size_t trial = 0; trial < 8; ++trial) {
    const std::size_t n = 4 + trial % 2 * 6 + trial / 2; // 4..12 tensors
    auto m = random_model(rng, std::min<std::size_t>(n, 12));
    const auto& spec = clusters[trial % clusters.size()];
    auto p = problem_of(m, spec);
    opt::search_options o;
    o.time_budget_s = 1e9; // never the budget: deterministic
    auto res = opt::search(p, opt::bundled_strategies().entries(), o);
    auto [best_plan, optimum] = opt::brute_force_buckets(p);
    const double baseline = best_baseline(opt::run_baselines(p));
    CAPTURE(trial);
    CAPTURE(spec);
    CAPTURE(n);
    CHECK(double(res.best_time) <= optimum * 1.01);
    CHECK(double(res.best_time) <= baseline);
    // The plan it reports is the plan it measured.
    CHECK(opt::evaluate(p, res.best).time == res.best_time);
    CHECK(res.evaluated >= 5);
    CHECK(!res.log.empty());
  }
}

TEST_CASE("tensor partition: partial replay finds the piece count that pipelines push and pull") {
  auto m = make_model({100'000}, {1'000'000}, {64'000'000});
  auto p = problem_of(m, "workers=8,bandwidth=10Gbps,latency=5us");
  using opt::transport;
  // Fair-shared links: pieces gain nothing (they all end together).
  CHECK(opt::partial_replay(p, transport::parameter_server, 64'000'000, 0) <=
        opt::partial_replay(p, transport::parameter_server, 64'000'000, 16'000'000));
  // One message at a time: k pieces take (k + 1) piece times.
  const auto whole = opt::partial_replay(p, transport::parameter_server_pipelined, 64'000'000, 0);
  const auto four = opt::partial_replay(p, transport::parameter_server_pipelined, 64'000'000, 16'000'000);
  const auto t16 = opt::sync_time(p, transport::parameter_server_pipelined, 16'000'000);
  CHECK(four == 5 * t16);
  CHECK(whole == 2 * opt::sync_time(p, transport::parameter_server_pipelined, 64'000'000));
  auto [piece, t] = opt::best_partition(p, transport::parameter_server_pipelined, 64'000'000);
  CHECK(piece == 1'000'000); // 64 pieces: the latency (5 us) is tiny next to a piece's transfer
  CHECK(t < four);
}

TEST_CASE("op fusion: two launch-bound kernels fused into one, the eliminated launch gone") {
  // A CPU thread launching four short kernels on a stream (launch 20 us each, kernels
  // 2 us): the launches bound the iteration, so fusing removes one launch.
  graph g;
  auto cpu = g.add_resource({"thread 1", resource_kind::cpu_thread});
  auto s = g.add_resource({"stream 7", resource_kind::gpu_stream});
  task_id prev_call = no_task, prev_kernel = no_task;
  std::vector<task_id> kernels;
  for (int i = 0; i < 4; ++i) {
    auto call = g.add(cpu_task{.call = cpu_call::runtime},
                      {.name = "cudaLaunchKernel", .duration = 20'000, .resource = cpu, .trace_start = 20'000 * i});
    auto k = g.add(gpu_kernel{}, {.name = i % 2 ? "relu" : "add", .duration = 2'000, .resource = s,
                                  .trace_start = 20'000 * i + 20'000, .phase = phase::forward});
    if (prev_call != no_task) g.add_dependency(prev_call, call, dep_kind::cpu_order);
    if (prev_kernel != no_task) g.add_dependency(prev_kernel, k, dep_kind::stream_order);
    g.add_dependency(call, k, dep_kind::launch);
    prev_call = call.id;
    prev_kernel = k.id;
    kernels.push_back(k.id);
  }
  opt::problem p;
  p.g = g;
  opt::fusion_group f{{kernels[0], kernels[1]}};
  graph h = g;
  auto kept = opt::fuse_ops(h, f, p.fused_duration);
  CHECK(kept == kernels[1]);
  CHECK(!h.contains(kernels[0]));
  CHECK(h.duration(kept) == 4'000); // no tensor bytes known: no intermediate traffic saved
  CHECK(replay(h).makespan == replay(g).makespan - 20'000);
  // Not consecutive on one stream: refused, naming the ops.
  CHECK_THROWS_WITH_AS(opt::fuse_ops(h, opt::fusion_group{{kernels[2], kernels[1]}}, p.fused_duration),
                       doctest::Contains("not consecutive"), error);
}

TEST_CASE("a user strategy registers like a pass and its edits are applied") {
  std::mt19937 rng(3);
  auto m = random_model(rng, 5);
  auto p = problem_of(m, "workers=8,bandwidth=10Gbps");
  //! [user_strategy]
  auto reg = opt::bundled_strategies();
  reg.add({"faster_optimizer", "halves the optimizer kernel", [](const opt::search_view& v) {
             std::vector<opt::move> out;
             if (!v.current.edits.empty()) return out;
             opt::plan y = v.current;
             y.edits.push_back({"faster_optimizer", [](graph& h) {
                                  h.for_each_task([&](task_id t) {
                                    if (h.name(t) == "sgd") set_duration(h, t, h.duration(t) / 2);
                                  });
                                }});
             out.push_back({"faster_optimizer", "", "halve the optimizer", std::move(y)});
             return out;
           }});
  auto res = opt::search(p, reg.select({"tensor_fusion", "faster_optimizer"}));
//! [user_strategy]
  REQUIRE(res.best.edits.size() == 1);
  CHECK(res.best.edits[0].name == "faster_optimizer");
  CHECK(std::any_of(res.log.begin(), res.log.end(), [](auto& d) { return d.strategy == "faster_optimizer"; }));
  CHECK_THROWS_WITH_AS(reg.select({"tensor_fusion", "nope"}), doctest::Contains("unknown strategy 'nope'"), usage_error);
}

TEST_CASE("memory: the faster strategy that fits the budget, or a clear error when none does") {
  std::mt19937 rng(5);
  auto m = random_model(rng, 6);
  // Activations: every forward kernel allocates 100 MB, its backward frees it.
  m.g.for_each_task([&](task_id t) {
    if (m.g.phase_of(t) == phase::forward) add_mem_delta(m.g, t, 100'000'000);
    if (m.g.phase_of(t) == phase::backward) add_mem_delta(m.g, t, -100'000'000);
  });
  auto p = problem_of(m, "workers=8,bandwidth=10Gbps");
  p.memory_modelled = true;
  auto free_run = opt::search(p, opt::bundled_strategies().entries());
  CHECK(free_run.best_peak == 600'000'000);
  opt::search_options o;
  o.memory_budget = 350'000'000;
  auto res = opt::search(p, opt::bundled_strategies().entries(), o);
  CHECK(res.best_peak <= 350'000'000);
  CHECK(!res.best.memory.empty());
  CHECK(res.best_time >= free_run.best_time);
  o.memory_budget = 1;
  CHECK_THROWS_WITH_AS(opt::search(p, opt::bundled_strategies().entries(), o),
                       doctest::Contains("no strategy meets the memory budget"), error);
}

TEST_CASE("a graph without gradient sizes is refused, naming it") {
  auto m = make_model({100'000}, {1'000'000}, {});
  CHECK_THROWS_WITH_AS(opt::make_problem(m.g, 0, make_cluster("workers=8"), "model.json"),
                       doctest::Contains("model.json: iteration 0 has no gradients"), error);
}
