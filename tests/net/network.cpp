// Tests of the flow-level network model: max-min fair rates, incremental events, latency, caps, statistics.
// SPDX-License-Identifier: MIT
#include <daydream/net/network.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace daydream;

namespace {

using done_list = std::vector<network::completion>;

// Runs the network until nothing is left; returns the end time of every flow by id.
std::vector<double> run_out(network& net, std::size_t flows) {
  std::vector<double> end(flows, -1);
  done_list done;
  while (net.active() > 0) {
    const double t = net.next_event();
    REQUIRE(std::isfinite(t));
    done.clear();
    net.advance_to(t, done);
    for (auto& c : done) end[c.flow] = c.time;
  }
  return end;
}

} // namespace

TEST_CASE("two equal flows on one link both end at 2S/B") {
  network net;
  const auto l = net.add_link(4.0); // 4 bytes per ns
  const link_id path[] = {l};
  auto a = net.start(path, 1000);
  auto b = net.start(path, 1000);
  CHECK(net.next_event() == 0); // both begin sending at once (no latency)
  done_list done;
  net.advance_to(0, done);
  CHECK(done.empty());
  CHECK(net.rate(a) == 2.0);
  CHECK(net.rate(b) == 2.0);
  CHECK(net.next_event() == 500.0); // 2 x 1000 / 4
  net.advance_to(500, done);
  REQUIRE(done.size() == 2);
  CHECK(done[0].flow == a);
  CHECK(done[1].flow == b);
  CHECK(done[0].time == 500.0);
  CHECK(done[1].time == 500.0);
  CHECK(net.busy(l) == 500.0);
  CHECK(net.carried(l) == 2000.0);
  CHECK(net.active() == 0);
}

TEST_CASE("max-min fairness: the bottleneck link decides, the rest goes to the others") {
  // Link 0 (1 B/ns) carries A and B; link 1 (2 B/ns) carries A and C. A and B get 1/2
  // on link 0; C gets what A leaves of link 1: 1.5.
  network net;
  const auto l0 = net.add_link(1), l1 = net.add_link(2);
  const link_id pa[] = {l0, l1}, pb[] = {l0}, pc[] = {l1};
  auto a = net.start(pa, 100), b = net.start(pb, 100), c = net.start(pc, 300);
  done_list done;
  net.advance_to(0, done);
  CHECK(net.rate(a) == 0.5);
  CHECK(net.rate(b) == 0.5);
  CHECK(net.rate(c) == 1.5);
  // A and B end at 200. C has sent 300 by then: it ends at 200 too.
  auto end = run_out(net, 3);
  CHECK(end[a] == 200.0);
  CHECK(end[b] == 200.0);
  CHECK(end[c] == 200.0);
}

TEST_CASE("a parking-lot: a long flow over three links and one short flow on each") {
  // Three links of 3 B/ns; the long flow L crosses all, S0, S1, S2 one each: everyone
  // gets 1.5. Then S0 is small (150 bytes): at 100 it ends; L is still held to 1.5 by
  // links 1 and 2, so S0's link goes idle for the rest: L's rate stays 1.5.
  network net;
  link_id l[3];
  for (auto& x : l) x = net.add_link(3);
  const link_id pl[] = {l[0], l[1], l[2]}, p0[] = {l[0]}, p1[] = {l[1]}, p2[] = {l[2]};
  auto fl = net.start(pl, 600), s0 = net.start(p0, 150), s1 = net.start(p1, 600), s2 = net.start(p2, 600);
  done_list done;
  net.advance_to(0, done);
  for (auto f : {fl, s0, s1, s2}) CHECK(net.rate(f) == 1.5);
  net.advance_to(net.next_event(), done);
  REQUIRE(done.size() == 1);
  CHECK(done[0].flow == s0);
  CHECK(done[0].time == 100.0);
  CHECK(net.rate(fl) == 1.5);
  CHECK(net.remaining(fl) == 450.0);
  auto end = run_out(net, 4);
  CHECK(end[fl] == 400.0);
  CHECK(end[s1] == 400.0);
  CHECK(end[s2] == 400.0);
  CHECK(net.busy(l[0]) == 400.0);
  CHECK(net.carried(l[0]) == 750.0);
}

TEST_CASE("a flow that starts later takes its share from then on") {
  // A: 100 bytes at 0 on 1 B/ns. B: 100 bytes at 50. A has 50 left, at 1/2: ends at 150;
  // B has sent 50 by then and sends the other 50 alone: ends at 200.
  network net;
  const auto l = net.add_link(1);
  const link_id path[] = {l};
  auto a = net.start(path, 100);
  done_list done;
  net.advance_to(50, done);
  CHECK(done.empty());
  CHECK(net.remaining(a) == 50.0);
  auto b = net.start(path, 100);
  net.advance_to(50, done); // B begins sending (no latency)
  CHECK(net.rate(a) == 0.5);
  net.advance_to(net.next_event(), done);
  REQUIRE(done.size() == 1);
  CHECK(done[0].flow == a);
  CHECK(done[0].time == 150.0);
  CHECK(net.remaining(b) == 50.0);
  CHECK(net.rate(b) == 1.0);
  done.clear();
  net.advance_to(net.next_event(), done);
  REQUIRE(done.size() == 1);
  CHECK(done[0].time == 200.0);
  CHECK(net.busy(l) == 200.0);
  CHECK(net.carried(l) == 200.0);
}

