// Defines the select primitive: lazy views of typed tasks (ranges for range-v3 and std::ranges alike) and composable predicates.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_SELECT_HPP
#define DAYDREAM_SELECT_HPP

#include <daydream/fwd.hpp>
#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <range/v3/range/concepts.hpp>
#include <range/v3/range/traits.hpp>

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <regex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace daydream {

/// A task seen through a view: the graph and the id. `Kind` is the task's kind, or void
/// when the view spans all kinds. Converts to task_id, so every primitive takes it.
/// Valid as long as the task is (see handle<Kind>).
///
///     for (auto k : daydream::tasks<daydream::gpu_kernel>(g))
///       if (k.payload().stream == 7) daydream::scale_duration(g, k, 0.5);
template <class Graph, class Kind> struct task_ref {
  Graph* g = nullptr;   ///< the graph
  task_id id = no_task; ///< the task

  /// The graph the task belongs to.
  Graph& graph() const noexcept { return *g; }
  /// The task's name.
  std::string_view name() const { return g->name(id); }
  /// The task's layer name (empty for none).
  std::string_view layer() const { return g->layer(id); }
  /// The task's phase.
  enum phase phase() const { return g->phase_of(id); }
  /// The task's duration in nanoseconds.
  time_ns duration() const { return g->duration(id); }
  /// The task's resource.
  resource_id resource() const { return g->resource_of(id); }
  /// The task's iteration.
  std::int32_t iteration() const { return g->iteration(id); }
  /// The task's start time in the trace (orders ties in replay).
  time_ns trace_start() const { return g->trace_start(id); }
  /// The idle time the replay keeps after the task on its resource.
  time_ns gap() const { return g->gap(id); }
  /// The task's replay priority (reschedule(); smaller first).
  std::int64_t priority() const { return g->priority(id); }
  /// Bytes the task allocates (positive) or frees (negative) when it starts.
  std::int64_t mem_delta() const { return g->mem_delta(id); }
  /// The interned id of the task's name.
  name_id name_id_of() const { return g->name_id_of(id); }
  /// The interned id of the task's layer (equal ids: equal layers).
  name_id layer_id() const { return g->layer_id(id); }
  /// The name of the task's kind ("gpu_kernel").
  std::string_view kind_name() const { return g->kind_name(id); }
  /// Number of dependencies entering the task.
  std::size_t in_degree() const { return g->in_degree(id); }
  /// Number of dependencies leaving the task.
  std::size_t out_degree() const { return g->out_degree(id); }
  /// Whether the task is of kind `K`.
  template <class K> bool is() const { return g->template is<K>(id); }
  /// The typed handle (views over one kind only).
  daydream::handle<Kind> typed() const requires(!std::is_void_v<Kind>) {
    return daydream::handle<Kind>::unchecked(id);
  }
  /// The payload (views over one kind only).
  decltype(auto) payload() const requires(!std::is_void_v<Kind>) {
    return g->payload(daydream::handle<Kind>::unchecked(id));
  }
  /// The task's id: a task_ref works wherever an id does.
  operator task_id() const noexcept { return id; } // NOLINT: a ref is usable as an id
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// The views of select.hpp are small hand-written ones, not compositions of range-v3's
/// adaptors: a selection is instantiated in every pass with its own predicate type, and
/// range-v3's adaptor machinery made up about 40% of a pass header's compile time. They
/// model forward ranges of both libraries (view_base), so range-v3 and std::ranges
/// algorithms and adaptors take them.
struct select_view_base : ranges::view_base, std::ranges::view_base {};

/// What the views' iterators share: the associated types of a forward iterator whose
/// reference is `Ref` (a value: a task_ref), and the postfix increment.
template <class Derived, class Ref> struct select_iterator_base {
  using value_type = std::remove_cvref_t<Ref>;
  using reference = Ref;
  using difference_type = std::ptrdiff_t;
  using iterator_concept = std::forward_iterator_tag;
  using iterator_category = std::input_iterator_tag;
  Derived operator++(int) {
    auto& self = static_cast<Derived&>(*this);
    auto old = self;
    ++self;
    return old;
  }
};

/// Live tasks among ids [0, n) of `ids` (or among all ids when `ids` is null), as
/// task_ref<Graph, Kind>, in order; n is fixed when the view is made.
template <class Graph, class Kind> class live_tasks_view : public select_view_base {
public:
  using ref = task_ref<Graph, Kind>;
  class iterator : public select_iterator_base<iterator, ref> {
  public:
    iterator() = default;
    iterator(const live_tasks_view* v, std::size_t i) : v_(v), i_(i) { skip(); }
    ref operator*() const { return {v_->g_, v_->id_at(i_)}; }
    using select_iterator_base<iterator, ref>::operator++;
    iterator& operator++() {
      ++i_;
      skip();
      return *this;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }

  private:
    void skip() {
      while (i_ < v_->n_ && !v_->g_->contains(v_->id_at(i_))) ++i_;
    }
    const live_tasks_view* v_ = nullptr;
    std::size_t i_ = 0;
  };

  live_tasks_view() = default;
  live_tasks_view(Graph* g, const std::vector<task_id>* ids, std::size_t n) : g_(g), ids_(ids), n_(n) {}
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, n_}; }
  /// Whether no live task is in the view.
  bool empty() const { return begin() == end(); }

private:
  task_id id_at(std::size_t i) const { return ids_ ? (*ids_)[i] : static_cast<task_id>(i); }
  Graph* g_ = nullptr;
  const std::vector<task_id>* ids_ = nullptr;
  std::size_t n_ = 0;
};

