// Defines io::detail::kineto_json_reader: the JSON values of a Kineto trace read with simdjson On-Demand, and errors that say where they are.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_JSON_READER_HPP
#define DAYDREAM_IO_DETAIL_KINETO_JSON_READER_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/json_text.hpp>

#include <simdjson.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL
/// One JSON value as a pid/tid: a number or a string.
struct id_value {
  std::int64_t num = 0;
  std::string_view str;
  std::string_view text; ///< as the trace writes it (a number's digits, a string's contents)
  bool is_string = false;
  bool present = false;
};

using simdjson::ondemand::json_type;

/// `k == lit` for a string literal, with a fixed-size comparison the compiler inlines.
template <std::size_t N> inline bool is(std::string_view k, const char (&lit)[N]) noexcept {
  return k.size() == N - 1 && __builtin_memcmp(k.data(), lit, N - 1) == 0;
}

/// A JSON type as an error names it ("an array").
inline std::string_view type_name(json_type t) noexcept {
  switch (t) {
  case json_type::array: return "an array";
  case json_type::object: return "an object";
  case json_type::number: return "a number";
  case json_type::string: return "a string";
  case json_type::boolean: return "a boolean";
  case json_type::null: return "null";
  }
  return "?";
}

/// Reads the values of a Kineto trace's JSON text and reports what is wrong with it as
/// daydream::error naming the source: a syntax error by the input byte it is at (the
/// text read may be a window of the input, or the input without its events), a content
/// error by the number of the event it is in. The decoder is built on it
/// (kineto_table_writer, kineto_decoder).
class kineto_json_reader {
public:
  /// `input_size`: the size of the input as the user has it, named as its end in errors.
  kineto_json_reader(std::string_view source, std::size_t input_size) : source_(source), input_size_(input_size) {}

  /// The text decoded next: `size` bytes at `base`, whose byte k is byte `shift + k` of
  /// the input, except that the `gap_len` bytes of the input after text byte `gap_at`
  /// are not in the text (the events of a streamed traceEvents array).
  void set_text(const char* base, std::size_t size, std::int64_t shift = 0,
                std::size_t gap_at = std::size_t(-1), std::size_t gap_len = 0) noexcept {
    base_ = base;
    doc_size_ = size;
    shift_ = shift;
    gap_at_ = gap_at;
    gap_len_ = gap_len;
  }

  /// Sets the size of the input, named as its end in errors.
  void set_input_size(std::size_t n) noexcept { input_size_ = n; }
  /// Sets how to learn the size of the input when an error names its end and the size
  /// is not known yet (compressed input, of which only a hint is known until its end).
  void set_input_end(std::function<std::size_t()> end) { input_end_ = std::move(end); }

  /// Events decoded so far.
  std::size_t events_seen() const noexcept { return index_; }

  /// Reports a syntax error `err` found outside simdjson at input byte `at`, in the
  /// current event when `in_event`.
  [[noreturn]] void syntax_at(simdjson::error_code err, std::size_t at, bool in_event) {
    in_event_ = in_event;
    std::string what = simdjson::error_message(err);
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::UNCLOSED_STRING) {
      throw error("daydream: " + std::string(source_) + ": byte " + std::to_string(input_end()) +
                  " (the end of the input): JSON syntax error: " + what + " (is the file truncated?)");
    }
    std::string where = "byte " + std::to_string(at);
    if (in_event_) where += " (in event #" + std::to_string(index_) + ")";
    throw error("daydream: " + std::string(source_) + ": " + where + ": JSON syntax error: " + what);
  }