TEST_CASE("a capped flow leaves the rest of the link to the others") {
  network net;
  const auto l = net.add_link(1);
  const link_id path[] = {l};
  auto slow = net.start(path, 100, 0, 0.25);
  auto fast = net.start(path, 300);
  done_list done;
  net.advance_to(0, done);
  CHECK(net.rate(slow) == 0.25);
  CHECK(net.rate(fast) == 0.75);
  auto end = run_out(net, 2);
  CHECK(end[slow] == 400.0);
  CHECK(end[fast] == 400.0);
  // A cap above the fair share changes nothing.
  network n2;
  const auto l2 = n2.add_link(1);
  const link_id p2[] = {l2};
  auto x = n2.start(p2, 100, 0, 0.9), y = n2.start(p2, 100);
  n2.advance_to(0, done);
  CHECK(n2.rate(x) == 0.5);
  CHECK(n2.rate(y) == 0.5);
  // A flow with no link runs at its cap.
  network n3;
  auto z = n3.start({}, 100, 0, 2);
  CHECK(run_out(n3, 1)[z] == 50.0);
}

TEST_CASE("latency: a flow waits for its links' latencies before it takes bandwidth") {
  // Links of 10 and 5 ns latency; A (100 bytes, 1 B/ns) begins sending at 15 and B, on
  // the first link only with 20 ns of its own, at 30: A alone 15..30, then both at 1/2.
  network net;
  const auto l0 = net.add_link(1, 10), l1 = net.add_link(1, 5);
  const link_id pa[] = {l0, l1}, pb[] = {l0};
  auto a = net.start(pa, 100);
  auto b = net.start(pb, 100, 20);
  done_list done;
  net.advance_to(20, done);
  CHECK(net.rate(a) == 1.0);
  CHECK(net.rate(b) == 0.0);
  auto end = run_out(net, 2);
  // A: 15 sent alone by 30, 85 left at 1/2 -> 200. B: 85 by 200, 15 alone -> 215.
  CHECK(end[a] == 200.0);
  CHECK(end[b] == 215.0);
  CHECK(net.busy(l0) == 200.0);  // 15 .. 215
  CHECK(net.busy(l1) == 185.0);  // 15 .. 200
  // A flow of zero bytes ends when its latency is over.
  network n2;
  const auto m = n2.add_link(1, 7);
  const link_id pm[] = {m};
  auto z = n2.start(pm, 0);
  CHECK(run_out(n2, 1)[z] == 7.0);
  CHECK(n2.busy(m) == 0.0);
}

TEST_CASE("flows ending together are reported in id order; ids are reused after") {
  network net;
  const auto l = net.add_link(1);
  const link_id path[] = {l};
  std::vector<flow_id> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(net.start(path, 10));
  done_list done;
  net.advance_to(net.next_event(), done); // begin
  net.advance_to(net.next_event(), done);
  REQUIRE(done.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(done[i].flow == ids[i]);
    CHECK(done[i].time == 50.0);
  }
  auto again = net.start(path, 10);
  CHECK(std::find(ids.begin(), ids.end(), again) != ids.end());
  CHECK(net.active() == 1);
}

TEST_CASE("tolerance: events within it after the target time are handled at the target") {
  network net;
  const auto l = net.add_link(3);
  const link_id path[] = {l};
  auto f = net.start(path, 10); // ends at 3.333...
  done_list done;
  net.advance_to(0, done);
  net.advance_to(3, done, 0.5);
  REQUIRE(done.size() == 1);
  CHECK(done[0].flow == f);
  CHECK(done[0].time == 3.0);
  CHECK(net.carried(l) == 10.0);
  CHECK(net.time() == 3.0);
}

TEST_CASE("bad input is refused with a clear error") {
  network net;
  CHECK_THROWS_WITH_AS(net.add_link(0), doctest::Contains("capacity must be positive"), error);
  CHECK_THROWS_AS(net.add_link(std::numeric_limits<double>::infinity()), error);
  CHECK_THROWS_AS(net.add_link(1, -1), error);
  const auto l = net.add_link(1);
  const link_id twice[] = {l, l}, missing[] = {7};
  CHECK_THROWS_WITH_AS(net.start(twice, 1), doctest::Contains("appears twice"), error);
  CHECK_THROWS_WITH_AS(net.start(missing, 1), doctest::Contains("link 7 does not exist"), error);
  const link_id ok[] = {l};
  CHECK_THROWS_AS(net.start(ok, -1), error);
  CHECK_THROWS_AS(net.start(ok, 1, -1), error);
  CHECK_THROWS_AS(net.start(ok, 1, 0, 0), error);
  done_list done;
  net.advance_to(10, done);
  CHECK_THROWS_WITH_AS(net.advance_to(5, done), doctest::Contains("before the current time"), error);
  CHECK_THROWS_AS(net.rate(3), error);
}

