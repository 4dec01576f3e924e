// Tests of passes: the pass_for concept, pass_traits, composition with |, policy pickup, transactional apply and the pass laws.
// SPDX-License-Identifier: MIT
#include <daydream/dependency.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/remove.hpp>
#include <daydream/replay.hpp>
#include <daydream/report.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/validate.hpp>
#include <support/compare.hpp>
#include <support/fixtures.hpp>
#include <support/pass_laws.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>
#include <range/v3/iterator/operations.hpp>
#include <range/v3/range/primitives.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

using namespace daydream;

namespace {

struct scale_gemms {
  static constexpr std::string_view name = "scale-gemms";
  double factor = 0.5;
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g) | where(name_matches("gemm"))) scale_duration(g, k, factor);
  }
};

// Backward communication first, as P3 does.
struct comm_first {
  static constexpr std::string_view name = "comm-first";
  using policy = priority_policy;
  void operator()(graph& g) const {
    for (auto t : tasks<comm_task>(g)) reschedule(g, t, as_soon_as_ready);
  }
};

struct plain {
  void operator()(graph&) const {}
};

// A pass from a library we cannot edit: it gets its traits from a specialization.
struct their_pass {
  void operator()(graph&) const {}
};

struct logger {
  static constexpr std::string_view name = "logger";
  std::vector<std::string>* log;
  std::string tag;
  void operator()(graph&) const { log->push_back(tag); }
};

struct reporting {
  static constexpr std::string_view name = "reporting";
  pass_report operator()(graph& g) const {
    pass_report r;
    r.pass = "reporting";
    r.add("tasks", std::to_string(g.size()));
    return r;
  }
};

struct thrower {
  static constexpr std::string_view name = "thrower";
  void operator()(graph& g) const {
    for (auto t : tasks(g)) set_duration(g, t, 12345); // changes first...
    if (!g.empty()) remove(g, task_id{0});
    throw std::runtime_error("out of ideas"); // ...then fails
  }
};

struct cycle_maker {
  static constexpr std::string_view name = "cycle-maker";
  void operator()(graph& g) const {
    std::vector<task_id> ids;
    for (auto t : tasks<gpu_kernel>(g)) ids.push_back(t.id);
    if (ids.size() >= 2) g.add_dependency(ids.back(), ids.front(), dep_kind::control);
  }
};

struct non_std_thrower {
  using is_daydream_pass = void;
  void operator()(graph& g) const {
    g.add(cpu_task{}, {.name = "half done"});
    throw 42;
  }
};

// Refuses any graph with communication: it models a single-GPU-only optimization.
struct single_gpu_only {
  static constexpr std::string_view name = "single-gpu-only";
  void operator()(graph& g) const {
    if (!ranges::empty(tasks<comm_task>(g))) throw error("single-gpu-only: the graph communicates");
    for (auto k : tasks<gpu_kernel>(g)) scale_duration(g, k, 0.9);
  }
};

} // namespace

template <> struct daydream::pass_traits<their_pass> {
  static constexpr std::string_view name = "their-pass";
  using policy = priority_policy;
};

static_assert(pass_for<scale_gemms, graph> && pass_for<comm_first, graph> && pass_for<plain, graph>);
static_assert(pass_traits<scale_gemms>::name == "scale-gemms");
static_assert(pass_traits<plain>::name == "unnamed-pass");
static_assert(pass_traits<their_pass>::name == "their-pass");
static_assert(std::is_same_v<pass_policy_t<plain>, trace_order_policy>);
static_assert(std::is_same_v<pass_policy_t<comm_first>, priority_policy>);
static_assert(std::is_same_v<pass_policy_t<their_pass>, priority_policy>);
// A pipeline brings the second pass's policy, or the first's when the second brings none.
static_assert(std::is_same_v<pass_policy_t<decltype(scale_gemms{} | comm_first{})>, priority_policy>);
static_assert(std::is_same_v<pass_policy_t<decltype(comm_first{} | scale_gemms{})>, priority_policy>);
static_assert(std::is_same_v<pass_policy_t<decltype(scale_gemms{} | scale_gemms{})>, trace_order_policy>);
static_assert(std::is_same_v<decltype(policy_of(scale_gemms{} | comm_first{})), priority_policy>);
static_assert(pass_for<decltype(plain{} | comm_first{} | scale_gemms{}), graph>);

