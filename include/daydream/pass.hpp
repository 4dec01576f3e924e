// Defines passes: the pass_for concept, pass_traits, composition with `|`, and transactional apply.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASS_HPP
#define DAYDREAM_PASS_HPP

#include <daydream/config.hpp>
#include <daydream/fwd.hpp>
#include <daydream/reschedule.hpp>
#include <daydream/validate.hpp>

#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace daydream {

/// A pass over graphs of type G: any object callable as `pass(g)` on a `G&`.
template <class P, class G>
concept pass_for = std::invocable<const P&, G&>;

//! @cond DAYDREAM_INTERNAL
namespace detail {
template <class P> constexpr std::string_view member_name_or(std::string_view fallback) {
  if constexpr (requires { P::name; }) return std::string_view(P::name);
  else return fallback;
}
template <class P, class Default> struct member_policy_or { using type = Default; };
template <class P, class Default>
  requires requires { typename P::policy; }
struct member_policy_or<P, Default> { using type = typename P::policy; };
} // namespace detail
//! @endcond

/// What the replay and the what-if program read from a pass: its `name` and its
/// selection `policy`. Defaults come from the members `static constexpr
/// std::string_view name` and `using policy = ...;`; specialize to add them to a type
/// you cannot edit.
template <class Pass> struct pass_traits {
  static constexpr std::string_view name = detail::member_name_or<Pass>("unnamed-pass");
  using policy = typename detail::member_policy_or<Pass, trace_order_policy>::type;
};

/// The policy a pass (or a pipeline of passes) brings to the replay.
template <class Pass> using pass_policy_t = typename pass_traits<Pass>::policy;

/// Two passes run one after the other. Its policy is the second pass's, unless that one
/// brings none, then the first's.
template <class First, class Second> struct pipeline {
  First first;
  Second second;
  using policy = std::conditional_t<
      std::is_same_v<pass_policy_t<Second>, trace_order_policy>, pass_policy_t<First>,
      pass_policy_t<Second>>;
  static constexpr std::string_view name = "pipeline";
  template <class G>
    requires pass_for<First, G> && pass_for<Second, G>
  void operator()(G& g) const {
    first(g);
    second(g);
  }
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
template <class T> inline constexpr bool is_pass_object = requires { T::name; } || requires {
  typename T::policy;
} || requires { typename T::is_daydream_pass; };
} // namespace detail
//! @endcond

/// Composes two passes: `amp{} | fused_adam{}` runs AMP, then FusedAdam. Either side
/// must declare itself a pass (a `name` member, a `policy` member, or
/// `using is_daydream_pass = void;`), so unrelated `|` overloads are not hijacked.
template <class A, class B>
  requires(detail::is_pass_object<std::remove_cvref_t<A>> ||
           detail::is_pass_object<std::remove_cvref_t<B>>) &&
          std::is_class_v<std::remove_cvref_t<A>> && std::is_class_v<std::remove_cvref_t<B>>
constexpr auto operator|(A&& a, B&& b) {
  return pipeline<std::remove_cvref_t<A>, std::remove_cvref_t<B>>{std::forward<A>(a),
                                                                  std::forward<B>(b)};
}

/// Runs `pass` on `g` as a transaction: if the pass throws, or leaves a cycle or a
/// broken invariant, `g` is restored exactly as it was and daydream::error says why
/// (naming the cycle's tasks). `name` names the pass in that message. Costs one copy
/// of the graph.
template <class G, class Pass>
void apply(G& g, const Pass& pass, std::string_view name = pass_traits<Pass>::name) {
  static_assert(pass_for<Pass, G>,
                "daydream::apply(g, pass): `pass` must be callable as pass(g) on this graph type.");
  G backup = g;
  try {
    pass(g);
    check_invariants(g);
  } catch (const std::exception& e) {
    g = std::move(backup);
    throw error(std::string("daydream: pass '") + std::string(name) +
                "' was refused and the graph left unchanged: " + e.what());
  }
}

} // namespace daydream

#endif
