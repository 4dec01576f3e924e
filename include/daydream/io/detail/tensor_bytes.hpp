// Defines io::detail::dtype_size and input_bytes: tensor sizes from the shapes and dtypes a profiler recorded.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_TENSOR_BYTES_HPP
#define DAYDREAM_IO_DETAIL_TENSOR_BYTES_HPP

#include <cstdint>
#include <limits>
#include <string_view>

namespace daydream::io::detail {

/// Bytes per element of a dtype as PyTorch profilers spell it: the C++ type names of
/// `Input type` ("float", "c10::Half", "long int", "unsigned char", ...) and the
/// ScalarType names of collective metadata ("Float", "BFloat16", "Long", "Byte", ...).
/// 0 for anything that is not a tensor element type ("Scalar", "TensorList", "").
inline std::uint32_t dtype_size(std::string_view t) noexcept {
  if (t.substr(0, 5) == "c10::") t.remove_prefix(5);
  if (t.substr(0, 6) == "torch.") t.remove_prefix(6);
  auto lower_eq = [&](std::string_view a) {
    if (a.size() != t.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      char c = t[i];
      if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      if (c != a[i]) return false;
    }
    return true;
  };
  struct entry { std::string_view name; std::uint32_t size; };
  static constexpr entry table[] = {
      {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8}, {"half", 2},
      {"float16", 2}, {"bfloat16", 2}, {"long int", 8}, {"long", 8}, {"int64", 8},
      {"long long", 8}, {"int64_t", 8}, {"int", 4}, {"int32", 4}, {"int32_t", 4},
      {"short int", 2}, {"short", 2}, {"int16", 2}, {"unsigned char", 1}, {"byte", 1},
      {"uint8", 1}, {"signed char", 1}, {"char", 1}, {"int8", 1}, {"bool", 1},
      {"complex<float>", 8}, {"complexfloat", 8}, {"complex64", 8},
      {"complex<double>", 16}, {"complexdouble", 16}, {"complex128", 16},
      {"complex<half>", 4}, {"complexhalf", 4}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
      {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1}, {"unsigned short", 2}, {"uint16", 2},
      {"unsigned int", 4}, {"uint32", 4}, {"unsigned long", 8}, {"uint64", 8},
  };
  for (auto& e : table)
    if (lower_eq(e.name)) return e.size;
  return 0;
}

//! @cond DAYDREAM_INTERNAL
/// A tiny cursor over the raw JSON text of `Input Dims` / `Input type` arrays.
struct json_cursor {
  std::string_view s;
  std::size_t i = 0;
  void ws() noexcept {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  bool eat(char c) noexcept {
    ws();
    if (i < s.size() && s[i] == c) { ++i; return true; }
    return false;
  }
  /// Skips one JSON value of any kind; false on malformed text.
  bool skip() noexcept {
    ws();
    if (i >= s.size()) return false;
    if (s[i] == '"') {
      for (++i; i < s.size(); ++i) {
        if (s[i] == '\\') { ++i; continue; }
        if (s[i] == '"') { ++i; return true; }
      }
      return false;
    }
    if (s[i] == '[' || s[i] == '{') {
      int depth = 0;
      bool in_str = false;
      for (; i < s.size(); ++i) {
        char c = s[i];
        if (in_str) {
          if (c == '\\') ++i;
          else if (c == '"') in_str = false;
          continue;
        }
        if (c == '"') in_str = true;
        else if (c == '[' || c == '{') ++depth;
        else if ((c == ']' || c == '}') && --depth == 0) { ++i; return true; }
      }
      return false;
    }
    while (i < s.size() && s[i] != ',' && s[i] != ']' && s[i] != '}') ++i;
    return true;
  }
};

/// Elements of one entry of `Input Dims`: `[2, 3]` -> 6, `[]` -> 1 (a 0-dim tensor),
/// `[[2], [3]]` (a tensor list) -> 5. Saturates instead of overflowing; false on
/// malformed text.
inline bool dims_elements(json_cursor& c, std::uint64_t& out) noexcept {
  if (!c.eat('[')) return c.skip() && (out = 0, true);
  c.ws();
  if (c.eat(']')) { out = 1; return true; }
  c.ws();
  if (c.i < c.s.size() && c.s[c.i] == '[') { // a list of tensors
    std::uint64_t sum = 0;
    do {
      std::uint64_t e = 0;
      if (!dims_elements(c, e)) return false;
      sum = sum > std::numeric_limits<std::uint64_t>::max() - e ? std::numeric_limits<std::uint64_t>::max() : sum + e;
    } while (c.eat(','));
    out = sum;
    return c.eat(']');
  }
  std::uint64_t prod = 1;
  do {
    c.ws();
    std::uint64_t d = 0;
    bool neg = false, digit = false;
    if (c.i < c.s.size() && c.s[c.i] == '-') { neg = true; ++c.i; }
    while (c.i < c.s.size() && c.s[c.i] >= '0' && c.s[c.i] <= '9') {
      digit = true;
      d = d > 100000000000000000ull ? d : d * 10 + std::uint64_t(c.s[c.i] - '0');
      ++c.i;
    }
    if (!digit) return false;
    if (neg) d = 0;
    prod = (d != 0 && prod > std::numeric_limits<std::uint64_t>::max() / d)
               ? std::numeric_limits<std::uint64_t>::max() : prod * d;
  } while (c.eat(','));
  out = prod;
  return c.eat(']');
}
//! @endcond

/// Bytes of the tensor inputs of an operator from the raw JSON text of its
/// `Input Dims` (`[[256, 512], [], [4]]`) and `Input type` (`["float", "Scalar",
/// "long int"]`) arguments: the sum over inputs of elements times element size, where
/// inputs whose type is no tensor element type count 0. 0 when either text is empty
/// or malformed.
///
///     input_bytes("[[256, 512]]", "[\"float\"]") == 524288;
inline std::uint64_t input_bytes(std::string_view dims, std::string_view types) noexcept {
  if (dims.empty() || types.empty()) return 0;
  json_cursor d{dims}, t{types};
  if (!d.eat('[') || !t.eat('[')) return 0;
  if (d.eat(']')) return 0;
  std::uint64_t total = 0;
  bool more_types = !t.eat(']');
  do {
    std::uint64_t elems = 0;
    if (!dims_elements(d, elems)) return 0;
    std::uint32_t size = 0;
    if (more_types) {
      t.ws();
      if (t.i < t.s.size() && t.s[t.i] == '"') {
        auto start = t.i + 1;
        if (!t.skip()) return 0;
        size = dtype_size(t.s.substr(start, t.i - 1 - start));
      } else if (!t.skip()) {
        return 0;
      }
      more_types = t.eat(',');
    }
    if (size != 0 && elems != 0) {
      std::uint64_t b = elems > std::numeric_limits<std::uint64_t>::max() / size
                            ? std::numeric_limits<std::uint64_t>::max() : elems * size;
      total = total > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : total + b;
    }
  } while (d.eat(','));
  return d.eat(']') ? total : 0;
}

} // namespace daydream::io::detail

#endif
