// Defines io::detail::decode_kineto: one pass of simdjson On-Demand over a Kineto trace into compact event tables.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_DECODE_HPP
#define DAYDREAM_IO_DETAIL_KINETO_DECODE_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/decimal.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/task.hpp>

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

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

/// A decoding failure inside one event, turned into daydream::error by the caller.
struct decode_failure {
  std::string reason;
};

/// One JSON value as a pid/tid: a number or a string.
struct id_value {
  std::int64_t num = 0;
  std::string_view str;
  std::string_view text; ///< as the trace writes it (a number's digits, a string's contents)
  bool is_string = false;
  bool present = false;
};

/// The fields of one event, before classification.
struct raw_event {
  std::string_view ph, cat, name;
  std::string_view ts_text, dur_text;
  id_value pid, tid;
  bool has_id = false;
  std::int64_t id = 0;
  // args
  bool has_args = false;
  std::int64_t correlation = -1, seq = -1, device = -1, bytes = -1;
  bool has_stream = false;
  std::int64_t stream = -1;
  std::string_view input_dims, input_types, collective, dtype, sync_kind;
  std::string_view pg_name, pg_ranks; // process group of a collective (record_param_comms)
  std::int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  bool has_mem_bytes = false;
  std::int64_t mem_bytes = 0, total_allocated = -1, device_type = -1, device_id = -1;
  std::int64_t wait_stream = -1, wait_record = -1;
};

using simdjson::ondemand::json_type;

/// `k == lit` for a string literal, with a fixed-size comparison the compiler inlines.
template <std::size_t N> inline bool is(std::string_view k, const char (&lit)[N]) noexcept {
  return k.size() == N - 1 && __builtin_memcmp(k.data(), lit, N - 1) == 0;
}

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

/// The decoder: owns nothing but the parse state; results go to `out`. It reads either a
/// whole document (run) or, when the trace is streamed, the windows of `traceEvents`
/// (window) and then the rest of the document with that array left empty (run again).
class kineto_decoder {
public:
  /// `input_size`: the size of the input as the user has it, named as its end in errors.
  kineto_decoder(std::string_view source, decoded_trace& out, std::size_t input_size)
      : source_(source), input_size_(input_size), out_(out) {}

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

  /// Reserves the event tables for an input of `bytes` bytes of JSON.
  void reserve_for(std::size_t bytes) {
    // Kineto events average 200-300 bytes: reserve for the common categories up front.
    const std::size_t guess = bytes / 400;
    out_.cpu.reserve(guess);
    out_.gpu.reserve(guess / 4);
    out_.flows.reserve(guess / 2);
  }

  /// Events decoded so far.
  std::size_t events_seen() const noexcept { return index_; }

  /// Decodes one window of a streamed traceEvents array: `json` is `[` followed by whole
  /// events and `]` (set_text names where its bytes are in the input).
  void window(simdjson::ondemand::parser& parser, simdjson::padded_string_view json) {
    simdjson::ondemand::document doc;
    if (auto err = parser.iterate(json).get(doc)) syntax(err, nullptr);
    simdjson::ondemand::array arr;
    if (auto err = doc.get_array().get(arr)) syntax(err, &doc);
    events(arr, doc);
    out_.events = index_;
  }

  /// The strings given ids so far (string pids and tids, string flow ids), in the order
  /// they were first seen: id k is the k-th.
  std::vector<std::string_view> string_ids_in_order() const {
    std::vector<std::string_view> v(string_ids_.size());
    for (const auto& [s, id] : string_ids_) v[static_cast<std::size_t>(id - string_id_base)] = s;
    return v;
  }

