// Defines optimize::search: dPRO's strategy search (Algorithm 1 with Theorems 1-3) over tensor fusion, tensor partition, op fusion and memory strategies.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_OPTIMIZE_SEARCH_HPP
#define DAYDREAM_OPTIMIZE_SEARCH_HPP

#include <daydream/optimize/plan.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
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

/// A strategy: a named source of moves. The bundled ones are tensor_fusion,
/// tensor_partition, op_fusion; a user registers another one the same way (its moves
/// carry user_edit entries in the plan: the functor that applies it; the search undoes
/// a move by keeping the plan it came from).
struct strategy {
  std::string name;
  std::string help;
  std::function<std::vector<move>(const search_view&)> propose;
};

/// One accepted decision of the search, for the log.
struct decision {
  std::size_t round = 0;
  std::string strategy, theorem, what;
  time_ns before = 0, after = 0; ///< iteration time before and after, ns
};

/// How candidates are evaluated: by default in this process; a distributed evaluator
/// (MPI) evaluates a share on each rank and gathers them, and must return exactly what
/// one process would. `rank`/`ranks` say where this process stands; `stop` makes every
/// rank agree on whether to stop (rank 0 decides: the time budget).
struct evaluator {
  int rank = 0;
  int ranks = 1;
  /// Element-wise minimum over ranks of `v` (in place); identity for one process.
  std::function<void(std::vector<double>&)> min_all = [](std::vector<double>&) {};
  /// Rank 0's `flag`, on every rank.
  std::function<bool(bool)> agree = [](bool f) { return f; };
};

