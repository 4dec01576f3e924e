// Defines pass_report (what a pass tells its user, line by line with typed values), report_item, report_value and report_kind.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REPORT_HPP
#define DAYDREAM_REPORT_HPP

#include <daydream/config.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream {

/// What the typed value of a report line measures.
enum class report_kind : std::uint8_t {
  text,   ///< words only: the line's text is all there is
  count,  ///< how many (tasks, kernels, buckets, layers)
  time,   ///< nanoseconds
  bytes,  ///< bytes
  rate,   ///< bytes per second (a bandwidth, a memory throughput)
  ratio,  ///< a plain number: a factor, a share (0.25 for 25%), a cost per byte
  change, ///< a before -> after pair of one of the kinds above (report_value::unit)
};

/// The name of a report kind ("count"); "?" for a value out of range.
inline constexpr std::string_view to_string(report_kind k) noexcept {
  constexpr std::string_view names[] = {"text", "count", "time", "bytes", "rate", "ratio", "change"};
  const auto i = static_cast<unsigned>(k);
  return i < std::size(names) ? names[i] : std::string_view("?");
}

/// The typed value of a report line, to read without parsing its text: a count, a time,
/// bytes, a rate, a ratio, a before -> after pair of one of them, or nothing but text.
/// A line about several things ("2 kernels, 360 ns -> 120 ns") also says how many
/// (`count`).
///
///     auto v = report.at("compute_bound").value;   // amp: "2 kernels, 360 ns -> 120 ns"
///     // v.kind == report_kind::change, v.unit == report_kind::time
///     // v.before == 360, v.value == 120, v.count == 2
struct report_value {
  report_kind kind = report_kind::text; ///< what `value` (and, for a change, `before`) hold
  /// The count, nanoseconds, bytes, bytes per second or ratio; for a change, the value
  /// after; 0 for text.
  double value = 0;
  double before = 0;                    ///< for a change: the value before
  report_kind unit = report_kind::text; ///< for a change: what `before` and `value` measure
  /// How many things the line is about: the count of a count line, the kernels of "2
  /// kernels, 360 ns -> 120 ns"; -1 when the line gives no number of things.
  std::int64_t count = -1;

  /// Text only.
  static constexpr report_value of_text() noexcept { return {}; }
  /// A count.
  static constexpr report_value of_count(std::int64_t n) noexcept {
    return {report_kind::count, double(n), 0, report_kind::text, n};
  }
  /// A time in nanoseconds.
  static constexpr report_value of_time(double ns) noexcept { return {report_kind::time, ns}; }
  /// A number of bytes.
  static constexpr report_value of_bytes(double bytes) noexcept { return {report_kind::bytes, bytes}; }
  /// A rate in bytes per second.
  static constexpr report_value of_rate(double bytes_per_s) noexcept { return {report_kind::rate, bytes_per_s}; }
  /// A plain number: a factor, a share, a cost per unit.
  static constexpr report_value of_ratio(double x) noexcept { return {report_kind::ratio, x}; }
  /// A change from `before` to `after`, both measuring `unit` (count, time, bytes, rate or ratio).
  static constexpr report_value of_change(report_kind unit, double before, double after) noexcept {
    return {report_kind::change, after, before, unit};
  }
  /// The same value, about `n` things.
  constexpr report_value with_count(std::int64_t n) const noexcept {
    report_value v = *this;
    v.count = n;
    return v;
  }
  /// Equal kinds and numbers.
  friend constexpr bool operator==(const report_value&, const report_value&) = default;
};

