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

// The clocks of a job: every rank named by the input or by a part, the ranks of one
// same_host group on one clock when they share it (the lowest rank's index is the root).
struct alignment_clocks {
  std::vector<std::int32_t> ranks;        // sorted, each once
  std::vector<std::size_t> clock_of_rank; // by index into ranks
  std::size_t count = 0;

  std::size_t rank_index(std::int32_t r) const {
    return std::size_t(std::lower_bound(ranks.begin(), ranks.end(), r) - ranks.begin());
  }
};

inline alignment_clocks find_clocks(const alignment_input& in, bool share_host_clocks) {
  alignment_clocks out;
  auto& ranks = out.ranks;
  ranks = in.ranks;
  for (auto& c : in.collectives)
    for (auto& p : c) ranks.push_back(p.rank);
  for (auto& h : in.same_host) ranks.insert(ranks.end(), h.begin(), h.end());
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::vector<std::size_t> parent(ranks.size());
  std::iota(parent.begin(), parent.end(), std::size_t(0));
  if (share_host_clocks)
    for (auto& h : in.same_host)
      for (std::size_t k = 1; k < h.size(); ++k) {
        auto a = clock_root(parent, out.rank_index(h[0])), b = clock_root(parent, out.rank_index(h[k]));
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
  out.clock_of_rank.resize(ranks.size());
  std::vector<std::size_t> root_clock(ranks.size(), std::size_t(-1));
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto r = clock_root(parent, k);
    if (root_clock[r] == std::size_t(-1)) root_clock[r] = out.count++;
    out.clock_of_rank[k] = root_clock[r];
  }
  return out;
}

using clock_collective = std::vector<clock_part>;

