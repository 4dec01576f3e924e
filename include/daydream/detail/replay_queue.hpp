// Defines the event queue of the replay kernel (agent_queue) and the type-erased policy key it is given (key_ref).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_DETAIL_REPLAY_QUEUE_HPP
#define DAYDREAM_DETAIL_REPLAY_QUEUE_HPP

#include <daydream/reschedule.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

//! @cond DAYDREAM_INTERNAL
namespace daydream::detail {

/// A selection policy's key function, type-erased: replay() hands the kernels this, so
/// that they are compiled once for all policies (and keys are computed rarely).
class key_ref {
public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, key_ref>)
  key_ref(const F& f) noexcept // NOLINT: converts any key function
      : obj_(&f), fn_([](const void* o, task_id t, time_ns ready) {
          return (*static_cast<const F*>(o))(t, ready);
        }) {}
  priority_key operator()(task_id t, time_ns ready) const { return fn_(obj_, t, ready); }

private:
  const void* obj_;
  priority_key (*fn_)(const void*, task_id, time_ns);
};

/// The event queue of replay_flat. Every resource is an agent with at most one pending
/// event, held in a winner tree: each node keeps the earliest event below it, so
/// changing an agent's event costs log2(resources) steps of a few instructions. Events
/// are ordered by (time, tw), where tw packs the event type above the id of the task or
/// resource it concerns.
class agent_queue {
public:
  /// An agent's event.
  struct key {
    time_ns time;
    std::uint64_t tw;
  };
  /// The time of "no event".
  static constexpr time_ns none = std::numeric_limits<time_ns>::max();
  /// Times from here on mean "no event": an idle agent `a` has time `none - a`, so that
  /// equal times in the tree are real ties (rare: event times are in nanoseconds).
  static constexpr time_ns idle = none - (time_ns(1) << 32);

  explicit agent_queue(std::size_t agents) {
    while (p_ < agents) p_ *= 2;
    tw_.assign(p_, 0);
    time_.assign(2 * std::size_t(p_), none);
    win_.assign(2 * std::size_t(p_), 0);
    for (std::uint32_t a = 0; a < p_; ++a) {
      win_[p_ + a] = a;
      time_[p_ + a] = none - time_ns(a);
    }
    for (std::uint32_t i = p_ - 1; i >= 1; --i) {
      const std::uint32_t first = 2 * i + (time_[2 * i + 1] < time_[2 * i] ? 1 : 0);
      win_[i] = win_[first];
      time_[i] = time_[first];
    }
  }
  /// The agent with the earliest event; its time is `idle` or more when none has one.
  std::uint32_t top() const noexcept { return win_[p_ > 1 ? 1 : p_]; }
  /// The event of agent `a`.
  key at(std::uint32_t a) const noexcept { return {time_[p_ + a], tw_[a]}; }

  /// Sets the event of agent `a`; time `none` clears it.
  void set(std::uint32_t a, time_ns time, std::uint64_t tw) noexcept {
    time_ns* __restrict t = time_.data();
    std::uint32_t* __restrict w = win_.data();
    const std::uint64_t* __restrict tws = tw_.data();
    tw_[a] = tw;
    if (time == none) time = none - time_ns(a);
    std::uint32_t i = p_ + a;
    t[i] = time;
    time_ns ct = time;
    std::uint32_t ca = a;
    while (i > 1) {
      const time_ns ot = t[i ^ 1u];
      const std::uint32_t oa = w[i ^ 1u];
      i >>= 1;
      bool other_first = ot < ct;
      if (ot == ct) [[unlikely]] other_first = tws[oa] < tws[ca];
      ct = other_first ? ot : ct;
      ca = other_first ? oa : ca;
      w[i] = ca;
      t[i] = ct;
    }
  }

private:
  std::uint32_t p_ = 1;
  std::vector<std::uint64_t> tw_;  // by agent
  std::vector<time_ns> time_;      // by node: the earliest event time below
  std::vector<std::uint32_t> win_; // by node: its agent (nodes 1 .. p_-1; p_ + a: the leaf of a)
};

} // namespace daydream::detail
//! @endcond

#endif
