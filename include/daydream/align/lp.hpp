// Defines clock alignment of a job's ranks as a linear program solved by GLPK: one offset per clock from the causality and the near-simultaneous completion of matched collectives (dPRO §4.2 adapted to NCCL).
// SPDX-License-Identifier: MIT
//
// Target daydream::align (links GLPK, libglpk-dev). The core's job.hpp defines what
// alignment reads and gives (alignment_input, alignment_result); this header solves it.
//
//   alignment_input --clocks (same_host groups share one; a collective's parts on one clock
//        merged)--> initial offsets (median completion differences) --at most max_collectives
//        evenly spaced--> LP with the extreme parts' rows --GLPK primal simplex from a feasible
//        basis--> offsets --add the most violated rows--> dual simplex --> ... --> offsets
//
// The LP, per matched collective c with parts p (clock k(p), recorded start s_p, end e_p)
// and one offset variable t_k per clock k (the reference clock's fixed at 0):
//
//   lo_c <= e_p + t_k(p)     lo_c + w_c >= e_p + t_k(p)     st_c >= s_p + t_k(p)   (every part)
//   lo_c + v_c >= st_c,  w_c >= 0,  v_c >= 0                                        (causality)
//   minimize  sum_c w_c  +  causality_weight * sum_c v_c
//
// w_c is the spread of the collective's completion times (alignment_quality's
// measure), v_c how far its earliest completion lies before its last start (no rank's
// part can end before every rank's part has started). Only the rows of the extreme parts
// bind; the solver starts from those of the initial offsets and adds the violated ones
// until none is (row generation), so the answer is the full LP's optimum.
#ifndef DAYDREAM_ALIGN_LP_HPP
#define DAYDREAM_ALIGN_LP_HPP

