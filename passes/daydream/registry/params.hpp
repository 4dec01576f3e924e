// Defines pass_params: a pass's parameters as the command line gives them (`key=value` pairs), read with units ("25Gbps", "40ms", "32GiB").
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_REGISTRY_PARAMS_HPP
#define DAYDREAM_REGISTRY_PARAMS_HPP

#include <daydream/config.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// Parameters of a pass as a user writes them: `key=value` pairs, e.g. from the
/// command line `--pass 'ddp:workers=16,bandwidth=25Gbps'`. Values keep their units;
/// the typed getters convert them. Every key must be read by the pass: `finish()`
/// throws naming any key nobody asked for (a typo must not be ignored silently).
///
/// This is the command line's side of a pass: a pass takes its parameters as members
/// (`amp{.compute = 2}`), and its pass_spec (registry/pass_spec.hpp) reads them from here.
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
  /// The key a quantity is given under when it has two names: `alias` when that was
  /// given, else `name`. Throws daydream::usage_error when both were given (one
  /// quantity, two values). Reads neither key: the getter called with the result does.
  ///
  ///     auto p = daydream::pass_params::parse("ddp", "nodes=2");
  ///     auto machines = p.get_int(p.given_key("machines", "nodes"), 1);   // 2
  std::string given_key(const std::string& name, const std::string& alias) const {
    if (has(name) && has(alias))
      throw usage_error("daydream: pass '" + pass_ + "': " + name + "= and " + alias +
                        "= name the same quantity; give one of them");
    return has(alias) ? alias : name;
  }
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

} // namespace daydream

#endif