/// Holds a predicate so that views holding it stay copy-assignable and default
/// constructible (a lambda is neither), as views must be.
template <class P> class predicate_box {
public:
  predicate_box() = default;
  explicit predicate_box(P p) : p_(std::move(p)) {}
  predicate_box(const predicate_box&) = default;
  predicate_box(predicate_box&&) = default;
  predicate_box& operator=(const predicate_box& o) {
    if (this != &o) {
      p_.reset();
      if (o.p_) p_.emplace(*o.p_);
    }
    return *this;
  }
  predicate_box& operator=(predicate_box&& o) noexcept(std::is_nothrow_move_constructible_v<P>) {
    if (this != &o) {
      p_.reset();
      if (o.p_) p_.emplace(std::move(*o.p_));
    }
    return *this;
  }
  template <class R> bool operator()(const R& r) const { return static_cast<bool>((*p_)(r)); }

private:
  std::optional<P> p_;
};

/// The elements of `base` for which `p` holds, lazily, in order. A common range when
/// `base` is one (every view of this header is).
template <class Base, class P> class where_view : public select_view_base {
  using base_iterator = decltype(ranges::begin(std::declval<const Base&>()));
  using base_sentinel = decltype(ranges::end(std::declval<const Base&>()));
  using base_reference = decltype(*std::declval<const base_iterator&>());

public:
  class iterator : public select_iterator_base<iterator, base_reference> {
  public:
    iterator() = default;
    iterator(const where_view* v, base_iterator it) : v_(v), it_(std::move(it)) { skip(); }
    base_reference operator*() const { return *it_; }
    using select_iterator_base<iterator, base_reference>::operator++;
    iterator& operator++() {
      ++it_;
      skip();
      return *this;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.it_ == b.it_; }
    /// Whether the iterator is at the end of the base (its sentinel).
    friend bool operator==(const iterator& a, const base_sentinel& end)
      requires(!std::is_same_v<base_iterator, base_sentinel>)
    {
      return a.it_ == end;
    }

  private:
    void skip() {
      const auto end = ranges::end(v_->base_);
      while (!(it_ == end) && !v_->p_(*it_)) ++it_;
    }
    const where_view* v_ = nullptr;
    base_iterator it_{};
  };

  where_view() = default;
  where_view(Base base, P p) : base_(std::move(base)), p_(std::move(p)) {}
  iterator begin() const { return {this, ranges::begin(base_)}; }
  auto end() const {
    if constexpr (std::is_same_v<base_iterator, base_sentinel>) return iterator(this, ranges::end(base_));
    else return ranges::end(base_);
  }
  /// Whether no element of the base satisfies the predicate.
  bool empty() const { return begin() == end(); }

private:
  Base base_;
  predicate_box<P> p_;
};

} // namespace detail
//! @endcond

