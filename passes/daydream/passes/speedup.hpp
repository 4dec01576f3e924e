// Defines the speedup pass: any selection of GPU work made X times faster (or given a duration).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_PASSES_SPEEDUP_HPP
#define DAYDREAM_PASSES_SPEEDUP_HPP

#include <daydream/graph.hpp>
#include <daydream/kinds.hpp>
#include <daydream/pass.hpp>
#include <daydream/report.hpp>
#include <daydream/select.hpp>
#include <daydream/update.hpp>
#include <daydream/semantics/format.hpp>
#include <daydream/semantics/kernel_classifier.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/layers.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// What kind of GPU work `class=` selects: a kernel family (kernel_family.hpp: "gemm"
/// and "conv" both name gemm/conv) or a kernel class of the AMP classifier
/// ("compute_bound", "memory_bound").
struct work_class {
  std::optional<kernel_family> family;
  std::optional<kernel_class> cls;

  /// Parses a `class=` value; throws daydream::usage_error naming the values it takes.
  static work_class parse(std::string_view s) {
    if (s == "gemm" || s == "conv" || s == "gemm/conv") return {kernel_family::gemm, {}};
    if (s == "compute_bound") return {{}, kernel_class::compute_bound};
    if (s == "memory_bound") return {{}, kernel_class::memory_bound};
    for (int i = 0; i < kernel_family_count; ++i)
      if (to_string(kernel_family(i)) == s) return {kernel_family(i), {}};
    if (s == "copy") return {kernel_family::copy, {}};
    throw usage_error("daydream: pass 'speedup': unknown class '" + std::string(s) +
                      "' (use gemm, attention, elementwise, normalization, reduction, communication, copies, "
                      "optimizer, other, compute_bound or memory_bound)");
  }
};

/// Any selection of GPU work `factor` times faster, or each selected task taking
/// `duration` ns: the generic what-if behind "a FlashAttention kernel 2x faster", "a new
/// GEMM library", "this layer 3x faster" ("if this op were X times faster, what would
/// the step gain end to end?").
///
/// Selects the GPU tasks (kernels, device copies, communication) that match every filter
/// given: `kernels`, a regular expression searched in the task's name, ignoring case;
/// `layers`, a whole-name layer pattern (layer_filter); `klass`, a kernel family or
/// class (work_class); `phases`, phase names separated by `|`. No filter selects every
/// GPU task (a faster GPU). CPU tasks keep their times: the launches and the framework
/// do not get faster, so a launch-bound step gains little, which is the point.
///
///     daydream::apply(g, daydream::passes::speedup{.kernels = "flash", .factor = 2});
///     daydream::apply(g, daydream::passes::speedup{.layers = "layer4\\..*", .factor = 1.5});
struct speedup {
  static constexpr std::string_view name = "speedup"; ///< the --pass name
  std::string kernels = {}; ///< regex searched in GPU task names (any case); empty: any
  std::string layers = {};  ///< whole-name layer regex (layer_filter); empty: any
  std::string klass = {};   ///< `class=`: a work_class value; empty: any
  std::string phases = {};  ///< `phase=`: phase names separated by '|'; empty: any
  double factor = 2.0;      ///< speedup of each selected task (2: half its time)
  time_ns duration = -1;    ///< >= 0: each selected task takes this long instead of `factor`

