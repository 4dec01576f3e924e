// Defines passes::registry: bundled (or user) passes looked up by name, built from parameters, run type-erased.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_REGISTRY_HPP
#define DAYDREAM_REGISTRY_REGISTRY_HPP

#include <daydream/config.hpp>
#include <daydream/pass.hpp>
#include <daydream/replay.hpp>
#include <daydream/report.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/registry/pass_spec.hpp>

#include <concepts>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream::passes {

/// A pass built from parameters, with its type erased: what a scenario runs.
template <class Graph> struct erased_pass {
  std::string name;                                  ///< the pass's name ("amp")
  std::string spec;                                  ///< as the user wrote it ("amp:compute=2")
  std::function<pass_report(Graph&)> run;            ///< applies it transactionally
  /// Applies it without the transaction's copy (apply_in_place), to a graph that is a
  /// copy dropped on failure; when empty, `run` serves (run_chain_in_place).
  std::function<pass_report(Graph&)> run_in_place;
  /// A replay with the pass's policy.
  std::function<replay_result(const Graph&, const replay_options&)> replay;
  bool custom_policy = false;                        ///< whether it brings its own policy
};

/// One entry of a registry: how to build and describe a pass type `Pass`.
template <class Graph> struct pass_entry {
  std::string_view name; ///< the pass's name (pass_traits<Pass>::name)
  std::string_view help; ///< one line for --help (pass_spec<Pass>::help)
  /// Parameters for a default what-if scenario ("workers=16,bandwidth=25Gbps" for the
  /// distributed passes, whose defaults describe a single worker); empty for none
  /// (pass_spec<Pass>::scenario_params).
  std::string_view scenario_params;
  /// Whether a default what-if run (no pass named) predicts the pass: false for a pass
  /// that asks a question of the user's choosing (`speedup`)
  /// (pass_spec<Pass>::default_scenario).
  bool default_scenario = true;
  std::function<erased_pass<Graph>(const pass_params&)> make;
  /// Whether a default what-if run includes the pass on a graph.
  std::function<bool(const Graph&)> applicable;
  /// Why a default run leaves the pass out on a graph ("" when applicable): the pass's
  /// `static std::string not_applicable(const Graph&)` when it has one, else a generic
  /// sentence when `applicable` says no.
  std::function<std::string(const Graph&)> not_applicable_reason;
  /// The parameters the pass takes, given `given`: the keys it reads while it is built
  /// from them (a pass may read some keys only when others are set). A pass that refuses
  /// `given` still names what it read before refusing.
  std::function<std::vector<std::string>(const pass_params& given)> parameters;
};

/// Makes a registry entry for a pass type: its name from pass_traits; its help line,
/// parameters (`from_params`), default scenario parameters and whether a default run
/// predicts it from pass_spec<Pass> (the pass's own members, or a specialization);
/// `static bool applicable(const Graph&)` and `static std::string not_applicable(const
/// Graph&)` (why not, "" when applicable) from the pass when it has them; a call operator
/// returning void or pass_report.
template <class Pass, class Graph> pass_entry<Graph> entry_for() {
  static_assert(pass_for<Pass, Graph>, "daydream::passes::entry_for: not a pass over this graph type");
  using spec = pass_spec<Pass>;
  pass_entry<Graph> e;
  e.name = pass_traits<Pass>::name;
  if constexpr (requires { { spec::help } -> std::convertible_to<std::string_view>; }) e.help = spec::help;
  if constexpr (requires { { spec::scenario_params } -> std::convertible_to<std::string_view>; })
    e.scenario_params = spec::scenario_params;
  if constexpr (requires { { spec::default_scenario } -> std::convertible_to<bool>; })
    e.default_scenario = spec::default_scenario;
  e.make = [](const pass_params& p) {
    erased_pass<Graph> out;
    out.name = std::string(pass_traits<Pass>::name);
    Pass pass = passes::from_params<Pass>(p);
    auto run = [pass](Graph& g, bool in_place) {
      pass_report rep;
      auto wrapped = [&](Graph& gg) {
        if constexpr (std::is_convertible_v<decltype(pass(gg)), pass_report>) rep = pass(gg);
        else pass(gg);
      };
      if (in_place) daydream::apply_in_place(g, wrapped, pass_traits<Pass>::name);
      else daydream::apply(g, wrapped, pass_traits<Pass>::name);
      if (rep.pass.empty()) rep.pass = std::string(pass_traits<Pass>::name);
      return rep;
    };
    out.run = [run](Graph& g) { return run(g, false); };
    out.run_in_place = [run](Graph& g) { return run(g, true); };
    using policy = pass_policy_t<Pass>;
    out.custom_policy = !std::is_same_v<policy, trace_order_policy>;
    out.replay = [](const Graph& g, const replay_options& o) { return daydream::replay(g, policy{}, o); };
    return out;
  };
  e.applicable = [](const Graph& g) {
    if constexpr (requires { Pass::applicable(g); }) return static_cast<bool>(Pass::applicable(g));
    else { (void)g; return true; }
  };
  e.not_applicable_reason = [applicable = e.applicable](const Graph& g) -> std::string {
    if constexpr (requires { { Pass::not_applicable(g) } -> std::convertible_to<std::string>; })
      return Pass::not_applicable(g);
    else
      return applicable(g) ? std::string{} : "the trace lacks what this pass needs";
  };
  e.parameters = [](const pass_params& given) {
    pass_params p = given;
    try {
      (void)passes::from_params<Pass>(p);
    } catch (const std::exception&) {
      // What it read before refusing is still what it takes.
    }
    return p.read_keys();
  };
  return e;
}

