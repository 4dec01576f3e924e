// Defines name_memo: a thread-safe, process-wide memo of a classification of names (kernel families, precisions, classes).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SEMANTICS_NAME_MEMO_HPP
#define DAYDREAM_SEMANTICS_NAME_MEMO_HPP

#include <cstddef>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace daydream::passes {

/// The results of a pure function of a name, remembered across graphs and threads.
/// Classifying a kernel name runs regular expressions over names hundreds of characters
/// long; a trace repeats a few hundred names, and every scenario of a sweep, every copy
/// of a graph, classifies the same ones again. Entries are kept until `max_entries`
/// distinct names have been seen, then the memo starts over (a bound, not an eviction
/// policy: real traces have far fewer kernel names).
///
///     static daydream::passes::name_memo<bool> memo;
///     bool gemm = memo(name, [](std::string_view n) { return n.find("gemm") != n.npos; });
template <class V>
class name_memo {
public:
  /// The largest number of names remembered at once.
  static constexpr std::size_t max_entries = std::size_t{1} << 16;

  /// `compute(name)`, computed once per distinct name. `compute` must be a pure
  /// function of the name.
  template <class F>
  V operator()(std::string_view name, F&& compute) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = map_.find(name); it != map_.end()) return it->second;
    }
    V v = std::forward<F>(compute)(name);
    std::unique_lock lock(mutex_);
    if (map_.size() >= max_entries) map_.clear();
    map_.emplace(std::string(name), v);
    return v;
  }

private:
  struct hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::shared_mutex mutex_;
  std::unordered_map<std::string, V, hash, std::equal_to<>> map_;
};

} // namespace daydream::passes

#endif