protected:
  /// Reports simdjson's error `err` at the place `doc` has reached (unknown without it).
  [[noreturn]] void syntax(simdjson::error_code err, simdjson::ondemand::document* doc) const {
    const char* loc = nullptr;
    if (doc && doc->current_location().get(loc)) loc = nullptr;
    std::string where = loc ? "byte " + offset(loc) : std::string("byte ?");
    // These are found before any value is read (no location yet, or the document's
    // start): the place to name is the end of the input, or the first bad byte.
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::UNCLOSED_STRING)
      where = "byte " + std::to_string(input_end()) + " (the end of the input)";
    else if (err == simdjson::UTF8_ERROR)
      where = "byte " + std::to_string(input_byte(first_invalid_utf8({base_, doc_size_})));
    std::string what = simdjson::error_message(err);
    const char first = first_byte({base_, doc_size_});
    if (first != 0 && std::string_view("{[\"-0123456789tfn").find(first) == std::string_view::npos) {
      // Not a JSON document at all: say what it starts with, not that it was cut short.
      throw error("daydream: " + std::string(source_) + ": not a JSON document (it starts with " +
                  leading_bytes({base_, doc_size_}) + "; a Kineto trace starts with '{' or '['): " + what);
    }
    if ((first == '{' || first == '[' || first == 0) &&
        (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::TAPE_ERROR ||
         err == simdjson::UNCLOSED_STRING || err == simdjson::EMPTY))
      what += " (is the file truncated?)";
    if (in_event_) where += " (in event #" + std::to_string(index_) + ")";
    throw error("daydream: " + std::string(source_) + ": " + where + ": JSON syntax error: " + what);
  }
  /// Reports what is wrong with the document as a whole.
  [[noreturn]] void fail_doc(const std::string& why) const {
    throw error("daydream: " + std::string(source_) + ": " + why);
  }
  /// Reports what is wrong with the current event.
  [[noreturn]] void fail_event(const std::string& why) const {
    throw error("daydream: " + std::string(source_) + ": event #" + std::to_string(index_) + ": " + why);
  }

  /// Reads an integer-valued JSON value (number or numeric string).
  static bool read_int(simdjson::ondemand::value& v, std::int64_t& out) noexcept {
    json_type t;
    if (v.type().get(t)) return false;
    if (t == json_type::number) return parse_integer_text(v.raw_json_token(), out);
    if (t == json_type::string) {
      std::string_view s;
      if (v.get_string().get(s)) return false;
      return parse_integer_text(s, out);
    }
    return false;
  }

  /// Reads a string value into a view valid while the current event is decoded: the
  /// JSON text between its quotes when it has no escapes (the common case, no copy),
  /// else simdjson's unescaped copy. What the tables keep goes through kineto_table_writer::keep.
  simdjson::error_code get_text(simdjson::ondemand::value& v, std::string_view& out) {
    const std::string_view tok = trim(v.raw_json_token());
    if (tok.size() >= 2 && tok.front() == '"' && tok.back() == '"' &&
        tok.find('\\') == std::string_view::npos) {
      out = tok.substr(1, tok.size() - 2);
      return simdjson::SUCCESS;
    }
    std::string_view s;
    if (auto err = v.get_string().get(s)) return err;
    out = s;
    return simdjson::SUCCESS;
  }

  /// Reads a pid or tid, a number or a string, into `out` (`field` names it in errors).
  void read_id(simdjson::ondemand::value& v, id_value& out, const char* field,
               simdjson::ondemand::document& doc) {
    json_type t;
    if (auto err = v.type().get(t)) syntax(err, &doc);
    out.present = true;
    if (t == json_type::number) {
      out.text = trim(v.raw_json_token());
      if (!parse_integer_text(out.text, out.num)) {
        // an id above INT64_MAX (an unsigned pthread id): kept by its bits, named as written
        std::uint64_t u = 0;
        auto [p, ec] = std::from_chars(out.text.data(), out.text.data() + out.text.size(), u);
        if (ec != std::errc() || p != out.text.data() + out.text.size())
          fail_event(std::string("field '") + field + "' is not an integer (" + std::string(out.text) + ")");
        out.num = static_cast<std::int64_t>(u);
      }
    } else if (t == json_type::string) {
      if (auto err = get_text(v, out.str)) syntax(err, &doc);
      out.text = out.str;
      out.is_string = true;
    } else {
      fail_event(std::string("field '") + field + "' must be a number or a string, not " + std::string(type_name(t)));
    }
  }

  /// `s` without trailing JSON whitespace.
  static std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }

  /// Reads a string value (see get_text); `field` names it in errors.
  std::string_view read_string(simdjson::ondemand::value& v, const char* field,
                               simdjson::ondemand::document& doc) {
    std::string_view s;
    if (auto err = get_text(v, s)) {
      json_type t;
      if (err == simdjson::INCORRECT_TYPE && !v.type().get(t))
        fail_event(std::string("field '") + field + "' must be a string, not " + std::string(type_name(t)));
      syntax(err, &doc);
    }
    return s;
  }

  /// A field's key without unescaping it: Kineto's keys have no escapes, so the raw
  /// text up to the closing quote is the key (escaped keys take the slow path).
  std::string_view key_of(simdjson::ondemand::field& f, simdjson::ondemand::document& doc) {
    const char* p = f.key().raw();
    const char* q = p;
    while (*q != '"' && *q != '\\') ++q;
    if (*q == '"') return {p, static_cast<std::size_t>(q - p)};
    std::string_view k;
    if (auto err = f.unescaped_key().get(k)) syntax(err, &doc);
    return k;
  }

  /// The text of a finite number value, not converted; `field` names it in errors.
  std::string_view read_number_text(simdjson::ondemand::value& v, const char* field,
                                    simdjson::ondemand::document& doc) {
    auto tok = trim(v.raw_json_token());
    if (!tok.empty() && (tok[0] == 'N' || tok[0] == 'I' || tok.substr(0, 2) == "-I"))
      fail_event(std::string("field '") + field + "' is not a finite number (" + std::string(tok) + ")");
    json_type t;
    if (auto err = v.type().get(t)) syntax(err, &doc);
    if (t != json_type::number)
      fail_event(std::string("field '") + field + "' must be a number, not " + std::string(type_name(t)));
    return tok;
  }

  /// Checks that `args` is an object without reading it.
  void check_object(simdjson::ondemand::value& v, simdjson::ondemand::document& doc) {
    json_type t;
    if (auto err = v.type().get(t)) syntax(err, &doc);
    if (t != json_type::object) fail_event("field 'args' must be an object, not " + std::string(type_name(t)));
  }

  std::size_t index_ = 0;  ///< the number of the event being read (events read so far)
  bool in_event_ = false;  ///< a syntax error is in event index_

