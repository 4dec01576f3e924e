// What an in-process run of a program printed, read back: the text of a temporary file and
// the numbers of its JSON.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_PROGRAMS_CAPTURED_HPP
#define DAYDREAM_TESTS_PROGRAMS_CAPTURED_HPP

#include <simdjson.h>

#include <cstdio>
#include <string>

namespace programs_test {

/// The whole text written to `f` (a std::tmpfile), which it closes.
inline std::string slurp(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

/// A JSON number as a double, whichever of simdjson's three number types it parsed as.
inline double num(simdjson::dom::element e) {
  if (e.is_int64()) return double(e.get_int64().value());
  if (e.is_uint64()) return double(e.get_uint64().value());
  return e.get_double().value();
}

} // namespace programs_test

#endif
