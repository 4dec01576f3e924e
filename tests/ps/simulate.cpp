// Tests ps::simulate_training, ps::link_rates and the coarse models on hand-built steps with answers computed by hand.
// SPDX-License-Identifier: MIT
#include <daydream/ps/baselines.hpp>
#include <daydream/ps/config.hpp>
#include <daydream/ps/links.hpp>
#include <daydream/ps/simulate.hpp>
#include <daydream/ps/steps.hpp>
#include <daydream/ps/sweep.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace ps = daydream::ps;
using ps::op_resource;

namespace {

// A link of 1 byte per ns: a transfer of N bytes alone takes N ns.
constexpr double one_byte_per_ns = 1e9;

ps::step_op down(std::uint32_t tensor, double bytes, std::vector<std::uint32_t> after = {}) {
  return ps::step_op{op_resource::downlink, 0, bytes, tensor, std::move(after)};
}
ps::step_op up(std::uint32_t tensor, double bytes, std::vector<std::uint32_t> after = {}) {
  return ps::step_op{op_resource::uplink, 0, bytes, tensor, std::move(after)};
}
ps::step_op work(double ns, std::vector<std::uint32_t> after = {}) {
  return ps::step_op{op_resource::worker, ns, 0, 0, std::move(after)};
}
ps::step_op update(std::uint32_t tensor, double ns, std::vector<std::uint32_t> after = {}) {
  return ps::step_op{op_resource::server, ns, 0, tensor, std::move(after)};
}

std::vector<ps::tensor_info> tensors(std::vector<double> bytes) {
  std::vector<ps::tensor_info> out;
  for (std::uint32_t i = 0; i < bytes.size(); ++i) out.push_back({"t" + std::to_string(i), bytes[i], i, i});
  return out;
}

ps::config base(std::uint32_t workers, std::size_t ntensors) {
  ps::config c;
  c.workers = workers;
  c.bandwidth = one_byte_per_ns;
  c.steps = 20;
  c.warmup = 4;
  c.server_of.assign(ntensors, 0);
  return c;
}

// The chunks of one worker's first step on `res`, in start order.
std::vector<ps::timeline_entry> chunks(const ps::result& r, op_resource res) {
  std::vector<ps::timeline_entry> out;
  for (auto& e : r.timeline)
    if (e.worker == 0 && e.step == 0 && e.res == res) out.push_back(e);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
  return out;
}

} // namespace

TEST_CASE("one worker and one server: the step is the chain down -> compute -> up -> update") {
  // 1000 B down (1000 ns), 500 ns of computation, 2000 B up (2000 ns), 300 ns update.
  std::vector<ps::step_template> steps{{0, {down(0, 1000), work(500, {0}), up(0, 2000, {1}), update(0, 300, {2})}}};
  auto c = base(1, 1);
  auto r = ps::simulate_training(steps, tensors({1000}), c);
  CHECK(r.mean_step_ns == doctest::Approx(3800));
  CHECK(r.steps_per_s == doctest::Approx(1e9 / 3800));
  CHECK(r.window_begin == doctest::Approx(4 * 3800));
  CHECK(r.window_end == doctest::Approx(20 * 3800));
  CHECK(r.measured_steps == 16);
  // The downlink carries 1000 B per 3800 ns of a 1 B/ns link.
  CHECK(r.downlink_util[0] == doctest::Approx(1000.0 / 3800));
  CHECK(r.uplink_util[0] == doctest::Approx(2000.0 / 3800));
}

TEST_CASE("two workers share a server's link: each gets half while both send") {
  // Alone: 1000 ns down, 1000 ns compute, 1000 ns up = 3000 ns. Two workers in lockstep:
  // down together at 1/2 (2000 ns), compute (1000 ns), up together at 1/2 (2000 ns):
  // 5000 ns a step each, 2 steps per 5000 ns in all.
  std::vector<ps::step_template> steps{{0, {down(0, 1000), work(1000, {0}), up(0, 1000, {1})}}};
  auto one = ps::simulate_training(steps, tensors({1000}), base(1, 1));
  CHECK(one.mean_step_ns == doctest::Approx(3000));
  auto c = base(2, 1);
  c.timeline_steps = 1;
  auto two = ps::simulate_training(steps, tensors({1000}), c);
  CHECK(two.steps_per_s == doctest::Approx(2e9 / 5000));
  CHECK(two.mean_step_ns == doctest::Approx(5000));
  auto d = chunks(two, op_resource::downlink);
  REQUIRE(d.size() == 1);
  CHECK(d[0].end == doctest::Approx(2000));
  // The links are busy 4000 of every 5000 ns, at full rate.
  CHECK(two.downlink_util[0] == doctest::Approx(0.4));
}

