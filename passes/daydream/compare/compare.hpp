// Defines compare(): a predicted run next to a measured one (or two traces side by side), with the breakdown rows and the differences named in words.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_COMPARE_COMPARE_HPP
#define DAYDREAM_COMPARE_COMPARE_HPP

#include <daydream/compare/profile.hpp>
#include <daydream/fidelity.hpp>
#include <daydream/iteration.hpp>
#include <daydream/replay.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/report.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/registry/registry.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace daydream {

/// A predicted run: BEFORE's graph after a pass chain, replayed. Built by predict().
struct prediction {
  std::string spec;                 ///< the chain as given ("amp:dtype=bf16+fused_adam"); "" for none
  graph g;                          ///< the transformed graph
  replay_result r;                  ///< its replay
  std::vector<pass_report> reports; ///< one per pass of the chain
  std::vector<std::int32_t> iterations; ///< BEFORE's analysed iterations
  std::vector<time_ns> per_iteration;   ///< the steady-state step of each (-1: none left)
  std::string backlog;                  ///< when a resource falls behind: which, and by how much
  /// Peak device memory, when BEFORE's trace recorded memory: the memory allocated
  /// before its first [memory] event plus the replay's peak.
  std::optional<std::int64_t> peak_memory;
};

/// Predicts BEFORE under `chain` (built from `spec` by a pass registry): applies the
/// chain to a copy of BEFORE's graph and replays it with the chain's policy.
inline prediction predict(const io::kineto_trace& before, const std::vector<passes::erased_pass<graph>>& chain,
                          std::string spec, const replay_options& o = {}) {
  prediction p;
  p.spec = std::move(spec);
  p.g = before.g;
  auto [its, measured] = analysed_iterations(before, p.g);
  (void)measured;
  p.iterations = its;
  auto [r, reports] = passes::run_chain_in_place(p.g, chain, o); // p is dropped if a pass fails
  p.r = std::move(r);
  p.reports = std::move(reports);
  // The steady-state step: a resource that falls behind decides it (steady_steps).
  for (auto& st : steady_steps(p.g, p.r, its)) {
    p.per_iteration.push_back(st.step());
    if (st.backlogged() && st.busiest < p.g.resource_count())
      p.backlog = "iteration " + std::to_string(st.iteration) + ": " + p.g.resource_at(st.busiest).name + " works " +
                  passes::format_time(st.work) + ", longer than the replayed span of " + passes::format_time(st.span) +
                  ": its backlog would grow every step, so that work is the step";
  }
  if (auto initial = before.initial_allocated_bytes()) p.peak_memory = *initial + p.r.peak_memory;
  return p;
}

/// One row of a comparison: a quantity per step in BEFORE, the prediction and AFTER.
struct compare_row {
  std::string key;          ///< what ("gemm/conv", "backward", "Linear_3", "step")
  std::string kind;         ///< "step", "busy", "phase", "class", "layer"
  double before_us = 0;     ///< in BEFORE as recorded
  double predicted_us = 0;  ///< in the prediction (BEFORE itself for a plain diff)
  double measured_us = 0;   ///< in AFTER as recorded
  /// measured - predicted.
  double delta_us() const noexcept { return measured_us - predicted_us; }
};

/// How the kernels (or operator runs) of the prediction and of AFTER were matched, per step.
struct match_counts {
  double matched = 0;        ///< same name and same launching operator (operators: same name)
  double renamed = 0;        ///< kernels only: another name, launched from the same operator (a precision or library change)
  double only_predicted = 0; ///< in the prediction, not in AFTER
  double only_measured = 0;  ///< in AFTER, not in the prediction
};

