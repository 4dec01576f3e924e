// Defines the search's strategies: search_strategy (a named source of moves), search_view, the bundled tensor fusion, tensor partition and op fusion (dPRO Theorems 1-3), strategy_registry.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_OPTIMIZE_STRATEGIES_HPP
#define DAYDREAM_OPTIMIZE_STRATEGIES_HPP

#include <daydream/config.hpp>
#include <daydream/optimize/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::optimize {

/// A candidate change of the current plan, proposed by a strategy.
struct move {
  std::string strategy; ///< the strategy that proposed it
  std::string theorem;  ///< the rule that proposed it ("Theorem 2"), or empty
  std::string what;     ///< what it changes, for the search log
  plan next;            ///< the plan with the change applied
};

/// What a strategy sees when it proposes moves: the problem, the current plan, its
/// graph, its replay and the iteration's critical path, and, for every task of that
/// graph, the bucket whose synchronization it is (or -1).
struct search_view {
  const problem& p;
  const plan& current;
  const graph& h;
  const replay_result& r;
  const std::vector<critical_step>& path;
  const std::vector<std::int32_t>& bucket_of; ///< by task id of `h`: bucket index or -1

  /// When bucket `k`'s gradients are all ready in the replay (the latest end of their ready tasks).
  time_ns ready(std::size_t k) const {
    time_ns t = 0;
    for (auto i = current.starts[k]; i < current.end_of(k, p.gs.grads.size()); ++i) {
      auto rt = p.gs.grads[i].ready;
      for (auto& f : current.fused)
        if (std::find(f.ops.begin(), f.ops.end(), rt) != f.ops.end()) rt = f.ops.back();
      if (h.contains(rt)) t = std::max(t, r.end[rt]);
    }
    return t;
  }
  /// The start of bucket `k`'s first synchronization task and the end of its last one.
  std::pair<time_ns, time_ns> sync_span(std::size_t k) const {
    time_ns b = std::numeric_limits<time_ns>::max(), e = 0;
    h.for_each_task([&](task_id t) {
      if (t < bucket_of.size() && bucket_of[t] == std::int32_t(k)) { b = std::min(b, r.start[t]); e = std::max(e, r.end[t]); }
    });
    return {b, e};
  }
};

/// A search strategy: a named source of moves. The bundled ones are tensor_fusion,
/// tensor_partition, op_fusion; a user registers another one the same way (its moves
/// carry user_edit entries in the plan: the functor that applies it; the search undoes
/// a move by keeping the plan it came from).
struct search_strategy {
  std::string name;
  std::string help;
  std::function<std::vector<move>(const search_view&)> propose;
};

/// The bucket of each synchronization task of a plan's graph `h`, by task id (-1 for
/// other tasks), read from the names apply_plan gives them ("all_reduce bucket K[.J]",
/// "push bucket K", "pull bucket K") on tasks it added (ids at or above `first_new`).
inline std::vector<std::int32_t> buckets_of_tasks(const graph& h, task_id first_new) {
  std::vector<std::int32_t> out(h.id_bound(), -1);
  h.for_each_task([&](task_id t) {
    if (t < first_new || !h.is<comm_task>(t)) return;
    auto n = h.name(t);
    auto at = n.find("bucket ");
    if (at == n.npos) return;
    out[t] = std::int32_t(std::stol(std::string(n.substr(at + 7))));
  });
  return out;
}

/// The places gradients may be cut between buckets in the coarsened view: between two
/// gradients made ready by different tasks (the gradients of one op stay together).
inline std::vector<std::size_t> cut_points(const problem& p) {
  std::vector<std::size_t> out;
  for (std::size_t i = 1; i < p.gs.grads.size(); ++i)
    if (p.gs.grads[i].ready != p.gs.grads[i - 1].ready) out.push_back(i);
  return out;
}

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline plan merged(const plan& x, std::size_t k) { // buckets k and k+1 into one
  plan y = x;
  y.starts.erase(y.starts.begin() + std::ptrdiff_t(k + 1));
  y.piece[k] = 0;
  y.piece.erase(y.piece.begin() + std::ptrdiff_t(k + 1));
  return y;
}
inline plan split(const plan& x, std::size_t k, std::size_t at) { // bucket k cut before gradient `at`
  plan y = x;
  y.starts.insert(y.starts.begin() + std::ptrdiff_t(k + 1), at);
  y.piece.insert(y.piece.begin() + std::ptrdiff_t(k + 1), x.piece[k]);
  return y;
}
inline std::string gradient_range(const problem& p, const plan& x, std::size_t k) {
  const auto a = x.starts[k], b = x.end_of(k, p.gs.grads.size());
  return "gradients " + std::to_string(a) + ".." + std::to_string(b - 1) + " (" +
         passes::format_bytes(double(bytes_of(p, a, b))) + ")";
}
} // namespace detail
//! @endcond