TEST_CASE("two workers with a link twice as slow as computation: 1/n sharing staggers them") {
  // 2000 B down (2000 ns alone) then 1000 ns of computation. Alone: 3000 ns a step.
  // Two workers start together: both downlinks at 1/2 end at 4000; both compute to 5000;
  // then again: the pattern repeats every 5000 ns, so 2 steps per 5000 ns.
  std::vector<ps::step_template> steps{{0, {down(0, 2000), work(1000, {0})}}};
  auto one = ps::simulate_training(steps, tensors({2000}), base(1, 1));
  CHECK(one.steps_per_s == doctest::Approx(1e9 / 3000));
  auto two = ps::simulate_training(steps, tensors({2000}), base(2, 1));
  CHECK(two.steps_per_s == doctest::Approx(2e9 / 5000));
  // Four workers: 4 x 2000 B over one link = 8000 ns, then 1000 ns: 4 steps / 9000 ns.
  auto four = ps::simulate_training(steps, tensors({2000}), base(4, 1));
  CHECK(four.steps_per_s == doctest::Approx(4e9 / 9000));
}

TEST_CASE("HTTP/2 flow control: a stream larger than the window is pre-empted once and finished on its second service") {
  // Window 1000 B; streams A 2500 B, B 500 B, C 3000 B queued together in that order.
  // A sends 1000 (0-1000), B all 500 (1000-1500), C 1000 (1500-2500), A the rest 1500
  // (2500-4000), C the rest 2000 (4000-6000).
  std::vector<ps::step_template> steps{{0, {down(0, 2500), down(1, 500), down(2, 3000)}}};
  auto c = base(1, 3);
  c.window = 1000;
  c.timeline_steps = 1;
  auto r = ps::simulate_training(steps, tensors({2500, 500, 3000}), c);
  auto d = chunks(r, op_resource::downlink);
  REQUIRE(d.size() == 5);
  const std::uint32_t tensor[] = {0, 1, 2, 0, 2};
  const double start[] = {0, 1000, 1500, 2500, 4000}, end[] = {1000, 1500, 2500, 4000, 6000};
  for (std::size_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    CHECK(d[k].tensor == tensor[k]);
    CHECK(d[k].start == doctest::Approx(start[k]));
    CHECK(d[k].end == doctest::Approx(end[k]));
  }
  CHECK(r.mean_step_ns == doctest::Approx(6000));
  SUBCASE("without flow control, whole streams in the trace order") {
    c.flow_control = false;
    auto w = ps::simulate_training(steps, tensors({2500, 500, 3000}), c);
    auto e = chunks(w, op_resource::downlink);
    REQUIRE(e.size() == 3);
    CHECK(e[0].tensor == 0);
    CHECK(e[0].end == doctest::Approx(2500));
    CHECK(e[1].tensor == 1);
    CHECK(e[1].end == doctest::Approx(3000));
    CHECK(e[2].tensor == 2);
    CHECK(e[2].end == doctest::Approx(6000));
  }
  SUBCASE("a window of 0 is refused with flow control on") {
    c.window = 0;
    CHECK_THROWS_AS(ps::simulate_training(steps, tensors({2500, 500, 3000}), c), daydream::usage_error);
  }
}

TEST_CASE("flow control off: the TicTac order beats the trace order when the trace produced the first-used tensor last") {
  // Tensor 0 is used first but produced last (trace rank 1). Computation: 100 ns after
  // tensor 0 arrives, then 100 ns more once tensor 1 has arrived too.
  // Trace order: 1 (0-1000), 0 (1000-2000), compute 2000-2200: 2200 ns.
  // TicTac: 0 (0-1000), compute 1000-1100, 1 (1000-2000), compute 2000-2100: 2100 ns.
  std::vector<ps::step_template> steps{{0, {down(0, 1000), down(1, 1000), work(100, {0}), work(100, {2, 1})}}};
  std::vector<ps::tensor_info> ts{{"first", 1000, 1, 0}, {"second", 1000, 0, 1}};
  auto c = base(1, 2);
  c.flow_control = false;
  c.order = ps::stream_order::trace;
  auto trace = ps::simulate_training(steps, ts, c);
  c.order = ps::stream_order::tictac;
  auto tictac = ps::simulate_training(steps, ts, c);
  c.order = ps::stream_order::reverse;
  auto reverse = ps::simulate_training(steps, ts, c);
  CHECK(trace.mean_step_ns == doctest::Approx(2200));
  CHECK(tictac.mean_step_ns == doctest::Approx(2100));
  CHECK(reverse.mean_step_ns == doctest::Approx(2100));
  CHECK(tictac.steps_per_s > trace.steps_per_s);
}