/// A prediction next to a measurement: the step time of both (median and spread over
/// their steady iterations), the breakdown rows of both, the match of their kernels
/// and operators, and the largest differences in words.
struct comparison {
  std::string before;                 ///< BEFORE's file
  std::string after;                  ///< AFTER's file
  std::string spec;                   ///< the pass chain; "" for a plain diff of the two traces
  time_ns predicted = -1;             ///< predicted step time (median), ns
  time_ns measured = -1;              ///< AFTER's step time (median of its steady iterations), ns
  time_ns before_measured = -1;       ///< BEFORE's step time, ns
  std::pair<time_ns, time_ns> predicted_spread{-1, -1}; ///< smallest and largest predicted step
  std::pair<time_ns, time_ns> measured_spread{-1, -1};  ///< smallest and largest measured step
  std::size_t predicted_iterations = 0, measured_iterations = 0;
  /// (predicted - measured) / measured; NaN for a plain diff or when nothing was measured.
  double error = std::nan("");
  std::vector<compare_row> rows;          ///< step, busy, phase, class, then layers (largest first)
  std::vector<std::string> explanations;  ///< the largest differences, largest first
  match_counts kernels;                   ///< kernels per step
  match_counts operators;                 ///< operator runs per step
  double predicted_kernels = 0, measured_kernels = 0;   ///< GPU tasks per step
  double predicted_launches = 0, measured_launches = 0; ///< launch calls per step
  std::optional<std::int64_t> predicted_memory, measured_memory; ///< peak bytes, when known
  std::vector<pass_report> reports;       ///< the chain's reports
  std::vector<std::string> warnings;      ///< what limits the comparison
};

namespace detail {

inline std::string us_text(double ns) { return passes::format_time(static_cast<time_ns>(std::llround(ns))); }
inline std::string signed_text(double ns) { return (ns >= 0 ? "+" : "-") + us_text(std::fabs(ns)); }
inline std::string count_text(double n) {
  return std::fabs(n - std::round(n)) < 0.05 ? fmt::format("{:.0f}", n) : fmt::format("{:.1f}", n);
}

/// Calls `f(key, a_value_or_null, b_value_or_null)` for every key of either map, in order.
template <class Map, class F> void for_each_key(const Map& a, const Map& b, F f) {
  constexpr const typename Map::mapped_type* none = nullptr;
  auto ia = a.begin(), ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      f(ia->first, &ia->second, none);
      ++ia;
    } else if (ia == a.end() || ib->first < ia->first) {
      f(ib->first, none, &ib->second);
      ++ib;
    } else {
      f(ia->first, &ia->second, &ib->second);
      ++ia;
      ++ib;
    }
  }
}

/// Counts `np` of one side against `nm` of the other: the common part is `matched`.
inline void tally(double np, double nm, double& matched, double& only_p, double& only_m) {
  matched += std::min(np, nm);
  only_p += np - std::min(np, nm);
  only_m += nm - std::min(np, nm);
}

/// Matches kernel groups: same (name, operator) first, then what is left by operator.
inline match_counts match_kernels(const step_profile& p, const step_profile& m) {
  match_counts c;
  std::map<std::string, double> left_p, left_m; // by operator
  for_each_key(p.kernel_groups, m.kernel_groups, [&](auto& k, auto* vp, auto* vm) {
    tally(vp ? vp->first : 0, vm ? vm->first : 0, c.matched, left_p[k.second], left_m[k.second]);
  });
  for_each_key(left_p, left_m, [&](auto&, auto* np, auto* nm) {
    tally(np ? *np : 0, nm ? *nm : 0, c.renamed, c.only_predicted, c.only_measured);
  });
  return c;
}

/// Matches operator runs by name.
inline match_counts match_operators(const step_profile& p, const step_profile& m) {
  match_counts c;
  for_each_key(p.ops, m.ops, [&](auto&, auto* vp, auto* vm) {
    tally(vp ? vp->runs : 0, vm ? vm->runs : 0, c.matched, c.only_predicted, c.only_measured);
  });
  return c;
}