TEST_CASE("passes compose with | and run left to right") {
  std::vector<std::string> log;
  auto p = logger{&log, "a"} | logger{&log, "b"} | logger{&log, "c"};
  graph g;
  apply(g, p);
  CHECK(log == std::vector<std::string>{"a", "b", "c"});
  CHECK(pass_traits<decltype(p)>::name == "pipeline");
}

TEST_CASE("apply runs a pass and the replay picks up its policy") {
  graph g = testing::shared_channel();
  auto what_if = scale_gemms{} | comm_first{};
  apply(g, what_if);
  CHECK(g.duration(1) == 20);
  CHECK(g.priority(2) == as_soon_as_ready);
  // The kernel and the push share the channel: trace order runs the kernel first, the
  // pass's policy the push.
  auto trace = replay(g);
  CHECK(trace.start[1] == 10);
  CHECK(trace.start[2] == 30);
  auto picked = replay(g, policy_of(what_if));
  CHECK(picked.start[2] == 10);
  CHECK(picked.start[1] == 30);
  CHECK(picked.makespan == 50);
}

TEST_CASE("apply hands back what the pass returns") {
  graph g = testing::shared_channel();
  auto report = apply(g, reporting{});
  static_assert(std::is_same_v<decltype(report), pass_report>);
  REQUIRE(report.items.size() == 1);
  CHECK(report.value("tasks") == "3");
}

TEST_CASE("apply restores the graph exactly when the pass throws") {
  const graph original = testing::training_step();
  graph g = original;
  std::string msg;
  try {
    apply(g, thrower{});
  } catch (const error& e) {
    msg = e.what();
  }
  CHECK(msg.find("pass 'thrower' was refused and the graph left unchanged") != std::string::npos);
  CHECK(msg.find("out of ideas") != std::string::npos);
  CHECK(testing::graph_difference(original, g) == "");
  CHECK(testing::replay_difference(replay(original), replay(g)) == "");

  SUBCASE("with an explicit name") {
    CHECK_THROWS_WITH_AS(apply(g, thrower{}, "amp:compute=3"), doctest::Contains("pass 'amp:compute=3'"), error);
  }
  SUBCASE("an exception that is not a std::exception passes through, after the restore") {
    CHECK_THROWS_AS(apply(g, non_std_thrower{}), int);
    CHECK(testing::graph_difference(original, g) == "");
  }
}

TEST_CASE("apply_in_place checks and reports as apply does, without the copy to restore") {
  const graph original = testing::training_step();
  graph g = original;
  // Success: the graph apply gives, and what the pass returns.
  graph h = original;
  apply(g, scale_gemms{});
  apply_in_place(h, scale_gemms{});
  CHECK(testing::graph_difference(g, h) == "");
  auto report = apply_in_place(h, reporting{});
  CHECK(report.items.size() == 1);
  // Failure: apply's error, and the graph is as the pass left it (here: the cycle).
  std::string in_place, guarded;
  graph a = testing::training_step({.layers = 1, .data_parallel = false, .input_copy = false});
  graph b = a;
  try { apply(a, cycle_maker{}); } catch (const error& e) { guarded = e.what(); }
  try { apply_in_place(b, cycle_maker{}); } catch (const error& e) { in_place = e.what(); }
  CHECK(!in_place.empty());
  CHECK(in_place == guarded);
  CHECK(b.dependency_count() != a.dependency_count()); // not restored
  CHECK_THROWS_WITH_AS(apply_in_place(g, thrower{}), doctest::Contains("pass 'thrower' was refused"), error);
  CHECK_THROWS_AS(apply_in_place(g, non_std_thrower{}), int);
}

TEST_CASE("apply refuses a pass that creates a cycle and names it") {
  const graph original = testing::training_step({.layers = 1, .data_parallel = false, .input_copy = false});
  graph g = original;
  std::string msg;
  try {
    apply(g, cycle_maker{});
  } catch (const error& e) {
    msg = e.what();
  }
  CHECK(msg.find("pass 'cycle-maker' was refused") != std::string::npos);
  CHECK(msg.find("cycle") != std::string::npos);
  CHECK(msg.find("\"volta_sgemm_128x64_nn\"") != std::string::npos);
  CHECK(testing::graph_difference(original, g) == "");
}

TEST_CASE("well-behaved passes obey the pass laws") {
  auto fixtures = testing::standard_fixtures();
  auto s1 = testing::check_pass_laws(scale_gemms{}, fixtures, {.allow_refusal = false});
  CHECK(s1.applied == fixtures.size());
  auto s2 = testing::check_pass_laws(scale_gemms{0.25} | comm_first{}, fixtures, {.allow_refusal = false});
  CHECK(s2.refused == 0);
  testing::check_pass_laws(plain{}, fixtures);
}

