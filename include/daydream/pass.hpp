// Defines passes: the pass_for concept, pass_traits, composition with `|`, and transactional apply.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASS_HPP
#define DAYDREAM_PASS_HPP

#include <daydream/config.hpp>
#include <daydream/detail/traits.hpp>
#include <daydream/fwd.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/validate.hpp>

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace daydream {

//! @cond DAYDREAM_INTERNAL
namespace detail {
// The first parameter of a (non-template) call operator.
template <class F> struct call_param {};
template <class C, class R, class A, class... As> struct call_param<R (C::*)(A, As...)> { using type = A; };
template <class C, class R, class A, class... As> struct call_param<R (C::*)(A, As...) const> { using type = A; };
template <class C, class R, class A, class... As> struct call_param<R (C::*)(A, As...) noexcept> { using type = A; };
template <class C, class R, class A, class... As>
struct call_param<R (C::*)(A, As...) const noexcept> { using type = A; };

/// Whether `P` has one call operator, not a template, whose first parameter is not a
/// reference: `void operator()(graph g)` would edit a copy of the graph and leave the
/// caller's unchanged.
template <class P> constexpr bool takes_graph_by_value() {
  if constexpr (requires { typename call_param<decltype(&P::operator())>::type; })
    return !std::is_reference_v<typename call_param<decltype(&P::operator())>::type>;
  else
    return false;
}

template <class P> constexpr std::string_view member_name_or(std::string_view fallback) {
  if constexpr (has_constant_name<P>) return std::string_view(P::name);
  else return fallback;
}
template <class P, class Default> struct member_policy_or { using type = Default; };
template <class P, class Default>
  requires requires { typename P::policy; }
struct member_policy_or<P, Default> { using type = typename P::policy; };
} // namespace detail
//! @endcond

/// A pass over graphs of type G: any object callable as `pass(g)` on a `G&` (through a
/// const reference: a pass's parameters are fixed when it runs) that takes the graph by
/// reference: a call operator taking the graph by value would edit a copy, so it is no
/// pass (apply() says so). What it returns is handed back by apply() (a pass_report,
/// usually, or nothing).
///
///     struct halve_kernels {
///       void operator()(daydream::graph& g) const {
///         for (auto k : daydream::tasks<daydream::gpu_kernel>(g)) daydream::scale_duration(g, k, 0.5);
///       }
///     };
///     static_assert(daydream::pass_for<halve_kernels, daydream::graph>);
template <class P, class G>
concept pass_for = std::invocable<const P&, G&> && !detail::takes_graph_by_value<P>();

/// What the replay and the what-if program read from a pass: its `name` and its
/// selection `policy`. Defaults come from the members `static constexpr
/// std::string_view name` and `using policy = ...;`; specialize to add them to a type
/// you cannot edit.
///
///     template <> struct daydream::pass_traits<their_pass> {
///       static constexpr std::string_view name = "their-pass";
///       using policy = daydream::priority_policy;
///     };
template <class Pass> struct pass_traits {
  /// Shown in messages ("pass 'amp' was refused ...") and reports.
  static constexpr std::string_view name = detail::member_name_or<Pass>("unnamed-pass");
  /// The selection policy the replay should use after this pass.
  using policy = typename detail::member_policy_or<Pass, trace_order_policy>::type;
};

/// The policy a pass (or a pipeline of passes) brings to the replay.
template <class Pass> using pass_policy_t = typename pass_traits<Pass>::policy;

/// The policy a pass brings, as an object to hand to replay(): the replay picks the
/// policy of a pass at compile time.
///
///     auto what_if = daydream::passes::amp{} | p3{};
///     daydream::apply(g, what_if);
///     auto r = daydream::replay(g, daydream::policy_of(what_if)); // p3's policy
template <class Pass> constexpr pass_policy_t<Pass> policy_of(const Pass&) { return {}; }

/// Two passes run one after the other; what `a | b` makes. Its policy is the second
/// pass's, unless that one brings none (trace_order_policy), then the first's. Results
/// of the passes' call operators are dropped: apply each pass on its own to keep them.
template <class First, class Second> struct pipeline {
  First first;   ///< runs first
  Second second; ///< runs on the graph `first` left
  /// The policy the replay uses after the pipeline.
  using policy = std::conditional_t<
      std::is_same_v<pass_policy_t<Second>, trace_order_policy>, pass_policy_t<First>,
      pass_policy_t<Second>>;
  /// Shown in messages; apply(g, p, name) gives a pipeline a better one.
  static constexpr std::string_view name = "pipeline";
  /// Runs `first`, then `second`, on `g`.
  template <class G>
    requires pass_for<First, G> && pass_for<Second, G>
  void operator()(G& g) const {
    first(g);
    second(g);
  }
};

/// `daydream::pipeline{a, b}` deduces the pass types (written out: compilers without
/// class template argument deduction for aggregates, such as clang before 17, need it).
template <class First, class Second> pipeline(First, Second) -> pipeline<First, Second>;

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// A type that declares itself a pass: a constant static `name`, a `policy` member type,
/// or `using is_daydream_pass = void;`.
template <class T>
inline constexpr bool is_pass_object = has_constant_name<T> || requires {
  typename T::policy;
} || requires { typename T::is_daydream_pass; };
/// What `|` composes: a class that declares itself a pass, or one callable on a graph.
template <class T>
concept composable_pass = std::is_class_v<T> && (is_pass_object<T> || pass_for<T, graph>);
} // namespace detail
//! @endcond