/// The sentences naming the largest differences between prediction `p` and
/// measurement `m` (BEFORE: `b`), largest first.
inline std::vector<std::string> explain(const comparison& c, const step_profile& b, const step_profile& p,
                                        const step_profile& m, bool plain) {
  std::vector<std::pair<double, std::string>> out; // (weight, sentence)
  const double step = double(std::max<time_ns>(c.measured, 1));
  const std::string pred_name = plain ? "BEFORE" : "the prediction";
  const double floor = 0.01 * step; // 1% of the step

  // What bounds each run.
  auto bound = [](const step_profile& s) -> std::string {
    const double st = double(std::max<time_ns>(s.median, 1));
    if (s.cpu_busy > 0.85 * st && s.gpu_busy < 0.75 * st) return "CPU";
    if (s.gpu_busy > 0.85 * st) return "GPU";
    return "";
  };
  const auto bp = bound(p), bm = bound(m);
  if (bm != bp && !bm.empty()) {
    out.push_back({2 * step, fmt::format("AFTER is {}-bound: its busiest CPU thread ({}) is busy {:.0f}% of the step "
                                         "and the GPU {:.0f}%; {} {}",
                                         bm, m.cpu_thread, 100 * m.cpu_busy / step, 100 * m.gpu_busy / step,
                                         pred_name,
                                         bp.empty() ? fmt::format("is bound by neither (CPU {:.0f}%, GPU {:.0f}%)",
                                                                  100 * p.cpu_busy / std::max(1.0, double(p.median)),
                                                                  100 * p.gpu_busy / std::max(1.0, double(p.median)))
                                                    : "is " + bp + "-bound")});
  }

  // Operators in both runs, as often in each: does the CPU run the same work slower?
  std::set<std::string> ops;
  for (auto& [k, v] : p.ops) ops.insert(k);
  for (auto& [k, v] : m.ops) ops.insert(k);
  double same_p = 0, same_m = 0;
  std::size_t same_n = 0;
  std::vector<std::pair<double, std::string>> op_lines;
  for (auto& k : ops) {
    step_profile::op_stat zp, zm;
    auto ip = p.ops.find(k);
    auto im = m.ops.find(k);
    const auto& sp = ip == p.ops.end() ? zp : ip->second;
    const auto& sm = im == m.ops.end() ? zm : im->second;
    const double dcpu = sm.cpu - sp.cpu, dgpu = sm.gpu - sp.gpu, druns = sm.runs - sp.runs;
    if (std::fabs(druns) < 0.5 && sp.runs > 0) {
      same_p += sp.cpu;
      same_m += sm.cpu;
      ++same_n;
      continue;
    }
    // Operators added or removed: work one run has and the other lacks.
    const double weight = std::max(std::fabs(dcpu), std::fabs(dgpu));
    if (weight < floor) continue;
    std::string s = fmt::format("AFTER has {} {} runs of {} per step than {} ({} of CPU time",
                                count_text(std::fabs(druns)), druns > 0 ? "more" : "fewer", k, pred_name,
                                signed_text(dcpu));
    const double dk = sm.kernels - sp.kernels;
    if (std::fabs(dk) >= 0.5)
      s += fmt::format("; {} {} GPU tasks launched from it, {} of GPU time", count_text(std::fabs(dk)),
                       dk > 0 ? "more" : "fewer", signed_text(dgpu));
    else if (std::fabs(dgpu) >= floor)
      s += fmt::format("; its GPU tasks take {}", signed_text(dgpu));
    s += ")";
    op_lines.push_back({weight, s});
  }
  std::sort(op_lines.begin(), op_lines.end(), [](auto& x, auto& y) { return x.first > y.first; });
  for (std::size_t k = 0; k < op_lines.size() && k < 4; ++k) out.push_back(op_lines[k]);
  if (same_p > 0 && std::fabs(same_m - same_p) >= floor)
    out.push_back({std::fabs(same_m - same_p),
                   fmt::format("the {} operators that run as often in both take {:+.0f}% CPU time in AFTER ({} -> {} "
                               "per step): the host runs the same work {} ({})",
                               same_n, 100 * (same_m - same_p) / same_p, us_text(same_p), us_text(same_m),
                               same_m > same_p ? "slower" : "faster",
                               plain ? "the change, another host, or CPU contention"
                                     : "CPU contention, clock speed or profiler overhead the pass does not model")});

  // Kernel families whose GPU time differs: the pass's per-class speedups against AFTER's.
  for (int f = 0; f < passes::kernel_family_count; ++f) {
    const double vb = b.gpu_by_family[f], vp = p.gpu_by_family[f], vm = m.gpu_by_family[f];
    const double d = vm - vp;
    if (std::fabs(d) < 0.02 * step) continue;
    const auto name = to_string(passes::kernel_family(f));
    std::string s = fmt::format("{} kernels: {} per step in AFTER, {} in {} ({})", name, us_text(vm), us_text(vp),
                                pred_name, signed_text(d));
    if (!plain && vb > 0 && vp > 0 && vm > 0)
      s += fmt::format(": BEFORE has {}, so the prediction makes them {:.2f}x faster and AFTER shows {:.2f}x",
                       us_text(vb), vb / vp, vb / vm);
    out.push_back({std::fabs(d), s});
  }

  // Kernel names that do not match.
  const auto& kc = c.kernels;
  if (kc.only_measured + kc.only_predicted + kc.renamed >= 0.5)
    out.push_back({0.0, fmt::format("kernels per step: {} matched by name and launching operator, {} renamed (same "
                                    "operator, another kernel: a precision or library change), {} only in AFTER, {} "
                                    "only in {}",
                                    count_text(kc.matched), count_text(kc.renamed), count_text(kc.only_measured),
                                    count_text(kc.only_predicted), pred_name)});
  // Spread of the measured steps.
  if (m.median > 0 && m.hi > m.lo && double(m.hi - m.lo) > 0.1 * double(m.median))
    out.push_back({0.0, fmt::format("AFTER's {} steady steps vary from {} to {}: the measurement itself spreads {:.0f}%",
                                    m.per_iteration.size(), us_text(double(m.lo)), us_text(double(m.hi)),
                                    100.0 * double(m.hi - m.lo) / double(m.median))});
  std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.first > y.first; });
  std::vector<std::string> lines;
  if (!plain && std::isfinite(c.error) && std::fabs(c.error) <= 0.02)
    lines.push_back(fmt::format("the prediction is within 2% of AFTER ({:+.1f}%)", 100 * c.error));
  for (auto& [w, s] : out) lines.push_back(s);
  return lines;
}

