// Defines pass_params (key=value pass parameters with units) and pass_report (what a pass tells its user, line by line with typed values).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PARAMS_HPP
#define DAYDREAM_PARAMS_HPP

#include <daydream/config.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream {

/// Parameters of a pass as a user writes them: `key=value` pairs, e.g. from the
/// command line `--pass 'ddp:workers=16,bandwidth=25Gbps'`. Values keep their units;
/// the typed getters convert them. Every key must be read by the pass: `finish()`
/// throws naming any key nobody asked for (a typo must not be ignored silently).
class pass_params {
public:
  /// No parameters, for no named pass.
  pass_params() = default;
  /// No parameters yet, for the pass named `pass` (named in error messages).
  explicit pass_params(std::string pass) : pass_(std::move(pass)) {}

  /// Parses "key=value,key=value" (empty string: no parameters; empty items are
  /// skipped); throws daydream::error for an item without `=` or without a key.
  ///
  ///     auto p = daydream::pass_params::parse("ddp", "workers=16,bandwidth=25Gbps");
  ///     auto bw = p.get_bandwidth("bandwidth", 10e9 / 8);   // 3.125e9 bytes/s
  ///     p.finish();                                         // every key was read
  static pass_params parse(std::string pass, std::string_view spec) {
    pass_params p(std::move(pass));
    while (!spec.empty()) {
      auto comma = spec.find(',');
      auto item = spec.substr(0, comma);
      spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
      if (item.empty()) continue;
      auto eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw usage_error("daydream: pass '" + p.pass_ + "': parameter '" + std::string(item) +
                    "' is not of the form key=value");
      p.set(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    }
    return p;
  }

  /// Sets (or replaces) the value of `key`.
  void set(std::string key, std::string value) { kv_[std::move(key)] = std::move(value); }
  /// Whether `key` was given (does not count as reading it for finish()).
  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  /// The name of the pass the parameters are for.
  const std::string& pass() const noexcept { return pass_; }
  /// Every key and its raw value, sorted by key.
  const std::map<std::string, std::string>& items() const noexcept { return kv_; }

  /// The raw string, or `fallback`. Every getter marks its key as read and throws
  /// daydream::error naming the pass, the key and the value when the value is malformed.
  std::string get_string(const std::string& key, std::string fallback) const {
    used_.insert(key);
    auto it = kv_.find(key);
    return it == kv_.end() ? fallback : it->second;
  }
  /// A plain non-negative number (no unit), or `fallback`.
  double get_double(const std::string& key, double fallback) const {
    auto s = raw(key);
    if (!s) return fallback;
    auto [v, unit] = split_number(key, *s);
    if (!unit.empty()) bad(key, *s, "expected a plain number");
    return v;
  }
  /// A whole non-negative number, or `fallback`.
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const {
    double v = get_double(key, double(fallback));
    if (v != std::floor(v)) bad(key, std::to_string(v), "expected a whole number");
    return static_cast<std::int64_t>(v);
  }
  /// A boolean: 1/true/yes/on or 0/false/no/off, or `fallback`.
  bool get_bool(const std::string& key, bool fallback) const {
    auto s = raw(key);
    if (!s) return fallback;
    if (*s == "1" || *s == "true" || *s == "yes" || *s == "on") return true;
    if (*s == "0" || *s == "false" || *s == "no" || *s == "off") return false;
    bad(key, *s, "expected true or false");
  }
  /// A bandwidth in bytes per second. Accepts bit rates (`25Gbps`, `100Gb/s`, `400Mbps`)
  /// and byte rates (`12.5GB/s`, `900GBps`, `16GiB/s`); a plain number is Gbit/s.
  double get_bandwidth(const std::string& key, double fallback_bytes_per_s) const {
    auto s = raw(key);
    if (!s) return fallback_bytes_per_s;
    auto [v, u] = split_number(key, *s);
    if (u.empty()) return v * 1e9 / 8; // a plain number is Gbit/s
    // Strip the rate suffix, then read the last letter: `b`/`bit` is bits, `B` bytes.
    for (std::string_view suffix : {"/s", "ps"})
      if (u.size() > suffix.size() && u.ends_with(suffix)) u.resize(u.size() - suffix.size());
    double per_unit = 0;
    std::string prefix;
    if (u.ends_with("bit")) { per_unit = 1.0 / 8; prefix = u.substr(0, u.size() - 3); }
    else if (u.back() == 'b') { per_unit = 1.0 / 8; prefix = u.substr(0, u.size() - 1); }
    else if (u.back() == 'B') { per_unit = 1.0; prefix = u.substr(0, u.size() - 1); }
    auto scale = per_unit > 0 ? prefix_scale(lower(prefix)) : nullptr;
    if (!scale) bad(key, *s, "unknown bandwidth unit (use e.g. 25Gbps, 100Gb/s, 12.5GB/s)");
    return v * *scale * per_unit;
  }
  /// A size in bytes: `25MB`, `25MiB`, `4KB`, `1GB`, or a plain number of bytes.
  double get_bytes(const std::string& key, double fallback) const {
    auto s = raw(key);
    if (!s) return fallback;
    auto [v, u] = split_number(key, *s);
    std::string unit = lower(u);
    if (unit.empty() || unit == "b") return v;
    if (unit.back() != 'b') bad(key, *s, "unknown size unit (use e.g. 25MB, 64KiB)");
    if (auto m = prefix_scale(unit.substr(0, unit.size() - 1))) return v * *m;
    bad(key, *s, "unknown size unit (use e.g. 25MB, 64KiB)");
  }
  /// A duration in nanoseconds: `5us`, `1.5ms`, `2s`, `300ns`; a plain number is us.
  double get_time_ns(const std::string& key, double fallback) const {
    auto s = raw(key);
    if (!s) return fallback;
    auto [v, u] = split_number(key, *s);
    auto unit = lower(u);
    if (unit.empty() || unit == "us") return v * 1e3;
    if (unit == "ns") return v;
    if (unit == "ms") return v * 1e6;
    if (unit == "s") return v * 1e9;
    bad(key, *s, "unknown time unit (use ns, us, ms or s)");
  }

  /// Every key a getter has read so far, given or not, sorted. After a pass is built from
  /// these parameters it names the parameters the pass takes (those it read).
  std::vector<std::string> read_keys() const { return {used_.begin(), used_.end()}; }

  /// Throws daydream::error naming every key that was given but never read by a getter
  /// (a typo such as `bandwith=` must not be ignored). Call it after reading them all.
  void finish() const {
    std::string unknown;
    for (auto& [k, v] : kv_)
      if (!used_.count(k)) unknown += (unknown.empty() ? "" : ", ") + k;
    if (!unknown.empty())
      throw usage_error("daydream: pass '" + pass_ + "' has no parameter named: " + unknown);
  }

private:
  const std::string* raw(const std::string& key) const {
    used_.insert(key);
    auto it = kv_.find(key);
    return it == kv_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void bad(const std::string& key, const std::string& value, const char* why) const {
    throw usage_error("daydream: pass '" + pass_ + "': " + key + "=" + value + ": " + why);
  }
  std::pair<double, std::string> split_number(const std::string& key, const std::string& s) const {
    double v = 0;
    auto b = s.data(), e = s.data() + s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(*b))) ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || !std::isfinite(v) || v < 0) bad(key, s, "expected a non-negative number");
    std::string unit(p, e);
    unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }),
               unit.end());
    return {v, unit};
  }
  static std::string lower(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }
  static const double* prefix_scale(const std::string& p) {
    static const std::map<std::string, double> m{
        {"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12},
        {"ki", 1024.0}, {"mi", 1024.0 * 1024}, {"gi", 1024.0 * 1024 * 1024},
        {"ti", 1024.0 * 1024 * 1024 * 1024}};
    auto it = m.find(p);
    return it == m.end() ? nullptr : &it->second;
  }

  std::string pass_;
  std::map<std::string, std::string> kv_;
  mutable std::set<std::string> used_;
};

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
