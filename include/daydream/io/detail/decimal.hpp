// Defines io::detail::us_text_to_ns, the exact conversion of a JSON number in microseconds to integer nanoseconds.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_DECIMAL_HPP
#define DAYDREAM_IO_DETAIL_DECIMAL_HPP

#include <cstdint>
#include <limits>
#include <string_view>

namespace daydream::io::detail {

/// What us_text_to_ns found.
enum class number_status : std::uint8_t {
  ok,
  not_a_number, ///< the text is no JSON number
  not_finite,   ///< NaN or Infinity (Python's json module writes them)
  out_of_range, ///< does not fit in 64-bit nanoseconds
};

/// A conversion result: `value` is meaningful when `status == ok`.
struct ns_result {
  number_status status = number_status::not_a_number;
  std::int64_t value = 0;
};

/// Converts the text of a JSON number of microseconds (`"1712195495519689.047"`,
/// `"12"`, `"-3.5e2"`) to integer nanoseconds exactly, working on the decimal digits:
/// no binary floating point is involved, so `ts` values of 16 integer digits with ns
/// fractions keep every digit. Digits finer than a nanosecond round half away from
/// zero. Trailing whitespace is ignored.
///
///     us_text_to_ns("1.2345").value == 1235;
inline ns_result us_text_to_ns(std::string_view s) noexcept {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  ns_result r;
  // Fast path: [-]digits[.digits] with at most 3 decimals and 16 integer digits (every
  // Kineto timestamp); anything else goes through the general decimal reader below.
  {
    std::size_t j = 0;
    const bool minus = !s.empty() && s[0] == '-';
    if (minus) ++j;
    std::uint64_t v = 0; // at most 19 digits: fits
    std::size_t int_digits = 0, frac_digits = 0;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9' && int_digits < 16) { v = v * 10 + std::uint64_t(s[j] - '0'); ++j; ++int_digits; }
    bool ok = int_digits > 0;
    if (ok && j < s.size() && s[j] == '.') {
      ++j;
      while (j < s.size() && s[j] >= '0' && s[j] <= '9' && frac_digits < 3) { v = v * 10 + std::uint64_t(s[j] - '0'); ++j; ++frac_digits; }
      ok = frac_digits > 0;
    }
    if (ok && j == s.size()) {
      for (; frac_digits < 3; ++frac_digits) v *= 10;
      if (v <= std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
        r.status = number_status::ok;
        r.value = minus ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
        return r;
      }
    }
  }
  std::size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) { neg = s[i] == '-'; ++i; }
  if (i < s.size() && (s[i] == 'N' || s[i] == 'I' || s[i] == 'n' || s[i] == 'i')) {
    r.status = number_status::not_finite;
    return r;
  }
  // Significant digits (leading zeros dropped) and the position of the decimal point
  // relative to them: value = 0.d1d2d3... * 10^point.
  constexpr int max_digits = 40;
  char digits[max_digits];
  int nd = 0;            // stored significant digits
  long point = 0;        // digits before the decimal point, counted from the first significant one
  bool any = false, seen_dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (nd == 0 && c == '0') {
        if (seen_dot) --point; // 0.00ddd: the point moves left
        continue;
      }
      if (nd < max_digits) digits[nd++] = c; // later digits are far below a nanosecond
      if (!seen_dot) ++point;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!any) return r;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) { eneg = s[i] == '-'; ++i; }
    long e = 0;
    bool edig = false;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      edig = true;
      if (e < 100000) e = e * 10 + (s[i] - '0');
    }
    if (!edig) return r;
    point += eneg ? -e : e;
  }
  if (i != s.size()) return r;
  r.status = number_status::ok;
  if (nd == 0) { r.value = 0; return r; }
  // Nanoseconds: the integer formed by the digits up to position point + 3.
  const long keep = point + 3;
  if (keep > 19) { r.status = number_status::out_of_range; return r; }
  std::uint64_t v = 0;
  for (long k = 0; k < keep; ++k) v = v * 10 + std::uint64_t(k < nd ? digits[k] - '0' : 0);
  bool round_up = false;
  if (keep >= 0 && keep < nd) round_up = digits[keep] >= '5';
  if (round_up) ++v;
  const std::uint64_t limit = std::uint64_t(std::numeric_limits<std::int64_t>::max()) + (neg ? 1 : 0);
  if (v > limit) { r.status = number_status::out_of_range; return r; }
  r.value = neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
  return r;
}

} // namespace daydream::io::detail

#endif