/// The time bucket `bytes` takes to synchronize alone when cut into pieces of `piece`
/// bytes: a partial replay of just that bucket's communication (its pieces on fresh
/// links, as apply_plan inserts them), its makespan.
inline time_ns partial_replay(const problem& p, transport how, std::uint64_t bytes, std::uint64_t piece) {
  graph h;
  const auto share = how == transport::parameter_server_pipelined ? sharing::exclusive : sharing::fair;
  auto up = link_resource(h, "uplink", p.c.network.bandwidth, share);
  auto down = link_resource(h, "downlink", p.c.network.bandwidth, share);
  task_id prev = no_task;
  for (auto b : pieces_of(bytes, piece)) {
    const auto t = sync_time(p, how, b);
    if (how == transport::all_reduce) {
      prev = passes::add_comm(h, comm_op::all_reduce, "piece", b, p.c.workers(), t, up, {}, prev, 0).id;
    } else {
      auto push = passes::add_comm(h, comm_op::push, "push", b, p.c.workers(), t, up, {}, no_task, 0);
      passes::add_comm(h, comm_op::pull, "pull", b, p.c.workers(), t, down, {push.id}, no_task, 0);
    }
  }
  return daydream::replay(h).makespan;
}

/// The piece size for `bytes` that partial_replay finds fastest over a grid of piece
/// counts 1, 2, 4, ... 64 (ties: fewer pieces), and its time.
inline std::pair<std::uint64_t, time_ns> best_partition(const problem& p, transport how, std::uint64_t bytes) {
  std::uint64_t best_piece = 0;
  time_ns best = partial_replay(p, how, bytes, 0);
  for (std::uint64_t k = 2; k <= 64 && k <= bytes; k *= 2) {
    const std::uint64_t piece = (bytes + k - 1) / k;
    const auto t = partial_replay(p, how, bytes, piece);
    if (t < best) { best = t; best_piece = piece; }
  }
  return {best_piece, best};
}

/// Tensor fusion (dPRO Theorem 2): for each bucket on the critical path, merge it with
/// the previous bucket when that one's synchronization ends after this one's gradients
/// are ready and the fused synchronization, started when the previous one started (or
/// when this one is ready, if later), ends earlier than this one does now; and, the
/// converse, split a bucket whose synchronization waited for its last gradients at the
/// cut where the earlier part could have started sooner.
inline search_strategy tensor_fusion_strategy() {
  search_strategy s;
  s.name = "tensor_fusion";
  s.help = "which gradients share a synchronization bucket (dPRO Theorem 2), on the coarsened view";
  s.propose = [](const search_view& v) {
    std::vector<move> out;
    const auto& x = v.current;
    const auto n = v.p.gs.grads.size();
    std::set<std::size_t> on_path;
    for (auto& st : v.path)
      if (st.task < v.bucket_of.size() && v.bucket_of[st.task] >= 0) on_path.insert(std::size_t(v.bucket_of[st.task]));
    const auto cuts = cut_points(v.p);
    std::vector<std::size_t> merge_all; // buckets that Theorem 2 fuses with the one before
    for (auto k : on_path) {
      const auto [b, e] = v.sync_span(k);
      if (e == 0) continue; // no synchronization task of the bucket was replayed
      if (k > 0) {
        const auto [pb, pe] = v.sync_span(k - 1);
        if (pe == 0) continue;
        const auto fused_bytes = bytes_of(v.p, x.starts[k - 1], x.end_of(k, n));
        const auto fused_end = std::max(pb, v.ready(k)) + sync_time(v.p, x.how, fused_bytes);
        if (pe > v.ready(k) && fused_end < e) {
          out.push_back({"tensor_fusion", "Theorem 2",
                         "fuse " + detail::gradient_range(v.p, x, k - 1) + " with " + detail::gradient_range(v.p, x, k),
                         detail::merged(x, k - 1)});
          merge_all.push_back(k);
        }
      }
      // The converse: the part of the bucket ready before the previous sync ended goes first.
      const auto prev_end = k > 0 ? v.sync_span(k - 1).second : time_ns{0};
      std::size_t best_cut = 0;
      for (auto c : cuts) {
        if (c <= x.starts[k] || c >= x.end_of(k, n)) continue;
        const auto rt = v.h.contains(v.p.gs.grads[c - 1].ready) ? v.r.end[v.p.gs.grads[c - 1].ready] : 0;
        if (rt <= std::max(prev_end, b)) best_cut = c;
      }
      if (best_cut == 0 && x.end_of(k, n) - x.starts[k] > 1) {
        // No part was ready early: cut where the bytes halve, so that the tail's sync shrinks.
        const auto total = bytes_of(v.p, x.starts[k], x.end_of(k, n));
        std::uint64_t acc = 0;
        for (auto c : cuts) {
          if (c <= x.starts[k] || c >= x.end_of(k, n)) continue;
          acc = bytes_of(v.p, x.starts[k], c);
          if (2 * acc >= total) { best_cut = c; break; }
          best_cut = c;
        }
      }
      if (best_cut != 0)
        out.push_back({"tensor_fusion", "Theorem 2 (converse)",
                       "split " + detail::gradient_range(v.p, x, k) + " before gradient " + std::to_string(best_cut),
                       detail::split(x, k, best_cut)});
    }
    // Algorithm 1 applies the theorem along the whole critical path before replaying again.
    if (merge_all.size() > 1) {
      plan y = x;
      for (auto k = merge_all.rbegin(); k != merge_all.rend(); ++k) y = detail::merged(y, *k - 1);
      out.push_back({"tensor_fusion", "Theorem 2",
                     "fuse " + std::to_string(merge_all.size()) + " bucket pairs along the critical path", std::move(y)});
    }
    return out;
  };
  return s;
}

