// Defines network: a flow-level network model with max-min fair sharing of links, advanced event by event.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_NET_NETWORK_HPP
#define DAYDREAM_NET_NETWORK_HPP

#include <daydream/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace daydream {

/// A link of a network (an index in the order of network::add_link).
using link_id = std::uint32_t;
/// A flow of a network. A flow's id is free again once its completion was reported by
/// network::advance_to, and a later start may reuse it.
using flow_id = std::uint32_t;
/// No flow.
inline constexpr flow_id no_flow = std::numeric_limits<flow_id>::max();

/// A flow-level network: links with a capacity (bytes per nanosecond) and a latency,
/// flows that each cross a path of links with a number of bytes, and the max-min fair
/// rates of the flows (Bertsekas & Gallager, "Data Networks", section 6.5.2: every flow
/// gets the largest rate that does not take rate from a flow with a smaller one;
/// computed by progressive filling). A flow may have a rate cap of its own (a NIC or
/// a transport that cannot go faster).
///
/// Time is in nanoseconds (a double, so that completions are exact rather than rounded).
/// The network is advanced from event to event by its user:
///
///     daydream::network net;
///     auto nic = net.add_link(25e9 / 8 / 1e9);        // 25 Gbit/s in bytes per ns
///     const daydream::link_id path[] = {nic};
///     net.start(path, 1e6);                           // two flows of 1 MB at time 0
///     net.start(path, 1e6);
///     std::vector<daydream::network::completion> done;
///     net.advance_to(net.next_event(), done);         // both end at 2 MB / B = 640 us
///
/// Semantics:
/// - `start` begins a flow at the current time(). It waits the sum of its path's link
///   latencies (plus its own extra latency) and then sends its bytes; while sending it
///   takes its share of every link of its path. A flow of zero bytes, or one with no
///   link and no cap, ends when its latency is over.
/// - Rates are the max-min fair allocation of the sending flows, recomputed whenever a
///   flow begins sending or ends, only over the links and flows connected to the change
///   (the allocation of one connected component does not depend on the others).
/// - `advance_to(t)` handles every event up to `t` in time order and reports the flows
///   that ended, ordered by time and then by flow id. Deterministic: equal calls give
///   equal results.
///
/// Exactness: no chunking or time steps; two equal flows of S bytes that start together
/// on one link of capacity B both end at 2S/B, up to the rounding of doubles.
///
/// Complexity: an event that changes a component of L links and F flows crossing P
/// links each costs O((F P + L) log L) for the new rates plus O(F log E) to queue the
/// new completions (E queued events; stale ones are dropped lazily and the queue is
/// rebuilt when they outnumber the live ones). Independent flows (different links) cost
/// O(P log E) per event whatever the number of flows; F flows all on one link cost O(F)
/// per event, so O(F^2) for the whole run (10^3 flows: 10^6 steps).
class network {
public:
  /// A flow that ended, with its end time.
  struct completion {
    flow_id flow;
    double time;
  };

  /// Adds a link of `capacity` bytes per nanosecond and `latency` nanoseconds per flow.
  /// Throws daydream::error unless the capacity is positive and finite and the latency
  /// finite and not negative.
  link_id add_link(double capacity, double latency = 0) {
    if (!(capacity > 0) || !std::isfinite(capacity))
      throw error("daydream: network: link " + std::to_string(links_.size()) +
                  ": the capacity must be positive and finite, not " + std::to_string(capacity));
    if (!(latency >= 0) || !std::isfinite(latency))
      throw error("daydream: network: link " + std::to_string(links_.size()) +
                  ": the latency must be finite and not negative");
    auto& k = links_.emplace_back();
    k.capacity = capacity;
    k.latency = latency;
    return static_cast<link_id>(links_.size() - 1);
  }