inline void add_rows(comparison& c, const step_profile& b, const step_profile& p, const step_profile& m,
                     std::size_t max_layers) {
  auto row = [&](std::string key, std::string kind, double vb, double vp, double vm) {
    c.rows.push_back({std::move(key), std::move(kind), vb / 1e3, vp / 1e3, vm / 1e3});
  };
  row("step", "step", double(b.median), double(p.median), double(m.median));
  row("cpu busy (busiest thread)", "busy", b.cpu_busy, p.cpu_busy, m.cpu_busy);
  row("gpu busy", "busy", b.gpu_busy, p.gpu_busy, m.gpu_busy);
  row("gpu time", "busy", b.gpu_time, p.gpu_time, m.gpu_time);
  for (int ph = 0; ph < 4; ++ph)
    row(std::string(to_string(phase(ph))), "phase", b.gpu_by_phase[ph], p.gpu_by_phase[ph], m.gpu_by_phase[ph]);
  for (int f = 0; f < passes::kernel_family_count; ++f)
    row(std::string(to_string(passes::kernel_family(f))), "class", b.gpu_by_family[f], p.gpu_by_family[f],
        m.gpu_by_family[f]);
  std::set<std::string> layers;
  for (auto& [k, v] : p.gpu_by_layer) layers.insert(k);
  for (auto& [k, v] : m.gpu_by_layer) layers.insert(k);
  std::vector<compare_row> lr;
  auto get = [](const std::map<std::string, double>& mm, const std::string& k) {
    auto it = mm.find(k);
    return it == mm.end() ? 0.0 : it->second;
  };
  for (auto& k : layers)
    lr.push_back({k.empty() ? std::string("(no layer)") : k, "layer", get(b.gpu_by_layer, k) / 1e3,
                  get(p.gpu_by_layer, k) / 1e3, get(m.gpu_by_layer, k) / 1e3});
  std::stable_sort(lr.begin(), lr.end(), [](auto& x, auto& y) {
    return std::max(x.predicted_us, x.measured_us) > std::max(y.predicted_us, y.measured_us);
  });
  if (lr.size() > max_layers) lr.resize(max_layers);
  for (auto& r : lr) c.rows.push_back(std::move(r));
}

} // namespace detail

/// What compare() reports beyond the defaults.
struct compare_options {
  std::size_t max_layers = 30; ///< layer rows, the largest first
};