  /// Appends the events of `part`, which another decoder decoded from the window of
  /// events that follows everything decoded here, as if this decoder had decoded them:
  /// event numbers, threads, argument records and string ids go on from where they are
  /// here, in the same order (`part_ids`: that decoder's string_ids_in_order). The
  /// strings of `part` must live as long as the output (the caller keeps their pool).
  /// `part` is left empty, its tables' memory kept.
  void absorb(decoded_trace& part, const std::vector<std::string_view>& part_ids) {
    // Ids in the order the strings were first seen, as a decoder of the whole text
    // gives them: those new here follow, in the part's order.
    std::vector<std::int64_t> id_map(part_ids.size());
    for (std::size_t k = 0; k < part_ids.size(); ++k) id_map[k] = string_id(part_ids[k]);
    auto id = [&](std::int64_t v) {
      const std::uint64_t k = std::uint64_t(v) - std::uint64_t(string_id_base);
      return k < id_map.size() ? id_map[k] : v;
    };
    std::vector<std::uint32_t> thread_map(part.threads.size());
    for (std::size_t k = 0; k < part.threads.size(); ++k) {
      const pidtid key{id(part.threads[k].pid), id(part.threads[k].tid)};
      auto [it, fresh] = thread_index_.try_emplace(key, static_cast<std::uint32_t>(out_.threads.size()));
      if (fresh) {
        out_.threads.push_back(key);
        out_.thread_labels.push_back(part.thread_labels[k]);
      }
      thread_map[k] = it->second;
    }
    const auto first = static_cast<std::uint32_t>(index_);
    const auto meta0 = static_cast<std::uint32_t>(out_.metas.size());
    auto meta = [meta0](std::uint32_t m) { return m == no_index ? m : m + meta0; };
    for (auto e : part.cpu) {
      e.index += first;
      e.thread = thread_map[e.thread];
      e.meta = meta(e.meta);
      out_.cpu.push_back(e);
    }
    for (auto e : part.gpu) {
      e.index += first;
      e.meta = meta(e.meta);
      out_.gpu.push_back(e);
    }
    for (auto e : part.flows) {
      e.index += first;
      e.id = id(e.id);
      e.where = {id(e.where.pid), id(e.where.tid)};
      e.stream = id(e.stream);
      out_.flows.push_back(e);
    }
    for (auto e : part.memory) {
      e.index += first;
      e.thread = thread_map[e.thread];
      out_.memory.push_back(e);
    }
    for (auto e : part.syncs) {
      e.index += first;
      out_.syncs.push_back(e);
    }
    out_.metas.insert(out_.metas.end(), part.metas.begin(), part.metas.end());
    for (const auto& [why, n] : part.ignored) out_.ignored[why] += n;
    index_ += part.events;
    out_.events = index_;
    part.cpu.clear();
    part.gpu.clear();
    part.flows.clear();
    part.memory.clear();
    part.syncs.clear();
    part.metas.clear();
    part.threads.clear();
    part.thread_labels.clear();
    part.ignored.clear();
    part.events = 0;
  }

