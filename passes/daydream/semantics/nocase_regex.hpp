// Defines nocase_regex: a case-insensitive regular-expression search that runs at the speed of a case-sensitive one.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_NOCASE_REGEX_HPP
#define DAYDREAM_SEMANTICS_NOCASE_REGEX_HPP

#include <algorithm>
#include <regex>
#include <string>
#include <string_view>

namespace daydream::passes {

/// `s` with its ASCII upper-case letters lowered (other bytes as they are).
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// An ECMAScript expression searched case-insensitively (ASCII letters), as
/// `std::regex::icase` does. libstdc++ folds the case of every character it compares
/// through the locale's facets, which makes an `icase` search of a long kernel name
/// several times slower than a plain one; so an expression that names no upper-case
/// letter (no `A`-`Z`, and no `\x`, `\u` or `\c` escape that could) is compiled
/// case-sensitively and searched in the lower-cased name, which matches exactly the
/// names the `icase` search matches. Any other expression is searched with `icase`.
///
///     daydream::passes::nocase_regex gemm("gemm|cutlass");
///     const auto name = std::string_view("Volta_SGEMM_128x64");
///     bool yes = gemm.search(name, daydream::passes::ascii_lower(name)); // true
class nocase_regex {
public:
  /// Compiles `pattern`. Throws std::regex_error for a bad pattern.
  explicit nocase_regex(const std::string& pattern)
      : folded_(foldable(pattern)),
        rx_(pattern, folded_ ? std::regex::ECMAScript | std::regex::optimize
                             : std::regex::ECMAScript | std::regex::icase | std::regex::optimize) {}

  /// Whether the expression occurs in `name`, whose ascii_lower is `lower`.
  bool search(std::string_view name, std::string_view lower) const {
    const std::string_view s = folded_ ? lower : name;
    return std::regex_search(s.begin(), s.end(), rx_);
  }
  /// Whether the expression occurs in `name` (lowering it here when needed).
  bool search(std::string_view name) const {
    if (!folded_) return std::regex_search(name.begin(), name.end(), rx_);
    const auto lower = ascii_lower(name);
    return std::regex_search(lower.begin(), lower.end(), rx_);
  }
  /// Whether the expression is searched in the lower-cased name.
  bool folded() const noexcept { return folded_; }

private:
  static bool foldable(std::string_view p) noexcept {
    if (std::any_of(p.begin(), p.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) return false;
    for (std::size_t i = 0; i + 1 < p.size(); ++i)
      if (p[i] == '\\') {
        if (p[i + 1] == 'x' || p[i + 1] == 'u' || p[i + 1] == 'c') return false;
        ++i; // an escaped character: `\\x` is a backslash and an x
      }
    return true;
  }
  bool folded_;
  std::regex rx_;
};

} // namespace daydream::passes

#endif