/// The live tasks of kind `K` of `g`, as a lazy view of task_ref<Graph, K>, in id order.
/// The view sees the tasks of kind `K` that existed when it was made: tasks added while
/// iterating are not visited, removed ones are skipped, and removing the current task
/// (or any other) while iterating is allowed. compact() invalidates the view. A forward
/// range of range-v3 and of std::ranges.
///
///     for (auto k : daydream::tasks<daydream::gpu_kernel>(g) | daydream::where(daydream::in_phase(daydream::phase::backward)))
///       daydream::scale_duration(g, k, 0.5);
template <class K, class Graph> auto tasks(Graph& g) {
  static_assert(std::remove_const_t<Graph>::template has_kind<K>,
                "daydream::tasks<K>(g): K is not a task kind of this graph");
  const auto& ids = g.template ids_of<K>();
  return detail::live_tasks_view<Graph, K>(&g, &ids, ids.size());
}

/// Every live task of `g`, as a lazy view of task_ref<Graph>, in id order (same
/// invalidation rules as tasks<K>(g)).
///
///     for (auto t : daydream::tasks(g) | daydream::where(daydream::in_layer("fc1"))) ...;
template <class Graph> auto tasks(Graph& g) {
  return detail::live_tasks_view<Graph, void>(&g, nullptr, g.id_bound());
}

/// A predicate over task_refs, composable with `&&`, `||` and `!`. Make one from a
/// lambda with pred(); the built-in ones (in_phase, on_gpu, ...) already are.
template <class F> struct predicate {
  F f; ///< the wrapped callable
  /// Whether task `r` is selected.
  template <class Ref> bool operator()(const Ref& r) const { return static_cast<bool>(f(r)); }
};
template <class F> predicate(F) -> predicate<F>;

/// Wraps a user lambda `bool(const task_ref<...>&)` into a composable predicate.
///
///     auto long_ones = daydream::pred([](const auto& t) { return t.duration() > 100'000; });
///     auto sel = daydream::tasks(g) | daydream::where(long_ones && daydream::on_gpu);
template <class F> constexpr predicate<std::decay_t<F>> pred(F&& f) { return {std::forward<F>(f)}; }

/// Both predicates hold (short-circuit).
template <class A, class B> constexpr auto operator&&(predicate<A> a, predicate<B> b) {
  return pred([a = std::move(a), b = std::move(b)](const auto& r) { return a(r) && b(r); });
}
/// Either predicate holds (short-circuit).
template <class A, class B> constexpr auto operator||(predicate<A> a, predicate<B> b) {
  return pred([a = std::move(a), b = std::move(b)](const auto& r) { return a(r) || b(r); });
}
/// The predicate does not hold.
template <class A> constexpr auto operator!(predicate<A> a) {
  return pred([a = std::move(a)](const auto& r) { return !a(r); });
}

