// Defines the field readers of the DLC reader: numbers, names, nodes and op_ids, the lines of a text and its header block.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_DLC_FIELDS_HPP
#define DAYDREAM_IO_DETAIL_DLC_FIELDS_HPP

#include <daydream/config.hpp>
#include <daydream/io/dlc_record.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace daydream::io::detail::dlc {

//! @cond DAYDREAM_INTERNAL

inline constexpr std::int64_t max_length = std::int64_t(1) << 40;   // 1 TiB
inline constexpr std::int64_t max_d_time = std::int64_t(1) << 40;   // us, ~12.7 days
inline constexpr std::int64_t max_time_sec = std::int64_t(1) << 32; // year 2106
inline constexpr std::int64_t max_int32 = std::int64_t(1) << 31;
inline constexpr std::int32_t max_nodes = 1 << 16;
inline constexpr std::int64_t max_iteration = std::int64_t(1) << 28;

inline bool parse_int(std::string_view s, std::int64_t& v) {
  if (s.empty()) return false;
  const char* b = s.data();
  if (*b == '+') {
    ++b;
    if (s.size() < 2 || s[1] < '0' || s[1] > '9') return false;
  }
  auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

inline char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }
inline bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}
inline bool istarts(std::string_view a, std::string_view prefix) {
  return a.size() >= prefix.size() && iequal(a.substr(0, prefix.size()), prefix);
}

inline std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !space(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

inline std::optional<dlc_op> parse_op(std::string_view name) {
  for (int k = 0; k < 8; ++k)
    if (iequal(name, to_string(static_cast<dlc_op>(k)))) return static_cast<dlc_op>(k);
  if (istarts(name, "SendCom")) return dlc_op::setup;
  return std::nullopt;
}

/// `s0` -> W + 0, `w1` -> 1; -1 if malformed or out of range.
inline std::int32_t parse_node(std::string_view s, std::int32_t workers, std::int32_t servers) {
  if (s.size() < 2) return -1;
  std::int64_t k = 0;
  if (s[1] < '0' || s[1] > '9' || !parse_int(s.substr(1), k)) return -1;
  if (lower(s[0]) == 'w') return k < workers ? std::int32_t(k) : -1;
  if (lower(s[0]) == 's') return k < servers ? std::int32_t(workers + k) : -1;
  return -1;
}

/// `key-opnum-node` (with_key) or `opnum-node`.
inline bool parse_ref(std::string_view s, bool with_key, std::int32_t workers, std::int32_t servers, dlc_ref& r) {
  auto d1 = s.find('-', 0);
  if (with_key) {
    if (d1 == std::string_view::npos || d1 == 0) return false;
    if (!parse_int(s.substr(0, d1), r.key) || r.key < 0 || r.key >= max_int32) return false;
    s = s.substr(d1 + 1);
  } else {
    r.key = -1;
  }
  // The operation number may be negative (servers start at -2): split at the last '-'.
  auto d2 = s.rfind('-');
  if (d2 == std::string_view::npos || d2 == 0) return false;
  if (!parse_int(s.substr(0, d2), r.op_num) || r.op_num < -max_int32 || r.op_num >= max_int32) return false;
  r.peer = parse_node(s.substr(d2 + 1), workers, servers);
  return r.peer >= 0;
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  auto q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// The header keys of one line (`name:= value`).
inline void read_header(std::string_view line, dlc_header& h, const std::string& path) {
  auto t = tokens(line);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string_view k = t[i], v;
    auto p = k.find(":=");
    if (p == std::string_view::npos) continue;
    if (p + 2 < k.size()) v = k.substr(p + 2);
    else if (i + 1 < t.size()) v = t[i + 1];
    k = k.substr(0, p);
    auto count = [&](std::int32_t& out) {
      std::int64_t n = 0;
      if (!parse_int(v, n) || n < 1 || n > max_nodes)
        throw error("daydream: " + path + ": header: " + std::string(k) + ":= " + std::string(v) +
                    " is not a node count (1 to " + std::to_string(max_nodes) + ")");
      out = std::int32_t(n);
    };
    auto ids = [&](std::vector<std::int32_t>& out) {
      out.clear();
      std::size_t a = 0;
      while (a < v.size()) {
        auto b = v.find(',', a);
        if (b == std::string_view::npos) b = v.size();
        std::int64_t n = 0;
        if (b > a && parse_int(v.substr(a, b - a), n) && n >= 0 && n <= max_nodes * 2) out.push_back(std::int32_t(n));
        a = b + 1;
      }
    };
    if (iequal(k, "num_workers")) count(h.num_workers);
    else if (iequal(k, "num_servers")) count(h.num_servers);
    else if (iequal(k, "worker_hostname") || iequal(k, "hostname")) h.hostname = std::string(v);
    else if (iequal(k, "Worker_ID")) ids(h.worker_ids);
    else if (iequal(k, "Server_ID")) ids(h.server_ids);
  }
}

/// The lines of a text, each with its 1-based number.
using text_lines = std::vector<std::pair<std::size_t, std::string_view>>;

/// The lines of `text` (the last one possibly empty).
inline text_lines split_lines(std::string_view text) {
  text_lines lines;
  std::size_t a = 0, n = 1;
  while (a <= text.size()) {
    auto b = text.find('\n', a);
    if (b == std::string_view::npos) b = text.size();
    lines.emplace_back(n++, text.substr(a, b - a));
    if (b == text.size()) break;
    a = b + 1;
  }
  return lines;
}

/// Reads the header of `f` from every line before the first one that starts with a
/// number, and returns that line's index (lines.size() when none does). Throws
/// daydream::error for binary data before it or a header without both node counts.
inline std::size_t read_header_block(const text_lines& lines, dlc_file& f) {
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto t = tokens(lines[i].second);
    std::int64_t v = 0;
    if (!t.empty() && parse_int(t[0], v)) { first = i; break; }
    for (unsigned char c : lines[i].second)
      if ((c < 0x20 && c != '\t' && c != '\r' && c != '\v' && c != '\f') || c == 0x7f)
        throw error("daydream: " + f.path + ":" + std::to_string(lines[i].first) +
                    ": not a DLC trace: binary data before the first record");
    read_header(lines[i].second, f.header, f.path);
  }
  if (f.header.num_workers < 1 || f.header.num_servers < 1)
    throw error("daydream: " + f.path + ": not a DLC trace: no header with num_workers:= and num_servers:= " +
                "before the first record");
  return first;
}

//! @endcond

} // namespace daydream::io::detail::dlc

#endif
