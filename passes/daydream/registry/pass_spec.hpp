// Defines pass_spec (what the command line knows about a pass: its --help line, how `key=value` parameters build it, its default what-if scenario) and passes::from_params.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_PASS_SPEC_HPP
#define DAYDREAM_REGISTRY_PASS_SPEC_HPP

#include <daydream/config.hpp>
#include <daydream/registry/params.hpp>

#include <concepts>
#include <string_view>

namespace daydream::passes {

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// `Pass::help` when the pass has one, else "".
template <class Pass> constexpr std::string_view member_help() noexcept {
  if constexpr (requires { { Pass::help } -> std::convertible_to<std::string_view>; }) return Pass::help;
  else return {};
}

/// `Pass::scenario_params` when the pass has them, else "".
template <class Pass> constexpr std::string_view member_scenario_params() noexcept {
  if constexpr (requires { { Pass::scenario_params } -> std::convertible_to<std::string_view>; })
    return Pass::scenario_params;
  else return {};
}

/// `Pass::default_scenario` when the pass has it, else true.
template <class Pass> constexpr bool member_default_scenario() noexcept {
  if constexpr (requires { { Pass::default_scenario } -> std::convertible_to<bool>; })
    return Pass::default_scenario;
  else return true;
}

} // namespace detail
//! @endcond

/// What the programs know about a pass type beyond the pass itself: the line `--help`
/// shows for it, how `--pass NAME:key=value,...` builds it, the parameters of the
/// scenario a default what-if run predicts, and whether a default run predicts it at all.
/// The registry (registry.hpp) reads a pass's command-line side only through this trait;
/// the pass keeps its parameters (members), `name`, `policy`, its call operator and
/// `applicable`/`not_applicable`.
///
/// Two ways to give it, as for fmt's `format_as` and `formatter<T>`:
///
/// - **Easy path: members.** This primary template reads them from the pass when present:
///   `static constexpr std::string_view help`, `static Pass from_params(const
///   pass_params&)`, `static constexpr std::string_view scenario_params`, `static
///   constexpr bool default_scenario`. Without them: no help text, no parameters (a
///   parameter given is refused), no scenario parameters, in the default run.
/// - **Full path: specialize it** for a pass whose type you cannot (or would rather not)
///   edit; the bundled passes do so (registry/specs/). A member the specialization leaves
///   out takes the default above; the pass's own members are not read.
///
/// A specialization must be visible wherever the pass is registered (include it with the
/// registry that lists the pass), as for any trait.
///
///     template <> struct daydream::passes::pass_spec<faster_conv> {
///       static constexpr std::string_view help = "convolutions /speedup. params: speedup=1.5";
///       static faster_conv from_params(const daydream::pass_params& p) {
///         faster_conv f;
///         f.speedup = p.get_double("speedup", f.speedup);
///         p.finish();   // a key nobody read is a typo: refuse it
///         return f;
///       }
///     };
template <class Pass> struct pass_spec {
  /// One line for `daydream whatif --help`: `Pass::help`, or "".
  static constexpr std::string_view help = detail::member_help<Pass>();
  /// Parameters of the default what-if scenario ("workers=16,bandwidth=25Gbps" for the
  /// distributed passes, whose defaults describe a single worker): `Pass::scenario_params`,
  /// or "" for none.
  static constexpr std::string_view scenario_params = detail::member_scenario_params<Pass>();
  /// Whether a default what-if run (no pass named) predicts the pass: false for a pass that
  /// asks a question of the user's choosing (`speedup`). `Pass::default_scenario`, or true.
  static constexpr bool default_scenario = detail::member_default_scenario<Pass>();

  /// The pass `p` describes: `Pass::from_params(p)` when the pass has it; else the pass at
  /// its defaults, after `p.finish()` refused any key given.
  static Pass from_params(const pass_params& p) {
    if constexpr (requires { { Pass::from_params(p) } -> std::convertible_to<Pass>; }) return Pass::from_params(p);
    else {
      p.finish();
      return Pass{};
    }
  }
};

/// Builds a `Pass` from command-line parameters as the registry does: through
/// pass_spec<Pass>::from_params (or, for a specialization without one, the pass at its
/// defaults once `p.finish()` refused any key given). Throws daydream::usage_error (or
/// daydream::error) for a malformed value, an unknown key or a value the pass refuses.
///
///     #include <daydream/registry/specs/amp.hpp>
///     auto a = daydream::passes::from_params<daydream::passes::amp>(
///         daydream::pass_params::parse("amp", "compute=2,memory=1.5"));
template <class Pass> Pass from_params(const pass_params& p) {
  if constexpr (requires { { pass_spec<Pass>::from_params(p) } -> std::convertible_to<Pass>; })
    return pass_spec<Pass>::from_params(p);
  else {
    p.finish();
    return Pass{};
  }
}

} // namespace daydream::passes

#endif