/// What where(p) makes: applied to a view of task_refs with `|`, it filters it.
template <class P> struct where_closure {
  P p; ///< the predicate
  /// The tasks of `view` for which the predicate holds (a lazy view).
  template <class View>
    requires ranges::range<View>
  friend auto operator|(View&& view, where_closure w) {
    using ref = ranges::range_reference_t<View>;
    static_assert(std::is_invocable_v<const P&, ref>,
                  "daydream::where(p): p cannot be called on the task_refs of this view; a "
                  "predicate takes `const auto& t` (t.name(), t.duration(), t.payload(), ...).");
    if constexpr (std::is_invocable_v<const P&, ref>) {
      static_assert(std::is_convertible_v<std::invoke_result_t<const P&, ref>, bool>,
                    "daydream::where(p): p must return a bool (or something that converts to one).");
      return detail::where_view<std::remove_cvref_t<View>, P>(std::forward<View>(view), std::move(w.p));
    }
  }
};

/// Filters a view of task_refs by a predicate (or any callable on a task_ref); lazy.
/// `p` must be a predicate object (a built-in one, pred(...), or a lambda taking
/// `const auto& t`): where(42) does not compile.
///
///     for (auto k : daydream::tasks<daydream::gpu_kernel>(g) |
///                   daydream::where(daydream::name_matches("gemm") &&
///                                   !daydream::in_phase(daydream::phase::weight_update)))
///       daydream::scale_duration(g, k, 1.0 / 3);
template <class P> auto where(P p) {
  static_assert(std::is_class_v<P> || std::is_function_v<std::remove_pointer_t<P>>,
                "daydream::where(p): p must be a predicate over task references, e.g. "
                "in_phase(phase::backward), name_matches(\"gemm\") or "
                "pred([](const auto& t) { return t.duration() > 1000; }).");
  return where_closure<P>{std::move(p)};
}

/// Tasks of kind `K`: `where(of_kind<daydream::memcpy_task>)`.
template <class K> inline constexpr auto of_kind =
    pred([](const auto& r) { return r.template is<K>(); });
/// GPU work: kernels, copies and communication kernels.
inline const auto on_gpu = pred([](const auto& r) {
  return r.template is<gpu_kernel>() || r.template is<memcpy_task>() || r.template is<comm_task>();
});
/// CPU tasks.
inline const auto on_cpu = pred([](const auto& r) { return r.template is<cpu_task>(); });

/// The type of in_phase.
struct in_phase_fn {
  /// A predicate: the task is in phase `p`.
  auto operator()(phase p) const { return pred([p](const auto& r) { return r.phase() == p; }); }
};
/// Tasks in phase `p`.
inline constexpr in_phase_fn in_phase{};

/// The type of in_layer.
struct in_layer_fn {
  /// A predicate: the task's layer is exactly `layer`.
  auto operator()(std::string layer) const {
    return pred([l = std::move(layer)](const auto& r) { return r.layer() == l; });
  }
};
/// Tasks of the given layer (exact module name).
inline constexpr in_layer_fn in_layer{};

/// The type of on_resource.
struct on_resource_fn {
  /// A predicate: the task runs on resource `res`.
  auto operator()(resource_id res) const {
    return pred([res](const auto& r) { return r.resource() == res; });
  }
};
/// Tasks on resource `r`.
inline constexpr on_resource_fn on_resource{};

/// The type of in_iteration.
struct in_iteration_fn {
  /// A predicate: the task belongs to iteration `i`.
  auto operator()(std::int32_t i) const { return pred([i](const auto& r) { return r.iteration() == i; }); }
};
/// Tasks of iteration `i`.
inline constexpr in_iteration_fn in_iteration{};

/// The type of name_matches.
struct name_matches_fn {
  /// A predicate: an ECMAScript regex `re` is found (searched, not matched whole) in the
  /// task's name; anchor it (`^aten::`) to match from the start. Throws
  /// std::regex_error for a malformed expression.
  auto operator()(const std::string& re) const {
    auto rx = std::make_shared<const std::regex>(re, std::regex::ECMAScript | std::regex::optimize);
    return pred([rx](const auto& r) {
      auto n = r.name();
      return std::regex_search(n.begin(), n.end(), *rx);
    });
  }
};
/// Tasks whose name contains a match of a regular expression.
inline constexpr name_matches_fn name_matches{};

} // namespace daydream

#endif
