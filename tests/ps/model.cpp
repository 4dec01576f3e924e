// Tests ps::extract_steps on bundled real traces: the steps' shape, one worker reproducing the trace, overheads, sizes.
// SPDX-License-Identifier: MIT
#include <daydream/io/kineto.hpp>
#include <daydream/ps/config.hpp>
#include <daydream/ps/model.hpp>
#include <daydream/ps/simulate.hpp>
#include <daydream/ps/steps.hpp>
#include <daydream/ps/sweep.hpp>

#include <support/corpus.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace ps = daydream::ps;
using ps::op_resource;

namespace {

const daydream::io::kineto_trace& resnet50() {
  static const auto t = daydream::io::load_kineto(daydream::testing::bundled("resnet50_v100.json.gz").string());
  return t;
}

std::size_t count(const ps::step_template& s, op_resource r) {
  return std::size_t(std::count_if(s.ops.begin(), s.ops.end(), [&](auto& o) { return o.res == r; }));
}

double worker_time(const ps::step_template& s) {
  double d = 0;
  for (auto& o : s.ops)
    if (o.res == op_resource::worker) d += o.duration;
  return d;
}

} // namespace

TEST_CASE("ResNet-50 with model_bytes: one downlink, uplink and update per tensor, the computation a chain") {
  auto& t = resnet50();
  ps::model_options o;
  o.model_bytes = 102.2e6;
  const auto its = t.steady_state_iterations();
  auto m = ps::extract_steps(t.g, its, o);
  CHECK(m.source == daydream::passes::gradient_source::spread);
  REQUIRE(m.tensors.size() == 161);
  CHECK(m.bytes == doctest::Approx(102.2e6).epsilon(1e-5));
  REQUIRE(m.steps.size() == its.size());
  // Ranks are permutations.
  std::vector<std::uint32_t> use, made;
  for (auto& x : m.tensors) {
    use.push_back(x.use_rank);
    made.push_back(x.trace_rank);
  }
  std::sort(use.begin(), use.end());
  std::sort(made.begin(), made.end());
  std::vector<std::uint32_t> iota(161);
  std::iota(iota.begin(), iota.end(), 0u);
  CHECK(use == iota);
  CHECK(made == iota);
  // The parameters are used in the forward's order: the first layer first.
  CHECK(m.tensors[0].use_rank == 0);
  double sum = 0;
  for (auto& s : m.steps) {
    CAPTURE(s.iteration);
    CHECK(count(s, op_resource::downlink) == 161);
    CHECK(count(s, op_resource::uplink) == 161);
    CHECK(count(s, op_resource::server) == 161);
    CHECK_NOTHROW(ps::check_steps({s}, m.tensors.size()));
    sum += worker_time(s);
  }
  // The computation plus the optimizer's time is the replayed iteration.
  CHECK(sum / double(m.steps.size()) == doctest::Approx(m.compute_ns));
  // Each step lasts its iteration's steady-state step (a GPU-bound iteration whose CPU ran
  // ahead: the GPU's work, not the shorter replayed span); the trace step is the baseline
  // every command gives, the median of those steps.
  const auto r = daydream::replay(t.g);
  std::vector<daydream::time_ns> steps;
  double total = 0;
  for (auto& st : daydream::steady_steps(t.g, r, its)) {
    steps.push_back(st.step());
    total += double(st.step());
  }
  CHECK(m.compute_ns + m.update_ns == doctest::Approx(total / double(m.steps.size())));
  CHECK(m.trace_step_ns == double(daydream::median_of(steps)));
  CHECK(m.update_ns > 0);
  CHECK(m.update_ns < 0.1 * m.trace_step_ns);
}

TEST_CASE("one worker with a free network takes the trace's step: its computation, then the updates the servers run") {
  auto& t = resnet50();
  const auto its = t.steady_state_iterations();
  REQUIRE(!its.empty());
  ps::model_options o;
  o.model_bytes = 102.2e6;
  o.update_scale = 0;
  // One iteration: every sampled step is that one.
  auto m = ps::extract_steps(t.g, {its.front()}, o);
  REQUIRE(m.steps.size() == 1);
  ps::config c;
  c.bandwidth = 1e30;
  c.steps = 20;
  c.warmup = 2;
  c.server_of = ps::assign_servers(m.tensors, 1);
  auto r = ps::simulate_training(m.steps, m.tensors, c);
  CHECK(r.mean_step_ns == doctest::Approx(m.compute_ns).epsilon(1e-9));
  // With the updates: no less than the computation, no more than it plus every update in a row.
  o.update_scale = 1;
  auto u = ps::extract_steps(t.g, {its.front()}, o);
  auto ru = ps::simulate_training(u.steps, u.tensors, c);
  CHECK(ru.mean_step_ns >= u.compute_ns * (1 - 1e-9));
  CHECK(ru.mean_step_ns <= (u.compute_ns + u.update_ns) * (1 + 1e-9));
  CHECK(u.compute_ns + u.update_ns == doctest::Approx(u.trace_step_ns));
}

