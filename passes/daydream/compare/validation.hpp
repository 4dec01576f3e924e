// Defines the validation table: before/after pairs read from manifests (pairs.json), each predicted and compared, written as Markdown (needs simdjson: link daydream::io).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_COMPARE_VALIDATION_HPP
#define DAYDREAM_COMPARE_VALIDATION_HPP

#include <daydream/compare/compare.hpp>
#include <daydream/config.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace daydream {

/// One before/after pair of a manifest: two traces of the same run with one thing
/// changed, and the pass chain that predicts AFTER from BEFORE.
///
/// A manifest is a JSON file (by convention `pairs.json`) holding `{"pairs": [...]}`;
/// each entry has `name`, `before`, `after` (paths relative to the manifest's folder),
/// `pass` (a chain in `daydream whatif --pass` syntax; "" for a plain diff: no pass
/// models the change), `differs` (what changed, in words), `gpu`, `framework`,
/// `origin` and `license`; an entry with `skipped` (a reason) was not recorded.
/// A manifest may also give `gpu` and `framework` at its top level (recorded sets).
/// `measured_without_profiler_ms` (`{"before": ms, "after": ms}`, optional) gives the
/// step times of the same runs timed without the profiler, which the table shows next
/// to the traced ones: the profiler's own cost is part of every traced step.
struct validation_pair {
  std::string name;
  std::filesystem::path before, after; ///< resolved against the manifest's folder
  std::string spec;                    ///< the `pass` field
  std::string differs, gpu, framework, origin, license;
  std::string skipped;                 ///< why the pair was not recorded ("" when it was)
  std::filesystem::path manifest;      ///< the file it came from
  /// Step times without the profiler, ms (`measured_without_profiler_ms`), when given.
  std::optional<double> unprofiled_before_ms, unprofiled_after_ms;
};

/// Reads the pairs of manifest `file`. Throws daydream::error naming the file and the
/// entry for a manifest that cannot be read or an entry without name, before or after.
inline std::vector<validation_pair> read_pairs(const std::filesystem::path& file) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.load(file.string()).get(doc))
    throw error(file.string() + ": cannot read the manifest: " + simdjson::error_message(err));
  simdjson::dom::array arr;
  if (doc["pairs"].get_array().get(arr))
    throw error(file.string() + ": the manifest has no \"pairs\" array");
  auto text = [](simdjson::dom::element e, const char* key) -> std::string {
    std::string_view v;
    if (e[key].get_string().get(v)) return {};
    return std::string(v);
  };
  const std::string top_gpu = text(doc, "gpu"), top_framework = text(doc, "framework");
  std::vector<validation_pair> out;
  std::size_t index = 0;
  for (auto e : arr) {
    validation_pair p;
    p.manifest = file;
    p.name = text(e, "name");
    p.spec = text(e, "pass");
    p.differs = text(e, "differs");
    p.gpu = text(e, "gpu");
    p.framework = text(e, "framework");
    p.origin = text(e, "origin");
    p.license = text(e, "license");
    p.skipped = text(e, "skipped");
    simdjson::dom::element unprofiled;
    if (!e["measured_without_profiler_ms"].get(unprofiled)) {
      auto number = [&](const char* key) -> std::optional<double> {
        double v = 0;
        if (unprofiled[key].get_double().get(v) || !(v > 0)) return std::nullopt;
        return v;
      };
      p.unprofiled_before_ms = number("before");
      p.unprofiled_after_ms = number("after");
    }
    if (p.gpu.empty()) p.gpu = top_gpu;
    if (p.framework.empty()) p.framework = top_framework;
    const auto before = text(e, "before"), after = text(e, "after");
    if (p.name.empty())
      throw error(file.string() + ": pair #" + std::to_string(index) + " has no \"name\"");
    if (p.skipped.empty() && (before.empty() || after.empty()))
      throw error(file.string() + ": pair '" + p.name + "' names no \"before\" or \"after\" trace (and is not "
                  "marked \"skipped\")");
    const auto dir = file.parent_path();
    if (!before.empty()) p.before = dir / before;
    if (!after.empty()) p.after = dir / after;
    out.push_back(std::move(p));
    ++index;
  }
  return out;
}

/// One row of the validation table: a pair and what compare() found for it.
struct validation_row {
  validation_pair pair;
  std::optional<comparison> result; ///< empty when the pair was skipped or failed
  std::string failure;              ///< why there is no result
};

/// The GPU time (the sum of the kernels' and copies' durations per step) predicted and
/// measured, in us, from the comparison's "gpu time" row; {-1, -1} when it has none.
inline std::pair<double, double> validation_gpu_time(const comparison& c) {
  for (auto& r : c.rows)
    if (r.key == "gpu time") return {r.predicted_us, r.measured_us};
  return {-1, -1};
}