#include <daydream/config.hpp>
#include <daydream/job/graph.hpp>

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace daydream {

/// Knobs of glpk_alignment.
struct lp_alignment_options {
  /// Weight of a nanosecond of causality violation against a nanosecond of completion
  /// spread: causality is nearly a hard constraint, but data that cannot satisfy it
  /// (a clock that drifts, a kernel recorded wrongly) still solves.
  double causality_weight = 1000.0;
  /// Whether ranks of one same_host group share one offset (their clocks are the same).
  bool share_host_clocks = true;
  /// A part ending up to this long before another starts is not counted as a violation
  /// in the reported quality (alignment_quality's tolerance).
  time_ns tolerance = 1'000;
  /// Collectives in the LP at most (0: all): beyond it, this many evenly spaced ones. The
  /// LP's size grows with collectives x clocks and the simplex's time faster; a few hundred
  /// collectives fix each clock's offset well, and the reported quality (residual,
  /// violations) still covers every collective.
  std::size_t max_collectives = 500;
  /// Row-generation rounds at most (each adds the rows the last solution violates); the
  /// solve fails with daydream::error if rows are still violated after them.
  int max_rounds = 100;
};

/// What glpk_alignment found, with the LP's own numbers.
struct lp_alignment_report {
  alignment_result result;     ///< offsets, residual and violations as alignment_quality measures them
  double objective_ns = 0;     ///< the LP's optimum: total spread + causality_weight * total violation (ns)
  double spread_ns = 0;        ///< total completion spread over the collectives in the LP (ns)
  double violation_ns = 0;     ///< total causality violation left (ns)
  std::size_t clocks = 0;      ///< offset variables (ranks sharing a clock count once)
  std::size_t collectives = 0; ///< collectives in the LP (spanning two clocks; at most max_collectives)
  std::size_t spanning = 0;    ///< collectives spanning at least two clocks
  std::size_t rows = 0;        ///< constraint rows of the final LP
  std::size_t full_rows = 0;   ///< rows of the LP with every part's rows (what row generation avoided)
  std::size_t columns = 0;     ///< variables of the LP
  int rounds = 0;              ///< simplex solves
  double seconds = 0;          ///< wall time of the whole alignment
  /// Clocks that share no collective with the reference clock (directly or through other
  /// clocks): their offsets are relative to their own component's lowest rank, and cannot
  /// be told from the reference's.
  std::vector<std::int32_t> unconnected;
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

struct glp_prob_deleter {
  void operator()(glp_prob* p) const noexcept { glp_delete_prob(p); }
};

// The parts of one collective on one clock: latest start, earliest and latest end.
struct clock_part {
  std::size_t clock;
  time_ns start, end_lo, end_hi;
};

// Union-find over clock indices.
inline std::size_t clock_root(std::vector<std::size_t>& parent, std::size_t k) {
  while (parent[k] != k) k = parent[k] = parent[parent[k]];
  return k;
}

inline const char* glpk_simplex_error(int rc) {
  switch (rc) {
  case GLP_EBADB: return "the initial basis is invalid";
  case GLP_ESING: return "the basis matrix is singular";
  case GLP_ECOND: return "the basis matrix is ill-conditioned";
  case GLP_EBOUND: return "a double-bounded variable has incorrect bounds";
  case GLP_EFAIL: return "the solver failed";
  case GLP_EOBJLL:
  case GLP_EOBJUL: return "the objective reached its limit";
  case GLP_EITLIM: return "the iteration limit was reached";
  case GLP_ETMLIM: return "the time limit was reached";
  case GLP_ENOPFS: return "the problem has no primal feasible solution";
  case GLP_ENODFS: return "the problem has no dual feasible solution";
  default: return "unknown error";
  }
}

inline const char* glpk_status(int st) {
  switch (st) {
  case GLP_OPT: return "optimal";
  case GLP_FEAS: return "feasible, not proved optimal";
  case GLP_INFEAS: return "infeasible";
  case GLP_NOFEAS: return "no feasible solution";
  case GLP_UNBND: return "unbounded";
  default: return "undefined";
  }
}

} // namespace detail
//! @endcond

/// Aligns the clocks of a job's ranks (glpk_alignment), with the LP's own numbers. Ranks of
/// one `same_host` group share an offset (lp_alignment_options::share_host_clocks); the
/// clock of the lowest rank is the reference (offset 0). Collectives whose parts all lie
/// on one clock say nothing about offsets and are left out of the LP (alignment_quality
/// still counts them). Throws daydream::error when GLPK fails or does not reach an
/// optimum, naming GLPK's reason.
inline lp_alignment_report glpk_alignment_report(const alignment_input& in, const lp_alignment_options& opt = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!(opt.causality_weight >= 0))
    throw error("daydream: clock alignment: causality_weight must be >= 0, not " + std::to_string(opt.causality_weight));
  lp_alignment_report rep;
  // Clocks: every rank named by the input or by a part, merged by host.
  std::vector<std::int32_t> ranks = in.ranks;
  for (auto& c : in.collectives)
    for (auto& p : c) ranks.push_back(p.rank);
  for (auto& h : in.same_host) ranks.insert(ranks.end(), h.begin(), h.end());
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  auto rank_index = [&](std::int32_t r) {
    return std::size_t(std::lower_bound(ranks.begin(), ranks.end(), r) - ranks.begin());
  };
  std::vector<std::size_t> parent(ranks.size());
  std::iota(parent.begin(), parent.end(), std::size_t(0));
  if (opt.share_host_clocks)
    for (auto& h : in.same_host)
      for (std::size_t k = 1; k < h.size(); ++k) {
        auto a = detail::clock_root(parent, rank_index(h[0])), b = detail::clock_root(parent, rank_index(h[k]));
        if (a != b) parent[std::max(a, b)] = std::min(a, b); // the lowest rank's index is the root
      }
  std::vector<std::size_t> clock_of_rank(ranks.size());
  std::vector<std::size_t> root_clock(ranks.size(), std::size_t(-1));
  std::size_t clocks = 0;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto r = detail::clock_root(parent, k);
    if (root_clock[r] == std::size_t(-1)) root_clock[r] = clocks++;
    clock_of_rank[k] = root_clock[r];
  }
  rep.clocks = clocks;

  // The collectives that span two clocks. The parts of one collective on one clock share
  // an offset: only their latest start and their earliest and latest ends can bind, so
  // they are kept as one part.
  using part = detail::clock_part;
  std::vector<std::vector<part>> coll;
  std::vector<std::size_t> slot(clocks, std::size_t(-1));
  // Times relative to one origin (the first part's start): nanoseconds since the epoch
  // (1.7e18) are not exact in a double, differences of a few seconds are.
  time_ns origin = 0;
  for (auto& c : in.collectives)
    if (!c.empty()) {
      origin = c.front().start;
      break;
    }
  for (auto& c : in.collectives) {
    std::vector<part> v;
    for (auto& p : c) {
      if (p.end < p.start)
        throw error("daydream: clock alignment: rank " + std::to_string(p.rank) + "'s part of a collective ends (" +
                    std::to_string(p.end) + " ns) before it starts (" + std::to_string(p.start) + " ns)");
      const auto k = clock_of_rank[rank_index(p.rank)];
      const time_ns start = p.start - origin, end = p.end - origin;
      if (slot[k] == std::size_t(-1)) {
        slot[k] = v.size();
        v.push_back({k, start, end, end});
      } else {
        auto& q = v[slot[k]];
        q.start = std::max(q.start, start);
        q.end_lo = std::min(q.end_lo, end);
        q.end_hi = std::max(q.end_hi, end);
      }
    }
    for (auto& q : v) slot[q.clock] = std::size_t(-1);
    if (v.size() >= 2) coll.push_back(std::move(v));
  }

  // Initial offsets, and the components of clocks linked by collectives: from each
  // component's lowest clock outward, a clock's offset is the median over the collectives
  // it shares with placed clocks of (mean placed completion - its completion).
  std::vector<double> init(clocks, 0.0);
  auto mid = [](const part& p) { return 0.5 * (double(p.end_lo) + double(p.end_hi)); };
  std::vector<std::size_t> component(clocks, std::size_t(-1));
  std::vector<char> reference(clocks, 0);
  std::size_t done = 0, components = 0;
  while (done < clocks) {
    std::size_t ref = 0;
    while (component[ref] != std::size_t(-1)) ++ref;
    const std::size_t comp = components++;
    component[ref] = comp;
    reference[ref] = 1;
    ++done;
    for (bool grew = true; grew;) {
      grew = false;
      std::vector<std::vector<double>> cand(clocks);
      for (auto& c : coll) {
        double sum = 0;
        std::size_t n = 0;
        for (auto& p : c)
          if (component[p.clock] == comp) sum += mid(p) + init[p.clock], ++n;
        if (n == 0 || n == c.size()) continue;
        for (auto& p : c)
          if (component[p.clock] == std::size_t(-1)) cand[p.clock].push_back(sum / double(n) - mid(p));
      }
      for (std::size_t k = 0; k < clocks; ++k) {
        if (cand[k].empty()) continue;
        auto& v = cand[k];
        std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
        init[k] = std::round(v[v.size() / 2]);
        component[k] = comp;
        ++done;
        grew = true;
      }
    }
  }
  for (std::size_t k = 0; k < ranks.size(); ++k)
    if (component[clock_of_rank[k]] != 0) rep.unconnected.push_back(ranks[k]);
  // The LP's collectives: all, or evenly spaced ones (every clock placed above from all).
  rep.spanning = coll.size();
  if (opt.max_collectives > 0 && coll.size() > opt.max_collectives) {
    std::vector<std::vector<part>> some;
    some.reserve(opt.max_collectives);
    for (std::size_t i = 0; i < opt.max_collectives; ++i) some.push_back(std::move(coll[i * rep.spanning / opt.max_collectives]));
    coll = std::move(some);
  }
  rep.collectives = coll.size();

  // Each collective's numbers relative to a base (its earliest start on the initial
  // offsets, a whole ns), so that the solver's numbers stay small.
  std::vector<double> base(coll.size());
  for (std::size_t c = 0; c < coll.size(); ++c) {
    double b = std::numeric_limits<double>::max();
    for (auto& p : coll[c]) b = std::min(b, double(p.start) + init[p.clock]);
    base[c] = b;
  }
  std::vector<double> t(clocks, 0.0); // the offsets' corrections to `init`
  { // The LP, solved by GLPK's simplex with row generation.
    // Columns: offsets (corrections to `init`, in ns) 1..clocks, then per collective
    // lo, hi, st, v. Row values are relative to a per-collective base (its earliest start
    // on the initial offsets), so the LP's numbers stay small.
    std::unique_ptr<glp_prob, detail::glp_prob_deleter> lp(glp_create_prob());
    glp_prob* P = lp.get();
    glp_set_obj_dir(P, GLP_MIN);
    const std::size_t ncols = clocks + 4 * coll.size();
    rep.columns = ncols;
    if (ncols > std::size_t(std::numeric_limits<int>::max() / 2))
      throw error("daydream: clock alignment: the LP is too large for GLPK (" + std::to_string(ncols) + " variables)");
    glp_add_cols(P, int(ncols));
    for (std::size_t k = 0; k < clocks; ++k)
      glp_set_col_bnds(P, int(k + 1), reference[k] ? GLP_FX : GLP_FR, 0.0, 0.0);
    auto col = [&](std::size_t c, int which) { return int(clocks + 4 * c + std::size_t(which) + 1); };
    for (std::size_t c = 0; c < coll.size(); ++c) {
      glp_set_col_bnds(P, col(c, 0), GLP_FR, 0.0, 0.0); // lo: earliest completion
      glp_set_col_bnds(P, col(c, 1), GLP_LO, 0.0, 0.0); // w: spread (latest completion = lo + w)
      glp_set_col_bnds(P, col(c, 2), GLP_FR, 0.0, 0.0); // st: latest start
      glp_set_col_bnds(P, col(c, 3), GLP_LO, 0.0, 0.0); // v: causality violation
      glp_set_obj_coef(P, col(c, 1), 1.0);
      glp_set_obj_coef(P, col(c, 3), opt.causality_weight);
    }
    // Rows. Per part three kinds (0: lo <= end, 1: lo + w >= end, 2: st >= start), added
    // lazily; `have` marks the ones in the LP. The spread is a variable of its own (w >= 0)
    // rather than hi - lo, so that an LP with only some parts' rows stays bounded.
    std::vector<std::size_t> first(coll.size() + 1, 0);
    for (std::size_t c = 0; c < coll.size(); ++c) first[c + 1] = first[c] + coll[c].size();
    std::vector<std::uint8_t> have(first.back(), 0);
    rep.full_rows = 3 * first.back() + coll.size();
    std::vector<int> ind(4);
    std::vector<double> val(4);
    int rows = 0;
    auto add_rows = [&](int n) {
      glp_add_rows(P, n);
      const int r = rows + 1;
      rows += n;
      return r;
    };
    if (!coll.empty()) {
      const int r0 = add_rows(int(coll.size()));
      for (std::size_t c = 0; c < coll.size(); ++c) {
        ind[1] = col(c, 0), val[1] = 1.0;
        ind[2] = col(c, 3), val[2] = 1.0;
        ind[3] = col(c, 2), val[3] = -1.0;
        glp_set_mat_row(P, r0 + int(c), 3, ind.data(), val.data());
        glp_set_row_bnds(P, r0 + int(c), GLP_LO, 0.0, 0.0);
      }
    }
    std::vector<std::pair<std::size_t, int>> pending; // (part index, kind)
    auto add_pending = [&] {
      if (pending.empty()) return;
      int r = add_rows(int(pending.size()));
      for (auto [gi, kind] : pending) {
        const auto c = std::size_t(std::upper_bound(first.begin(), first.end(), gi) - first.begin()) - 1;
        const auto& p = coll[c][gi - first[c]];
        const double rhs = double(kind == 0 ? p.end_lo : kind == 1 ? p.end_hi : p.start) + init[p.clock] - base[c];
        // lo - t <= rhs;  lo + w - t >= rhs;  st - t >= rhs
        int len = 0;
        ind[++len] = col(c, kind == 2 ? 2 : 0), val[len] = 1.0;
        if (kind == 1) ind[++len] = col(c, 1), val[len] = 1.0;
        ind[++len] = int(p.clock + 1), val[len] = -1.0;
        glp_set_mat_row(P, r, len, ind.data(), val.data());
        glp_set_row_bnds(P, r, kind == 0 ? GLP_UP : GLP_LO, rhs, rhs);
        have[gi] |= std::uint8_t(1u << kind);
        ++r;
      }
      pending.clear();
    };
    // The rows of each collective's extreme parts on the initial offsets.
    std::vector<char> causal(coll.size());
    for (std::size_t c = 0; c < coll.size(); ++c) {
      std::size_t lo = 0, hi = 0, st = 0;
      auto at = [&](std::size_t i, int kind) {
        const auto& p = coll[c][i];
        return double(kind == 0 ? p.end_lo : kind == 1 ? p.end_hi : p.start) + init[p.clock];
      };
      for (std::size_t i = 1; i < coll[c].size(); ++i) {
        if (at(i, 0) < at(lo, 0)) lo = i;
        if (at(i, 1) > at(hi, 1)) hi = i;
        if (at(i, 2) > at(st, 2)) st = i;
      }
      pending.emplace_back(first[c] + lo, 0);
      pending.emplace_back(first[c] + hi, 1);
      pending.emplace_back(first[c] + st, 2);
      causal[c] = at(st, 2) <= at(lo, 0);
    }
    add_pending();
    // A primal feasible starting basis, the solution at the initial offsets: per collective
    // lo, w and st basic with their rows tight, and v basic where the collective violates
    // causality (else the causality row's slack); the offsets nonbasic. The first simplex
    // then only moves the offsets, instead of building every collective's block from scratch.
    for (std::size_t k = 0; k < clocks; ++k) glp_set_col_stat(P, int(k + 1), reference[k] ? GLP_NS : GLP_NF);
    for (std::size_t c = 0; c < coll.size(); ++c) {
      const int rc = int(c) + 1, rk = int(coll.size() + 3 * c) + 1;
      glp_set_col_stat(P, col(c, 0), GLP_BS);
      glp_set_col_stat(P, col(c, 1), GLP_BS);
      glp_set_col_stat(P, col(c, 2), GLP_BS);
      glp_set_row_stat(P, rk, GLP_NU);
      glp_set_row_stat(P, rk + 1, GLP_NL);
      glp_set_row_stat(P, rk + 2, GLP_NL);
      glp_set_col_stat(P, col(c, 3), causal[c] ? GLP_NL : GLP_BS);
      glp_set_row_stat(P, rc, causal[c] ? GLP_BS : GLP_NL);
    }

    const int prev_term = glp_term_out(GLP_OFF);
    struct restore_term {
      int v;
      ~restore_term() { glp_term_out(v); }
    } restore{prev_term};
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    for (;;) {
      if (rep.rounds >= opt.max_rounds)
        throw error("daydream: clock alignment: GLPK's LP still violates rows of the full problem after " +
                    std::to_string(opt.max_rounds) + " rounds of row generation");
      ++rep.rounds;
      if (rows > 0) {
        // The first solve from the standard basis by the primal simplex; each later one
        // from the last optimal basis, which stays dual feasible when rows are added, by
        // the dual simplex.
        parm.meth = rep.rounds == 1 ? GLP_PRIMAL : GLP_DUALP;
        const int rc = glp_simplex(P, &parm);
        if (rc != 0)
          throw error(std::string("daydream: clock alignment: GLPK's simplex failed: ") + detail::glpk_simplex_error(rc) +
                      " (" + std::to_string(rows) + " rows, " + std::to_string(ncols) + " columns)");
        const int st = glp_get_status(P);
        if (st != GLP_OPT)
          throw error(std::string("daydream: clock alignment: GLPK found no optimum: the solution is ") +
                      detail::glpk_status(st) + " (" + std::to_string(rows) + " rows, " + std::to_string(ncols) +
                      " columns)");
      }
      for (std::size_t k = 0; k < clocks; ++k) t[k] = rows > 0 ? glp_get_col_prim(P, int(k + 1)) : 0.0;
      // Rows of the full LP the solution violates (beyond a small tolerance): per collective
      // and kind the most violated one, whose row then makes the others' likely hold.
      for (std::size_t c = 0; c < coll.size(); ++c) {
        const double lo = glp_get_col_prim(P, col(c, 0)), hi = lo + glp_get_col_prim(P, col(c, 1)),
                     st = glp_get_col_prim(P, col(c, 2));
        double worst[3] = {0, 0, 0};
        std::size_t which[3] = {0, 0, 0};
        for (std::size_t i = 0; i < coll[c].size(); ++i) {
          const auto& p = coll[c][i];
          const double shift = init[p.clock] - base[c] + t[p.clock];
          const double by[3] = {lo - (double(p.end_lo) + shift), double(p.end_hi) + shift - hi,
                                double(p.start) + shift - st};
          for (int kind = 0; kind < 3; ++kind)
            if (by[kind] > worst[kind] + 0.5) { // half a ns: the offsets are rounded to whole ns
              worst[kind] = by[kind];
              which[kind] = first[c] + i;
            }
        }
        for (int kind = 0; kind < 3; ++kind)
          if (worst[kind] > 0 && !(have[which[kind]] & (1u << kind))) pending.emplace_back(which[kind], kind);
      }
      if (pending.empty()) break;
      add_pending();
    }
    rep.rows = std::size_t(rows);
  }
  // The optimum, evaluated at the offsets found.
  for (auto& c : coll) {
    double lo = std::numeric_limits<double>::max(), hi = -lo, st = -lo;
    for (auto& p : c) {
      const double o = init[p.clock] + t[p.clock];
      lo = std::min(lo, double(p.end_lo) + o);
      hi = std::max(hi, double(p.end_hi) + o);
      st = std::max(st, double(p.start) + o);
    }
    rep.spread_ns += hi - lo;
    rep.violation_ns += std::max(0.0, st - lo);
  }
  rep.objective_ns = rep.spread_ns + opt.causality_weight * rep.violation_ns;
  auto& a = rep.result;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const auto c = clock_of_rank[k];
    a.offset[ranks[k]] = time_ns(std::llround(init[c] + t[c]));
  }
  auto q = alignment_quality(in, a.offset, opt.tolerance);
  a.residual_ns = q.first;
  a.violations = q.second;
  a.aligned = true;
  a.method = "linear program (GLPK " + std::string(glp_version()) + " simplex): " + std::to_string(clocks) +
             " clock(s), " + std::to_string(coll.size()) + " collective(s)" +
             (rep.spanning > coll.size() ? " (evenly spaced, of " + std::to_string(rep.spanning) + ")" : std::string()) +
             ", " + std::to_string(rep.rows) + " of " +
             std::to_string(rep.full_rows) + " rows, " + std::to_string(rep.rounds) + " round(s)";
  if (!rep.unconnected.empty())
    a.method += "; " + std::to_string(rep.unconnected.size()) +
                " rank(s) share no collective with the reference clock (offsets relative to their own)";
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

/// Aligns the clocks of a job's ranks with GLPK's simplex (glpk_alignment_report); a
/// clock_aligner: `clock_aligner f = [](auto& in) { return glpk_alignment(in); };`.
inline alignment_result glpk_alignment(const alignment_input& in, const lp_alignment_options& opt = {}) {
  return glpk_alignment_report(in, opt).result;
}

} // namespace daydream

#endif