TEST_CASE("two servers: a worker alone on server 1 but sharing server 2 with n-1 others gets 1/n and 1 - 1/n") {
  // Li et al., Section 5, with n = 3: worker 0 talks to both servers, workers 1 and 2 to server 1 only.
  const std::vector<ps::connection> active{{0, 0, true}, {0, 1, true}, {1, 1, true}, {2, 1, true}};
  auto r = ps::link_rates(3, 2, 1e9, ps::bandwidth_sharing::max_min, active);
  REQUIRE(r.size() == 4);
  CHECK(r[0] == doctest::Approx(2e9 / 3));
  CHECK(r[1] == doctest::Approx(1e9 / 3));
  CHECK(r[2] == doctest::Approx(1e9 / 3));
  CHECK(r[3] == doctest::Approx(1e9 / 3));
  // The single-server rule alone (Section 3.1) ignores the worker's own link.
  auto s = ps::link_rates(3, 2, 1e9, ps::bandwidth_sharing::server_links, active);
  CHECK(s[0] == doctest::Approx(1e9));
  CHECK(s[1] == doctest::Approx(1e9 / 3));
  // Uplinks and downlinks do not share.
  auto u = ps::link_rates(2, 1, 1e9, ps::bandwidth_sharing::max_min, {{0, 0, true}, {1, 0, false}});
  CHECK(u[0] == doctest::Approx(1e9));
  CHECK(u[1] == doctest::Approx(1e9));
  CHECK_THROWS_AS(ps::link_rates(2, 1, 1e9, ps::bandwidth_sharing::max_min, {{0, 0, true}, {0, 0, true}}), daydream::usage_error);
}

TEST_CASE("servers are assigned greedily to the one holding the fewest bytes, or as pinned") {
  auto ts = tensors({400, 100, 100, 100, 50});
  CHECK(ps::assign_servers(ts, 2) == std::vector<std::uint32_t>{0, 1, 1, 1, 1});
  CHECK(ps::assign_servers(ts, 3) == std::vector<std::uint32_t>{0, 1, 2, 1, 2});
  const std::uint32_t any = 99;
  CHECK(ps::assign_servers(ts, 2, {1, any, any, any, any}) == std::vector<std::uint32_t>{1, 0, 0, 0, 0});
  CHECK_THROWS_AS(ps::assign_servers(ts, 0), daydream::usage_error);
}

TEST_CASE("the coarse models: Cynthia's formula and the three-phase queueing model by hand") {
  // T_P = 3000 ns, one server of 1000 B at 1 B/ns: T_C = 1000 ns, U_1 = 2000/5000 = 0.4.
  ps::coarse_step s{3000, 0, {1000}, one_byte_per_ns};
  CHECK(ps::cynthia_steps_per_s(s, 1) == doctest::Approx(1e9 / 5000));
  CHECK(ps::cynthia_steps_per_s(s, 2) == doctest::Approx(2e9 / 5000));
  // W = 4: W U_1 = 1.6, 4 / (3000 x 1.6 + 2000) = 4 / 6800 ns.
  CHECK(ps::cynthia_steps_per_s(s, 4) == doctest::Approx(4e9 / 6800));
  // MVA: one customer: 1 / (1000 + 3000 + 1000). Two: queues hold 0.2 each, so
  // R = 3000 + 2 x 1000 x 1.2 = 5400, X = 2 / 5400.
  CHECK(ps::queueing_steps_per_s(s, 1) == doctest::Approx(1e9 / 5000));
  CHECK(ps::queueing_steps_per_s(s, 2) == doctest::Approx(2e9 / 5400));
  // Saturation: never above the link's 1 step per 1000 ns.
  CHECK(ps::queueing_steps_per_s(s, 64) <= 1e9 / 1000 * (1 + 1e-12));
  CHECK(ps::queueing_steps_per_s(s, 64) > 0.95e9 / 1000); // two equal bottlenecks approach it slowly
  CHECK_THROWS_AS(ps::cynthia_steps_per_s(s, 0), daydream::usage_error);
}