/// Tensor partition (dPRO Theorem 3): for each bucket on the critical path, the piece
/// size found by grid search with partial replay of that bucket's communication; with
/// symmetry, every bucket of the same size gets the same piece size.
inline search_strategy tensor_partition_strategy() {
  search_strategy s;
  s.name = "tensor_partition";
  s.help = "how many pieces each bucket is cut into (dPRO Theorem 3), by grid search with partial replay";
  s.propose = [](const search_view& v) {
    std::vector<move> out;
    const auto& x = v.current;
    const auto n = v.p.gs.grads.size();
    std::set<std::size_t> on_path;
    for (auto& st : v.path)
      if (st.task < v.bucket_of.size() && v.bucket_of[st.task] >= 0) on_path.insert(std::size_t(v.bucket_of[st.task]));
    for (auto k : on_path) {
      const auto bytes = bytes_of(v.p, x.starts[k], x.end_of(k, n));
      auto [piece, t] = best_partition(v.p, x.how, bytes);
      if (piece == x.piece[k]) continue;
      plan y = x;
      std::size_t same = 0;
      for (std::size_t j = 0; j < y.buckets(); ++j)
        if (bytes_of(v.p, y.starts[j], y.end_of(j, n)) == bytes) { y.piece[j] = piece; ++same; }
      out.push_back({"tensor_partition", "Theorem 3",
                     "cut " + detail::gradient_range(v.p, x, k) + (piece ? " into pieces of " + passes::format_bytes(double(piece)) : " back into one piece") +
                         (same > 1 ? " (and the " + std::to_string(same - 1) + " other bucket(s) of that size: symmetry)" : "") +
                         ", alone " + passes::format_time(t),
                     std::move(y)});
    }
    // The transport itself (parameter servers, pipelined, pay off with pieces: each
    // bucket gets its best piece size for the new transport).
    for (auto how : {transport::all_reduce, transport::parameter_server, transport::parameter_server_pipelined}) {
      if (how == x.how) continue;
      plan y = x;
      y.how = how;
      for (std::size_t j = 0; j < y.buckets(); ++j)
        y.piece[j] = how == transport::all_reduce ? 0 : best_partition(v.p, how, bytes_of(v.p, y.starts[j], y.end_of(j, n))).first;
      out.push_back({"tensor_partition", "Theorem 3",
                     std::string("synchronize through ") + std::string(to_string(how)) + ", pieces by partial replay",
                     std::move(y)});
    }
    return out;
  };
  return s;
}