private:
  /// The input byte of text byte `k`.
  std::size_t input_byte(std::size_t k) const noexcept {
    if (k > gap_at_) k += gap_len_;
    return static_cast<std::size_t>(static_cast<std::int64_t>(k) + shift_);
  }
  /// The input byte of `loc` in the text, as an error names it ("?" without one).
  std::string offset(const char* loc) const {
    return loc ? std::to_string(input_byte(static_cast<std::size_t>(loc - base_))) : std::string("?");
  }
  /// The first byte that is not JSON whitespace, or 0.
  static char first_byte(std::string_view s) noexcept {
    for (char c : s)
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
    return 0;
  }
  /// The first bytes of `s` (from its first non-whitespace byte) for a message: up to 8,
  /// printable ASCII quoted, others in hex ("0x89 'P' 'N' 'G'").
  static std::string leading_bytes(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
      s.remove_prefix(1);
    std::string out;
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < s.size() && i < 8; ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (!out.empty()) out += ' ';
      if (c >= 0x21 && c < 0x7f && c != '\'') { out += '\''; out += char(c); out += '\''; }
      else { out += "0x"; out += hex[c >> 4]; out += hex[c & 15]; }
    }
    return out;
  }

  /// The size of the input, named as its end in errors.
  std::size_t input_end() const { return input_end_ ? input_end_() : input_size_; }

  std::string_view source_;
  std::size_t input_size_;
  std::function<std::size_t()> input_end_;
  const char* base_ = nullptr;
  std::size_t doc_size_ = 0;
  std::int64_t shift_ = 0;
  std::size_t gap_at_ = std::size_t(-1), gap_len_ = 0;
};
//! @endcond

} // namespace daydream::io::detail

#endif
