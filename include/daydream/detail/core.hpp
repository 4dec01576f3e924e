// Defines detail::graph_core: the flat, kind-agnostic storage under basic_graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_CORE_HPP
#define DAYDREAM_DETAIL_CORE_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/interner.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h> // madvise: transparent huge pages for large columns
#endif

namespace daydream::detail {

#if defined(__linux__)
/// madvise(`advice`) on the whole `page`-aligned pages inside [p, p + bytes) (`page` a
/// power of two): the bytes around them, which other data may share, are left alone.
inline void advise_whole_pages(const void* p, std::size_t bytes, std::uintptr_t page, int advice) noexcept {
  const auto lo = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
  const auto hi = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, advice);
}
#endif

/// Asks the kernel to back [p, p + bytes) with transparent huge pages (Linux; elsewhere a
/// no-op). Only the whole 2 MiB pages inside the range are affected.
inline void advise_huge_pages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  advise_whole_pages(p, bytes, std::uintptr_t(2) << 20, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/// The allocator of the graph's columns: std::allocator, except that blocks of 4 MiB and
/// more are aligned to 2 MiB and advised to use transparent huge pages. A graph of a
/// million tasks is written once into fresh memory when it is built, copied (apply) or
/// grown; with 4 KiB pages the page faults cost more than the work on a virtual machine
/// (building, copying and inserting into such a graph ran 1.5 to 3.5 times faster).
template <class T> struct column_allocator {
  using value_type = T;
  static constexpr std::size_t huge_threshold = std::size_t(4) << 20;
  static constexpr std::align_val_t huge_alignment{std::size_t(2) << 20};

  column_allocator() = default;
  template <class U> column_allocator(const column_allocator<U>&) noexcept {} // NOLINT
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_threshold) return std::allocator<T>{}.allocate(n);
    void* p = ::operator new(bytes, huge_alignment);
    advise_huge_pages(p, bytes);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_threshold) std::allocator<T>{}.deallocate(p, n);
    else ::operator delete(p, huge_alignment);
  }
  friend bool operator==(const column_allocator&, const column_allocator&) noexcept { return true; }
};

/// A per-task (or per-edge) column of the graph core.
template <class T> using column = std::vector<T, column_allocator<T>>;

using edge_id = std::uint32_t;
inline constexpr edge_id no_edge = std::numeric_limits<edge_id>::max();

/// An edge in the intrusive adjacency lists: singly linked per source (out) and per
/// target (in), so that insert and remove touch only the tasks involved.
struct edge_rec {
  task_id src;
  task_id dst;
  edge_id next_out;
  edge_id next_in;
  dep_kind kind;
};

/// Iterates the live edges of one task's out- or in-list.
template <bool Out> class edge_range {
public:
  class iterator {
  public:
    using value_type = dependency;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const column<edge_rec>* e, edge_id i) : edges_(e), i_(i) {}
    dependency operator*() const {
      auto& r = (*edges_)[i_];
      return {r.src, r.dst, r.kind};
    }
    iterator& operator++() {
      i_ = Out ? (*edges_)[i_].next_out : (*edges_)[i_].next_in;
      return *this;
    }
    iterator operator++(int) { auto t = *this; ++*this; return t; }
    friend bool operator==(const iterator& a, const iterator& b) { return a.i_ == b.i_; }
    edge_id edge() const noexcept { return i_; }

  private:
    const column<edge_rec>* edges_ = nullptr;
    edge_id i_ = no_edge;
  };
  edge_range(const column<edge_rec>& e, edge_id head) : edges_(&e), head_(head) {}
  iterator begin() const { return {edges_, head_}; }
  iterator end() const { return {edges_, no_edge}; }
  bool empty() const noexcept { return head_ == no_edge; }

private:
  const column<edge_rec>* edges_;
  edge_id head_;
};

