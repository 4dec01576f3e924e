// Defines optimize::search: dPRO's strategy search (Algorithm 1 with Theorems 1-3) over tensor fusion, tensor partition, op fusion and memory strategies.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_OPTIMIZE_SEARCH_HPP
#define DAYDREAM_OPTIMIZE_SEARCH_HPP

#include <daydream/config.hpp>
#include <daydream/optimize/evaluator.hpp>
#include <daydream/optimize/plan.hpp>
#include <daydream/optimize/strategies.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::optimize {

/// One accepted decision of the search, for the log.
struct decision {
  std::size_t round = 0;
  std::string strategy, theorem, what;
  time_ns before = 0, after = 0; ///< iteration time before and after, ns
};

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

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// search() as a state and its steps: the current plan, its time and what the search
/// has found so far are the members; the seeds give the start, then Algorithm 1's
/// rounds, the refinement's rounds and the memory strategies each improve on it.
class plan_searcher {
public:
  plan_searcher(const problem& p, const std::vector<search_strategy>& strategies, const search_options& o,
                const evaluator& ev)
      : p_(p), strategies_(strategies), o_(o), ev_(ev), t0_(clock::now()) {}

  search_result run() {
    res_.start_time = traced_time();
    start_from_seeds();
    run_algorithm1();
    if (o_.refine && enabled("tensor_fusion")) refine();
    res_.best = cur_;
    res_.best_time = time_ns(cur_t_);
    fit_memory();
    res_.seconds = elapsed();
    return std::move(res_);
  }

private:
  using clock = std::chrono::steady_clock;

  double elapsed() const { return std::chrono::duration<double>(clock::now() - t0_).count(); }

  /// Whether every rank agrees that the time budget is spent (rank 0 decides).
  bool out_of_time() {
    if (!ev_.agree(elapsed() > o_.time_budget_s)) return false;
    res_.budget_hit = true;
    return true;
  }

  bool gain_enough(double cand, double cur) const { return cand < cur * (1.0 - o_.min_gain); }

  bool enabled(std::string_view name) const {
    return std::any_of(strategies_.begin(), strategies_.end(),
                       [&](const search_strategy& s) { return s.name == name; });
  }

  /// The graph as traced (its own synchronization, if any), replayed.
  time_ns traced_time() const {
    auto r = daydream::replay(p_.g, trace_order_policy{}, p_.replay);
    return step_time(p_.g, r, p_.iteration);
  }

  // ---- 1. seeds

  /// The plans of known systems, by name.
  std::vector<std::pair<std::string, plan>> seeds() const {
    std::vector<std::pair<std::string, plan>> out = {
        {"pytorch_ddp", ddp_plan(p_)},
        {"fuse_all", fuse_all_plan()},
        {"horovod_64MiB", greedy_cap_plan(p_, 64ull << 20)},
        {"horovod", horovod_plan(p_, ddp_plan(p_))},
    };
    // Parameter servers and pieces are tensor partition's decisions.
    if (enabled("tensor_partition")) {
      out.push_back({"byteps", byteps_plan(p_)});
      auto x = byteps_plan(p_);
      x.how = transport::parameter_server_pipelined;
      out.push_back({"byteps_pipelined", x});
    }
    out.push_back({"one_bucket_per_op", one_bucket_per_op()});
    return out;
  }

  /// Every op's gradients in a bucket of their own.
  plan one_bucket_per_op() const {
    plan alone;
    alone.starts.clear();
    alone.piece.clear();
    alone.starts.push_back(0);
    alone.piece.push_back(0);
    for (auto c : cut_points(p_)) {
      alone.starts.push_back(c);
      alone.piece.push_back(0);
    }
    return alone;
  }

  /// The fastest seed is the current plan.
  void start_from_seeds() {
    const auto named = seeds();
    std::vector<plan> xs;
    for (auto& s : named) xs.push_back(s.second);
    auto times = evaluate_all(p_, xs, ev_);
    res_.evaluated += xs.size();
    std::size_t best = 0;
    for (std::size_t i = 1; i < times.size(); ++i)
      if (times[i] < times[best]) best = i;
    if (!std::isfinite(times[best])) no_seed_replays(named.front());
    cur_ = named[best].second;
    cur_t_ = times[best];
    res_.best_from = named[best].first;
    res_.log.push_back({0, "seed", "", "start from " + named[best].first + "'s plan (fastest of " +
                                           std::to_string(named.size()) + " seeds)", time_ns(cur_t_), time_ns(cur_t_)});
  }