  /// Reports a syntax error `err` found outside simdjson at input byte `at`, in the
  /// current event when `in_event`.
  [[noreturn]] void syntax_at(simdjson::error_code err, std::size_t at, bool in_event) {
    in_event_ = in_event;
    std::string what = simdjson::error_message(err);
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::UNCLOSED_STRING) {
      throw error("daydream: " + std::string(source_) + ": byte " + std::to_string(input_size_) +
                  " (the end of the input): JSON syntax error: " + what + " (is the file truncated?)");
    }
    std::string where = "byte " + std::to_string(at);
    if (in_event_) where += " (in event #" + std::to_string(index_) + ")";
    throw error("daydream: " + std::string(source_) + ": " + where + ": JSON syntax error: " + what);
  }

  /// Decodes a whole document; with `streamed`, its traceEvents array (or, for the
  /// array form, the document) was decoded window by window and is empty here. Throws
  /// daydream::error naming the source and the byte offset (syntax) or the event index
  /// (content).
  void run(simdjson::ondemand::parser& parser, simdjson::padded_string_view json, bool streamed = false) {
    using namespace simdjson;
    ondemand::document doc;
    if (auto err = parser.iterate(json).get(doc)) syntax(err, nullptr);
    ondemand::json_type top;
    if (auto err = doc.type().get(top)) syntax(err, &doc);
    if (top == json_type::array) {
      // The JSON Array Format of Chrome traces (older Kineto and other tools): the
      // events themselves, with no metadata around them.
      ondemand::array arr;
      if (auto err = doc.get_array().get(arr)) syntax(err, &doc);
      if (!streamed) events(arr, doc);
      out_.events = index_;
      return;
    }
    if (top != json_type::object)
      fail_doc(std::string("the top-level JSON value is ") + std::string(type_name(top)) +
               ", not an object with a \"traceEvents\" array nor an array of events");
    ondemand::object root;
    if (auto err = doc.get_object().get(root)) syntax(err, &doc);
    bool seen_events = false;
    for (auto field_r : root) {
      ondemand::field field;
      if (auto err = std::move(field_r).get(field)) syntax(err, &doc);
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) syntax(err, &doc);
      ondemand::value v = field.value();
      if (key == "traceEvents") {
        if (seen_events) fail_doc("\"traceEvents\" appears twice");
        seen_events = true;
        json_type t;
        if (auto err = v.type().get(t)) syntax(err, &doc);
        if (t != json_type::array)
          fail_doc("\"traceEvents\" is " + std::string(type_name(t)) + ", not an array");
        ondemand::array arr;
        if (auto err = v.get_array().get(arr)) syntax(err, &doc);
        if (!streamed) events(arr, doc); // else decoded already, and empty here
        streamed = false;                // a second one is refused above
      } else if (key == "distributedInfo") {
        json_type t;
        if (!v.type().get(t) && t == json_type::object) distributed(v, doc);
      } else if (key == "deviceProperties") {
        json_type t;
        if (!v.type().get(t) && t == json_type::array) devices(v, doc);
      }
    }
    if (!seen_events) fail_doc("no \"traceEvents\" array (is this a Kineto / PyTorch profiler trace?)");
    out_.events = index_;
  }

