// Defines detail::graph_core: the flat, kind-agnostic storage under basic_graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_CORE_HPP
#define DAYDREAM_DETAIL_CORE_HPP

#include <daydream/config.hpp>
#include <daydream/dependency.hpp>
#include <daydream/detail/interner.hpp>
#include <daydream/resource.hpp>
#include <daydream/task.hpp>

#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

namespace daydream::detail {

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
    iterator(const std::vector<edge_rec>* e, edge_id i) : edges_(e), i_(i) {}
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
    const std::vector<edge_rec>* edges_ = nullptr;
    edge_id i_ = no_edge;
  };
  edge_range(const std::vector<edge_rec>& e, edge_id head) : edges_(&e), head_(head) {}
  iterator begin() const { return {edges_, head_}; }
  iterator end() const { return {edges_, no_edge}; }
  bool empty() const noexcept { return head_ == no_edge; }

private:
  const std::vector<edge_rec>* edges_;
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

private:
  void allocate() {
    if (!v_.empty() || n_ == 0) return;
    v_.reserve(reserve_ > n_ ? reserve_ : n_);
    v_.resize(n_, T{});
  }
  std::vector<T> v_;
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
  std::vector<time_ns> duration;     ///< execution time
  std::vector<time_ns> gap;          ///< idle time after the task on its resource, in the trace
  std::vector<time_ns> trace_start;  ///< start time in the trace (tie-break for trace order)
  lazy_column<std::int64_t> priority;  ///< replay priority for priority policies (lower first)
  lazy_column<std::int64_t> mem_delta; ///< bytes allocated (+) or freed (-) when the task runs
  std::vector<resource_id> res;
  std::vector<name_id> name;
  std::vector<name_id> layer;
  std::vector<std::int32_t> iteration;
  std::vector<std::uint32_t> local;  ///< index into the kind's payload array
  std::vector<std::uint8_t> kind;    ///< index of the kind in the graph's kind list
  std::vector<phase> ph;
  std::vector<std::uint8_t> alive;
  std::vector<edge_id> head_out, head_in;
  std::vector<std::uint32_t> n_in, n_out;

  std::vector<edge_rec> edges;
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