  /// Throws the error that says why no seed replays: the first seed's, evaluated again.
  [[noreturn]] void no_seed_replays(const std::pair<std::string, plan>& first) const {
    std::string why = "its replay measured no time for the iteration";
    try {
      evaluate(p_, first.second);
    } catch (const std::exception& e) {
      why = e.what();
    }
    throw error("daydream optimize: no plan could be replayed on this graph (" + first.first + "'s plan: " + why + ")");
  }

  // ---- 2. Algorithm 1

  void run_algorithm1() {
    for (std::size_t round = 1; round <= o_.max_rounds; ++round) {
      if (out_of_time()) break;
      auto moves = proposals();
      ++res_.rounds;
      if (!accept_best(moves, round)) break;
    }
  }

  /// Every strategy's moves on the current plan's critical path.
  std::vector<move> proposals() const {
    auto [h, rep] = apply_plan(p_, cur_);
    auto r = daydream::replay(h, trace_order_policy{}, p_.replay);
    auto path = iteration_critical_path(h, r, p_.iteration);
    auto bucket_of = buckets_of_tasks(h, task_id(p_.g.id_bound()));
    search_view v{p_, cur_, h, r, path, bucket_of};
    std::vector<move> moves;
    for (auto& s : strategies_) {
      auto m = s.propose(v);
      moves.insert(moves.end(), std::make_move_iterator(m.begin()), std::make_move_iterator(m.end()));
    }
    return moves;
  }

  /// Replays `moves` (once per distinct plan, the first proposal kept) and makes the
  /// fastest the current plan if it gains enough; whether it did.
  bool accept_best(std::vector<move>& moves, std::size_t round) {
    std::set<std::string> seen{cur_.key()};
    std::vector<move> uniq;
    for (auto& m : moves)
      if (seen.insert(m.next.key()).second) uniq.push_back(std::move(m));
    if (uniq.empty()) return false;
    const auto ts = evaluate_moves(uniq);
    std::size_t k = 0;
    for (std::size_t i = 1; i < ts.size(); ++i)
      if (ts[i] < ts[k]) k = i;
    if (!gain_enough(ts[k], cur_t_)) return false;
    res_.log.push_back({round, uniq[k].strategy, uniq[k].theorem, uniq[k].what, time_ns(cur_t_), time_ns(ts[k])});
    cur_ = std::move(uniq[k].next);
    cur_t_ = ts[k];
    res_.best_from = "search";
    return true;
  }

  /// The times of the moves' plans, in chunks, so that a long round stops when the time
  /// budget is spent (rank 0 decides for every rank; the candidates replayed so far
  /// still count): the first ones when it stopped.
  std::vector<double> evaluate_moves(const std::vector<move>& uniq) {
    std::vector<double> ts;
    const std::size_t chunk = 64 * std::size_t(std::max(1, ev_.ranks));
    for (std::size_t at = 0; at < uniq.size(); at += chunk) {
      std::vector<plan> cand;
      for (std::size_t i = at; i < std::min(uniq.size(), at + chunk); ++i) cand.push_back(uniq[i].next);
      auto part = evaluate_all(p_, cand, ev_);
      ts.insert(ts.end(), part.begin(), part.end());
      res_.evaluated += cand.size();
      if (at + chunk < uniq.size() && out_of_time()) break;
    }
    return ts;
  }

  // ---- 3. refinement

  void refine() {
    const auto cuts = cut_points(p_);
    // Each round adds one to both sides: refinement runs until no move gains.
    for (std::size_t round = res_.rounds + 1; round <= o_.max_rounds + res_.rounds; ++round) {
      if (out_of_time()) break;
      auto moves = refinement_moves(cuts);
      ++res_.rounds;
      if (!accept_best(moves, round)) break;
    }
  }