/// A per-task column that stores nothing while every value is zero: most graphs never
/// set a replay priority, and traces without memory data have no allocations, so these
/// columns cost no memory until used. Reads through a const reference never allocate;
/// the first write (or read through a non-const reference) stores the whole column.
template <class T> class lazy_column {
public:
  using value_type = T;
  /// Number of values (one per task).
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  /// Whether the values are stored (some value was written).
  bool allocated() const noexcept { return !v_.empty(); }
  /// Values the stored column has room for (0 while nothing is stored).
  std::size_t capacity() const noexcept { return v_.capacity(); }
  /// Value `i` (zero while nothing is stored).
  T operator[](std::size_t i) const noexcept { return v_.empty() ? T{} : v_[i]; }
  /// The stored values, or nullptr while nothing is stored (for loops that test once).
  const T* data() const noexcept { return v_.empty() ? nullptr : v_.data(); }
  /// Value `i`, for writing: stores the column first.
  T& operator[](std::size_t i) {
    allocate();
    return v_[i];
  }
  void push_back(const T& x) {
    if (v_.empty() && x == T{}) {
      ++n_;
      return;
    }
    allocate();
    v_.push_back(x);
    ++n_;
  }
  void reserve(std::size_t n) {
    reserve_ = n;
    if (!v_.empty()) v_.reserve(n);
  }
  /// Appends `n` zeros (stores nothing while nothing is stored).
  void grow(std::size_t n) {
    if (!v_.empty()) v_.resize(v_.size() + n, T{});
    n_ += n;
  }

private:
  void allocate() {
    if (!v_.empty() || n_ == 0) return;
    v_.reserve(reserve_ > n_ ? reserve_ : n_);
    v_.resize(n_, T{});
  }
  column<T> v_;
  std::size_t n_ = 0;
  std::size_t reserve_ = 0;
};

/// Kind-agnostic storage: everything the replay reads lives here in flat arrays
/// indexed by task id. basic_graph adds the typed, per-kind payloads on top.
///
/// Memory: 63 bytes per task in the columns (priority and mem_delta add 8 bytes each
/// once used) and 20 bytes per dependency record; names are interned once.
class graph_core {
public:
  // ---- per-task columns (index = task_id) ----
  column<time_ns> duration;     ///< execution time
  column<time_ns> gap;          ///< idle time after the task on its resource, in the trace
  column<time_ns> trace_start;  ///< start time in the trace (tie-break for trace order)
  lazy_column<std::int64_t> priority;  ///< replay priority for priority policies (lower first)
  lazy_column<std::int64_t> mem_delta; ///< bytes allocated (+) or freed (-) when the task runs
  column<resource_id> res;
  column<name_id> name;
  column<name_id> layer;
  column<std::int32_t> iteration;
  column<std::uint32_t> local;  ///< index into the kind's payload array
  column<std::uint8_t> kind;    ///< index of the kind in the graph's kind list
  column<phase> ph;
  column<std::uint8_t> alive;
  column<edge_id> head_out, head_in;
  column<std::uint32_t> n_in, n_out;

  column<edge_rec> edges;
  std::vector<resource> resources;
  interner names;

  std::size_t live_tasks = 0;
  std::size_t live_edges = 0;
  std::size_t dead_edges = 0; ///< unlinked edge records still stored (reclaimed by compact)

  task_id id_bound() const noexcept { return static_cast<task_id>(duration.size()); }
  bool is_alive(task_id t) const noexcept { return t < alive.size() && alive[t]; }

  void check_task(task_id t, const char* what) const {
    if (!is_alive(t))
      throw error(std::string("daydream: ") + what + ": task #" + std::to_string(t) +
                  " does not exist or was removed");
  }

  task_id new_task(std::uint8_t k, std::uint32_t loc) {
    auto id = id_bound();
    if (id == no_task) throw error("daydream: too many tasks for 32-bit task ids");
    duration.push_back(0); gap.push_back(0); trace_start.push_back(0); priority.push_back(0);
    mem_delta.push_back(0); res.push_back(no_resource); name.push_back(no_name);
    layer.push_back(no_name); iteration.push_back(0); local.push_back(loc); kind.push_back(k);
    ph.push_back(phase::other); alive.push_back(1); head_out.push_back(no_edge);
    head_in.push_back(no_edge); n_in.push_back(0); n_out.push_back(0);
    ++live_tasks;
    return id;
  }

