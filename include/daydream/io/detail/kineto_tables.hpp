// Defines the lookup tables of Kineto ingestion: correlation ids to events, and a name cache in front of the graph's interner.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_TABLES_HPP
#define DAYDREAM_IO_DETAIL_KINETO_TABLES_HPP

#include <daydream/task.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::io::detail {

/// Maps integer keys (correlation ids, flow ids) to 32-bit values; a flat array when
/// the keys are dense enough (they usually are: CUPTI numbers them consecutively), a
/// hash map otherwise. The first value inserted for a key wins.
class id_index {
public:
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

  /// Builds the index of `(key, value)` pairs.
  explicit id_index(const std::vector<std::pair<std::int64_t, std::uint32_t>>& kv) {
    if (kv.empty()) return;
    lo_ = kv.front().first;
    std::int64_t hi = lo_;
    for (auto& [k, v] : kv) { lo_ = std::min(lo_, k); hi = std::max(hi, k); }
    const auto range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo_);
    if (range < 8 * kv.size() + 4096) {
      dense_ = true;
      flat_.assign(range + 1, none);
      for (auto& [k, v] : kv) {
        auto& slot = flat_[static_cast<std::size_t>(k - lo_)];
        if (slot == none) slot = v;
      }
    } else {
      map_.reserve(kv.size());
      for (auto& [k, v] : kv) map_.emplace(k, v);
    }
  }
  id_index() = default;

  /// The value of `k`, or `none`.
  std::uint32_t find(std::int64_t k) const noexcept {
    if (dense_) {
      if (k < lo_ || static_cast<std::uint64_t>(k - lo_) >= flat_.size()) return none;
      return flat_[static_cast<std::size_t>(k - lo_)];
    }
    auto it = map_.find(k);
    return it == map_.end() ? none : it->second;
  }

private:
  bool dense_ = false;
  std::int64_t lo_ = 0;
  std::vector<std::uint32_t> flat_;
  std::unordered_map<std::int64_t, std::uint32_t> map_;
};

/// A cache in front of a graph's name interner. Kineto traces repeat a few thousand
/// names (kernel names of hundreds of characters among them) over millions of events;
/// this table hashes a name by its length and a few words of it instead of every byte,
/// and compares the whole name only on a hit. `Intern` is called once per new name.
template <class Intern> class name_cache {
public:
  explicit name_cache(Intern intern) : intern_(std::move(intern)) { slots_.resize(1024); }

  name_id operator()(std::string_view s) {
    const std::uint64_t h = hash(s);
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      auto& e = slots_[i];
      if (e.id == no_entry) {
        e = {s, h, intern_(s)};
        if (++used_ * 2 > slots_.size()) grow();
        return lookup_after_grow(s, h);
      }
      if (e.hash == h && same(e.text, s)) return e.id;
    }
  }

private:
  static constexpr name_id no_entry = std::numeric_limits<name_id>::max();
  struct slot { std::string_view text; std::uint64_t hash = 0; name_id id = no_entry; };

  static std::uint64_t word(const char* p, std::size_t n) noexcept {
    std::uint64_t w = 0;
    if (n) std::memcpy(&w, p, n < 8 ? n : 8);
    return w;
  }
  static bool same(std::string_view a, std::string_view b) noexcept {
    // (pooled names are the same view for the same text: no compare for them)
    return a.size() == b.size() && (a.data() == b.data() || a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
  }
  static std::uint64_t hash(std::string_view s) noexcept {
    std::uint64_t h = s.size() * 0x9E3779B97F4A7C15ull;
    const std::size_t n = s.size();
    auto mix = [&](std::uint64_t w) { h = (h ^ w) * 0xff51afd7ed558ccdull; h ^= h >> 32; };
    mix(word(s.data(), n));
    if (n > 8) mix(word(s.data() + n - 8, 8));
    if (n > 16) mix(word(s.data() + n / 2 - 4, 8));
    if (n > 32) { mix(word(s.data() + n / 4, 8)); mix(word(s.data() + 3 * n / 4 - 8, 8)); }
    return h;
  }
  name_id lookup_after_grow(std::string_view s, std::uint64_t h) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      auto& e = slots_[i];
      if (e.hash == h && same(e.text, s)) return e.id;
    }
  }
  void grow() {
    std::vector<slot> old(slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (auto& e : old) {
      if (e.id == no_entry) continue;
      std::size_t i = e.hash & mask;
      while (slots_[i].id != no_entry) i = (i + 1) & mask;
      slots_[i] = e;
    }
  }

  Intern intern_;
  std::vector<slot> slots_;
  std::size_t used_ = 0;
};

} // namespace daydream::io::detail

#endif