  /// Every merge of two neighbouring buckets, split at a cut point (with at most
  /// refine_split_limit of them), and shift of a boundary by one cut point.
  std::vector<move> refinement_moves(const std::vector<std::size_t>& cuts) const {
    std::vector<move> moves;
    const auto n = p_.gs.grads.size();
    for (std::size_t k = 0; k + 1 < cur_.buckets(); ++k)
      moves.push_back({"tensor_fusion", "refinement", "fuse " + detail::gradient_range(p_, cur_, k) + " with the next bucket",
                       detail::merged(cur_, k)});
    for (std::size_t k = 0; k < cur_.buckets() && cuts.size() <= o_.refine_split_limit; ++k)
      for (auto c : cuts)
        if (c > cur_.starts[k] && c < cur_.end_of(k, n))
          moves.push_back({"tensor_fusion", "refinement",
                           "split " + detail::gradient_range(p_, cur_, k) + " before gradient " + std::to_string(c),
                           detail::split(cur_, k, c)});
    for (std::size_t k = 1; k < cur_.buckets(); ++k) {
      auto at = std::find(cuts.begin(), cuts.end(), cur_.starts[k]);
      if (at == cuts.end()) continue;
      for (auto nb : {at == cuts.begin() ? cuts.end() : at - 1, at + 1}) {
        if (nb == cuts.end() || *nb <= cur_.starts[k - 1] || *nb >= cur_.end_of(k, n)) continue;
        plan y = cur_;
        y.starts[k] = *nb;
        moves.push_back({"tensor_fusion", "refinement",
                         "move the start of bucket " + std::to_string(k) + " to gradient " + std::to_string(*nb),
                         std::move(y)});
      }
    }
    return moves;
  }

  // ---- 4. memory

  /// Over the memory budget, the fastest of re-computation and gradient accumulation
  /// that fits replaces the best plan; throws when none fits.
  void fit_memory() {
    auto e = evaluate(p_, cur_);
    res_.best_peak = e.peak;
    if (!(o_.memory_budget && e.peak > *o_.memory_budget)) return;
    if (!p_.memory_modelled)
      throw error("daydream optimize: a memory budget needs a memory model, and this trace has none");
    std::vector<plan> cand;
    std::vector<std::string> names;
    memory_candidates(cand, names);
    std::vector<plan_evaluation> es;
    for (auto& y : cand) {
      try {
        es.push_back(evaluate(p_, y));
      } catch (const error&) {
        es.push_back({-1, 0});
      }
    }
    res_.evaluated += cand.size();
    std::size_t k = cand.size();
    std::string tried;
    for (std::size_t i = 0; i < cand.size(); ++i) {
      tried += (tried.empty() ? "" : ", ") + names[i] + " " +
               (es[i].time < 0 ? std::string("failed") : passes::format_bytes(double(es[i].peak)));
      if (es[i].time < 0 || es[i].peak > *o_.memory_budget) continue;
      if (k == cand.size() || es[i].time < es[k].time) k = i;
    }
    if (k == cand.size())
      throw error("daydream optimize: no strategy meets the memory budget of " +
                  passes::format_bytes(double(*o_.memory_budget)) + ": the plan peaks at " +
                  passes::format_bytes(double(e.peak)) + " and with memory strategies at " + tried);
    res_.memory_note = names[k] + " (peak " + passes::format_bytes(double(e.peak)) + " -> " +
                       passes::format_bytes(double(es[k].peak)) + ", budget " +
                       passes::format_bytes(double(*o_.memory_budget)) + "; tried " + tried + ")";
    res_.log.push_back({res_.rounds + 1, "memory", "Table 4", "over the memory budget: " + res_.memory_note,
                        time_ns(cur_t_), es[k].time});
    res_.best = cand[k];
    res_.best_time = es[k].time;
    res_.best_peak = es[k].peak;
  }

  /// The current plan with re-computation, and with gradient accumulation for each k.
  void memory_candidates(std::vector<plan>& cand, std::vector<std::string>& names) const {
    plan y = cur_;
    y.memory = "recompute";
    cand.push_back(y);
    names.push_back("recompute");
    for (auto& k : o_.grad_accum_ks) {
      plan z = cur_;
      z.memory = "grad_accum:k=" + k;
      cand.push_back(z);
      names.push_back(z.memory);
    }
  }

  const problem& p_;
  const std::vector<search_strategy>& strategies_;
  const search_options& o_;
  const evaluator& ev_;
  const clock::time_point t0_;
  search_result res_;
  plan cur_;          // the current plan
  double cur_t_ = 0;  // its iteration time
};

} // namespace detail
//! @endcond

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
inline search_result search(const problem& p, const std::vector<search_strategy>& strategies,
                            const search_options& o = {}, const evaluator& ev = {}) {
  return detail::plan_searcher(p, strategies, o, ev).run();
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