/// One line of a pass_report: its key, the text the programs print after it, and the
/// typed value the text says. Decomposes into key and text, so that `for (auto& [key,
/// text] : report.items)` reads the lines as the programs print them.
struct report_item {
  std::string key;    ///< what the line is about ("buckets per iteration")
  std::string text;   ///< what the programs print ("4", "1.20 ms -> 0.80 ms")
  report_value value; ///< the same, typed
  /// Element `I` of the decomposition: the key (0) or the text (1).
  template <std::size_t I> const std::string& get() const& noexcept {
    static_assert(I < 2, "daydream::report_item decomposes into its key and its text");
    if constexpr (I == 0) return key;
    else return text;
  }
  /// Element `I` of the decomposition, to change it.
  template <std::size_t I> std::string& get() & noexcept {
    static_assert(I < 2, "daydream::report_item decomposes into its key and its text");
    if constexpr (I == 0) return key;
    else return text;
  }
  /// Element `I` of the decomposition of a temporary.
  template <std::size_t I> std::string&& get() && noexcept { return std::move(get<I>()); }
};

/// What a pass tells its user beyond the changed graph: counts, classes, warnings.
/// A pass whose call operator returns a pass_report gets it printed by daydream-whatif.
/// Each line has a key, the text printed after it and a typed value (report_value).
///
///     daydream::pass_report r{"amp", {}, {}};
///     r.add_count("GEMM kernels", 412);
///     r.add("GEMM time", "3.20 ms -> 1.10 ms", daydream::report_value::of_change(daydream::report_kind::time, 3.2e6, 1.1e6));
///     r.note("3 kernels could not be classified");
///     double after = r.at("GEMM time").value.value;   // 1.1e6 ns
struct pass_report {
  std::string pass;               ///< the pass's name
  std::vector<report_item> items; ///< ordered lines: key, printed text, typed value
  std::vector<std::string> notes; ///< warnings and caveats
  /// Whether the pass changed the graph. A pass that found nothing to do sets it false
  /// (with not_applied) so that its scenario says "no change" and why, not "1.00x".
  bool applied = true;
  std::string reason;                                     ///< why nothing changed, when !applied
  /// For a data-parallel scenario, the number of workers it models (0: not one). Programs
  /// report throughput across workers and scaling efficiency from it.
  std::int32_t workers = 0;
  /// Appends a `key: text` line with its typed value (text only when none is given).
  void add(std::string key, std::string text, report_value value = {}) {
    items.push_back({std::move(key), std::move(text), value});
  }
  /// Appends a count: the line `key: n`.
  void add_count(std::string key, std::int64_t n) { add(std::move(key), std::to_string(n), report_value::of_count(n)); }
  /// The line `key` (the first, if several), or nullptr when the report has none.
  [[nodiscard]] const report_item* find(std::string_view key) const noexcept {
    for (const auto& i : items)
      if (i.key == key) return &i;
    return nullptr;
  }
  /// The line `key` (the first, if several); throws daydream::error naming the key and the
  /// report's keys when there is none.
  [[nodiscard]] const report_item& at(std::string_view key) const {
    if (auto* i = find(key)) return *i;
    std::string keys;
    for (const auto& i : items) keys += (keys.empty() ? "" : ", ") + i.key;
    throw error("daydream: the report of pass '" + pass + "' has no line '" + std::string(key) + "' (it has: " +
                keys + ")");
  }
  /// The text of line `key` (the first, if several), or "" when the report has none.
  [[nodiscard]] std::string_view value(std::string_view key) const {
    auto* i = find(key);
    return i ? std::string_view(i->text) : std::string_view{};
  }
  /// Appends a warning or caveat.
  void note(std::string text) { notes.push_back(std::move(text)); }
  /// Marks the pass as having changed nothing, with the reason shown to the user.
  void not_applied(std::string why) {
    applied = false;
    reason = std::move(why);
  }
};

} // namespace daydream

//! @cond DAYDREAM_INTERNAL
// report_item decomposes into its key and its text (structured bindings).
namespace std {
template <> struct tuple_size<daydream::report_item> : integral_constant<size_t, 2> {};
template <size_t I> struct tuple_element<I, daydream::report_item> {
  using type = string;
};
} // namespace std
//! @endcond

#endif
