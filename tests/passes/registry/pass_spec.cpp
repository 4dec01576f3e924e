// Tests of registry/pass_spec.hpp and its use by the registry: a pass's command-line side from its members (the easy path) or from a pass_spec specialization (the full path).
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/resource.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/registry/bundled.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>
#include <daydream/registry/registry.hpp>
#include <daydream/registry/specs/all.hpp>
#include <support/print.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using namespace daydream;
using namespace daydream::passes;

namespace {

// The easy path: the command-line side as members of the pass.
//! [easy path]
struct faster_kernels {
  static constexpr std::string_view name = "faster-kernels";
  static constexpr std::string_view help = "every kernel /factor. params: factor=2";
  static constexpr std::string_view scenario_params = "factor=3"; // optional: the default run's
  static constexpr bool default_scenario = false;                // optional: not in a default run
  double factor = 2;

  static faster_kernels from_params(const daydream::pass_params& p) {
    faster_kernels f;
    f.factor = p.get_double("factor", f.factor);
    p.finish(); // a key nobody read is a typo: refused, naming it
    return f;
  }
  void operator()(daydream::graph& g) const {
    for (auto k : daydream::tasks<daydream::gpu_kernel>(g)) daydream::scale_duration(g, k, 1.0 / factor);
  }
};
//! [easy path]

// The full path: a pass that knows nothing of the command line, and its specialization below.
//! [full path pass]
struct faster_gemm {
  static constexpr std::string_view name = "faster-gemm";
  double factor = 2;
  void operator()(daydream::graph& g) const {
    using namespace daydream;
    for (auto k : tasks<gpu_kernel>(g) | where(name_matches("gemm"))) scale_duration(g, k, 1.0 / factor);
  }
};
//! [full path pass]

// A pass whose members the specialization below replaces: the trait wins.
struct overridden {
  static constexpr std::string_view name = "overridden";
  static constexpr std::string_view help = "the member's help";
  int k = 1;
  static overridden from_params(const pass_params& p) {
    p.finish();
    return overridden{.k = -1};
  }
  void operator()(graph&) const {}
};

// No command-line side at all.
struct bare {
  static constexpr std::string_view name = "bare";
  void operator()(graph&) const {}
};

// A specialization giving the help line only.
struct help_only {
  static constexpr std::string_view name = "help_only";
  void operator()(graph&) const {}
};

graph one_kernel(time_ns d) {
  graph g;
  auto st = g.add_resource({"stream", resource_kind::gpu_stream});
  g.add(gpu_kernel{}, {.name = "volta_sgemm", .duration = d, .resource = st});
  return g;
}

} // namespace

//! [full path]
template <> struct daydream::passes::pass_spec<faster_gemm> {
  static constexpr std::string_view help = "GEMM kernels /factor. params: factor=2";
  static constexpr std::string_view scenario_params = "factor=4";
  static faster_gemm from_params(const daydream::pass_params& p) {
    faster_gemm f;
    f.factor = p.get_double("factor", f.factor);
    p.finish();
    if (!(f.factor > 0)) throw daydream::usage_error("daydream: pass 'faster-gemm': factor must be positive");
    return f;
  }
};
//! [full path]

template <> struct daydream::passes::pass_spec<overridden> {
  static constexpr std::string_view help = "the spec's help";
  static overridden from_params(const pass_params& p) {
    overridden o;
    o.k = static_cast<int>(p.get_int("k", 7));
    p.finish();
    return o;
  }
};

template <> struct daydream::passes::pass_spec<help_only> {
  static constexpr std::string_view help = "does nothing, documented";
};

TEST_CASE("pass_spec: the easy path reads the pass's own members") {
  static_assert(pass_spec<faster_kernels>::help == faster_kernels::help);
  static_assert(pass_spec<faster_kernels>::scenario_params == "factor=3");
  static_assert(!pass_spec<faster_kernels>::default_scenario);
  CHECK(from_params<faster_kernels>(pass_params::parse("faster-kernels", "factor=5")).factor == 5);
  auto reg = registry<graph>::of<faster_kernels>();
  auto* e = reg.find("faster-kernels");
  REQUIRE(e);
  CHECK(e->help == faster_kernels::help);
  CHECK(e->scenario_params == "factor=3");
  CHECK_FALSE(e->default_scenario);
  auto g = one_kernel(1000);
  auto p = reg.make("faster-kernels:factor=4");
  p.run(g);
  CHECK(g.duration(task_id{0}) == 250);
  CHECK(reg.parameters("faster-kernels") == std::vector<std::string>{"factor"});
}

