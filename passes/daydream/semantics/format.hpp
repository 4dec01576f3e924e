// Defines format_time, format_bytes and format_bytes_per_iteration, the number formatting of the bundled passes' reports.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_FORMAT_HPP
#define DAYDREAM_SEMANTICS_FORMAT_HPP

#include <daydream/task.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>

namespace daydream::passes {

/// A duration for people to read, with three significant digits and a unit:
/// `format_time(850)` is "850 ns", `format_time(3'214'000)` is "3.21 ms".
inline std::string format_time(time_ns ns) {
  char buf[48];
  const double v = double(ns), a = std::fabs(v);
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", v);
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.3g us", v / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.3g ms", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3g s", v / 1e9);
  return buf;
}

/// A byte count for people to read, in decimal units: `format_bytes(12.3e6)` is "12.3 MB".
inline std::string format_bytes(double bytes) {
  char buf[48];
  const double a = std::fabs(bytes);
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.3g kB", bytes / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.3g MB", bytes / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3g GB", bytes / 1e9);
  return buf;
}

/// Bytes a pass moved over `iterations` iterations, with the share of one when there are
/// several: `format_bytes_per_iteration(11.7e9, 2)` is "11.7 GB (5.85 GB per iteration, 2
/// iterations)", against which a per-step peak reads.
inline std::string format_bytes_per_iteration(double bytes, std::size_t iterations) {
  if (iterations <= 1) return format_bytes(bytes);
  return format_bytes(bytes) + " (" + format_bytes(bytes / double(iterations)) + " per iteration, " +
         std::to_string(iterations) + " iterations)";
}

} // namespace daydream::passes

#endif
