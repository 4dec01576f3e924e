// Defines the framing of Chakra execution traces (varint-length-prefixed protobuf messages) and attribute helpers.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_CHAKRA_WIRE_HPP
#define DAYDREAM_IO_DETAIL_CHAKRA_WIRE_HPP

#include <daydream/config.hpp>
#include <daydream/io/chakra/et_def.pb.h>
#include <daydream/io/detail/trace_reader.hpp>

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::io::detail::chakra {

namespace pb = ::ChakraProtoMsg;

/// One framed message: where its bytes are in the stream.
struct frame {
  std::size_t offset = 0; ///< byte of its length prefix
  std::string_view bytes; ///< the message
};

/// Largest message the reader accepts (protobuf's own limit is 2 GiB).
inline constexpr std::uint64_t max_message = std::uint64_t(1) << 30;

/// Reads the varint at `pos`; nullopt when the bytes end inside it. Throws for a varint
/// longer than 10 bytes.
inline std::optional<std::uint64_t> read_varint(std::string_view s, std::size_t& pos, const std::string& name) {
  std::uint64_t v = 0;
  const std::size_t start = pos;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= s.size()) return std::nullopt;
    const auto b = static_cast<unsigned char>(s[pos++]);
    v |= std::uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  throw error(name + ": byte " + std::to_string(start) +
              ": a length prefix longer than 10 bytes: not a Chakra execution trace (or a corrupt one)");
}

/// Cuts `s` into its length-prefixed messages. Throws daydream::error naming `name`, the
/// message and the byte for a length prefix cut off by the end of the data (a truncated
/// varint) and for a message longer than what remains (a truncated file).
inline std::vector<frame> frames(std::string_view s, const std::string& name) {
  std::vector<frame> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t at = pos;
    auto n = read_varint(s, pos, name);
    if (!n)
      throw error(name + ": byte " + std::to_string(at) + ": the length prefix (varint) of message " +
                  std::to_string(out.size()) + " is cut off by the end of the file: a truncated trace");
    if (*n > max_message || *n > s.size() - pos)
      throw error(name + ": byte " + std::to_string(at) + ": message " + std::to_string(out.size()) + " says it is " +
                  std::to_string(*n) + " bytes long, but " + std::to_string(s.size() - pos) +
                  " remain: a truncated trace");
    out.push_back({at, s.substr(pos, std::size_t(*n))});
    pos += std::size_t(*n);
  }
  return out;
}

/// Appends `v` as a varint.
inline void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

/// Appends `m` with its length prefix.
inline void put_message(std::string& out, const google::protobuf::MessageLite& m) {
  std::string body;
  if (!m.SerializeToString(&body)) throw error("daydream: write_chakra: cannot serialize a message");
  put_varint(out, body.size());
  out += body;
}

/// The bytes of a file (plain or gzip, by its magic bytes), at most `limit` of them.
inline std::string file_bytes(const std::filesystem::path& p, std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  auto r = trace_reader::open(p);
  std::string s;
  char buf[1 << 16];
  while (s.size() < limit) {
    const auto n = r.read(buf, std::min(sizeof buf, limit - s.size()));
    if (n == 0) break;
    s.append(buf, n);
  }
  return s;
}

/// `v` in the shortest text that reads back as the same double.
inline std::string fmt_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// ---- attributes ----

inline pb::AttributeProto& add_attr(google::protobuf::RepeatedPtrField<pb::AttributeProto>& a, std::string_view name) {
  auto* x = a.Add();
  x->set_name(std::string(name));
  return *x;
}
inline void attr_int(google::protobuf::RepeatedPtrField<pb::AttributeProto>& a, std::string_view name, std::int64_t v) {
  add_attr(a, name).set_int64_val(v);
}
inline void attr_bool(google::protobuf::RepeatedPtrField<pb::AttributeProto>& a, std::string_view name, bool v) {
  add_attr(a, name).set_bool_val(v);
}
inline void attr_string(google::protobuf::RepeatedPtrField<pb::AttributeProto>& a, std::string_view name,
                        std::string_view v) {
  add_attr(a, name).set_string_val(std::string(v));
}

/// The attribute `name` of `attrs`, or nullptr.
inline const pb::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs,
                                           std::string_view name) {
  for (auto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

/// An integer attribute, whichever integer field holds it, as a signed 64-bit value;
/// `unsigned_too_big` is set when it was an unsigned value above INT64_MAX. nullopt when
/// the attribute holds no integer.
inline std::optional<std::int64_t> int_value(const pb::AttributeProto& a, bool& unsigned_too_big) {
  using A = pb::AttributeProto;
  unsigned_too_big = false;
  auto from_u = [&](std::uint64_t u) -> std::int64_t {
    if (u > std::uint64_t(std::numeric_limits<std::int64_t>::max())) unsigned_too_big = true;
    return std::int64_t(u);
  };
  switch (a.value_case()) {
  case A::kInt32Val: return a.int32_val();
  case A::kInt64Val: return a.int64_val();
  case A::kUint32Val: return a.uint32_val();
  case A::kUint64Val: return from_u(a.uint64_val());
  case A::kSint32Val: return a.sint32_val();
  case A::kSint64Val: return a.sint64_val();
  case A::kFixed32Val: return a.fixed32_val();
  case A::kFixed64Val: return from_u(a.fixed64_val());
  case A::kSfixed32Val: return a.sfixed32_val();
  case A::kSfixed64Val: return a.sfixed64_val();
  case A::kBoolVal: return a.bool_val() ? 1 : 0;
  default: return std::nullopt;
  }
}

/// An integer attribute of `attrs` or `fallback`.
inline std::int64_t int_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, std::string_view name,
                             std::int64_t fallback) {
  bool big = false;
  if (auto* a = find_attr(attrs, name))
    if (auto v = int_value(*a, big)) return *v;
  return fallback;
}

/// A string attribute of `attrs`, or "".
inline std::string string_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, std::string_view name) {
  if (auto* a = find_attr(attrs, name)) {
    if (a->value_case() == pb::AttributeProto::kStringVal) return a->string_val();
    bool big = false;
    if (auto v = int_value(*a, big)) return std::to_string(*v);
  }
  return {};
}

} // namespace daydream::io::detail::chakra
//! @endcond

#endif