TEST_CASE("pass_spec: the full path, a specialization, describes and builds a pass that has no such members") {
  static_assert(pass_for<faster_gemm, graph>);
  CHECK(from_params<faster_gemm>(pass_params::parse("faster-gemm", "factor=8")).factor == 8);
  CHECK_THROWS_WITH_AS(from_params<faster_gemm>(pass_params::parse("faster-gemm", "factor=0")),
                       "daydream: pass 'faster-gemm': factor must be positive", usage_error);
  CHECK_THROWS_WITH_AS(from_params<faster_gemm>(pass_params::parse("faster-gemm", "factr=8")),
                       "daydream: pass 'faster-gemm' has no parameter named: factr", usage_error);
//! [registry]
  auto reg = daydream::passes::registry<daydream::graph>::of<faster_gemm, faster_kernels>();
  auto p = reg.make("faster-gemm:factor=10"); // erased_pass: name, spec, run, replay
//! [registry]
  REQUIRE(reg.find("faster-gemm"));
  CHECK(reg.find("faster-gemm")->help == "GEMM kernels /factor. params: factor=2");
  CHECK(reg.find("faster-gemm")->scenario_params == "factor=4");
  CHECK(reg.find("faster-gemm")->default_scenario); // left out of the specialization: the default
  auto g = one_kernel(1000);
  p.run(g);
  CHECK(g.duration(task_id{0}) == 100);
  CHECK(reg.parameters("faster-gemm:factor=1") == std::vector<std::string>{"factor"});
}

TEST_CASE("pass_spec: a specialization replaces the pass's members, and what it leaves out takes the defaults") {
  CHECK(pass_spec<overridden>::help == "the spec's help");
  CHECK(from_params<overridden>(pass_params::parse("overridden", "")).k == 7);
  auto reg = registry<graph>::of<overridden, help_only, bare>();
  CHECK(reg.find("overridden")->help == "the spec's help");
  CHECK(reg.parameters("overridden") == std::vector<std::string>{"k"});

  // help_only's specialization has no from_params: the pass at its defaults, no parameter.
  CHECK(reg.find("help_only")->help == "does nothing, documented");
  CHECK(reg.find("help_only")->scenario_params.empty());
  CHECK_NOTHROW(reg.make("help_only"));
  CHECK_THROWS_WITH_AS(reg.make("help_only:x=1"), "daydream: pass 'help_only' has no parameter named: x",
                       usage_error);
  CHECK(reg.parameters("help_only:x=1").empty());

  // No command-line side at all: no help, no parameters.
  CHECK(reg.find("bare")->help.empty());
  CHECK(reg.find("bare")->default_scenario);
  CHECK_THROWS_AS(reg.make("bare:x=1"), usage_error);
}

namespace {

// Whether a pass type carries command-line members of its own.
template <class P> constexpr bool has_cli_members =
    requires { P::help; } || requires(const pass_params& p) { P::from_params(p); } ||
    requires { P::scenario_params; } || requires { P::default_scenario; };

template <class... P> constexpr bool none_has_cli_members = (!has_cli_members<P> && ...);

} // namespace

TEST_CASE("the bundled passes keep their command-line side in their specs, and every one has a help line") {
  static_assert(has_cli_members<faster_kernels>);
  static_assert(none_has_cli_members<amp, precision, fused_adam, reconstruct_bn, gist, vdnn, substitute, recompute,
                                     grad_accum, dataloader, cuda_graphs, compile, speedup, gpu, ddp, p3, blueconnect,
                                     dgc, tictac, tensor_fusion, tensor_partition>,
                "a bundled pass defines help, from_params, scenario_params or default_scenario itself: those "
                "belong in its pass_spec (registry/specs/)");
  auto reg = bundled();
  CHECK(reg.entries().size() == 21);
  for (auto& e : reg.entries()) {
    CAPTURE(e.name);
    CHECK_FALSE(e.help.empty());
  }
  CHECK(reg.find("ddp")->scenario_params == "workers=16,bandwidth=25Gbps");
  CHECK(reg.find("blueconnect")->scenario_params == "machines=2,workers_per_machine=8,bandwidth=25Gbps");
  CHECK_FALSE(reg.find("speedup")->default_scenario);
  CHECK_FALSE(reg.find("gpu")->default_scenario); // the target is the user's question
  // The registry builds a pass as from_params does.
  auto a = from_params<amp>(pass_params::parse("amp", "compute=2,memory=1.5"));
  CHECK(a.compute == 2);
  CHECK(a.memory == 1.5);
  CHECK(reg.parameters("amp") == std::vector<std::string>{"activations", "casts", "compute", "dtype", "memory",
                                                          "overhead", "scaler", "tf32"});
}