  /// Starts a flow of `bytes` over `path` (links, each at most once) at time(). It
  /// begins sending after the latencies of its links plus `extra_latency` ns and never
  /// sends faster than `rate_cap` bytes per ns (infinity: no cap). Returns its id.
  /// Throws daydream::error for a link that does not exist or appears twice, negative or
  /// non-finite bytes, a negative latency or a cap that is not positive.
  flow_id start(std::span<const link_id> path, double bytes, double extra_latency = 0,
                double rate_cap = std::numeric_limits<double>::infinity()) {
    if (!(bytes >= 0) || !std::isfinite(bytes))
      throw error("daydream: network: start: the bytes of a flow must be finite and not negative");
    if (!(extra_latency >= 0) || !std::isfinite(extra_latency))
      throw error("daydream: network: start: the latency of a flow must be finite and not negative");
    if (!(rate_cap > 0))
      throw error("daydream: network: start: the rate cap of a flow must be positive");
    double lat = extra_latency;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (path[i] >= links_.size())
        throw error("daydream: network: start: link " + std::to_string(path[i]) + " does not exist");
      for (std::size_t j = 0; j < i; ++j)
        if (path[j] == path[i])
          throw error("daydream: network: start: link " + std::to_string(path[i]) +
                      " appears twice in the path of a flow");
      lat += links_[path[i]].latency;
    }
    flow_id f;
    if (!free_.empty()) {
      f = free_.back();
      free_.pop_back();
    } else {
      if (flows_.size() >= no_flow) throw error("daydream: network: too many flows at once");
      f = static_cast<flow_id>(flows_.size());
      flows_.emplace_back();
    }
    flow_state& x = flows_[f];
    x.path.assign(path.begin(), path.end());
    x.slot.assign(path.size(), 0);
    x.bytes = bytes;
    x.remaining = bytes;
    x.rate = 0;
    x.cap = rate_cap;
    x.updated = now_;
    x.start = now_;
    x.st = state::waiting;
    x.on_links = false;
    ++x.version;
    ++live_;
    push_event(now_ + lat, f);
    return f;
  }

  /// The current time (ns): where the last advance_to left it.
  double time() const noexcept { return now_; }

  /// The time of the next event (a flow begins sending or ends); infinity if none.
  double next_event() {
    drop_stale();
    return events_.empty() ? std::numeric_limits<double>::infinity() : events_.front().time;
  }

  /// Handles every event up to time `t` (>= time()) in order and appends the flows that
  /// ended to `done` (ordered by time, then id). Events within `tolerance` ns after `t`
  /// are handled at `t`: a caller that keeps whole nanoseconds passes 0.5 and rounds
  /// next_event() to the nearest one. Afterwards time() is `t`.
  void advance_to(double t, std::vector<completion>& done, double tolerance = 0) {
    if (!(t >= now_))
      throw error("daydream: network: advance_to: time " + std::to_string(t) +
                  " is before the current time " + std::to_string(now_));
    for (;;) {
      drop_stale();
      if (events_.empty() || events_.front().time > t + tolerance) break;
      const double at = std::min(events_.front().time, t);
      now_ = std::max(now_, at);
      dirty_.clear();
      const std::size_t first_done = done.size();
      // Every event at this time (those clamped to t included) is handled before the
      // rates are recomputed once.
      while (!events_.empty() && std::min(events_.front().time, t) <= now_ &&
             events_.front().time <= t + tolerance) {
        const event e = pop_event();
        if (e.version != flows_[e.flow].version) continue;
        flow_state& x = flows_[e.flow];
        if (x.st == state::waiting) begin_sending(e.flow);
        else if (x.st == state::sending) finish(e.flow, done);
      }
      // Flows that begin sending with nothing to send (or no limit) end at once.
      for (auto f : instant_) finish(f, done);
      instant_.clear();
      std::sort(done.begin() + std::ptrdiff_t(first_done), done.end(),
                [](const completion& a, const completion& b) { return a.flow < b.flow; });
      reallocate();
      for (std::size_t i = first_done; i < done.size(); ++i) release(done[i].flow);
    }
    now_ = t;
  }

  /// Flows started and not yet reported ended.
  std::size_t active() const noexcept { return live_; }
  /// The current rate of flow `f` (bytes per ns; 0 while it waits for its latency).
  double rate(flow_id f) const { return flow(f).rate; }
  /// Bytes flow `f` has still to send at time().
  double remaining(flow_id f) const {
    const flow_state& x = flow(f);
    return std::max(0.0, x.remaining - x.rate * (now_ - x.updated));
  }
  /// The links of flow `f`.
  std::span<const link_id> path(flow_id f) const { return flow(f).path; }
  /// When flow `f` was started.
  double started(flow_id f) const { return flow(f).start; }

  /// Links added.
  std::size_t links() const noexcept { return links_.size(); }
  /// The capacity of link `l` (bytes per ns).
  double capacity(link_id l) const { return link(l).capacity; }
  /// The latency of link `l` (ns).
  double latency(link_id l) const { return link(l).latency; }
  /// Flows sending over link `l` now.
  std::size_t load(link_id l) const { return link(l).flows.size(); }
  /// Nanoseconds up to time() during which at least one flow sent over link `l`.
  double busy(link_id l) const {
    const link_state& k = link(l);
    return k.busy + (k.flows.empty() ? 0.0 : now_ - k.busy_since);
  }
  /// Bytes link `l` carried up to time().
  double carried(link_id l) const {
    const link_state& k = link(l);
    double b = k.carried;
    for (auto f : k.flows) b += flows_[f].bytes - remaining(f);
    return b;
  }