namespace {

// The reference: at every event, the max-min fair rates of all sending flows computed
// from scratch by the textbook progressive filling (raise every unfrozen flow's rate
// until a link or a cap is full), then time moves to the next start or end.
struct ref_flow {
  double at, bytes, cap;
  std::vector<link_id> path;
};
std::vector<double> reference_run(const std::vector<double>& cap, const std::vector<ref_flow>& fl) {
  const std::size_t n = fl.size();
  std::vector<double> left(n), end(n, -1);
  std::vector<bool> on(n, false);
  for (std::size_t i = 0; i < n; ++i) left[i] = fl[i].bytes;
  double now = 0;
  std::size_t finished = 0;
  while (finished < n) {
    std::vector<double> rate(n, 0);
    std::vector<bool> frozen(n, true);
    for (std::size_t i = 0; i < n; ++i) frozen[i] = !on[i];
    std::vector<double> room = cap;
    for (;;) {
      double inc = std::numeric_limits<double>::infinity();
      for (std::size_t l = 0; l < cap.size(); ++l) {
        int k = 0;
        for (std::size_t i = 0; i < n; ++i)
          if (!frozen[i] && std::count(fl[i].path.begin(), fl[i].path.end(), l)) ++k;
        if (k) inc = std::min(inc, room[l] / k);
      }
      for (std::size_t i = 0; i < n; ++i)
        if (!frozen[i]) inc = std::min(inc, fl[i].cap - rate[i]);
      if (!std::isfinite(inc)) break;
      for (std::size_t i = 0; i < n; ++i)
        if (!frozen[i]) {
          rate[i] += inc;
          for (auto l : fl[i].path) room[l] -= inc;
        }
      bool any = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (frozen[i]) continue;
        bool full = rate[i] >= fl[i].cap - 1e-12;
        for (auto l : fl[i].path) full = full || room[l] <= 1e-12 * cap[l];
        if (full) frozen[i] = true;
        any = any || !frozen[i];
      }
      if (!any) break;
    }
    double next = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      if (end[i] >= 0) continue;
      if (!on[i]) next = std::min(next, fl[i].at);
      else next = std::min(next, now + left[i] / rate[i]);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (on[i]) left[i] -= rate[i] * (next - now);
    now = next;
    for (std::size_t i = 0; i < n; ++i) {
      if (end[i] >= 0) continue;
      if (on[i] && left[i] <= 1e-6 * fl[i].bytes) {
        end[i] = now;
        on[i] = false;
        ++finished;
      } else if (!on[i] && fl[i].at <= now) {
        on[i] = true;
      }
    }
  }
  return end;
}

} // namespace

TEST_CASE("property: the incremental network equals max-min fairness recomputed from scratch") {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    const int nl = 1 + int(rng() % 5);
    const int nf = 1 + int(rng() % 12);
    std::vector<double> cap(nl);
    network net;
    for (int l = 0; l < nl; ++l) cap[l] = net.capacity(net.add_link(double(1 + rng() % 8)));
    std::vector<ref_flow> fl(nf);
    for (auto& f : fl) {
      f.at = double(rng() % 200);
      f.bytes = double(1 + rng() % 500);
      f.cap = rng() % 4 == 0 ? double(1 + rng() % 3) * 0.5 : std::numeric_limits<double>::infinity();
      for (int l = 0; l < nl; ++l)
        if (rng() % 2) f.path.push_back(link_id(l));
      if (f.path.empty()) f.path.push_back(link_id(rng() % nl));
    }
    const auto want = reference_run(cap, fl);
    // Drive the incremental one: starts at their times, ends as they come.
    std::vector<std::size_t> order(nf);
    for (int i = 0; i < nf; ++i) order[i] = std::size_t(i);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return fl[a].at < fl[b].at; });
    std::vector<double> got(nf, -1);
    std::vector<std::size_t> who; // flow id -> index
    done_list done;
    std::size_t next = 0;
    auto record = [&] {
      for (auto& c : done) got[who[c.flow]] = c.time;
      done.clear();
    };
    while (next < order.size() || net.active() > 0) {
      const double te = net.next_event();
      if (next < order.size() && fl[order[next]].at <= te) {
        net.advance_to(fl[order[next]].at, done);
        record();
        const auto& f = fl[order[next]];
        auto id = net.start(f.path, f.bytes, 0, f.cap);
        if (who.size() <= id) who.resize(id + 1);
        who[id] = order[next++];
      } else {
        net.advance_to(te, done);
        record();
      }
    }
    for (int i = 0; i < nf; ++i) {
      CAPTURE(trial);
      CAPTURE(i);
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-9));
    }
  }
}