/// Compares a prediction of AFTER (made from BEFORE, predict()) with AFTER as recorded.
/// Step times are per steady-state iteration (BEFORE's for the prediction, AFTER's own
/// for the measurement); the breakdowns are per step, averaged over those iterations.
inline comparison compare(const io::kineto_trace& before, const io::kineto_trace& after, const prediction& pred,
                          const compare_options& o = {}) {
  comparison c;
  c.before = before.info.path;
  c.after = after.info.path;
  c.spec = pred.spec;
  const bool plain = pred.r.start.empty(); // no prediction: a plain diff
  graph bg = before.g, ag = after.g;
  auto [bits, btimes] = analysed_iterations(before, bg);
  auto [aits, atimes] = analysed_iterations(after, ag);
  const auto brec = recorded_times(bg), arec = recorded_times(ag);
  const auto b = profile_step(bg, brec, bits, btimes);
  const auto m = profile_step(ag, arec, aits, atimes);
  const auto p = plain ? b : profile_step(pred.g, pred.r, pred.iterations, pred.per_iteration);
  c.predicted = p.median;
  c.measured = m.median;
  c.before_measured = b.median;
  c.predicted_spread = {p.lo, p.hi};
  c.measured_spread = {m.lo, m.hi};
  c.predicted_iterations = p.iterations.size();
  c.measured_iterations = m.iterations.size();
  if (!plain && c.measured > 0 && c.predicted >= 0) c.error = double(c.predicted - c.measured) / double(c.measured);
  c.kernels = detail::match_kernels(p, m);
  c.operators = detail::match_operators(p, m);
  c.predicted_kernels = p.kernels;
  c.measured_kernels = m.kernels;
  c.predicted_launches = p.launches;
  c.measured_launches = m.launches;
  if (auto mem = after.info.memory_peak; mem >= 0) c.measured_memory = mem;
  c.predicted_memory = plain ? (before.info.memory_peak >= 0 ? std::optional<std::int64_t>(before.info.memory_peak)
                                                             : std::nullopt)
                             : pred.peak_memory;
  if (!c.measured_memory || !c.predicted_memory) {
    c.predicted_memory.reset();
    c.measured_memory.reset();
  }
  c.reports = pred.reports;
  if (!pred.backlog.empty()) c.warnings.push_back("steady state: " + pred.backlog);
  for (auto i : bits)
    if (auto n = before.measurement_note(i); !n.empty()) c.warnings.push_back("before: " + n);
  for (auto i : aits)
    if (auto n = after.measurement_note(i); !n.empty()) c.warnings.push_back("after: " + n);
  {
    // A BEFORE the replay does not reproduce makes every prediction from it suspect: say why.
    const auto spans = iteration_spans(bg, replay(bg));
    for (std::size_t k = 0; k < bits.size(); ++k)
      for (auto& sp : spans)
        if (sp.iteration == bits[k])
          if (auto n = replay_error_note(bg, sp.iteration, sp.duration(), btimes[k]); !n.empty())
            c.warnings.push_back("before: " + n);
  }
  detail::add_rows(c, b, p, m, o.max_layers);
  c.explanations = detail::explain(c, b, p, m, plain);
  if (before.iterations.empty() || after.iterations.empty())
    c.warnings.push_back("a trace without step markers or optimizer steps is measured whole: record several steps "
                         "with torch.profiler.schedule and prof.step()");
  for (auto& rep : c.reports)
    if (!rep.applied)
      c.warnings.push_back("pass '" + rep.pass + "' changed nothing: " +
                           (rep.reason.empty() ? std::string("it found nothing to change") : rep.reason));
  if (!before.info.gpus.empty() && !after.info.gpus.empty() && before.info.gpus.front() != after.info.gpus.front())
    c.warnings.push_back("BEFORE ran on " + before.info.gpus.front() + ", AFTER on " + after.info.gpus.front());
  return c;
}

/// Two traces side by side, without a prediction: BEFORE in the predicted column.
inline comparison compare(const io::kineto_trace& before, const io::kineto_trace& after,
                          const compare_options& o = {}) {
  return compare(before, after, prediction{}, o);
}

} // namespace daydream

#endif