/// Evaluates plans (each index i on rank i % ranks) and returns every plan's iteration
/// time on every rank (peak memory ignored). A plan that cannot be applied is +inf.
inline std::vector<double> evaluate_all(const problem& p, const std::vector<plan>& xs, const evaluator& ev) {
  std::vector<double> out(xs.size(), std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (int(i % std::size_t(ev.ranks)) != ev.rank) continue;
    try {
      auto e = evaluate(p, xs[i]);
      if (e.time >= 0) out[i] = double(e.time);
    } catch (const usage_error&) {
      throw;
    } catch (const error&) {
    }
  }
  ev.min_all(out);
  return out;
}

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
inline strategy tensor_fusion_strategy() {
  strategy s;
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
inline strategy tensor_partition_strategy() {
  strategy s;
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
inline strategy op_fusion_strategy(std::size_t max_moves = 8) {
  strategy s;
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
  strategy_registry& add(strategy s) {
    for (auto& e : entries_)
      if (e.name == s.name) { e = std::move(s); return *this; }
    entries_.push_back(std::move(s));
    return *this;
  }
  const strategy* find(std::string_view name) const {
    for (auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  const std::vector<strategy>& entries() const noexcept { return entries_; }
  /// The strategies named in `names` (all when empty); throws usage_error naming an
  /// unknown one and listing the known ones.
  std::vector<strategy> select(const std::vector<std::string>& names) const {
    if (names.empty()) return entries_;
    std::vector<strategy> out;
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
  std::vector<strategy> entries_;
};

/// The bundled strategies: tensor_fusion, tensor_partition, op_fusion.
inline strategy_registry bundled_strategies() {
  strategy_registry r;
  r.add(tensor_fusion_strategy()).add(tensor_partition_strategy()).add(op_fusion_strategy());
  return r;
}

/// How the search runs.
struct search_options {
  double time_budget_s = 30;        ///< wall-clock budget, checked between rounds and every 64 candidates per rank
  std::size_t max_rounds = 1000;    ///< rounds of Algorithm 1 at most
  double min_gain = 1e-4;           ///< a move must gain at least this fraction of the iteration
  bool refine = true;               ///< after Algorithm 1 converges, try every merge/split/shift of bucket boundaries
  std::size_t refine_split_limit = 64; ///< refinement tries splits only with at most this many cut points
  std::optional<std::int64_t> memory_budget; ///< bytes of device memory the plan must fit in
  std::vector<std::string> grad_accum_ks{"2", "4", "8", "16"}; ///< micro-batch counts tried for the memory budget
};

/// What the search found.
struct search_result {
  plan best;
  time_ns best_time = -1;              ///< predicted iteration time of `best`
  std::int64_t best_peak = 0;          ///< its peak memory
  std::string best_from;               ///< "search", or the seed it kept ("pytorch_ddp" ...)
  time_ns start_time = -1;             ///< the graph as traced (its own synchronization, if any), replayed
  std::vector<decision> log;           ///< accepted decisions, in order
  std::size_t evaluated = 0;           ///< candidate plans replayed
  std::size_t rounds = 0;              ///< rounds of Algorithm 1
  double seconds = 0;                  ///< wall-clock time of the search
  bool budget_hit = false;             ///< whether the time budget stopped it
  std::string memory_note;             ///< what the memory strategy did
};

/// dPRO's optimizer (Hu et al., "dPRO: A Generic Performance Diagnosis and Optimization
/// Toolkit for Expediting Distributed DNN Training", MLSys 2022, Algorithm 1) on problem
/// `p` with `strategies`:
/// 1. seeds: the plans of known systems (DDP's buckets, one bucket, Horovod-sized
///    buffers, every op's gradients alone and, with tensor_partition, BytePS's
///    partitions on fair and on pipelined links) are evaluated and the fastest is the
///    start;
/// 2. each round replays the current plan, takes the iteration's critical path, and asks
///    every strategy for moves on it (Theorems 1-3 on the coarsened view); every move is
///    replayed (evaluate_all: on all ranks with an MPI evaluator) and the best one (ties:
///    the first proposed) is accepted if it gains at least `min_gain`; otherwise, or when
///    the time budget is spent, Algorithm 1 stops;
/// 3. refinement (`refine`): every merge of two neighbouring buckets, split at a cut
///    point, and shift of a boundary by one cut point is replayed, the best accepted,
///    until none gains (dPRO's search also explores beyond the theorems' proposals);
/// 4. memory: when the plan's peak exceeds `memory_budget`, re-computation and gradient
///    accumulation (k = 2, 4, ...) are tried on it and the faster one that fits is kept
///    (dPRO Table 4); none fitting is a daydream::error.
/// Deterministic: the same problem gives the same plan with any number of ranks (the
/// time budget aside, which rank 0 alone judges).
inline search_result search(const problem& p, const std::vector<strategy>& strategies,
                            const search_options& o = {}, const evaluator& ev = {}) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  search_result res;
  auto gain_enough = [&](double cand, double cur) { return cand < cur * (1.0 - o.min_gain); };
  {
    auto r = daydream::replay(p.g, trace_order_policy{}, p.replay);
    res.start_time = step_time(p.g, r, p.iteration);
  }
  // 1. Seeds.
  std::vector<std::pair<std::string, plan>> seeds = {
      {"pytorch_ddp", ddp_plan(p)},
      {"fuse_all", fuse_all_plan()},
      {"horovod_64MiB", greedy_cap_plan(p, 64ull << 20)},
      {"horovod", horovod_plan(p, ddp_plan(p))},
  };
  const auto enabled = [&](std::string_view name) {
    return std::any_of(strategies.begin(), strategies.end(), [&](const strategy& s) { return s.name == name; });
  };
  // Parameter servers and pieces are tensor partition's decisions.
  if (enabled("tensor_partition")) {
    seeds.push_back({"byteps", byteps_plan(p)});
    auto x = byteps_plan(p);
    x.how = transport::parameter_server_pipelined;
    seeds.push_back({"byteps_pipelined", x});
  }
  {
    plan alone;
    alone.starts.clear();
    alone.piece.clear();
    std::size_t i = 0;
    alone.starts.push_back(0);
    alone.piece.push_back(0);
    for (auto c : cut_points(p)) { alone.starts.push_back(c); alone.piece.push_back(0); ++i; }
    seeds.push_back({"one_bucket_per_op", alone});
  }
  std::vector<plan> xs;
  for (auto& s : seeds) xs.push_back(s.second);
  auto times = evaluate_all(p, xs, ev);
  res.evaluated += xs.size();
  std::size_t best_seed = 0;
  for (std::size_t i = 1; i < times.size(); ++i)
    if (times[i] < times[best_seed]) best_seed = i;
  if (!std::isfinite(times[best_seed])) {
    // Say why: the first seed again, its error passed on.
    std::string why = "its replay measured no time for the iteration";
    try {
      evaluate(p, xs.front());
    } catch (const std::exception& e) {
      why = e.what();
    }
    throw error("daydream optimize: no plan could be replayed on this graph (" + seeds.front().first + "'s plan: " + why + ")");
  }
  plan cur = seeds[best_seed].second;
  double cur_t = times[best_seed];
  res.best_from = seeds[best_seed].first;
  res.log.push_back({0, "seed", "", "start from " + seeds[best_seed].first + "'s plan (fastest of " +
                                        std::to_string(seeds.size()) + " seeds)", time_ns(cur_t), time_ns(cur_t)});

  auto accept_best = [&](std::vector<move>& moves, std::size_t round) {
    // De-duplicate by plan, keeping the first proposal.
    std::set<std::string> seen{cur.key()};
    std::vector<move> uniq;
    for (auto& m : moves)
      if (seen.insert(m.next.key()).second) uniq.push_back(std::move(m));
    if (uniq.empty()) return false;
    // In chunks, so that a long round stops when the time budget is spent (rank 0
    // decides for every rank; the candidates replayed so far still count).
    std::vector<double> ts;
    const std::size_t chunk = 64 * std::size_t(std::max(1, ev.ranks));
    for (std::size_t at = 0; at < uniq.size(); at += chunk) {
      std::vector<plan> cand;
      for (std::size_t i = at; i < std::min(uniq.size(), at + chunk); ++i) cand.push_back(uniq[i].next);
      auto part = evaluate_all(p, cand, ev);
      ts.insert(ts.end(), part.begin(), part.end());
      res.evaluated += cand.size();
      if (at + chunk < uniq.size() && ev.agree(elapsed() > o.time_budget_s)) { res.budget_hit = true; break; }
    }
    std::size_t k = 0;
    for (std::size_t i = 1; i < ts.size(); ++i)
      if (ts[i] < ts[k]) k = i;
    if (!gain_enough(ts[k], cur_t)) return false;
    res.log.push_back({round, uniq[k].strategy, uniq[k].theorem, uniq[k].what, time_ns(cur_t), time_ns(ts[k])});
    cur = std::move(uniq[k].next);
    cur_t = ts[k];
    res.best_from = "search";
    return true;
  };

  // 2. Algorithm 1.
  for (std::size_t round = 1; round <= o.max_rounds; ++round) {
    if (ev.agree(elapsed() > o.time_budget_s)) { res.budget_hit = true; break; }
    auto [h, rep] = apply_plan(p, cur);
    auto r = daydream::replay(h, trace_order_policy{}, p.replay);
    auto path = iteration_critical_path(h, r, p.iteration);
    auto bucket_of = buckets_of_tasks(h, task_id(p.g.id_bound()));
    search_view v{p, cur, h, r, path, bucket_of};
    std::vector<move> moves;
    for (auto& s : strategies) {
      auto m = s.propose(v);
      moves.insert(moves.end(), std::make_move_iterator(m.begin()), std::make_move_iterator(m.end()));
    }
    ++res.rounds;
    if (!accept_best(moves, round)) break;
  }
  // 3. Refinement over bucket boundaries.
  if (o.refine && enabled("tensor_fusion")) {
    const auto cuts = cut_points(p);
    for (std::size_t round = res.rounds + 1; round <= o.max_rounds + res.rounds; ++round) {
      if (ev.agree(elapsed() > o.time_budget_s)) { res.budget_hit = true; break; }
      std::vector<move> moves;
      const auto n = p.gs.grads.size();
      for (std::size_t k = 0; k + 1 < cur.buckets(); ++k)
        moves.push_back({"tensor_fusion", "refinement", "fuse " + detail::gradient_range(p, cur, k) + " with the next bucket",
                         detail::merged(cur, k)});
      for (std::size_t k = 0; k < cur.buckets() && cuts.size() <= o.refine_split_limit; ++k)
        for (auto c : cuts)
          if (c > cur.starts[k] && c < cur.end_of(k, n))
            moves.push_back({"tensor_fusion", "refinement",
                             "split " + detail::gradient_range(p, cur, k) + " before gradient " + std::to_string(c),
                             detail::split(cur, k, c)});
      for (std::size_t k = 1; k < cur.buckets(); ++k) {
        auto at = std::find(cuts.begin(), cuts.end(), cur.starts[k]);
        if (at == cuts.end()) continue;
        for (auto nb : {at == cuts.begin() ? cuts.end() : at - 1, at + 1}) {
          if (nb == cuts.end() || *nb <= cur.starts[k - 1] || *nb >= cur.end_of(k, n)) continue;
          plan y = cur;
          y.starts[k] = *nb;
          moves.push_back({"tensor_fusion", "refinement", "move the start of bucket " + std::to_string(k) +
                           " to gradient " + std::to_string(*nb), std::move(y)});
        }
      }
      ++res.rounds;
      if (!accept_best(moves, round)) break;
    }
  }
  res.best = cur;
  res.best_time = time_ns(cur_t);
  // 4. Memory.
  auto e = evaluate(p, cur);
  res.best_peak = e.peak;
  if (o.memory_budget && e.peak > *o.memory_budget) {
    if (!p.memory_modelled)
      throw error("daydream optimize: a memory budget needs a memory model, and this trace has none");
    std::vector<plan> cand;
    std::vector<std::string> names;
    {
      plan y = cur;
      y.memory = "recompute";
      cand.push_back(y);
      names.push_back("recompute");
    }
    for (auto& k : o.grad_accum_ks) {
      plan y = cur;
      y.memory = "grad_accum:k=" + k;
      cand.push_back(y);
      names.push_back(y.memory);
    }
    std::vector<evaluation> es;
    for (auto& y : cand) {
      try { es.push_back(evaluate(p, y)); } catch (const error&) { es.push_back({-1, 0}); }
    }
    res.evaluated += cand.size();
    std::size_t k = cand.size();
    std::string tried;
    for (std::size_t i = 0; i < cand.size(); ++i) {
      tried += (tried.empty() ? "" : ", ") + names[i] + " " +
               (es[i].time < 0 ? std::string("failed") : passes::format_bytes(double(es[i].peak)));
      if (es[i].time < 0 || es[i].peak > *o.memory_budget) continue;
      if (k == cand.size() || es[i].time < es[k].time) k = i;
    }
    if (k == cand.size())
      throw error("daydream optimize: no strategy meets the memory budget of " +
                  passes::format_bytes(double(*o.memory_budget)) + ": the plan peaks at " +
                  passes::format_bytes(double(e.peak)) + " and with memory strategies at " + tried);
    res.memory_note = names[k] + " (peak " + passes::format_bytes(double(e.peak)) + " -> " +
                      passes::format_bytes(double(es[k].peak)) + ", budget " +
                      passes::format_bytes(double(*o.memory_budget)) + "; tried " + tried + ")";
    res.log.push_back({res.rounds + 1, "memory", "Table 4", "over the memory budget: " + res.memory_note,
                       time_ns(cur_t), es[k].time});
    res.best = cand[k];
    res.best_time = es[k].time;
    res.best_peak = es[k].peak;
  }
  res.seconds = elapsed();
  return res;
}

/// Every bucketing of `p`'s gradients into runs of consecutive gradients (cut only at
/// cut_points), all_reduce transport, no pieces: 2^(cuts) plans, evaluated; the fastest
/// (ties: the first in enumeration order) and its time. Exhaustive, for small problems
/// (tests: the search's plan against the true optimum under the same cost model).
inline std::pair<plan, double> brute_force_buckets(const problem& p, transport how = transport::all_reduce,
                                                   const evaluator& ev = {}) {
  const auto cuts = cut_points(p);
  if (cuts.size() > 20) throw error("daydream optimize: brute force over more than 2^20 bucketings refused");
  std::vector<plan> xs;
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << cuts.size()); ++mask) {
    plan x;
    x.how = how;
    for (std::size_t i = 0; i < cuts.size(); ++i)
      if (mask >> i & 1) { x.starts.push_back(cuts[i]); x.piece.push_back(0); }
    xs.push_back(std::move(x));
  }
  auto ts = evaluate_all(p, xs, ev);
  std::size_t k = 0;
  for (std::size_t i = 1; i < ts.size(); ++i)
    if (ts[i] < ts[k]) k = i;
  return {xs[k], ts[k]};
}

} // namespace daydream::optimize

#endif