TEST_CASE("transfer overhead alpha x size + beta moves to the receiving computation") {
  auto& t = resnet50();
  const auto its = t.steady_state_iterations();
  ps::model_options o;
  o.model_bytes = 102.2e6;
  auto base = ps::extract_steps(t.g, {its.front()}, o);
  o.alpha = 1e-3; // 1 us per MB
  o.beta = 20'000;
  auto m = ps::extract_steps(t.g, {its.front()}, o);
  auto& s0 = base.steps[0];
  auto& s1 = m.steps[0];
  // One overhead operation per downlink, on the worker, between it and its consumer.
  CHECK(count(s1, op_resource::worker) == count(s0, op_resource::worker) + 161);
  double extra = 0, server0 = 0, server1 = 0;
  for (auto& op : s1.ops)
    if (op.res == op_resource::worker && op.after.size() == 1 && s1.ops[op.after[0]].res == op_resource::downlink) {
      CHECK(op.duration == doctest::Approx(1e-3 * s1.ops[op.after[0]].bytes + 20'000));
      extra += op.duration;
    }
  for (auto& op : s0.ops)
    if (op.res == op_resource::server) server0 += op.duration;
  for (auto& op : s1.ops)
    if (op.res == op_resource::server) server1 += op.duration;
  CHECK(extra == doctest::Approx(1e-3 * m.bytes + 161 * 20'000.0));
  CHECK(server1 - server0 == doctest::Approx(extra));
  CHECK_THROWS_AS(ps::extract_steps(t.g, {its.front()}, ps::model_options{{}, 1e6, -1, 0, 1}), daydream::usage_error);
}

TEST_CASE("a trace without gradient sizes and no model_bytes is an error that says what to give") {
  auto& t = resnet50();
  CHECK_THROWS_WITH_AS(ps::extract_steps(t.g, t.steady_state_iterations()), doctest::Contains("no gradient sizes"),
                       daydream::error);
  CHECK_THROWS_WITH_AS(ps::extract_steps(t.g, {}), doctest::Contains("no iteration"), daydream::error);
}

TEST_CASE("a data-parallel trace: recorded sizes are used and its all-reduces take no time") {
  auto t = daydream::io::load_kineto(daydream::testing::bundled("hta_recsys_v100_2rank/test.steps1009-1013.json.gz").string());
  auto m = ps::extract_steps(t.g, t.steady_state_iterations());
  CHECK(m.source == daydream::passes::gradient_source::trace);
  CHECK(m.collectives > 0);
  CHECK(m.tensors.size() > 100);
  bool noted = false;
  for (auto& n : m.notes) noted = noted || n.find("collective") != n.npos;
  CHECK(noted);
  // Two servers: greedy halves within the largest tensor.
  auto a = ps::assign_servers(m.tensors, 2);
  double b[2] = {0, 0}, largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    b[a[i]] += m.tensors[i].bytes;
    largest = std::max(largest, m.tensors[i].bytes);
  }
  CHECK(std::abs(b[0] - b[1]) <= largest);
}

TEST_CASE("the ResNet-50 sweep: link-bound throughput, a second server helps, faster links help, TicTac beats trace order") {
  auto& t = resnet50();
  ps::model_options o;
  o.model_bytes = 102.2e6;
  auto m = ps::extract_steps(t.g, t.steady_state_iterations(), o);
  ps::config c;
  c.steps = 120;
  c.warmup = 20;
  c.flow_control = false;
  c.order = ps::stream_order::tictac;
  auto s = ps::sweep(m, c, {1, 4, 8});
  // 10 Gbit/s: 102.2 MB each way per step caps one server at 1.25e9 / 102.2e6 = 12.2 steps/s.
  for (auto& p : s.points) CHECK(p.sim.steps_per_s <= 1.25e9 / 102.2e6 * (1 + 1e-6));
  CHECK(s.points[2].sim.steps_per_s > 0.95 * 1.25e9 / 102.2e6);
  auto two = c;
  two.servers = 2;
  auto s2 = ps::sweep(m, two, {8});
  CHECK(s2.points[0].sim.steps_per_s > 1.5 * s.points[2].sim.steps_per_s);
  auto fast = c;
  fast.bandwidth = 25e9 / 8;
  auto sf = ps::sweep(m, fast, {8});
  CHECK(sf.points[0].sim.steps_per_s > s.points[2].sim.steps_per_s);
  auto trace = c;
  trace.order = ps::stream_order::trace;
  auto st = ps::sweep(m, trace, {1});
  CHECK(s.points[0].sim.steps_per_s > st.points[0].sim.steps_per_s);
}

TEST_CASE("compute_scale multiplies the worker's computation and nothing else") {
  auto& t = resnet50();
  const auto its = t.steady_state_iterations();
  ps::model_options o;
  o.model_bytes = 102.2e6;
  auto a = ps::extract_steps(t.g, {its.front()}, o);
  o.compute_scale = 2;
  auto b = ps::extract_steps(t.g, {its.front()}, o);
  CHECK(b.compute_ns == doctest::Approx(2 * a.compute_ns));
  CHECK(b.update_ns == doctest::Approx(a.update_ns));
  CHECK(worker_time(b.steps[0]) == doctest::Approx(2 * worker_time(a.steps[0])));
  o.compute_scale = 0;
  CHECK_THROWS_AS(ps::extract_steps(t.g, {its.front()}, o), daydream::usage_error);
}