/// Op fusion (dPRO Theorem 1) on the coarsened view: two consecutive kernels of one
/// stream on the critical path are fused when the first makes no gradient ready (then
/// fusing delays no synchronization), or when the synchronization of the gradients it
/// makes ready takes less than the time fusion saves. With symmetry, the move fuses every
/// pair of kernels with the same two names (identical blocks) that qualifies.
inline search_strategy op_fusion_strategy(std::size_t max_moves = 8) {
  search_strategy s;
  s.name = "op_fusion";
  s.help = "adjacent computation ops fused into one kernel (dPRO Theorem 1), duration from problem::fused_duration";
  s.propose = [max_moves](const search_view& v) {
    std::vector<move> out;
    const auto& x = v.current;
    std::set<task_id> in_group;
    for (auto& f : x.fused) in_group.insert(f.ops.begin(), f.ops.end());
    std::map<task_id, std::size_t> bucket_of_ready; // gradient-ready op -> its bucket
    for (std::size_t k = 0; k < x.buckets(); ++k)
      for (auto i = x.starts[k]; i < x.end_of(k, v.p.gs.grads.size()); ++i) bucket_of_ready[v.p.gs.grads[i].ready] = k;
    // The pair (a, next kernel) qualifies under Theorem 1, and what it saves.
    auto saving = [&](task_id a, task_id b) -> time_ns {
      if (!v.p.g.contains(a) || !v.p.g.contains(b) || in_group.count(a) || in_group.count(b)) return 0;
      if (!v.p.g.is<gpu_kernel>(a) || !v.p.g.is<gpu_kernel>(b) || v.p.g.phase_of(a) != v.p.g.phase_of(b)) return 0;
      if (next_on_resource(v.p.g, a) != b) return 0;
      std::vector<task_id> ops{a, b};
      time_ns saved = v.p.g.duration(a) + v.p.g.duration(b) - v.p.fused_duration(v.p.g, ops);
      auto call = launch_of(v.p.g, a);
      if (call != no_task && launched_by(v.p.g, call).size() == 1) saved += v.p.g.duration(call);
      if (saved <= 0) return 0;
      if (auto it = bucket_of_ready.find(a); it != bucket_of_ready.end()) {
        const auto k = it->second;
        const auto sync = sync_time(v.p, x.how, bytes_of(v.p, x.starts[k], x.end_of(k, v.p.gs.grads.size())));
        if (sync >= saved) return 0; // Theorem 1: the delayed sync would cost more than fusion saves
      }
      return saved;
    };
    struct cand { time_ns saved; task_id a; };
    std::vector<cand> cands;
    for (auto& st : v.path) {
      const auto t = st.task;
      if (t >= v.p.g.id_bound() || !v.p.g.contains(t)) continue; // tasks the plan added are not ops
      if (!v.h.is<gpu_kernel>(t)) continue;
      const auto nxt = next_on_resource(v.p.g, t);
      if (nxt == no_task) continue;
      if (auto sv = saving(t, nxt); sv > 0) cands.push_back({sv, t});
    }
    std::stable_sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) { return a.saved > b.saved; });
    std::set<std::pair<std::string, std::string>> tried;
    for (auto& c : cands) {
      if (out.size() >= max_moves) break;
      const auto b = next_on_resource(v.p.g, c.a);
      const std::pair<std::string, std::string> names{std::string(v.p.g.name(c.a)), std::string(v.p.g.name(b))};
      if (!tried.insert(names).second) continue;
      // Symmetry: every qualifying pair with the same names, taken left to right.
      plan y = x;
      std::set<task_id> used = in_group;
      std::size_t pairs = 0;
      time_ns total = 0;
      v.p.g.for_each_task([&](task_id a) {
        if (used.count(a) || v.p.g.name(a) != names.first) return;
        const auto nb = next_on_resource(v.p.g, a);
        if (nb == no_task || used.count(nb) || v.p.g.name(nb) != names.second) return;
        const auto sv = saving(a, nb);
        if (sv <= 0) return;
        y.fused.push_back({{a, nb}});
        used.insert(a);
        used.insert(nb);
        ++pairs;
        total += sv;
      });
      if (pairs == 0) continue;
      auto shorter = [](const std::string& n) { return n.size() > 60 ? n.substr(0, 57) + "..." : n; };
      out.push_back({"op_fusion", "Theorem 1",
                     "fuse " + shorter(names.first) + " + " + shorter(names.second) + " (" + std::to_string(pairs) +
                         " pair(s), symmetry; " + passes::format_time(total) + " of kernel and launch time saved)",
                     std::move(y)});
    }
    return out;
  };
  return s;
}

/// The strategies a search can use, by name: the extension point, as the pass registry
/// is for passes.
class strategy_registry {
public:
  /// Adds `s` (replacing one of the same name).
  strategy_registry& add(search_strategy s) {
    for (auto& e : entries_)
      if (e.name == s.name) { e = std::move(s); return *this; }
    entries_.push_back(std::move(s));
    return *this;
  }
  const search_strategy* find(std::string_view name) const {
    for (auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  const std::vector<search_strategy>& entries() const noexcept { return entries_; }
  /// The strategies named in `names` (all when empty); throws usage_error naming an
  /// unknown one and listing the known ones.
  std::vector<search_strategy> select(const std::vector<std::string>& names) const {
    if (names.empty()) return entries_;
    std::vector<search_strategy> out;
    for (auto& n : names) {
      auto* s = find(n);
      if (!s) {
        std::string known;
        for (auto& e : entries_) known += (known.empty() ? "" : ", ") + e.name;
        throw usage_error("daydream optimize: unknown strategy '" + n + "' (known: " + known + ")");
      }
      out.push_back(*s);
    }
    return out;
  }

private:
  std::vector<search_strategy> entries_;
};

/// The bundled strategies: tensor_fusion, tensor_partition, op_fusion.
inline strategy_registry bundled_strategies() {
  strategy_registry r;
  r.add(tensor_fusion_strategy()).add(tensor_partition_strategy()).add(op_fusion_strategy());
  return r;
}

} // namespace daydream::optimize

#endif
