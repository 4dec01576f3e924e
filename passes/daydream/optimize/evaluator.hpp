// Defines optimize::evaluator and evaluate_all: candidate plans replayed, in this process or shared among MPI ranks.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_OPTIMIZE_EVALUATOR_HPP
#define DAYDREAM_OPTIMIZE_EVALUATOR_HPP

#include <daydream/config.hpp>
#include <daydream/optimize/plan.hpp>

#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

namespace daydream::optimize {

/// How candidates are evaluated: by default in this process; a distributed evaluator
/// (MPI) evaluates a share on each rank and gathers them, and must return exactly what
/// one process would. `rank`/`ranks` say where this process stands; `agree` makes every
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

} // namespace daydream::optimize

#endif
