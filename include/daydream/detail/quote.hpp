// Defines detail::append_quoted: a string as a JSON string literal, for outputs and error messages.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_QUOTE_HPP
#define DAYDREAM_DETAIL_QUOTE_HPP

#include <cstddef>
#include <string>
#include <string_view>

namespace daydream::detail {

/// Appends `s` to `out` as a JSON string literal (quotes included): quotes, backslashes
/// and control characters escaped, bytes that are not valid UTF-8 replaced by U+FFFD.
/// The result is one printable line that always parses, whatever a trace put in a name
/// (a NUL in an error message would otherwise cut `what()` short).
inline void append_quoted(std::string& out, std::string_view s) {
  constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
    case '"': out += "\\\""; continue;
    case '\\': out += "\\\\"; continue;
    case '\n': out += "\\n"; continue;
    case '\r': out += "\\r"; continue;
    case '\t': out += "\\t"; continue;
    default: break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
      continue;
    }
    if (c < 0x80) { out.push_back(char(c)); continue; }
    // One UTF-8 sequence, validated.
    const std::size_t len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok) { out.append(s.substr(i, len)); i += len - 1; }
    else out += "\\ufffd";
  }
  out.push_back('"');
}

} // namespace daydream::detail

#endif