  /// The GPU tasks the filters select, in id order.
  std::vector<task_id> selected(const graph& g) const {
    check();
    std::optional<std::regex> rx;
    if (!kernels.empty()) rx.emplace(kernels, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
    const layer_filter in_layer(layers);
    const auto wc = klass.empty() ? std::optional<work_class>{} : std::optional(work_class::parse(klass));
    const auto ph = phase_set();
    kernel_families fam(g);
    const auto classifier = kernel_classifier::defaults();
    classified classes(g, classifier);
    std::map<name_id, bool> name_ok; // the regex once per distinct name
    std::vector<task_id> out;
    g.for_each_task([&](task_id t) {
      if (g.is<cpu_task>(t)) return;
      if (!ph.empty() && std::find(ph.begin(), ph.end(), g.phase_of(t)) == ph.end()) return;
      if (!layers.empty() && !in_layer(g.layer(t))) return;
      if (wc) {
        if (wc->family && fam.family(t) != *wc->family) return;
        if (wc->cls && (!g.is<gpu_kernel>(t) || classes(t) != *wc->cls)) return;
      }
      if (rx) {
        auto [it, fresh] = name_ok.try_emplace(g.name_id_of(t), false);
        if (fresh) {
          const auto n = g.name(t);
          it->second = std::regex_search(n.begin(), n.end(), *rx);
        }
        if (!it->second) return;
      }
      out.push_back(t);
    });
    return out;
  }

  /// Makes the selected tasks faster; returns what it selected and the GPU time before and
  /// after. Invalidates nothing.
  pass_report operator()(graph& g) const {
    pass_report rep;
    rep.pass = std::string(name);
    const auto sel = selected(g);
    time_ns all = 0, before = 0, after = 0;
    std::size_t gpu_tasks = 0;
    g.for_each_task([&](task_id t) {
      if (g.is<cpu_task>(t)) return;
      all += g.duration(t);
      ++gpu_tasks;
    });
    std::map<std::string_view, std::pair<std::size_t, time_ns>> by_name;
    for (auto t : sel) {
      before += g.duration(t);
      auto& e = by_name[g.name(t)];
      ++e.first;
      e.second += g.duration(t);
      if (duration >= 0) set_duration(g, t, duration);
      else scale_duration(g, t, 1.0 / factor);
      after += g.duration(t);
    }
    rep.add("selection", describe());
    rep.add_count("GPU tasks selected", std::int64_t(sel.size()));
    rep.add("their GPU time", format_time(before) + " -> " + format_time(after),
            report_value::of_change(report_kind::time, double(before), double(after)));
    if (all > 0)
      rep.add("share of the trace's GPU time", fmt::format("{:.1f}%", 100.0 * double(before) / double(all)),
              report_value::of_ratio(double(before) / double(all)));
    if (!by_name.empty()) {
      std::vector<std::pair<std::string_view, std::pair<std::size_t, time_ns>>> top(by_name.begin(), by_name.end());
      std::sort(top.begin(), top.end(), [](auto& a, auto& b) {
        return a.second.second != b.second.second ? a.second.second > b.second.second : a.first < b.first;
      });
      std::string names;
      for (std::size_t i = 0; i < std::min<std::size_t>(3, top.size()); ++i) {
        auto n = top[i].first.substr(0, 60);
        names += (i ? "; " : "") + std::string(n) + (top[i].first.size() > 60 ? "..." : "") + " (x" +
                 std::to_string(top[i].second.first) + ", " + format_time(top[i].second.second) + ")";
      }
      rep.add("longest selected", names);
    }
    if (sel.empty())
      rep.not_applied("no GPU task matches " + describe() + " (of " + std::to_string(gpu_tasks) +
                      " GPU tasks in the graph)");
    else if (before == after)
      rep.not_applied(duration >= 0 ? "every selected task already takes " + format_time(duration)
                                    : "factor=1: the selected tasks keep their times");
    return rep;
  }

  /// The selection and the change, as the report says it ("kernels='flash', 2x faster").
  std::string describe() const {
    std::string s;
    auto add = [&](std::string_view k, const std::string& v) {
      if (!v.empty()) s += (s.empty() ? "" : ", ") + std::string(k) + "='" + v + "'";
    };
    add("kernels", kernels);
    add("layers", layers);
    add("class", klass);
    add("phase", phases);
    if (s.empty()) s = "every GPU task";
    if (duration >= 0) return s + ", each taking " + format_time(duration);
    return s + fmt::format(", {:g}x faster", factor);
  }

  /// Throws daydream::usage_error for a factor that is not positive, an unknown class or
  /// phase, or a pattern that is no regular expression; the call operator and selected()
  /// check them too.
  void check() const {
    if (!(factor > 0) || !std::isfinite(factor))
      throw usage_error("daydream: pass 'speedup': factor must be a positive number");
    if (!klass.empty()) (void)work_class::parse(klass);
    (void)phase_set();
    if (!kernels.empty()) {
      try {
        std::regex(kernels, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        throw usage_error("daydream: pass 'speedup': bad kernels pattern '" + kernels + "': " + e.what());
      }
    }
    (void)layer_filter(layers);
  }

private:
  std::vector<phase> phase_set() const {
    std::vector<phase> out;
    std::string_view rest = phases;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      const auto item = rest.substr(0, bar);
      rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
      bool found = false;
      for (auto p : {phase::forward, phase::backward, phase::weight_update, phase::other})
        if (to_string(p) == item) {
          out.push_back(p);
          found = true;
        }
      if (!found)
        throw usage_error("daydream: pass 'speedup': unknown phase '" + std::string(item) +
                          "' (use forward, backward, weight_update or other, separated by |)");
    }
    return out;
  }
};

} // namespace daydream::passes

#endif