/// Composes two passes: `amp{} | fused_adam{}` runs AMP, then FusedAdam. Both sides must
/// be passes (a class callable on a graph, or one declaring `name`, `policy` or
/// `using is_daydream_pass = void;`) and at least one must declare itself a pass, so
/// unrelated `|` overloads are not hijacked: `resource{} | resource{}` does not compile.
///
/// Argument-dependent lookup finds it for the bundled passes (namespace
/// daydream::passes) and for pipelines. Two passes of your own, declared outside
/// namespace daydream, compose as `daydream::pipeline{first{}, second{}}`, or with `|`
/// after `using daydream::operator|;`.
template <class A, class B>
  requires detail::composable_pass<std::remove_cvref_t<A>> &&
           detail::composable_pass<std::remove_cvref_t<B>> &&
           (detail::is_pass_object<std::remove_cvref_t<A>> ||
            detail::is_pass_object<std::remove_cvref_t<B>>)
constexpr auto operator|(A&& a, B&& b) {
  return pipeline<std::remove_cvref_t<A>, std::remove_cvref_t<B>>{std::forward<A>(a),
                                                                  std::forward<B>(b)};
}

/// The bundled passes compose with `|` without a using-declaration: argument-dependent
/// lookup looks in their namespace.
namespace passes {
using daydream::operator|;
} // namespace passes

//! @cond DAYDREAM_INTERNAL
namespace detail {
/// apply() with the restore of `g` on failure made by `restore` (nothing for apply_in_place).
template <class G, class Pass, class Restore>
decltype(auto) apply_pass(G& g, const Pass& pass, std::string_view name, Restore&& restore) {
  static_assert(!detail::takes_graph_by_value<Pass>(),
                "daydream::apply(g, pass): the pass takes the graph by value, so it would edit "
                "a copy and leave `g` unchanged; declare it `operator()(graph& g) const`.");
  static_assert(std::invocable<const Pass&, G&>,
                "daydream::apply(g, pass): `pass` must be callable as pass(g) on this graph type.");
  using result = std::invoke_result_t<const Pass&, G&>;
  try {
    if constexpr (std::is_void_v<result>) {
      pass(g);
      check_invariants(g);
    } else {
      std::remove_cvref_t<result> out = pass(g);
      check_invariants(g);
      return out;
    }
  } catch (const usage_error& e) {
    // A pass that refuses what the user asked of it on this graph (a parameter the
    // input cannot satisfy) stays a usage error: programs exit 2.
    restore();
    throw usage_error(std::string("daydream: pass '") + std::string(name) +
                      "' was refused and the graph left unchanged: " + e.what());
  } catch (const std::exception& e) {
    restore();
    throw error(std::string("daydream: pass '") + std::string(name) +
                "' was refused and the graph left unchanged: " + e.what());
  } catch (...) {
    restore();
    throw;
  }
}
} // namespace detail
//! @endcond

/// Runs `pass` on `g` as a transaction and returns what the pass returns. If the pass
/// throws, or leaves a cycle or a broken invariant (check_invariants), `g` is restored
/// exactly as it was and daydream::error says why, naming the pass (`name`, by default
/// pass_traits<Pass>::name) and the cycle's tasks; an exception that is not a
/// std::exception is rethrown as is, after the restore; a daydream::usage_error of the
/// pass (a parameter this graph cannot satisfy) stays a usage_error. Costs one copy of the graph.
/// On success, invalidates what the pass invalidates; on failure, nothing.
///
///     try { daydream::apply(g, daydream::passes::amp{}); }
///     catch (const daydream::error& e) { std::cerr << e.what() << '\n'; }
template <class G, class Pass>
decltype(auto) apply(G& g, const Pass& pass, std::string_view name = pass_traits<Pass>::name) {
  G backup = g;
  return detail::apply_pass(g, pass, name, [&] { g = std::move(backup); });
}

/// Runs `pass` on `g` as apply() does, with its checks and its errors, but keeps no copy
/// to restore: for a graph that is itself a copy, dropped when the pass fails (a what-if
/// scenario's graph, whose errors speak of the graph it was copied from). On failure `g`
/// is left as the pass left it, fit only to be destroyed or assigned.
template <class G, class Pass>
decltype(auto) apply_in_place(G& g, const Pass& pass, std::string_view name = pass_traits<Pass>::name) {
  return detail::apply_pass(g, pass, name, [] {});
}

} // namespace daydream

#endif