/// The validation table in Markdown: one row per pair (the traced step predicted and
/// measured, the error, the GPU time predicted and measured, the peak memory predicted and
/// measured when both traces have [memory] events, the steps timed without the
/// profiler when the manifest gives them, and the first explanation), then per pair the
/// explanations in full.
inline std::string validation_markdown(const std::vector<validation_row>& rows, const std::string& command) {
  std::string s;
  s += "| pair | GPU | what differs | pass | BEFORE | predicted | measured AFTER | error | GPU time: predicted / "
       "AFTER (error) | peak memory: predicted / AFTER (error) | without profiler: BEFORE -> AFTER | largest "
       "difference |\n";
  s += "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  auto ms = [](time_ns t) { return t < 0 ? std::string("-") : fmt::format("{:.2f} ms", double(t) / 1e6); };
  auto cell = [](std::string v) {
    for (auto& c : v)
      if (c == '|' || c == '\n') c = ' ';
    return v;
  };
  auto unprofiled = [](const validation_pair& p) {
    auto one = [](std::optional<double> v) { return v ? fmt::format("{:.2f} ms", *v) : std::string("-"); };
    if (!p.unprofiled_before_ms && !p.unprofiled_after_ms) return std::string("-");
    return one(p.unprofiled_before_ms) + " -> " + one(p.unprofiled_after_ms);
  };
  auto gpu_cell = [](const validation_pair& p, const comparison& c) {
    auto [predicted, measured] = validation_gpu_time(c);
    if (measured <= 0) return std::string("-");
    if (p.spec.empty()) return fmt::format("- / {:.2f} ms", measured / 1e3);
    return fmt::format("{:.2f} / {:.2f} ms ({:+.1f}%)", predicted / 1e3, measured / 1e3,
                       100 * (predicted - measured) / measured);
  };
  auto memory_cell = [](const validation_pair& p, const comparison& c) {
    if (!c.measured_memory || !c.predicted_memory) return std::string("-");
    const double gib = 1024.0 * 1024 * 1024, measured = double(*c.measured_memory) / gib;
    if (p.spec.empty()) return fmt::format("- / {:.2f} GiB", measured);
    const double predicted = double(*c.predicted_memory) / gib;
    return fmt::format("{:.2f} / {:.2f} GiB ({:+.1f}%)", predicted, measured, 100 * (predicted - measured) / measured);
  };
  for (auto& r : rows) {
    const auto& p = r.pair;
    const std::string spec = p.spec.empty() ? std::string("(plain diff)") : "`" + p.spec + "`";
    if (!r.result) {
      s += fmt::format("| {} | {} | {} | {} | - | - | - | - | - | - | {} | {} |\n", cell(p.name), cell(p.gpu),
                       cell(p.differs), spec, unprofiled(p),
                       cell(p.skipped.empty() ? "failed: " + r.failure : "not recorded: " + p.skipped));
      continue;
    }
    const auto& c = *r.result;
    const std::string err = p.spec.empty() || !std::isfinite(c.error) ? std::string("-")
                                                                        : fmt::format("{:+.1f}%", 100 * c.error);
    const std::string first = c.explanations.empty() ? std::string() : c.explanations.front();
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(p.name), cell(p.gpu),
                     cell(p.differs), spec, ms(c.before_measured), p.spec.empty() ? std::string("-") : ms(c.predicted),
                     ms(c.measured), err, gpu_cell(p, c), memory_cell(p, c), unprofiled(p), cell(first));
  }
  s += "\nRegenerate with `" + command + "`.\n";
  for (auto& r : rows) {
    if (!r.result) continue;
    const auto& p = r.pair;
    const auto& c = *r.result;
    s += fmt::format("\n### {} ({})\n\n", p.name, p.manifest.string());
    s += fmt::format("- BEFORE `{}`, AFTER `{}`; {}; {}; origin: {} ({})\n", p.before.filename().string(),
                     p.after.filename().string(), p.gpu.empty() ? "GPU not recorded" : p.gpu,
                     p.framework.empty() ? "framework not recorded" : p.framework, p.origin, p.license);
    s += fmt::format("- step: BEFORE {}, {}, AFTER {} (steady steps {} to {})\n", ms(c.before_measured),
                     p.spec.empty() ? std::string("no prediction") : "predicted " + ms(c.predicted), ms(c.measured),
                     ms(c.measured_spread.first), ms(c.measured_spread.second));
    if (p.unprofiled_before_ms || p.unprofiled_after_ms)
      s += "- without the profiler (median step): " + unprofiled(p) + "\n";
    for (auto& e : c.explanations) s += "- " + cell(e) + "\n";
    for (auto& w : c.warnings) s += "- note: " + cell(w) + "\n";
  }
  return s;
}

} // namespace daydream

#endif