  /// Appends `n` tasks of kind `k` with payload indices `loc`, `loc + 1`, ... and default
  /// fields (what new_task gives each); returns the first id. The columns grow once, so
  /// that a builder can then write each task's fields in place, from several threads.
  task_id new_tasks(std::uint8_t k, std::uint32_t loc, std::size_t n) {
    const std::size_t first = id_bound();
    if (first + n > std::size_t(no_task)) throw error("daydream: too many tasks for 32-bit task ids");
    const std::size_t end = first + n;
    duration.resize(end, 0); gap.resize(end, 0); trace_start.resize(end, 0); priority.grow(n);
    mem_delta.grow(n); res.resize(end, no_resource); name.resize(end, no_name); layer.resize(end, no_name);
    iteration.resize(end, 0); kind.resize(end, k); ph.resize(end, phase::other); alive.resize(end, 1);
    head_out.resize(end, no_edge); head_in.resize(end, no_edge); n_in.resize(end, 0); n_out.resize(end, 0);
    local.resize(end);
    for (std::size_t i = 0; i < n; ++i) local[first + i] = static_cast<std::uint32_t>(loc + i);
    live_tasks += n;
    return static_cast<task_id>(first);
  }

  void reserve(std::size_t n) {
    duration.reserve(n); gap.reserve(n); trace_start.reserve(n); priority.reserve(n);
    mem_delta.reserve(n); res.reserve(n); name.reserve(n); layer.reserve(n);
    iteration.reserve(n); local.reserve(n); kind.reserve(n); ph.reserve(n); alive.reserve(n);
    head_out.reserve(n); head_in.reserve(n); n_in.reserve(n); n_out.reserve(n);
  }

  edge_range<true> out(task_id t) const { return {edges, head_out[t]}; }
  edge_range<false> in(task_id t) const { return {edges, head_in[t]}; }

  /// The edge from `a` to `b`, or no_edge.
  edge_id find_edge(task_id a, task_id b) const {
    // Scan the shorter of the two lists.
    if (n_out[a] <= n_in[b]) {
      for (auto e = head_out[a]; e != no_edge; e = edges[e].next_out)
        if (edges[e].dst == b) return e;
    } else {
      for (auto e = head_in[b]; e != no_edge; e = edges[e].next_in)
        if (edges[e].src == a) return e;
    }
    return no_edge;
  }

  /// Adds a -> b unless an edge a -> b exists already. Returns whether it added one.
  bool link(task_id a, task_id b, dep_kind k) {
    if (a == b) throw error("daydream: a task cannot depend on itself (task #" + std::to_string(a) + ")");
    if (find_edge(a, b) != no_edge) return false;
    auto e = static_cast<edge_id>(edges.size());
    edges.push_back({a, b, head_out[a], head_in[b], k});
    head_out[a] = e; head_in[b] = e;
    ++n_out[a]; ++n_in[b]; ++live_edges;
    return true;
  }

  /// Removes the edge a -> b if present. Returns whether it existed.
  bool unlink(task_id a, task_id b) {
    edge_id* p = &head_out[a];
    while (*p != no_edge && edges[*p].dst != b) p = &edges[*p].next_out;
    if (*p == no_edge) return false;
    edge_id e = *p;
    *p = edges[e].next_out;
    edge_id* q = &head_in[b];
    while (*q != e) q = &edges[*q].next_in;
    *q = edges[e].next_in;
    --n_out[a]; --n_in[b]; --live_edges; ++dead_edges;
    return true;
  }

  /// Unlinks every edge of `t` and marks it dead.
  void kill(task_id t) {
    while (head_in[t] != no_edge) unlink(edges[head_in[t]].src, t);
    while (head_out[t] != no_edge) unlink(t, edges[head_out[t]].dst);
    alive[t] = 0;
    --live_tasks;
  }
};

} // namespace daydream::detail

#endif
