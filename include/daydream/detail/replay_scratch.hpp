// Defines the working memory the replay kernel keeps per thread, and the page helpers for its large buffers.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_SCRATCH_HPP
#define DAYDREAM_DETAIL_REPLAY_SCRATCH_HPP

#include <daydream/dependency.hpp>
#include <daydream/detail/core.hpp>
#include <daydream/replay_result.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h> // madvise: return pages, huge pages for the result arrays
#endif

/// Bytes of working memory replay() keeps per thread between calls, so that repeated
/// replays of a graph pay no page faults for it (default 1 GiB; 0 keeps nothing).
#ifndef DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP
#  define DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP (std::size_t(1) << 30)
#endif

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// Returns the whole pages inside [p, p + bytes) to the system (Linux; elsewhere a
/// no-op): their contents become zero.
inline void discard_pages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_DONTNEED)
  advise_whole_pages(p, bytes, 4096, MADV_DONTNEED);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Reserves room for `n` elements in the empty vector `v`, on huge pages where the
/// system allows.
template <class T> void reserve_advised(std::vector<T>& v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
}

/// Makes `v` hold `n` elements that the caller will overwrite, every one: its memory is
/// reused when it has room (no allocation; only elements beyond its old size are
/// value-initialised, as std::vector must), else replaced by `n` fresh elements.
template <class T> void size_for_overwrite(std::vector<T>& v, std::size_t n) {
  if (v.capacity() < n) {
    v = {};
    reserve_advised(v, n);
  }
  v.resize(n);
}

/// Empties `v` for `n` elements to be appended: its memory is kept when it has room,
/// else replaced by room for `n` (on huge pages where the system allows).
template <class T> void clear_for_append(std::vector<T>& v, std::size_t n) {
  v.clear();
  if (v.capacity() < n) {
    v = {};
    reserve_advised(v, n);
  }
}

/// A random-access iterator over f(0), f(1), ...: what append_generated hands insert().
template <class T, class F> struct generated_iterator {
  using iterator_category = std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = T;
  const F* f;
  std::size_t i;
  T operator*() const { return static_cast<T>((*f)(i)); }
  T operator[](difference_type d) const { return static_cast<T>((*f)(std::size_t(difference_type(i) + d))); }
  generated_iterator& operator++() { ++i; return *this; }
  generated_iterator operator++(int) { auto o = *this; ++i; return o; }
  generated_iterator& operator--() { --i; return *this; }
  generated_iterator operator--(int) { auto o = *this; --i; return o; }
  generated_iterator& operator+=(difference_type d) { i = std::size_t(difference_type(i) + d); return *this; }
  generated_iterator& operator-=(difference_type d) { i = std::size_t(difference_type(i) - d); return *this; }
  generated_iterator operator+(difference_type d) const { auto o = *this; return o += d; }
  generated_iterator operator-(difference_type d) const { auto o = *this; return o -= d; }
  difference_type operator-(const generated_iterator& o) const { return difference_type(i) - difference_type(o.i); }
  bool operator==(const generated_iterator& o) const { return i == o.i; }
  bool operator<(const generated_iterator& o) const { return i < o.i; }
};

/// Appends f(0), ..., f(count - 1) to `v`: one size check for all, where push_back
/// checks each.
template <class T, class F> void append_generated(std::vector<T>& v, std::size_t count, F f) {
  v.insert(v.end(), generated_iterator<T, F>{&f, 0}, generated_iterator<T, F>{&f, count});
}

/// The durations and gaps a replay reads in place of its graph's columns (one value per
/// task id each; nullptr: the graph's own): what replays a duration_overlay without
/// copying the graph.
struct replay_times {
  const time_ns* duration = nullptr;
  const time_ns* gap = nullptr;
};

/// The working memory of event_replay, kept per thread between replays so that a search
/// replaying thousands of times pays no page faults for it: one record per task and the
/// out-edges in CSR form (56 bytes per task at 1 dependency per task). At most
/// DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP bytes are kept; larger buffers are freed.
struct replay_scratch {
  /// The state of one task during a replay.
  struct task_rec {
    time_ns dur, gap;
    time_ns at;         // when the task became ready (latest dependency so far), then its end
    std::uint32_t out;  // its first out-edge in `adj`; the next record's `out` ends them
    resource_id res;
    std::uint32_t wait; // dependencies not yet ended
    task_id pred;
    binding why;
    dep_kind edge;
    bool mem;           // allocates or frees memory (mem_delta != 0)
  };
  std::vector<task_rec> recs;
  std::vector<std::uint64_t> adj; // dst | kind << 32
  bool busy = false;

  /// This thread's scratch, or `spare` if it is in use (a replay inside a replay).
  static replay_scratch& acquire(replay_scratch& spare) {
    thread_local replay_scratch mine;
    auto& s = mine.busy ? spare : mine;
    s.busy = true;
    return s;
  }
  void prepare(std::size_t tasks, std::size_t edges) {
    grow(recs, tasks);
    grow(adj, edges);
  }
  /// Whether the buffers are too large to keep after the replay.
  bool too_large() const noexcept {
    return recs.capacity() * sizeof(task_rec) + adj.capacity() * sizeof(std::uint64_t) >
           std::size_t(DAYDREAM_CONFIG_REPLAY_SCRATCH_KEEP);
  }
  void release() noexcept {
    busy = false;
    if (too_large()) {
      recs = {};
      adj = {};
    }
  }

private:
  template <class T> static void grow(std::vector<T>& v, std::size_t n) {
    if (v.capacity() < n) {
      v = {};
      reserve_advised(v, n);
    }
    v.resize(n);
  }
};

/// The per-thread working memory `Scratch` (replay_scratch, chain_scratch) of one
/// replay: this thread's own, or one of the lease's own when that is in use (a replay
/// inside a replay), released when the lease ends.
template <class Scratch> class scratch_lease {
public:
  scratch_lease() : s_(Scratch::acquire(spare_)) {}
  ~scratch_lease() { s_.release(); }
  scratch_lease(const scratch_lease&) = delete;
  scratch_lease& operator=(const scratch_lease&) = delete;

  Scratch& get() noexcept { return s_; }

private:
  Scratch spare_;
  Scratch& s_;
};

} // namespace daydream::detail
//! @endcond

#endif