/// A set of passes known by name.
///
///     auto reg = daydream::passes::registry<daydream::graph>::of<amp, fused_adam>();
///     auto p = reg.make("amp:compute=2.5");
template <class Graph> class registry {
public:
  template <class... Passes> static registry of() {
    registry r;
    (r.entries_.push_back(entry_for<Passes, Graph>()), ...);
    return r;
  }
  template <class Pass> registry& add() { entries_.push_back(entry_for<Pass, Graph>()); return *this; }

  const std::vector<pass_entry<Graph>>& entries() const noexcept { return entries_; }
  const pass_entry<Graph>* find(std::string_view name) const {
    for (auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  /// Builds one pass from "name" or "name:key=value,...".
  erased_pass<Graph> make(std::string_view spec) const {
    auto [e, params] = parse(spec);
    auto p = e->make(params);
    p.spec = std::string(spec);
    return p;
  }

  /// The entry and the parameters of "name" or "name:key=value,..."; throws usage_error
  /// for an unknown name or a malformed parameter list.
  std::pair<const pass_entry<Graph>*, pass_params> parse(std::string_view spec) const {
    auto colon = spec.find(':');
    auto name = spec.substr(0, colon);
    auto* e = find(name);
    if (!e) {
      std::string known;
      for (auto& x : entries_) known += (known.empty() ? "" : ", ") + std::string(x.name);
      throw usage_error("daydream: unknown pass '" + std::string(name) + "' (known: " + known + ")");
    }
    return {e, pass_params::parse(std::string(name), colon == std::string_view::npos ? "" : spec.substr(colon + 1))};
  }

  /// The parameters the pass of "name:key=value,..." takes (pass_entry::parameters).
  std::vector<std::string> parameters(std::string_view spec) const {
    auto [e, params] = parse(spec);
    return e->parameters ? e->parameters(params) : std::vector<std::string>{};
  }

  /// Builds the passes of "a+b:k=v+c" (run left to right).
  std::vector<erased_pass<Graph>> make_chain(std::string_view spec) const {
    std::vector<erased_pass<Graph>> out;
    while (true) {
      auto plus = spec.find('+');
      out.push_back(make(spec.substr(0, plus)));
      if (plus == std::string_view::npos) break;
      spec = spec.substr(plus + 1);
    }
    return out;
  }

private:
  std::vector<pass_entry<Graph>> entries_;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
template <class Graph>
std::pair<replay_result, std::vector<pass_report>> run_chain(Graph& g, const std::vector<erased_pass<Graph>>& chain,
                                                             const replay_options& options, bool in_place) {
  std::vector<pass_report> reports;
  const erased_pass<Graph>* policy_owner = nullptr;
  for (auto& p : chain) {
    reports.push_back(in_place && p.run_in_place ? p.run_in_place(g) : p.run(g));
    if (p.custom_policy) policy_owner = &p;
  }
  auto r = policy_owner ? policy_owner->replay(g, options) : daydream::replay(g, trace_order_policy{}, options);
  return {std::move(r), std::move(reports)};
}
} // namespace detail
//! @endcond

/// Runs a chain on `g` and replays it with the policy of the last pass that brings one.
/// Each pass is a transaction: when one fails, `g` is as the passes before it left it.
template <class Graph>
std::pair<replay_result, std::vector<pass_report>> run_chain(Graph& g,
                                                             const std::vector<erased_pass<Graph>>& chain,
                                                             const replay_options& options = {}) {
  return detail::run_chain(g, chain, options, false);
}

/// run_chain on a graph that is a copy, dropped if a pass fails (a what-if scenario's):
/// the passes run without the transaction's copy of the graph (apply_in_place), so the
/// chain needs memory for one graph, not two. On failure `g` is fit only to be destroyed
/// or assigned.
template <class Graph>
std::pair<replay_result, std::vector<pass_report>> run_chain_in_place(Graph& g,
                                                                      const std::vector<erased_pass<Graph>>& chain,
                                                                      const replay_options& options = {}) {
  return detail::run_chain(g, chain, options, true);
}

} // namespace daydream::passes

#endif