TEST_CASE("bad configurations are usage errors naming the problem") {
  std::vector<ps::step_template> steps{{0, {down(0, 1000), work(10, {0})}}};
  auto ts = tensors({1000});
  auto c = base(1, 1);
  c.workers = 0;
  CHECK_THROWS_WITH_AS(ps::simulate_training(steps, ts, c), doctest::Contains("workers must be at least 1"), daydream::usage_error);
  c = base(1, 1);
  c.bandwidth = 0;
  CHECK_THROWS_WITH_AS(ps::simulate_training(steps, ts, c), doctest::Contains("bandwidth"), daydream::usage_error);
  c = base(1, 1);
  c.steps = c.warmup;
  CHECK_THROWS_AS(ps::simulate_training(steps, ts, c), daydream::usage_error);
  c = base(1, 1);
  c.server_of = {1};
  CHECK_THROWS_WITH_AS(ps::simulate_training(steps, ts, c), doctest::Contains("tensor 0 is on server 1"), daydream::usage_error);
  c = base(1, 1);
  std::vector<ps::step_template> cyc{{0, {work(1, {1}), work(1, {0})}}};
  CHECK_THROWS_WITH_AS(ps::simulate_training(cyc, ts, c), doctest::Contains("cycle"), daydream::error);
  std::vector<ps::step_template> bad{{0, {work(1, {7})}}};
  CHECK_THROWS_WITH_AS(ps::simulate_training(bad, ts, c), doctest::Contains("operation 0: depends on operation 7"), daydream::error);
  CHECK_THROWS_AS(ps::simulate_training({}, ts, c), daydream::error);
}

namespace {
// A random step shaped like extract_steps makes: downlinks at the start, a chain of
// computation cut at use and ready points, uplinks after it, updates after those.
ps::step_template random_step(std::mt19937_64& rng, std::uint32_t n) {
  std::uniform_real_distribution<double> dur(10, 2000), bytes(1, 5000);
  ps::step_template st;
  const std::uint32_t segs = n + 1;
  for (std::uint32_t k = 0; k < segs; ++k) st.ops.push_back(work(dur(rng), k ? std::vector<std::uint32_t>{k - 1} : std::vector<std::uint32_t>{}));
  for (std::uint32_t t = 0; t < n; ++t) {
    auto d = static_cast<std::uint32_t>(st.ops.size());
    st.ops.push_back(down(t, bytes(rng)));
    st.ops[std::uniform_int_distribution<std::uint32_t>(0, segs - 1)(rng)].after.push_back(d);
    auto u = static_cast<std::uint32_t>(st.ops.size());
    st.ops.push_back(up(t, bytes(rng), {std::uniform_int_distribution<std::uint32_t>(0, segs - 1)(rng)}));
    st.ops.push_back(update(t, dur(rng) / 10, {u}));
  }
  return st;
}
// The critical path of a step with free transfers.
double compute_path(const ps::step_template& st) {
  std::vector<double> end(st.ops.size(), -1);
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t i = 0; i < st.ops.size(); ++i) {
      if (end[i] >= 0) continue;
      double s = 0;
      bool ok = true;
      for (auto a : st.ops[i].after) {
        if (end[a] < 0) ok = false;
        else s = std::max(s, end[a]);
      }
      if (ok) { end[i] = s + st.ops[i].duration; changed = true; }
    }
  }
  return *std::max_element(end.begin(), end.end());
}
} // namespace

TEST_CASE("properties on random small models: bounds, determinism, more bandwidth never hurts one worker") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    CAPTURE(trial);
    const std::uint32_t n = 1 + trial % 5;
    std::vector<ps::step_template> steps;
    for (int k = 0; k < 1 + trial % 3; ++k) steps.push_back(random_step(rng, n));
    std::vector<double> sizes(n, 1000);
    auto ts = tensors(sizes);
    for (std::uint32_t t = 0; t < n; ++t) ts[t].use_rank = n - 1 - t;
    const std::uint32_t M = 1 + trial % 2;
    auto c = base(1 + trial % 4, n);
    c.servers = M;
    c.server_of = ps::assign_servers(ts, M);
    c.flow_control = trial % 2 == 0;
    c.window = 700;
    c.order = static_cast<ps::stream_order>(trial % 4);
    c.share = trial % 3 ? ps::bandwidth_sharing::max_min : ps::bandwidth_sharing::server_links;
    auto r = ps::simulate_training(steps, ts, c);
    auto again = ps::simulate_training(steps, ts, c);
    CHECK(r.steps_per_s == again.steps_per_s);
    CHECK(r.events == again.events);
    REQUIRE(r.steps_per_s > 0);
    // No step is shorter than its computation's critical path.
    double fastest = 1e300;
    for (auto& s : steps) fastest = std::min(fastest, compute_path(s));
    CHECK(r.steps_per_s <= double(c.workers) * 1e9 / fastest * (1 + 1e-9));
    // No link carries more than its capacity.
    for (std::uint32_t s = 0; s < M; ++s) {
      CHECK(r.downlink_util[s] <= 1.0);
      CHECK(r.uplink_util[s] <= 1.0);
    }
    // One worker: more bandwidth never makes a step longer (every operation's start is
    // a max of sums of durations that only shrink, when each link carries one stream
    // at a time in an order that does not depend on time).
    if (c.workers == 1 && !c.flow_control) {
      double last = 0;
      for (double bw : {0.25e9, 0.5e9, 1e9, 2e9, 8e9}) {
        auto cc = c;
        cc.bandwidth = bw;
        auto x = ps::simulate_training(steps, ts, cc);
        CHECK(x.steps_per_s >= last * (1 - 1e-9));
        last = x.steps_per_s;
      }
    }
  }
}

