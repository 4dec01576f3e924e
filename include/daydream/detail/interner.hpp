// Defines detail::interner, the string table behind task and layer names.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_INTERNER_HPP
#define DAYDREAM_DETAIL_INTERNER_HPP

#include <daydream/task.hpp>

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::detail {

/// Maps strings to dense ids and back. Id 0 is the empty string. The strings live in a
/// deque so that the string_views held by the lookup map stay valid as it grows.
class interner {
public:
  interner() { intern(""); }
  interner(const interner& o) { *this = o; }
  interner& operator=(const interner& o) {
    if (this == &o) return *this;
    strings_.clear(); views_.clear(); index_.clear();
    for (auto& s : o.strings_) intern(s);
    return *this;
  }
  interner(interner&&) noexcept = default;
  interner& operator=(interner&&) noexcept = default;

  name_id intern(std::string_view s) {
    if (s.empty() && !strings_.empty()) return 0; // every task without a layer: no lookup
    if (auto it = index_.find(s); it != index_.end()) return it->second;
    auto id = static_cast<name_id>(strings_.size());
    strings_.emplace_back(s);
    views_.push_back(strings_.back());
    index_.emplace(views_.back(), id);
    return id;
  }
  /// The id of `s`, or no_name if it was never interned (no_name is also "").
  name_id find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? no_name : it->second;
  }
  std::string_view operator[](name_id id) const { return views_[id]; }
  std::size_t size() const noexcept { return strings_.size(); }

private:
  std::deque<std::string> strings_;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, name_id> index_;
};

} // namespace daydream::detail

#endif