// One collective's parts merged by clock (`slot`: per clock, its part's index in the
// result, all -1 before and after), times relative to `origin`. The parts of one clock
// share an offset: only their latest start and their earliest and latest ends can bind.
inline clock_collective merge_by_clock(const std::vector<collective_part>& c, const alignment_clocks& clocks,
                                       time_ns origin, std::vector<std::size_t>& slot) {
  clock_collective v;
  for (auto& p : c) {
    if (p.end < p.start)
      throw error("daydream: clock alignment: rank " + std::to_string(p.rank) + "'s part of a collective ends (" +
                  std::to_string(p.end) + " ns) before it starts (" + std::to_string(p.start) + " ns)");
    const auto k = clocks.clock_of_rank[clocks.rank_index(p.rank)];
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
  return v;
}

// The collectives that span two clocks, their parts merged by clock. Times are relative
// to one origin (the first part's start): nanoseconds since the epoch (1.7e18) are not
// exact in a double, differences of a few seconds are.
inline std::vector<clock_collective> spanning_collectives(const alignment_input& in, const alignment_clocks& clocks) {
  std::vector<clock_collective> coll;
  std::vector<std::size_t> slot(clocks.count, std::size_t(-1));
  time_ns origin = 0;
  for (auto& c : in.collectives)
    if (!c.empty()) {
      origin = c.front().start;
      break;
    }
  for (auto& c : in.collectives) {
    auto v = merge_by_clock(c, clocks, origin, slot);
    if (v.size() >= 2) coll.push_back(std::move(v));
  }
  return coll;
}

// The initial offsets, and the components of clocks linked by collectives, each with
// its reference clock (offset fixed at 0).
struct clock_placement {
  std::vector<double> init;
  std::vector<std::size_t> component;
  std::vector<char> reference;
};

inline double part_mid(const clock_part& p) { return 0.5 * (double(p.end_lo) + double(p.end_hi)); }

// Places every clock outside any component that shares a collective with component
// `comp`: its offset is the median over those collectives of (mean completion of the
// component's parts - its completion). Returns how many clocks it placed.
inline std::size_t grow_component(const std::vector<clock_collective>& coll, std::size_t comp, clock_placement& pl) {
  const std::size_t clocks = pl.init.size();
  std::vector<std::vector<double>> cand(clocks);
  for (auto& c : coll) {
    double sum = 0;
    std::size_t n = 0;
    for (auto& p : c)
      if (pl.component[p.clock] == comp) sum += part_mid(p) + pl.init[p.clock], ++n;
    if (n == 0 || n == c.size()) continue;
    for (auto& p : c)
      if (pl.component[p.clock] == std::size_t(-1)) cand[p.clock].push_back(sum / double(n) - part_mid(p));
  }
  std::size_t placed = 0;
  for (std::size_t k = 0; k < clocks; ++k) {
    if (cand[k].empty()) continue;
    auto& v = cand[k];
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
    pl.init[k] = std::round(v[v.size() / 2]);
    pl.component[k] = comp;
    ++placed;
  }
  return placed;
}

// Components grow from their lowest unplaced clock outward, one round of
// grow_component at a time, until every clock is placed.
inline clock_placement place_clocks(const std::vector<clock_collective>& coll, std::size_t clocks) {
  clock_placement pl{std::vector<double>(clocks, 0.0), std::vector<std::size_t>(clocks, std::size_t(-1)),
                     std::vector<char>(clocks, 0)};
  std::size_t done = 0, components = 0;
  while (done < clocks) {
    std::size_t ref = 0;
    while (pl.component[ref] != std::size_t(-1)) ++ref;
    const std::size_t comp = components++;
    pl.component[ref] = comp;
    pl.reference[ref] = 1;
    ++done;
    for (std::size_t grew = 1; grew > 0;) {
      grew = grow_component(coll, comp, pl);
      done += grew;
    }
  }
  return pl;
}

// Keeps `max` evenly spaced collectives of `coll` (all when `max` is 0 or not fewer).
inline void keep_evenly_spaced(std::vector<clock_collective>& coll, std::size_t max) {
  if (max == 0 || coll.size() <= max) return;
  const std::size_t all = coll.size();
  std::vector<clock_collective> some;
  some.reserve(max);
  for (std::size_t i = 0; i < max; ++i) some.push_back(std::move(coll[i * all / max]));
  coll = std::move(some);
}

// Each collective's base: its earliest start on the initial offsets (a whole ns), so
// that the solver's numbers stay small.
inline std::vector<double> collective_bases(const std::vector<clock_collective>& coll, const std::vector<double>& init) {
  std::vector<double> base(coll.size());
  for (std::size_t c = 0; c < coll.size(); ++c) {
    double b = std::numeric_limits<double>::max();
    for (auto& p : coll[c]) b = std::min(b, double(p.start) + init[p.clock]);
    base[c] = b;
  }
  return base;
}

// A part's time of row kind `kind` (0: earliest end, 1: latest end, 2: latest start).
inline time_ns part_time(const clock_part& p, int kind) { return kind == 0 ? p.end_lo : kind == 1 ? p.end_hi : p.start; }

// GLPK's terminal output off while it lives.
struct glpk_quiet {
  int previous = glp_term_out(GLP_OFF);
  glpk_quiet() = default;
  glpk_quiet(const glpk_quiet&) = delete;
  glpk_quiet& operator=(const glpk_quiet&) = delete;
  ~glpk_quiet() { glp_term_out(previous); }
};

// The LP of glpk_alignment_report in GLPK, solved by row generation.
//
// Columns: the offsets (corrections to the initial offsets, in ns) 1..clocks, then per
// collective lo, w, st, v. Rows: per collective its causality row (lo + v - st >= 0),
// then per part three kinds (0: lo <= end, 1: lo + w >= end, 2: st >= start), added
// lazily; `have_` marks the ones in the LP. The spread is a variable of its own (w >= 0)
// rather than hi - lo, so that an LP with only some parts' rows stays bounded. Row values
// are relative to each collective's base.
class alignment_lp {
public:
  alignment_lp(const std::vector<clock_collective>& coll, const clock_placement& pl, const std::vector<double>& base,
               double causality_weight)
      : coll_(coll), init_(pl.init), reference_(pl.reference), base_(base), clocks_(pl.init.size()),
        ncols_(clocks_ + 4 * coll.size()) {
    if (ncols_ > std::size_t(std::numeric_limits<int>::max() / 2))
      throw error("daydream: clock alignment: the LP is too large for GLPK (" + std::to_string(ncols_) + " variables)");
    glp_set_obj_dir(P_, GLP_MIN);
    add_columns(causality_weight);
    first_.assign(coll_.size() + 1, 0);
    for (std::size_t c = 0; c < coll_.size(); ++c) first_[c + 1] = first_[c] + coll_[c].size();
    have_.assign(first_.back(), 0);
    add_causality_rows();
    set_start_basis(add_extreme_rows());
  }

  std::size_t columns() const noexcept { return ncols_; }
  std::size_t rows() const noexcept { return std::size_t(rows_); }
  /// Rows of the LP with every part's rows.
  std::size_t full_rows() const noexcept { return 3 * first_.back() + coll_.size(); }
  int rounds() const noexcept { return rounds_; }

  // Solves, adds the rows the solution violates, and again, until none is: the offsets'
  // corrections to the initial offsets.
  std::vector<double> solve(int max_rounds) {
    const glpk_quiet quiet;
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    std::vector<double> t(clocks_, 0.0);
    for (;;) {
      if (rounds_ >= max_rounds)
        throw error("daydream: clock alignment: GLPK's LP still violates rows of the full problem after " +
                    std::to_string(max_rounds) + " rounds of row generation");
      ++rounds_;
      // The first solve from the starting basis by the primal simplex; each later one
      // from the last optimal basis, which stays dual feasible when rows are added, by
      // the dual simplex.
      if (rows_ > 0) simplex(parm, rounds_ == 1 ? GLP_PRIMAL : GLP_DUALP);
      for (std::size_t k = 0; k < clocks_; ++k) t[k] = rows_ > 0 ? glp_get_col_prim(P_, int(k + 1)) : 0.0;
      for (std::size_t c = 0; c < coll_.size(); ++c) queue_violated(c, t);
      if (pending_.empty()) break;
      add_pending();
    }
    return t;
  }

private:
  int col(std::size_t c, int which) const { return int(clocks_ + 4 * c + std::size_t(which) + 1); }

  void add_columns(double causality_weight) {
    glp_add_cols(P_, int(ncols_));
    for (std::size_t k = 0; k < clocks_; ++k)
      glp_set_col_bnds(P_, int(k + 1), reference_[k] ? GLP_FX : GLP_FR, 0.0, 0.0);
    for (std::size_t c = 0; c < coll_.size(); ++c) {
      glp_set_col_bnds(P_, col(c, 0), GLP_FR, 0.0, 0.0); // lo: earliest completion
      glp_set_col_bnds(P_, col(c, 1), GLP_LO, 0.0, 0.0); // w: spread (latest completion = lo + w)
      glp_set_col_bnds(P_, col(c, 2), GLP_FR, 0.0, 0.0); // st: latest start
      glp_set_col_bnds(P_, col(c, 3), GLP_LO, 0.0, 0.0); // v: causality violation
      glp_set_obj_coef(P_, col(c, 1), 1.0);
      glp_set_obj_coef(P_, col(c, 3), causality_weight);
    }
  }

  int add_rows(int n) {
    glp_add_rows(P_, n);
    const int r = rows_ + 1;
    rows_ += n;
    return r;
  }

  void add_causality_rows() {
    if (coll_.empty()) return;
    const int r0 = add_rows(int(coll_.size()));
    for (std::size_t c = 0; c < coll_.size(); ++c) {
      ind_[1] = col(c, 0), val_[1] = 1.0;
      ind_[2] = col(c, 3), val_[2] = 1.0;
      ind_[3] = col(c, 2), val_[3] = -1.0;
      glp_set_mat_row(P_, r0 + int(c), 3, ind_.data(), val_.data());
      glp_set_row_bnds(P_, r0 + int(c), GLP_LO, 0.0, 0.0);
    }
  }

  // Row `r`: kind `kind` of part `gi` (an index over every collective's parts).
  void set_part_row(int r, std::size_t gi, int kind) {
    const auto c = std::size_t(std::upper_bound(first_.begin(), first_.end(), gi) - first_.begin()) - 1;
    const auto& p = coll_[c][gi - first_[c]];
    const double rhs = double(part_time(p, kind)) + init_[p.clock] - base_[c];
    // lo - t <= rhs;  lo + w - t >= rhs;  st - t >= rhs
    int len = 0;
    ind_[++len] = col(c, kind == 2 ? 2 : 0), val_[len] = 1.0;
    if (kind == 1) ind_[++len] = col(c, 1), val_[len] = 1.0;
    ind_[++len] = int(p.clock + 1), val_[len] = -1.0;
    glp_set_mat_row(P_, r, len, ind_.data(), val_.data());
    glp_set_row_bnds(P_, r, kind == 0 ? GLP_UP : GLP_LO, rhs, rhs);
    have_[gi] |= std::uint8_t(1u << kind);
  }

  void add_pending() {
    if (pending_.empty()) return;
    int r = add_rows(int(pending_.size()));
    for (auto [gi, kind] : pending_) set_part_row(r++, gi, kind);
    pending_.clear();
  }

  // The rows of each collective's extreme parts on the initial offsets; per collective,
  // whether those offsets satisfy its causality.
  std::vector<char> add_extreme_rows() {
    std::vector<char> causal(coll_.size());
    for (std::size_t c = 0; c < coll_.size(); ++c) {
      std::size_t lo = 0, hi = 0, st = 0;
      auto at = [&](std::size_t i, int kind) {
        const auto& p = coll_[c][i];
        return double(part_time(p, kind)) + init_[p.clock];
      };
      for (std::size_t i = 1; i < coll_[c].size(); ++i) {
        if (at(i, 0) < at(lo, 0)) lo = i;
        if (at(i, 1) > at(hi, 1)) hi = i;
        if (at(i, 2) > at(st, 2)) st = i;
      }
      pending_.emplace_back(first_[c] + lo, 0);
      pending_.emplace_back(first_[c] + hi, 1);
      pending_.emplace_back(first_[c] + st, 2);
      causal[c] = at(st, 2) <= at(lo, 0);
    }
    add_pending();
    return causal;
  }

  // A primal feasible starting basis, the solution at the initial offsets: per collective
  // lo, w and st basic with their rows tight, and v basic where the collective violates
  // causality (else the causality row's slack); the offsets nonbasic. The first simplex
  // then only moves the offsets, instead of building every collective's block from scratch.
  void set_start_basis(const std::vector<char>& causal) {
    for (std::size_t k = 0; k < clocks_; ++k) glp_set_col_stat(P_, int(k + 1), reference_[k] ? GLP_NS : GLP_NF);
    for (std::size_t c = 0; c < coll_.size(); ++c) {
      const int rc = int(c) + 1, rk = int(coll_.size() + 3 * c) + 1;
      glp_set_col_stat(P_, col(c, 0), GLP_BS);
      glp_set_col_stat(P_, col(c, 1), GLP_BS);
      glp_set_col_stat(P_, col(c, 2), GLP_BS);
      glp_set_row_stat(P_, rk, GLP_NU);
      glp_set_row_stat(P_, rk + 1, GLP_NL);
      glp_set_row_stat(P_, rk + 2, GLP_NL);
      glp_set_col_stat(P_, col(c, 3), causal[c] ? GLP_NL : GLP_BS);
      glp_set_row_stat(P_, rc, causal[c] ? GLP_BS : GLP_NL);
    }
  }

  void simplex(glp_smcp& parm, int method) {
    parm.meth = method;
    const int rc = glp_simplex(P_, &parm);
    if (rc != 0)
      throw error(std::string("daydream: clock alignment: GLPK's simplex failed: ") + glpk_simplex_error(rc) + " (" +
                  std::to_string(rows_) + " rows, " + std::to_string(ncols_) + " columns)");
    const int st = glp_get_status(P_);
    if (st != GLP_OPT)
      throw error(std::string("daydream: clock alignment: GLPK found no optimum: the solution is ") + glpk_status(st) +
                  " (" + std::to_string(rows_) + " rows, " + std::to_string(ncols_) + " columns)");
  }

  // Rows of the full LP that the solution (offsets `t`) violates beyond a small tolerance,
  // queued: of collective `c`, per kind the most violated one, whose row then makes the
  // others' likely hold.
  void queue_violated(std::size_t c, const std::vector<double>& t) {
    const double lo = glp_get_col_prim(P_, col(c, 0)), hi = lo + glp_get_col_prim(P_, col(c, 1)),
                 st = glp_get_col_prim(P_, col(c, 2));
    double worst[3] = {0, 0, 0};
    std::size_t which[3] = {0, 0, 0};
    for (std::size_t i = 0; i < coll_[c].size(); ++i) {
      const auto& p = coll_[c][i];
      const double shift = init_[p.clock] - base_[c] + t[p.clock];
      const double by[3] = {lo - (double(p.end_lo) + shift), double(p.end_hi) + shift - hi,
                            double(p.start) + shift - st};
      for (int kind = 0; kind < 3; ++kind)
        if (by[kind] > worst[kind] + 0.5) { // half a ns: the offsets are rounded to whole ns
          worst[kind] = by[kind];
          which[kind] = first_[c] + i;
        }
    }
    for (int kind = 0; kind < 3; ++kind)
      if (worst[kind] > 0 && !(have_[which[kind]] & (1u << kind))) pending_.emplace_back(which[kind], kind);
  }

  const std::vector<clock_collective>& coll_;
  const std::vector<double>& init_;
  const std::vector<char>& reference_;
  const std::vector<double>& base_;
  std::size_t clocks_;
  std::size_t ncols_;
  std::unique_ptr<glp_prob, glp_prob_deleter> lp_{glp_create_prob()};
  glp_prob* P_ = lp_.get();
  std::vector<std::size_t> first_;                  // per collective, the index of its first part
  std::vector<std::uint8_t> have_;                  // per part, a bit per row kind in the LP
  std::vector<std::pair<std::size_t, int>> pending_; // (part index, kind) to add
  std::vector<int> ind_ = std::vector<int>(4);
  std::vector<double> val_ = std::vector<double>(4);
  int rows_ = 0;
  int rounds_ = 0;
};

// The LP's optimum evaluated at the offsets found (`init` + `t`): total spread and
// causality violation.
inline void measure_alignment(const std::vector<clock_collective>& coll, const std::vector<double>& init,
                              const std::vector<double>& t, lp_alignment_report& rep) {
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
}

// rep.result: every rank's offset, alignment_quality's measures, and how it was found.
inline void write_alignment_result(const alignment_input& in, const alignment_clocks& clocks,
                                   const std::vector<double>& init, const std::vector<double>& t, time_ns tolerance,
                                   lp_alignment_report& rep) {
  auto& a = rep.result;
  for (std::size_t k = 0; k < clocks.ranks.size(); ++k) {
    const auto c = clocks.clock_of_rank[k];
    a.offset[clocks.ranks[k]] = time_ns(std::llround(init[c] + t[c]));
  }
  auto q = alignment_quality(in, a.offset, tolerance);
  a.residual_ns = q.first;
  a.violations = q.second;
  a.aligned = true;
  a.method = "linear program (GLPK " + std::string(glp_version()) + " simplex): " + std::to_string(clocks.count) +
             " clock(s), " + std::to_string(rep.collectives) + " collective(s)" +
             (rep.spanning > rep.collectives ? " (evenly spaced, of " + std::to_string(rep.spanning) + ")"
                                             : std::string()) +
             ", " + std::to_string(rep.rows) + " of " + std::to_string(rep.full_rows) + " rows, " +
             std::to_string(rep.rounds) + " round(s)";
  if (!rep.unconnected.empty())
    a.method += "; " + std::to_string(rep.unconnected.size()) +
                " rank(s) share no collective with the reference clock (offsets relative to their own)";
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
  const auto clocks = detail::find_clocks(in, opt.share_host_clocks);
  rep.clocks = clocks.count;
  auto coll = detail::spanning_collectives(in, clocks);
  // Placed from every collective, before any is left out of the LP.
  const auto placed = detail::place_clocks(coll, clocks.count);
  for (std::size_t k = 0; k < clocks.ranks.size(); ++k)
    if (placed.component[clocks.clock_of_rank[k]] != 0) rep.unconnected.push_back(clocks.ranks[k]);
  rep.spanning = coll.size();
  detail::keep_evenly_spaced(coll, opt.max_collectives);
  rep.collectives = coll.size();
  const auto base = detail::collective_bases(coll, placed.init);
  std::vector<double> t; // the offsets' corrections to the initial ones
  {
    detail::alignment_lp lp(coll, placed, base, opt.causality_weight);
    rep.columns = lp.columns();
    rep.full_rows = lp.full_rows();
    t = lp.solve(opt.max_rounds);
    rep.rounds = lp.rounds();
    rep.rows = lp.rows();
  }
  detail::measure_alignment(coll, placed.init, t, rep);
  rep.objective_ns = rep.spread_ns + opt.causality_weight * rep.violation_ns;
  detail::write_alignment_result(in, clocks, placed.init, t, opt.tolerance, rep);
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
