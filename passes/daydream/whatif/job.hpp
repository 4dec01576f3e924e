// Defines the what-if scenarios of a distributed job: no straggler, a faster network, another collective algorithm, a pass chain on some ranks, each replayed as one job graph.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_WHATIF_JOB_HPP
#define DAYDREAM_WHATIF_JOB_HPP

#include <daydream/config.hpp>
#include <daydream/job/alignment.hpp>
#include <daydream/job/graph.hpp>
#include <daydream/job/matching.hpp>
#include <daydream/job/model.hpp>
#include <daydream/job/replay.hpp>
#include <daydream/net/collective.hpp>
#include <daydream/registry/params.hpp>
#include <daydream/replay.hpp>
#include <daydream/registry/registry.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace daydream::whatif {

/// A job analysed as traced: its ranks, their matched collectives and clock alignment,
/// the model of its collectives, its graph and the replay's explanation (the baseline
/// every job scenario is compared with).
struct job_baseline {
  job j;
  collective_matching m;
  alignment_result alignment;
  job_model_options model;
  job_graph jg;
  job_result base;
};

/// One job scenario's result.
struct job_scenario {
  std::string name;                ///< the spec as given
  std::vector<std::string> notes;  ///< what it changed, for people
  bool applied = true;             ///< whether it changed anything
  std::string reason;              ///< why it changed nothing
  std::string error;               ///< why it could not be predicted
  job_graph jg;                    ///< the job graph it replayed
  job_result res;                  ///< the replay explained
};

//! @cond DAYDREAM_INTERNAL
namespace detail {
inline std::vector<std::int32_t> parse_rank_list(const std::string& spec, const std::string& s) {
  std::vector<std::int32_t> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    try {
      std::size_t used = 0;
      auto v = std::stoi(cur, &used);
      if (used != cur.size() || v < 0) throw std::invalid_argument(cur);
      out.push_back(v);
    } catch (const std::exception&) {
      throw usage_error("daydream whatif: scenario '" + spec + "': ranks=" + s +
                        " is not a list of ranks (write ranks=3 or ranks=3/5)");
    }
    cur.clear();
  };
  for (char c : s) {
    if (c == '/' || c == ';' || c == ' ') flush();
    else cur += c;
  }
  flush();
  return out;
}
} // namespace detail
//! @endcond

/// Replays `j` under `model` (re-matching its collectives) and explains it.
inline void replay_job(job_scenario& s, const job& j, const job_baseline& a,
                       const job_model_options& model, const std::vector<std::int32_t>& iterations,
                       const replay_options& ro, bool rematch) {
  auto m = rematch ? match_collectives(j) : a.m;
  s.jg = build_job_graph(j, m, a.alignment, model);
  s.res = analyse_job(j, s.jg, iterations, ro);
}

/// Runs the job scenario `spec` on the job analysed in `a`:
/// - `no_straggler[:ranks=R/R...,like=L]`: the straggler (or the ranks given) take the
///   task durations and start of a typical other rank (no_straggler, job/replay.hpp);
/// - `network[:scale=X]`: every collective's transfer X times faster (default 2);
/// - `collective[:algorithm=ring|tree|halving_doubling]`: all-reduces run with that
///   algorithm;
/// - any pass chain of `reg` (`amp+fused_adam`): applied to every rank, or to the ranks of
///   `on_ranks` when it is not empty, then the job replayed with its collectives matched
///   again.
/// A bad spec or parameter is a usage_error; a chain a rank's graph refuses becomes the
/// scenario's `error`. The scenario replays the analysed iterations of `a.base`.
inline job_scenario run_job_scenario(const job_baseline& a, const std::string& spec,
                                     const std::vector<std::int32_t>& on_ranks,
                                     const passes::registry<graph>& reg, const replay_options& ro = {}) {
  job_scenario s;
  s.name = spec;
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  auto iterations = a.base.iterations;
  if (name == "no_straggler") {
    auto p = pass_params::parse(name, rest);
    std::vector<std::int32_t> ranks;
    if (p.has("ranks")) ranks = detail::parse_rank_list(spec, p.get_string("ranks", ""));
    const auto like = std::int32_t(p.get_int("like", -1));
    p.finish();
    if (ranks.empty()) {
      if (a.base.straggler.rank < 0) {
        s.applied = false;
        s.reason = "no straggler: " + a.base.straggler.reason;
        s.jg = a.jg;
        s.res = a.base;
        return s;
      }
      ranks = {a.base.straggler.rank};
    }
    auto ns = no_straggler(a.j, a.base, ranks, like);
    auto model = a.model;
    model.start_like = ns.start_like;
    std::string rs;
    for (auto r : ns.ranks) rs += (rs.empty() ? "" : ", ") + std::to_string(r);
    s.notes.push_back(fmt::format("rank(s) {} take rank {}'s task durations ({} tasks; {} without a counterpart kept) "
                                  "and start",
                                  rs, ns.like, ns.changed, ns.unmatched));
    replay_job(s, ns.j, a, model, iterations, ro, false);
    return s;
  }
  if (name == "network" || name == "collective") {
    auto p = pass_params::parse(name, rest);
    auto model = a.model;
    if (name == "network") {
      model.network_scale = p.get_double("scale", 2.0);
      if (!(model.network_scale > 0))
        throw usage_error("daydream whatif: scenario '" + spec + "': scale must be positive");
      s.notes.push_back(fmt::format("network bandwidth x{}", model.network_scale));
    } else {
      const auto alg = p.get_string("algorithm", "tree");
      all_reduce_algorithm to{};
      try {
        to = parse_all_reduce_algorithm(alg);
      } catch (const error& e) {
        throw usage_error("daydream whatif: scenario '" + spec + "': " + e.what());
      }
      if (model.transfer == job_model_options::transfer_source::cluster) model.algorithm = to;
      else model.changed_to = to;
      s.notes.push_back("collectives run as " + alg);
    }
    p.finish();
    if (a.m.collectives.empty()) {
      s.applied = false;
      s.reason = "the job has no matched collective";
    }
    replay_job(s, a.j, a, model, iterations, ro, false);
    return s;
  }
  // A single-GPU pass chain on every rank (or the --on-rank ones).
  std::vector<passes::erased_pass<graph>> chain;
  try {
    chain = reg.make_chain(spec);
  } catch (const usage_error&) {
    throw;
  } catch (const std::exception& e) {
    throw usage_error(e.what());
  }
  try {
    auto j = a.j;
    bool any = false;
    std::string why;
    for (auto& r : j.ranks) {
      if (!on_ranks.empty() && std::find(on_ranks.begin(), on_ranks.end(), r.rank) == on_ranks.end())
        continue;
      for (auto& p : chain) {
        auto rep = p.run(r.g);
        any = any || rep.applied;
        if (!rep.applied && why.empty()) why = rep.reason;
      }
    }
    s.applied = any;
    if (!any) s.reason = why.empty() ? "the passes changed nothing" : why;
    s.notes.push_back(on_ranks.empty() ? std::string("on every rank")
                                           : fmt::format("on rank(s) {}", fmt::join(on_ranks, ", ")));
    replay_job(s, j, a, a.model, iterations, ro, a.m.unmatched.empty());
  } catch (const usage_error&) {
    throw;
  } catch (const std::exception& e) {
    s.error = e.what();
  }
  return s;
}

} // namespace daydream::whatif

#endif