private:
  enum class state : std::uint8_t { free, waiting, sending };
  struct link_state {
    double capacity = 0;
    double latency = 0;
    std::vector<flow_id> flows; // sending flows
    double carried = 0;         // bytes of flows that ended
    double busy = 0;            // closed busy periods
    double busy_since = 0;
    // progressive filling
    double left = 0;
    std::uint32_t unfrozen = 0;
    std::uint32_t mark = 0;
  };
  struct flow_state {
    std::vector<link_id> path;
    std::vector<std::uint32_t> slot; // position in each link's `flows`
    double bytes = 0, remaining = 0, rate = 0, cap = 0;
    double updated = 0, start = 0;
    std::uint64_t version = 0;
    state st = state::free;
    std::uint32_t mark = 0;
    bool frozen = false;
    bool on_links = false; // in its links' `flows`
  };
  struct event {
    double time;
    flow_id flow;
    std::uint64_t version;
  };
  // Earliest first; ties by flow id.
  static bool later(const event& a, const event& b) noexcept {
    return a.time > b.time || (a.time == b.time && a.flow > b.flow);
  }

  const flow_state& flow(flow_id f) const {
    if (f >= flows_.size() || flows_[f].st == state::free)
      throw error("daydream: network: flow " + std::to_string(f) + " is not active");
    return flows_[f];
  }
  const link_state& link(link_id l) const {
    if (l >= links_.size()) throw error("daydream: network: link " + std::to_string(l) + " does not exist");
    return links_[l];
  }

  void push_event(double time, flow_id f) {
    events_.push_back({time, f, flows_[f].version});
    std::push_heap(events_.begin(), events_.end(), later);
  }
  event pop_event() {
    std::pop_heap(events_.begin(), events_.end(), later);
    const event e = events_.back();
    events_.pop_back();
    return e;
  }
  bool stale(const event& e) const noexcept {
    return flows_[e.flow].version != e.version || flows_[e.flow].st == state::free;
  }
  void drop_stale() {
    while (!events_.empty() && stale(events_.front())) pop_event();
    // Rebuild when stale events outnumber the live flows (each live flow has one).
    if (events_.size() > 64 && events_.size() > 4 * (live_ + 1)) {
      std::erase_if(events_, [&](const event& e) { return stale(e); });
      std::make_heap(events_.begin(), events_.end(), later);
    }
  }

  // Brings the bytes left of sending flow `f` to now_.
  void settle(flow_state& x) {
    x.remaining = std::max(0.0, x.remaining - x.rate * (now_ - x.updated));
    x.updated = now_;
  }

  void begin_sending(flow_id f) {
    flow_state& x = flows_[f];
    x.st = state::sending;
    x.updated = now_;
    x.rate = 0;
    ++x.version; // its next event is its end, queued by reallocate
    if (x.remaining <= 0 || (x.path.empty() && !std::isfinite(x.cap))) {
      instant_.push_back(f);
      return;
    }
    for (std::size_t i = 0; i < x.path.size(); ++i) {
      link_state& k = links_[x.path[i]];
      if (k.flows.empty()) k.busy_since = now_;
      x.slot[i] = static_cast<std::uint32_t>(k.flows.size());
      k.flows.push_back(f);
      dirty_.push_back(x.path[i]);
    }
    x.on_links = true;
    if (x.path.empty()) lone_.push_back(f);
  }

  void finish(flow_id f, std::vector<completion>& done) {
    flow_state& x = flows_[f];
    if (x.st == state::free) return;
    for (std::size_t i = 0; i < x.path.size() && x.on_links; ++i) {
      link_state& k = links_[x.path[i]];
      k.carried += x.bytes;
      // Swap-remove f from the link's flows, fixing the moved flow's slot.
      const std::uint32_t s = x.slot[i];
      const flow_id moved = k.flows.back();
      k.flows[s] = moved;
      k.flows.pop_back();
      if (moved != f) {
        flow_state& y = flows_[moved];
        for (std::size_t j = 0; j < y.path.size(); ++j)
          if (y.path[j] == x.path[i]) {
            y.slot[j] = s;
            break;
          }
      }
      if (k.flows.empty()) k.busy += now_ - k.busy_since;
      dirty_.push_back(x.path[i]);
    }
    x.on_links = false;
    x.remaining = 0;
    x.rate = 0;
    x.st = state::free; // the slot is reused only after release()
    ++x.version;
    done.push_back({f, now_});
  }

  void release(flow_id f) {
    flows_[f].path.clear();
    flows_[f].slot.clear();
    --live_;
    free_.push_back(f);
  }

  // Recomputes the max-min fair rates of the components of the dirty links, and of
  // flows without links (capped only), and queues their ends.
  void reallocate() {
    epoch_ += 2; // epoch_: in the component; epoch_ + 1: touched by a freeze
    comp_links_.clear();
    comp_flows_.clear();
    for (auto l : dirty_) {
      if (links_[l].mark == epoch_) continue;
      links_[l].mark = epoch_;
      comp_links_.push_back(l);
    }
    // Breadth-first over link -> flow -> link.
    for (std::size_t i = 0; i < comp_links_.size(); ++i) {
      for (auto f : links_[comp_links_[i]].flows) {
        flow_state& x = flows_[f];
        if (x.mark == epoch_) continue;
        x.mark = epoch_;
        comp_flows_.push_back(f);
        for (auto l : x.path)
          if (links_[l].mark != epoch_) {
            links_[l].mark = epoch_;
            comp_links_.push_back(l);
          }
      }
    }
    for (auto f : lone_) comp_flows_.push_back(f);
    lone_.clear();
    dirty_.clear();
    if (comp_flows_.empty()) return;
    // Determinism: the same set gives the same order of arithmetic.
    std::sort(comp_links_.begin(), comp_links_.end());
    std::sort(comp_flows_.begin(), comp_flows_.end());

    for (auto f : comp_flows_) {
      settle(flows_[f]);
      flows_[f].frozen = false;
    }
    heap_.clear();
    for (auto l : comp_links_) {
      link_state& k = links_[l];
      k.left = k.capacity;
      k.unfrozen = static_cast<std::uint32_t>(k.flows.size());
      if (k.unfrozen) heap_.push_back({k.left / k.unfrozen, l});
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>{});
    capped_.clear();
    for (auto f : comp_flows_)
      if (std::isfinite(flows_[f].cap)) capped_.push_back({flows_[f].cap, f});
    std::sort(capped_.begin(), capped_.end());
    std::size_t next_cap = 0;
    std::size_t left = comp_flows_.size();

    // Freezes flow f at rate r; the links whose share changed are queued again by
    // requeue(), once per link after a whole group of flows froze.
    auto freeze = [&](flow_id f, double r) {
      flow_state& x = flows_[f];
      x.frozen = true;
      x.rate = r;
      --left;
      for (auto l : x.path) {
        link_state& k = links_[l];
        k.left = std::max(0.0, k.left - r);
        --k.unfrozen;
        if (k.mark != epoch_ + 1) {
          k.mark = epoch_ + 1;
          touched_.push_back(l);
        }
      }
    };
    auto requeue = [&] {
      for (auto l : touched_) {
        link_state& k = links_[l];
        k.mark = epoch_;
        if (k.unfrozen) {
          heap_.push_back({k.left / k.unfrozen, l});
          std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
        }
      }
      touched_.clear();
    };
    while (left > 0) {
      // The tightest link, skipping entries made stale by later freezes.
      double level = std::numeric_limits<double>::infinity();
      link_id tight = 0;
      while (!heap_.empty()) {
        const auto [share, l] = heap_.front();
        const link_state& k = links_[l];
        if (k.unfrozen == 0 || share != k.left / k.unfrozen) {
          std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
          heap_.pop_back();
          continue;
        }
        level = share;
        tight = l;
        break;
      }
      while (next_cap < capped_.size() && flows_[capped_[next_cap].second].frozen) ++next_cap;
      if (next_cap < capped_.size() && capped_[next_cap].first <= level) {
        freeze(capped_[next_cap].second, capped_[next_cap].first);
        requeue();
        continue;
      }
      if (!std::isfinite(level)) break; // not reached: every flow has a link or a cap
      // Every unfrozen flow of the tightest link gets its level (a copy: freeze edits
      // nothing of the list, but be explicit about the order: by flow id).
      scratch_.assign(links_[tight].flows.begin(), links_[tight].flows.end());
      std::sort(scratch_.begin(), scratch_.end());
      for (auto f : scratch_)
        if (!flows_[f].frozen) freeze(f, level);
      requeue();
    }
    for (auto f : comp_flows_) {
      flow_state& x = flows_[f];
      ++x.version;
      if (x.rate > 0) push_event(now_ + x.remaining / x.rate, f);
      else if (x.remaining <= 0) push_event(now_, f);
      // A flow with rate 0 and bytes left (its links saturated by rounding) waits for
      // the next change of its component.
    }
  }

  std::vector<link_state> links_;
  std::vector<flow_state> flows_;
  std::vector<flow_id> free_;
  std::vector<event> events_; // a heap (later)
  double now_ = 0;
  std::size_t live_ = 0;
  std::uint32_t epoch_ = 0;
  // reused working memory
  std::vector<link_id> dirty_, comp_links_, touched_;
  std::vector<flow_id> comp_flows_, instant_, lone_, scratch_;
  std::vector<std::pair<double, link_id>> heap_;
  std::vector<std::pair<double, flow_id>> capped_;
};

} // namespace daydream

#endif
