// Defines clock alignment's input and result for a job: each matched collective's recorded parts, one offset per rank.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_JOB_ALIGNMENT_HPP
#define DAYDREAM_JOB_ALIGNMENT_HPP

#include <daydream/config.hpp>
#include <daydream/job/matching.hpp>
#include <daydream/job/model.hpp>
#include <daydream/task.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream {

/// What clock alignment reads: per matched collective, per participating rank, the
/// recorded start and end of that rank's part on the rank's own clock, and which ranks
/// share a host (and so a clock).
struct alignment_input {
  std::vector<std::int32_t> ranks;                        ///< the traced ranks
  std::vector<std::vector<collective_part>> collectives;  ///< parts of each matched collective
  std::vector<std::vector<std::int32_t>> same_host;       ///< groups of ranks that share a clock
};

/// What clock alignment gives: one offset per rank (added to its trace clock), the
/// residual and the causality violations that remain.
struct alignment_result {
  std::map<std::int32_t, time_ns> offset; ///< rank -> ns added to its clock
  double residual_ns = 0;                 ///< what the alignment could not explain (its objective)
  std::size_t violations = 0;             ///< collectives where a part still ends before another starts
  bool aligned = false;                   ///< whether a solver produced the offsets (false: all 0)
  std::string method;                     ///< "none" or the solver's description
};

/// The alignment input of a matched job.
inline alignment_input make_alignment_input(const job& j, const collective_matching& m) {
  alignment_input in;
  for (auto& r : j.ranks) in.ranks.push_back(r.rank);
  for (auto& c : m.collectives) in.collectives.push_back(c.parts);
  std::map<std::string, std::vector<std::int32_t>> hosts;
  for (auto& r : j.ranks)
    if (!r.host.empty()) hosts[r.host].push_back(r.rank);
  for (auto& [h, v] : hosts)
    if (v.size() > 1) in.same_host.push_back(v);
  return in;
}

/// How well clock offsets explain the matched collectives: the mean spread of the parts'
/// end times (a collective completes nearly at once on every rank; ns), and the number of
/// collectives where some part ends more than `tolerance` before another part starts
/// (impossible: a collective finishes on no rank before every rank has started it).
inline std::pair<double, std::size_t> alignment_quality(const alignment_input& in,
                                                        const std::map<std::int32_t, time_ns>& offset,
                                                        time_ns tolerance = 1'000) {
  auto off = [&](std::int32_t r) {
    auto it = offset.find(r);
    return it == offset.end() ? time_ns(0) : it->second;
  };
  double spread = 0;
  std::size_t n = 0, bad = 0;
  for (auto& parts : in.collectives) {
    if (parts.size() < 2) continue;
    time_ns lo_end = std::numeric_limits<time_ns>::max(), hi_end = std::numeric_limits<time_ns>::min();
    time_ns hi_start = std::numeric_limits<time_ns>::min();
    for (auto& p : parts) {
      lo_end = std::min(lo_end, p.end + off(p.rank));
      hi_end = std::max(hi_end, p.end + off(p.rank));
      hi_start = std::max(hi_start, p.start + off(p.rank));
    }
    spread += double(hi_end - lo_end);
    ++n;
    if (lo_end + tolerance < hi_start) ++bad;
  }
  return {n ? spread / double(n) : 0.0, bad};
}

/// A clock-alignment solver: alignment input -> offsets. The job programs call one when it
/// is given; without one, every offset is 0 (the traces' clocks are taken as they are).
using clock_aligner = std::function<alignment_result(const alignment_input&)>;

/// The offsets of no alignment (every clock as recorded), with their quality.
inline alignment_result no_alignment(const alignment_input& in) {
  alignment_result a;
  for (auto r : in.ranks) a.offset[r] = 0;
  auto q = alignment_quality(in, a.offset);
  a.residual_ns = q.first;
  a.violations = q.second;
  a.method = "none (clocks as recorded)";
  return a;
}

} // namespace daydream

#endif