TEST_CASE("a fixed seed gives the same sampled steps; another seed may not") {
  std::vector<ps::step_template> steps{{0, {down(0, 1000), work(500, {0})}}, {1, {down(0, 1000), work(5000, {0})}}};
  auto ts = tensors({1000});
  auto c = base(3, 1);
  c.steps = 200;
  c.warmup = 10;
  auto a = ps::simulate_training(steps, ts, c);
  auto b = ps::simulate_training(steps, ts, c);
  CHECK(a.steps_per_s == b.steps_per_s);
  CHECK(a.window_end == b.window_end);
  c.seed = 2;
  auto d = ps::simulate_training(steps, ts, c);
  CHECK(d.window_end != a.window_end);
  // Sampling with replacement from two steps: about half of each, so the mean step lies
  // between the two steps' lengths, away from both.
  CHECK(a.mean_step_ns > 1500 * 1.2);
  CHECK(a.mean_step_ns < 6000 * 0.9);
}

TEST_CASE("a sweep finds the saturation point where one more worker gains less than 5%") {
  // 1000 B down (1000 ns alone), then 1000 ns of computation. Workers that start together
  // stay in lockstep under 1/n sharing: W downlinks end together at 1000 W, then all
  // compute, so W steps take 1000 W + 1000 ns: 0.5, 0.667, 0.75, 0.8, 0.833 steps per us
  // for W = 1..5; 4 -> 5 gains 4.2%, the first gain under 5%.
  std::vector<ps::step_template> steps{{0, {down(0, 1000), work(1000, {0})}}};
  ps::model m;
  m.steps = steps;
  m.tensors = tensors({1000});
  m.compute_ns = 1000;
  auto c = base(1, 1);
  auto s = ps::sweep(m, c, {1, 2, 3, 4, 5, 6});
  REQUIRE(s.points.size() == 6);
  for (std::uint32_t w = 1; w <= 6; ++w) {
    CAPTURE(w);
    CHECK(s.points[w - 1].sim.steps_per_s == doctest::Approx(double(w) * 1e9 / (1000.0 * w + 1000)));
  }
  REQUIRE(s.saturation.has_value());
  CHECK(*s.saturation == 4);
  // Cynthia: T_P = 1000, T_C = 1000, U_1 = 2/3: one worker 1 / 3000 ns.
  CHECK(s.points[0].cynthia == doctest::Approx(1e9 / 3000));
  CHECK(s.server_bytes == std::vector<double>{1000});
}

TEST_CASE("the fair-share links agree with the max-min network where both apply") {
  // Every tensor on server 0 of 2: max_min runs on the network (two servers), and as every
  // worker has one transfer per direction its own link never binds, so the rates are the
  // 1/n of server_links, which runs on the virtual-clock links.
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 12; ++trial) {
    CAPTURE(trial);
    const std::uint32_t n = 1 + trial % 4;
    std::vector<ps::step_template> steps{random_step(rng, n), random_step(rng, n)};
    auto ts = tensors(std::vector<double>(n, 1000));
    auto c = base(1 + trial % 5, n);
    c.servers = 2;
    c.server_of.assign(n, 0);
    c.flow_control = trial % 2 == 0;
    c.window = 600;
    c.share = ps::bandwidth_sharing::max_min;
    auto a = ps::simulate_training(steps, ts, c);
    c.share = ps::bandwidth_sharing::server_links;
    auto b = ps::simulate_training(steps, ts, c);
    CHECK(a.steps_per_s == doctest::Approx(b.steps_per_s).epsilon(1e-9));
    CHECK(a.measured_steps == b.measured_steps);
    CHECK(a.events == b.events);
    CHECK(a.downlink_util[0] == doctest::Approx(b.downlink_util[0]).epsilon(1e-9));
    CHECK(a.uplink_util[0] == doctest::Approx(b.uplink_util[0]).epsilon(1e-9));
  }
}