private:
  /// The input byte of text byte `k`.
  std::size_t input_byte(std::size_t k) const noexcept {
    if (k > gap_at_) k += gap_len_;
    return static_cast<std::size_t>(static_cast<std::int64_t>(k) + shift_);
  }
  std::string offset(const char* loc) const {
    return loc ? std::to_string(input_byte(static_cast<std::size_t>(loc - base_))) : std::string("?");
  }
  [[noreturn]] void syntax(simdjson::error_code err, simdjson::ondemand::document* doc) const {
    const char* loc = nullptr;
    if (doc && doc->current_location().get(loc)) loc = nullptr;
    std::string where = loc ? "byte " + offset(loc) : std::string("byte ?");
    // These are found before any value is read (no location yet, or the document's
    // start): the place to name is the end of the input, or the first bad byte.
    if (err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || err == simdjson::UNCLOSED_STRING)
      where = "byte " + std::to_string(input_size_) + " (the end of the input)";
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
  [[noreturn]] void fail_doc(const std::string& why) const {
    throw error("daydream: " + std::string(source_) + ": " + why);
  }
  [[noreturn]] void fail_event(const std::string& why) const {
    throw error("daydream: " + std::string(source_) + ": event #" + std::to_string(index_) + ": " + why);
  }

  void distributed(simdjson::ondemand::value v, simdjson::ondemand::document& doc) {
    simdjson::ondemand::object o;
    if (v.get_object().get(o)) return;
    for (auto f_r : o) {
      simdjson::ondemand::field f;
      if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
      std::string_view k;
      if (auto err = f.unescaped_key().get(k)) syntax(err, &doc);
      auto val = f.value();
      std::int64_t n = 0;
      if (is(k, "rank")) { if (read_int(val, n)) out_.rank = static_cast<std::int32_t>(n); }
      else if (is(k, "world_size")) { if (read_int(val, n)) out_.world_size = static_cast<std::int32_t>(n); }
      else if (is(k, "backend")) {
        std::string_view s;
        if (!val.get_string().get(s)) out_.backend = std::string(s);
      }
    }
  }

  void devices(simdjson::ondemand::value v, simdjson::ondemand::document& doc) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a)) return;
    for (auto el_r : a) {
      simdjson::ondemand::value el;
      if (auto err = std::move(el_r).get(el)) syntax(err, &doc);
      simdjson::ondemand::object o;
      if (el.get_object().get(o)) continue;
      for (auto f_r : o) {
        simdjson::ondemand::field f;
        if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
        std::string_view k;
        if (auto err = f.unescaped_key().get(k)) syntax(err, &doc);
        if (is(k, "name")) {
          std::string_view s;
          if (!f.value().get_string().get(s)) out_.gpus.emplace_back(s);
        }
      }
    }
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
  /// else simdjson's unescaped copy. What the tables keep goes through keep().
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

  static std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }

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

  void args(simdjson::ondemand::value& v, raw_event& e, simdjson::ondemand::document& doc) {
    json_type t;
    if (auto err = v.type().get(t)) syntax(err, &doc);
    if (t != json_type::object) fail_event("field 'args' must be an object, not " + std::string(type_name(t)));
    simdjson::ondemand::object o;
    if (auto err = v.get_object().get(o)) syntax(err, &doc);
    e.has_args = true;
    for (auto f_r : o) {
      simdjson::ondemand::field f;
      if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
      std::string_view k = key_of(f, doc);
      simdjson::ondemand::value val = f.value();
      auto as_int = [&](std::int64_t& dst) { std::int64_t n; if (read_int(val, n)) dst = n; };
      auto as_str = [&](std::string_view& dst) {
        json_type vt;
        if (!val.type().get(vt) && vt == json_type::string) {
          if (auto err = get_text(val, dst)) syntax(err, &doc);
        }
      };
      auto as_raw = [&](std::string_view& dst) {
        json_type vt;
        if (!val.type().get(vt) && vt == json_type::array) {
          simdjson::ondemand::array a;
          if (auto err = val.get_array().get(a)) syntax(err, &doc);
          if (auto err = a.raw_json().get(dst)) syntax(err, &doc);
        }
      };
      switch (k.size()) {
      case 5:
        if (is(k, "Bytes")) { std::int64_t n; if (read_int(val, n)) { e.mem_bytes = n; e.has_mem_bytes = true; } }
        else if (is(k, "bytes")) as_int(e.bytes); // gpu_memcpy / gpu_memset size
        else if (is(k, "dtype")) as_str(e.dtype);
        break;
      case 6:
        if (is(k, "stream")) { std::int64_t n; if (read_int(val, n)) { e.stream = n; e.has_stream = true; } }
        else if (is(k, "device")) as_int(e.device);
        break;
      case 10:
        if (is(k, "Input Dims") || is(k, "Input dims")) as_raw(e.input_dims);
        else if (is(k, "Input type")) as_raw(e.input_types);
        else if (is(k, "Group size")) as_int(e.group_size);
        break;
      case 5 + 6:
        if (is(k, "correlation")) as_int(e.correlation);
        else if (is(k, "Device Type")) as_int(e.device_type);
        break;
      case 9: if (is(k, "Device Id")) as_int(e.device_id); break;
      case 13: if (is(k, "In msg nelems")) as_int(e.in_nelems); break;
      case 14:
        if (is(k, "Out msg nelems")) as_int(e.out_nelems);
        else if (is(k, "cuda_sync_kind")) as_str(e.sync_kind);
        else if (is(k, "wait_on_stream")) as_int(e.wait_stream);
        break;
      case 15:
        if (is(k, "Sequence number")) as_int(e.seq);
        else if (is(k, "Total Allocated")) as_int(e.total_allocated);
        else if (is(k, "Collective name")) as_str(e.collective);
        break;
      case 18: if (is(k, "Process Group Name")) as_str(e.pg_name); break;
      case 19:
        if (is(k, "Process Group Ranks")) { as_str(e.pg_ranks); as_raw(e.pg_ranks); } // "[0, 1]" or [0, 1]
        break;
      case 33: if (is(k, "wait_on_cuda_event_record_corr_id")) as_int(e.wait_record); break;
      default: break;
      }
    }
  }

  /// Whether the arguments of an event matter (ph, cat and name come first in Kineto's
  /// output; when they do not, every argument is read).
  static bool wants_args(const raw_event& e) noexcept {
    if (e.ph.empty() || e.cat.empty()) return true;
    switch (e.ph[0]) {
    case 'X': {
      auto c = classify_category(e.cat);
      return c != ecat::python_function && c != ecat::gpu_annotation && c != ecat::trace_span && c != ecat::other;
    }
    case 'i': case 'I': return e.name.empty() || e.name == "[memory]";
    default: return false;
    }
  }
  /// Checks that `args` is an object without reading it.
  void check_object(simdjson::ondemand::value& v, simdjson::ondemand::document& doc) {
    json_type t;
    if (auto err = v.type().get(t)) syntax(err, &doc);
    if (t != json_type::object) fail_event("field 'args' must be an object, not " + std::string(type_name(t)));
  }

  /// The pooled copy of a string the tables keep.
  std::string_view keep(std::string_view s) { return out_.strings.intern(s); }

  /// String ids count up from here: far from any id a trace writes as a number.
  static constexpr std::int64_t string_id_base = std::numeric_limits<std::int64_t>::min() / 2;
  std::int64_t string_id(std::string_view s) {
    auto it = string_ids_.find(s);
    if (it != string_ids_.end()) return it->second;
    std::int64_t id = string_id_base + std::int64_t(string_ids_.size());
    string_ids_.emplace(keep(s), id);
    return id;
  }
  std::int64_t id_of(const id_value& v) { return v.is_string ? string_id(v.str) : v.num; }

  std::uint32_t thread_of(const raw_event& e) {
    pidtid k{id_of(e.pid), id_of(e.tid)};
    if (have_last_ && k == last_key_) return last_thread_;
    auto [it, fresh] = thread_index_.try_emplace(k, static_cast<std::uint32_t>(out_.threads.size()));
    if (fresh) {
      out_.threads.push_back(k);
      out_.thread_labels.push_back({e.pid.present ? keep(e.pid.text) : "0", e.tid.present ? keep(e.tid.text) : "0"});
    }
    have_last_ = true;
    last_key_ = k;
    last_thread_ = it->second;
    return it->second;
  }

  time_ns to_ns(std::string_view text, const char* field) {
    auto r = us_text_to_ns(text);
    switch (r.status) {
    case number_status::ok: return r.value;
    case number_status::not_finite: fail_event(std::string("field '") + field + "' is not a finite number");
    case number_status::out_of_range:
      fail_event(std::string("field '") + field + "' (" + std::string(text) + " us) is out of range");
    case number_status::not_a_number: break;
    }
    fail_event(std::string("field '") + field + "' is not a number (" + std::string(text) + ")");
  }

  void ignore(const char* reason) { ++out_.ignored[reason]; }
  void ignore(std::string reason) { ++out_.ignored[std::move(reason)]; }

  std::uint32_t meta_of(const raw_event& e) {
    if (e.input_dims.empty() && e.collective.empty() && e.in_nelems < 0 && e.out_nelems < 0 &&
        e.group_size < 0 && e.dtype.empty() && e.pg_name.empty() && e.pg_ranks.empty())
      return no_index;
    out_.metas.push_back({keep(e.input_dims), keep(e.input_types), keep(e.collective), keep(e.dtype),
                          e.in_nelems, e.out_nelems, e.group_size, keep(e.pg_name), keep(e.pg_ranks)});
    return static_cast<std::uint32_t>(out_.metas.size() - 1);
  }

  void events(simdjson::ondemand::array& arr, simdjson::ondemand::document& doc) {
    for (auto el_r : arr) {
      in_event_ = true;
      simdjson::ondemand::value el;
      if (auto err = std::move(el_r).get(el)) syntax(err, &doc);
      json_type t;
      if (auto err = el.type().get(t)) syntax(err, &doc);
      if (t != json_type::object) fail_event("is " + std::string(type_name(t)) + ", not an object");
      simdjson::ondemand::object o;
      if (auto err = el.get_object().get(o)) syntax(err, &doc);
      raw_event e;
      bool has_ts = false, has_dur = false;
      for (auto f_r : o) {
        simdjson::ondemand::field f;
        if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
        std::string_view k = key_of(f, doc);
        simdjson::ondemand::value v = f.value();
        switch (k.size()) {
        case 2:
          if (is(k, "ph")) e.ph = read_string(v, "ph", doc);
          else if (is(k, "ts")) { e.ts_text = read_number_text(v, "ts", doc); has_ts = true; }
          else if (is(k, "id")) {
            std::int64_t n;
            if (read_int(v, n)) { e.id = n; e.has_id = true; }
            else {
              json_type it;
              if (!v.type().get(it) && it == json_type::string) {
                std::string_view s;
                if (auto err = v.get_string().get(s)) syntax(err, &doc);
                e.id = string_id(s);
                e.has_id = true;
              }
            }
          }
          break;
        case 3:
          if (is(k, "cat")) e.cat = read_string(v, "cat", doc);
          else if (is(k, "pid")) read_id(v, e.pid, "pid", doc);
          else if (is(k, "tid")) read_id(v, e.tid, "tid", doc);
          else if (is(k, "dur")) { e.dur_text = read_number_text(v, "dur", doc); has_dur = true; }
          break;
        case 4:
          if (is(k, "name")) {
            // a flow's or a metadata event's name is never used: do not unescape it
            const bool unused = e.ph.size() == 1 && (e.ph[0] == 's' || e.ph[0] == 'f' || e.ph[0] == 't' || e.ph[0] == 'M');
            if (!unused) e.name = read_string(v, "name", doc);
          }
          else if (is(k, "args")) { if (wants_args(e)) args(v, e, doc); else check_object(v, doc); }
          break;
        default: break;
        }
      }
      classify(e, has_ts, has_dur);
      ++index_;
      in_event_ = false;
    }
  }

  void classify(raw_event& e, bool has_ts, bool has_dur) {
    if (e.ph.empty()) fail_event("has no 'ph' field");
    const char ph = e.ph.size() == 1 ? e.ph[0] : '?';
    const std::uint32_t idx = static_cast<std::uint32_t>(index_);
    switch (ph) {
    case 'M': ignore("metadata"); return;
    case 'X': {
      if (!has_ts) fail_event("complete event ('X') without 'ts'");
      if (!has_dur) fail_event("complete event ('X') without 'dur'");
      time_ns ts = to_ns(e.ts_text, "ts");
      time_ns dur = to_ns(e.dur_text, "dur");
      if (dur < 0) fail_event("negative duration (dur = " + std::string(e.dur_text) + " us)");
      if (ts > std::numeric_limits<time_ns>::max() - dur) fail_event("'ts' + 'dur' is out of range");
      ecat c = classify_category(e.cat);
      if (is_cpu_category(c)) {
        cpu_event ce;
        ce.ts = ts; ce.dur = dur; ce.name = keep(e.name); ce.index = idx; ce.thread = thread_of(e);
        ce.correlation = e.correlation; ce.seq = e.seq; ce.meta = meta_of(e); ce.cat = c;
        out_.cpu.push_back(ce);
      } else if (is_gpu_category(c)) {
        gpu_event ge;
        ge.ts = ts; ge.dur = dur; ge.name = keep(e.name); ge.index = idx; ge.cat = c;
        std::int64_t dev = e.device;
        if (dev < 0) dev = e.pid.present && !e.pid.is_string ? e.pid.num : 0;
        std::int64_t st = e.stream;
        if (!e.has_stream) {
          if (e.tid.present && !e.tid.is_string) st = e.tid.num;
          else if (!e.tid.present || !trailing_integer(e.tid.str, st)) st = 0;
        }
        ge.device = static_cast<std::int32_t>(dev);
        ge.stream = static_cast<std::int32_t>(st);
        ge.correlation = e.correlation;
        ge.bytes = e.bytes > 0 ? static_cast<std::uint64_t>(e.bytes) : 0;
        ge.meta = meta_of(e);
        out_.gpu.push_back(ge);
      } else if (c == ecat::cuda_sync) {
        sync_event se;
        se.ts = ts; se.dur = dur; se.index = idx; se.correlation = e.correlation;
        se.stream = e.stream; se.wait_stream = e.wait_stream; se.record_correlation = e.wait_record;
        se.device = static_cast<std::int32_t>(e.device >= 0 ? e.device : 0);
        se.kind = keep(e.sync_kind.empty() ? e.name : e.sync_kind);
        out_.syncs.push_back(se);
      } else if (c == ecat::gpu_annotation) {
        ignore("gpu_user_annotation (the GPU-side span of a CPU annotation)");
      } else if (c == ecat::trace_span) {
        ignore("profiler span (cat \"Trace\")");
      } else if (c == ecat::launch_flow || c == ecat::fwdbwd_flow || c == ecat::cpu_instant) {
        ignore("complete event with a flow or instant category");
      } else {
        ignore("unknown category \"" + std::string(e.cat.substr(0, 40)) + "\"");
      }
      return;
    }
    case 'i': case 'I': {
      if (!has_ts) fail_event("instant event without 'ts'");
      time_ns ts = to_ns(e.ts_text, "ts");
      if (e.name == "[memory]") {
        if (!e.has_mem_bytes) { ignore("[memory] event without Bytes"); return; }
        memory_event m;
        m.ts = ts; m.bytes = e.mem_bytes; m.total = e.total_allocated; m.index = idx;
        m.thread = thread_of(e);
        m.device_type = static_cast<std::int32_t>(e.device_type);
        m.device_id = static_cast<std::int32_t>(e.device_id);
        out_.memory.push_back(m);
        return;
      }
      if (e.cat.empty()) ignore("profiler marker (instant event without category)");
      else ignore("instant event \"" + std::string(e.name.substr(0, 40)) + "\"");
      return;
    }
    case 's': case 'f': case 't': {
      ecat c = classify_category(e.cat);
      if (c != ecat::launch_flow && c != ecat::fwdbwd_flow) {
        ignore("flow of unknown category \"" + std::string(e.cat.substr(0, 40)) + "\"");
        return;
      }
      if (!has_ts) fail_event("flow event without 'ts'");
      if (!e.has_id) { ignore("flow without id"); return; }
      if (ph == 't') { ignore("flow step ('t')"); return; }
      flow_event fe;
      fe.ts = to_ns(e.ts_text, "ts");
      fe.id = e.id; fe.index = idx; fe.where = {id_of(e.pid), id_of(e.tid)}; fe.ph = ph; fe.cat = c;
      fe.stream = fe.where.tid;
      if (e.tid.is_string && !trailing_integer(e.tid.str, fe.stream)) fe.stream = fe.where.tid;
      out_.flows.push_back(fe);
      return;
    }
    case 'C': ignore("counter event"); return;
    case 'B': case 'E': ignore("begin/end pair event (not written by Kineto)"); return;
    default: ignore("unsupported phase \"" + std::string(e.ph.substr(0, 8)) + "\""); return;
    }
  }

  std::string_view source_;
  std::size_t input_size_;
  decoded_trace& out_;
  const char* base_ = nullptr;
  std::size_t doc_size_ = 0;
  std::int64_t shift_ = 0;
  std::size_t gap_at_ = std::size_t(-1), gap_len_ = 0;
  std::size_t index_ = 0;
  bool in_event_ = false;
  std::unordered_map<std::string_view, std::int64_t> string_ids_;
  std::unordered_map<pidtid, std::uint32_t, pidtid_hash> thread_index_;
  bool have_last_ = false;
  pidtid last_key_;
  std::uint32_t last_thread_ = 0;
};
//! @endcond

/// Decodes the Kineto trace in `json` (padded) into `out`. `source` names it in errors.
/// The string views in `out` point into `out.strings`: neither `json` nor the parser
/// need outlive `out` (kineto_stream.hpp decodes a file a window at a time).
/// `input_size` is the size of the input as the user has it, named as its end in errors
/// (a JSON array left open is decoded with its `]` appended).
inline void decode_kineto(simdjson::ondemand::parser& parser, simdjson::padded_string_view json,
                          std::string_view source, decoded_trace& out,
                          std::size_t input_size = std::size_t(-1)) {
  if (json.size() == 0) throw error("daydream: " + std::string(source) + ": empty file");
  kineto_decoder d(source, out, std::min(json.size(), input_size));
  d.set_text(json.data(), std::min(json.size(), input_size));
  d.reserve_for(json.size());
  d.run(parser, json);
}

} // namespace daydream::io::detail

#endif
