// Defines the literals of sizes and times: 25_MiB, 4_KB, 1_GiB as bytes; 5_us, 1_ms as nanoseconds.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_UNITS_HPP
#define DAYDREAM_UNITS_HPP

#include <daydream/task.hpp>

#include <cstdint>
#include <limits>

namespace daydream {

//! @cond DAYDREAM_INTERNAL
namespace detail {
// `n` units of `scale`; a value that does not fit is no constant expression, so a literal
// too large for its type does not compile.
template <class T> consteval T scaled(unsigned long long n, unsigned long long scale) {
  if (n > static_cast<unsigned long long>(std::numeric_limits<T>::max()) / scale)
    throw "daydream: a size or time literal does not fit in its type";
  return static_cast<T>(n * scale);
}
template <class T> consteval T scaled(long double x, long double scale) {
  const long double v = x * scale + 0.5L; // rounded to the nearest unit
  if (!(v < static_cast<long double>(std::numeric_limits<T>::max())))
    throw "daydream: a size or time literal does not fit in its type";
  return static_cast<T>(v);
}
} // namespace detail
//! @endcond

/// Literals for the sizes and times passes are configured with, so that a pass reads as
/// its paper states it. Sizes are bytes (std::uint64_t): decimal (`_KB`, `_MB`, `_GB`, `_TB`,
/// powers of 1000, as network and storage sizes are given) and binary (`_KiB`, `_MiB`,
/// `_GiB`, `_TiB`, powers of 1024, as PyTorch's bucket_cap_mb and memory are). Times are
/// nanoseconds (time_ns): `_ns`, `_us`, `_ms`, `_s`. Each takes a whole or a decimal number
/// (`1.5_GiB`, rounded to the nearest byte); a value that does not fit does not compile.
///
///     using namespace daydream::literals;
///     auto d = daydream::passes::ddp{.cluster = c, .bucket_cap = 25_MiB, .first_bucket = 1_MiB};
///     auto h = daydream::passes::tensor_fusion{.cycle_time = 5_ms, .threshold = 64_MiB};
inline namespace literals {
/// Bytes.
consteval std::uint64_t operator""_B(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1); }
/// Kilobytes (10^3 bytes).
consteval std::uint64_t operator""_KB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1'000); }
/// Megabytes (10^6 bytes).
consteval std::uint64_t operator""_MB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1'000'000); }
/// Gigabytes (10^9 bytes).
consteval std::uint64_t operator""_GB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1'000'000'000); }
/// Terabytes (10^12 bytes).
consteval std::uint64_t operator""_TB(unsigned long long n) {
  return detail::scaled<std::uint64_t>(n, 1'000'000'000'000);
}
/// Kibibytes (2^10 bytes).
consteval std::uint64_t operator""_KiB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1ull << 10); }
/// Mebibytes (2^20 bytes).
consteval std::uint64_t operator""_MiB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1ull << 20); }
/// Gibibytes (2^30 bytes).
consteval std::uint64_t operator""_GiB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1ull << 30); }
/// Tebibytes (2^40 bytes).
consteval std::uint64_t operator""_TiB(unsigned long long n) { return detail::scaled<std::uint64_t>(n, 1ull << 40); }
/// Kilobytes, from a decimal number.
consteval std::uint64_t operator""_KB(long double x) { return detail::scaled<std::uint64_t>(x, 1e3L); }
/// Megabytes, from a decimal number.
consteval std::uint64_t operator""_MB(long double x) { return detail::scaled<std::uint64_t>(x, 1e6L); }
/// Gigabytes, from a decimal number.
consteval std::uint64_t operator""_GB(long double x) { return detail::scaled<std::uint64_t>(x, 1e9L); }
/// Terabytes, from a decimal number.
consteval std::uint64_t operator""_TB(long double x) { return detail::scaled<std::uint64_t>(x, 1e12L); }
/// Kibibytes, from a decimal number.
consteval std::uint64_t operator""_KiB(long double x) { return detail::scaled<std::uint64_t>(x, 1024.0L); }
/// Mebibytes, from a decimal number.
consteval std::uint64_t operator""_MiB(long double x) {
  return detail::scaled<std::uint64_t>(x, 1024.0L * 1024);
}
/// Gibibytes, from a decimal number.
consteval std::uint64_t operator""_GiB(long double x) {
  return detail::scaled<std::uint64_t>(x, 1024.0L * 1024 * 1024);
}
/// Tebibytes, from a decimal number.
consteval std::uint64_t operator""_TiB(long double x) {
  return detail::scaled<std::uint64_t>(x, 1024.0L * 1024 * 1024 * 1024);
}

/// Nanoseconds.
consteval time_ns operator""_ns(unsigned long long n) { return detail::scaled<time_ns>(n, 1); }
/// Microseconds, in nanoseconds.
consteval time_ns operator""_us(unsigned long long n) { return detail::scaled<time_ns>(n, 1'000); }
/// Milliseconds, in nanoseconds.
consteval time_ns operator""_ms(unsigned long long n) { return detail::scaled<time_ns>(n, 1'000'000); }
/// Seconds, in nanoseconds.
consteval time_ns operator""_s(unsigned long long n) { return detail::scaled<time_ns>(n, 1'000'000'000); }
/// Microseconds, from a decimal number, in nanoseconds.
consteval time_ns operator""_us(long double x) { return detail::scaled<time_ns>(x, 1e3L); }
/// Milliseconds, from a decimal number, in nanoseconds.
consteval time_ns operator""_ms(long double x) { return detail::scaled<time_ns>(x, 1e6L); }
/// Seconds, from a decimal number, in nanoseconds.
consteval time_ns operator""_s(long double x) { return detail::scaled<time_ns>(x, 1e9L); }
} // namespace literals

} // namespace daydream

#endif
