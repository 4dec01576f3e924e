// Defines doctest printing for daydream's handles, task refs, enums and steps, so failed checks show `gpu_kernel#42`.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_PRINT_HPP
#define DAYDREAM_TESTS_SUPPORT_PRINT_HPP

#include <daydream/dependency.hpp>
#include <daydream/io/format.hpp>
#include <daydream/kinds.hpp>
#include <daydream/replay.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace daydream::testing {

/// Converts anything daydream formats with {fmt} into a doctest string.
template <class T> doctest::String to_doctest(const T& v) {
  auto s = fmt::format("{}", v);
  return doctest::String(s.c_str());
}

} // namespace daydream::testing

// doctest prints enums as numbers before it looks at StringMaker; an overload of toString
// next to the enum (found by argument-dependent lookup) is what it uses instead.
namespace daydream {
inline doctest::String toString(phase v) { return testing::to_doctest(v); }
inline doctest::String toString(dep_kind v) { return testing::to_doctest(v); }
inline doctest::String toString(binding v) { return testing::to_doctest(v); }
inline doctest::String toString(resource_kind v) { return testing::to_doctest(v); }
inline doctest::String toString(sharing v) { return testing::to_doctest(v); }
inline doctest::String toString(cpu_call v) { return testing::to_doctest(v); }
inline doctest::String toString(copy_kind v) { return testing::to_doctest(v); }
inline doctest::String toString(comm_op v) { return testing::to_doctest(v); }
} // namespace daydream

namespace doctest {

template <class Kind> struct StringMaker<daydream::handle<Kind>> {
  static String convert(const daydream::handle<Kind>& h) { return daydream::testing::to_doctest(h); }
};
template <class Graph, class Kind> struct StringMaker<daydream::task_ref<Graph, Kind>> {
  static String convert(const daydream::task_ref<Graph, Kind>& r) {
    return daydream::testing::to_doctest(r);
  }
};
template <> struct StringMaker<daydream::dependency> {
  static String convert(const daydream::dependency& v) { return daydream::testing::to_doctest(v); }
};
template <> struct StringMaker<daydream::critical_step> {
  static String convert(const daydream::critical_step& v) { return daydream::testing::to_doctest(v); }
};

} // namespace doctest

#endif
