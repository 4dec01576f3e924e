// Defines io::json_escape and io::json_writer, the small JSON emitter behind daydream's outputs.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_JSON_WRITER_HPP
#define DAYDREAM_IO_JSON_WRITER_HPP

#include <daydream/detail/quote.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace daydream::io {

/// Appends `s` to `out` as a JSON string literal (quotes included). Bytes that are not
/// valid UTF-8 are replaced by U+FFFD so the output always parses.
inline void json_escape(std::string& out, std::string_view s) { daydream::detail::append_quoted(out, s); }

/// A minimal streaming JSON writer with deterministic output: objects keep the order
/// in which keys are written, numbers print in the shortest exact form.
///
///     json_writer w; w.begin_object(); w.key("makespan_us"); w.value(12.5); w.end_object();
class json_writer {
public:
  explicit json_writer(bool pretty = false) : pretty_(pretty) {}

  json_writer& begin_object() { open('{'); return *this; }
  json_writer& end_object() { close('}'); return *this; }
  json_writer& begin_array() { open('['); return *this; }
  json_writer& end_array() { close(']'); return *this; }
  json_writer& key(std::string_view k) {
    separate();
    json_escape(out_, k);
    out_ += pretty_ ? ": " : ":";
    after_key_ = true;
    return *this;
  }
  json_writer& value(std::string_view s) { separate(); json_escape(out_, s); return *this; }
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(const std::string& s) { return value(std::string_view(s)); }
  json_writer& value(bool b) { separate(); out_ += b ? "true" : "false"; return *this; }
  json_writer& null() { separate(); out_ += "null"; return *this; }
  template <class T>
    requires std::is_arithmetic_v<T>
  json_writer& value(T v) {
    separate();
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) out_ += "null";
      else fmt::format_to(std::back_inserter(out_), "{}", v);
    } else {
      fmt::format_to(std::back_inserter(out_), "{}", v);
    }
    return *this;
  }
  /// Writes `key: value` in one call.
  template <class T> json_writer& field(std::string_view k, const T& v) { key(k); return value(v); }
  /// Appends pre-formatted JSON text as one value.
  json_writer& raw(std::string_view json) { separate(); out_ += json; return *this; }

  const std::string& str() const noexcept { return out_; }
  std::string take() { return std::move(out_); }

private:
  void separate() {
    if (after_key_) { after_key_ = false; return; }
    if (!first_.empty()) {
      if (!first_.back()) out_.push_back(',');
      first_.back() = false;
      newline();
    }
  }
  void open(char c) {
    separate();
    out_.push_back(c);
    first_.push_back(true);
  }
  void close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_.push_back(c);
  }
  void newline() {
    if (!pretty_) return;
    out_.push_back('\n');
    out_.append(2 * first_.size(), ' ');
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
  bool pretty_;
};

} // namespace daydream::io

#endif