TEST_CASE("the pass laws count the fixtures a pass refuses") {
  auto fixtures = testing::standard_fixtures();
  std::size_t communicating = 0;
  for (auto& f : fixtures) communicating += !ranges::empty(tasks<comm_task>(f.graph));
  REQUIRE(communicating > 0);
  auto s = testing::check_pass_laws(single_gpu_only{}, fixtures);
  CHECK(s.refused == communicating);
  CHECK(s.applied == fixtures.size() - communicating);
  REQUIRE_FALSE(s.refusals.empty());
  CHECK(s.refusals[0].find("the graph communicates") != std::string::npos);
}

TEST_CASE("the standard fixtures are valid training-like graphs") {
  for (auto& f : testing::standard_fixtures()) {
    INFO(f.name);
    CHECK_NOTHROW(check_invariants(f.graph));
    CHECK(f.graph.size() > 0);
  }
  auto g = testing::training_step();
  CHECK(ranges::distance(tasks<comm_task>(g)) == 3);
  CHECK(ranges::distance(tasks<gpu_kernel>(g) | where(in_phase(phase::weight_update))) == 3);
  CHECK(ranges::distance(tasks<memcpy_task>(g)) == 1);
  auto r = replay(g);
  CHECK(r.makespan > 0);
  CHECK(r.peak_memory > 0);
  auto two = testing::training_step({.iterations = 2});
  CHECK(two.size() == 2 * g.size());
}

namespace user {
// A user's pass with a run-time name member, in a namespace of its own: the name is no
// constant, so pass_traits falls back to "unnamed-pass" instead of failing inside the library.
struct named_at_run_time {
  std::string name = "chosen at run time";
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g)) scale_duration(g, k, 0.5);
  }
};
struct declared {
  using is_daydream_pass = void;
  void operator()(graph& g) const {
    for (auto k : tasks<gpu_kernel>(g)) scale_duration(g, k, 0.5);
  }
};
// Takes the graph by value: it would edit a copy.
struct by_value {
  void operator()(graph g) const { g.add(cpu_task{}, {.name = "lost"}); }
};
struct by_const_value {
  static constexpr std::string_view name = "by-const-value";
  void operator()(const graph g) const noexcept { (void)g; }
};
// A static name that is not a constant.
struct static_runtime_name {
  static inline std::string name = "not constant";
  void operator()(graph&) const {}
};
} // namespace user

static_assert(pass_for<user::named_at_run_time, graph>);
static_assert(pass_traits<user::named_at_run_time>::name == "unnamed-pass");
static_assert(pass_traits<user::static_runtime_name>::name == "unnamed-pass");
static_assert(!pass_for<user::by_value, graph>);
static_assert(!pass_for<user::by_const_value, graph>);
static_assert(pass_for<decltype([](graph&) {}), graph>);
static_assert(!pass_for<decltype([](graph) {}), graph>);
// `|` composes passes only: a resource has a run-time `name` and is no pass.
template <class A, class B> concept pipes = requires(A a, B b) { a | b; };
static_assert(!pipes<daydream::resource, daydream::resource>);
static_assert(!pipes<user::named_at_run_time, daydream::resource>);
static_assert(pipes<user::declared, user::named_at_run_time>);

TEST_CASE("a pass with a run-time name member runs, and is named by apply's argument") {
  graph g;
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto k = g.add(gpu_kernel{}, {.name = "k", .duration = 40, .resource = st});
  apply(g, user::named_at_run_time{});
  CHECK(g.duration(k) == 20);
  CHECK_THROWS_WITH_AS(apply(g, [](graph&) { throw error("no"); }, "mine"),
                       "daydream: pass 'mine' was refused and the graph left unchanged: no", error);
}

TEST_CASE("passes of a user's namespace compose as a pipeline, and with | where ADL finds it") {
  graph g;
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  auto k = g.add(gpu_kernel{}, {.name = "k", .duration = 40, .resource = st});
  // Neither type is in namespace daydream: daydream::pipeline composes them; a pipeline
  // then composes further with | (argument-dependent lookup finds it through pipeline).
  auto both = daydream::pipeline{user::declared{}, user::named_at_run_time{}};
  apply(g, both | user::declared{});
  CHECK(g.duration(k) == 5);
}
