// Defines io::detail::parse_integer_text, trailing_integer and first_invalid_utf8: integers read from JSON text, and where its UTF-8 goes wrong.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_JSON_TEXT_HPP
#define DAYDREAM_IO_DETAIL_JSON_TEXT_HPP

#include <daydream/io/detail/decimal.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL
/// Parses an integer from a JSON number token or a string ("7", "-1", "0x7f", "3.0").
inline bool parse_integer_text(std::string_view s, std::int64_t& out) noexcept {
  // Fast path: a plain non-negative integer of up to 18 digits.
  if (!s.empty() && s.size() <= 18) {
    std::int64_t v = 0;
    std::size_t i = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
    if (i == s.size() && i > 0) { out = v; return true; }
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    std::uint64_t u = 0;
    auto [p, ec] = std::from_chars(b + 2, e, u, 16);
    if (ec != std::errc() || p != e) return false;
    out = static_cast<std::int64_t>(u);
    return true;
  }
  if (*b == '+') ++b;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec == std::errc() && p == e) { out = v; return true; }
  // A float or an exponent: round through the exact decimal reader (value * 1000 / 1000).
  auto r = us_text_to_ns(s);
  if (r.status != number_status::ok) return false;
  out = r.value >= 0 ? (r.value + 500) / 1000 : -((-r.value + 500) / 1000);
  return true;
}

/// Reads the trailing integer of a string such as "stream 7 " (legacy GPU tids).
inline bool trailing_integer(std::string_view s, std::int64_t& out) noexcept {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  std::size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  if (i == s.size()) return false;
  return parse_integer_text(s.substr(i), out);
}

/// The offset of the first byte of `s` that does not belong to valid UTF-8 (s.size() if
/// none): for the place named in an encoding error.
inline std::size_t first_invalid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const unsigned c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    std::size_t n = 0;   // continuation bytes
    unsigned least = 0;  // smallest code point of that length (no overlong forms)
    if (c >= 0xc2 && c <= 0xdf) { n = 1; least = 0x80; }
    else if ((c & 0xf0) == 0xe0) { n = 2; least = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; least = 0x10000; }
    else return i;
    if (s.size() - i <= n) return i;
    unsigned cp = c & (0x3fu >> n);
    for (std::size_t k = 1; k <= n; ++k) {
      const unsigned d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return i;
      cp = cp << 6 | (d & 0x3f);
    }
    if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return s.size();
}

//! @endcond

} // namespace daydream::io::detail

#endif
