// Defines the detection traits behind the customization points of passes and kinds.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_TRAITS_HPP
#define DAYDREAM_DETAIL_TRAITS_HPP

#include <cstddef>
#include <string_view>
#include <type_traits>

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// Whether `T` has a static, compile-time constant `name` convertible to string_view
/// (`static constexpr std::string_view name = "...";`). A non-static member (a run-time
/// `std::string name`, as a resource or a user's pass may have) or a static one that is
/// not a constant does not count: such a type simply has no constant name.
template <class T>
concept has_constant_name = requires {
  requires !std::is_member_pointer_v<decltype(&T::name)>;
  requires std::is_convertible_v<decltype(T::name), std::string_view>;
  typename std::integral_constant<std::size_t, std::string_view(T::name).size()>;
};

/// Whether `T` has a static, compile-time constant `resource` member (a resource_kind).
template <class T, class Value>
concept has_constant_member_resource = requires {
  requires !std::is_member_pointer_v<decltype(&T::resource)>;
  requires std::is_same_v<std::remove_cvref_t<decltype(T::resource)>, Value>;
  typename std::integral_constant<Value, T::resource>;
};

} // namespace daydream::detail
//! @endcond

#endif
