// The compare command: a prediction of AFTER from BEFORE next to AFTER as measured, or the validation table of manifests of pairs.
// SPDX-License-Identifier: MIT
#include "compare_cmd.hpp"
#include "../step_annotation.hpp"

#include <CLI/CLI.hpp>

#include <daydream/config.hpp>
#include <daydream/compare/compare.hpp>
#include <daydream/compare/validation.hpp>
#include <daydream/io/json_writer.hpp>
#include <daydream/io/kineto.hpp>
#include <daydream/passes/all.hpp>
#include <daydream/registry/bundled.hpp>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace compare_cmd {

using daydream::comparison;
using daydream::time_ns;

void add_options(CLI::App& app, options& o) {
  app.add_option("traces", o.traces,
                 "BEFORE and AFTER: two Kineto traces (.json or .json.gz) of the same run with one thing changed");
  app.add_option("--pass", o.specs,
                 "predict AFTER from BEFORE with this pass chain (the syntax of `daydream whatif --pass`; repeated "
                 "options are chained); without it, a plain diff of the two traces");
  app.add_option("--manifest", o.manifests,
                 "validation mode: compare every pair of this manifest (pairs.json, docs/validation.md); repeatable");
  app.add_option("--markdown", o.markdown, "validation mode: write the table as Markdown to this file ('-': stdout)");
  app.add_option("--report", o.report, "write a self-contained HTML report of the comparison");
  app.add_option("--layers", o.layers, "layer rows to show, the largest first (default 30)");
  program::add_step_annotation(app, o.step_annotation);
  app.add_flag("--json", o.json, "print one JSON object on stdout instead of the table");
}

namespace {

std::string ms(double us) { return fmt::format("{:.3f} ms", us / 1e3); }
std::string ms_ns(time_ns ns) { return ns < 0 ? std::string("-") : fmt::format("{:.3f} ms", double(ns) / 1e6); }

void write_matches(daydream::io::json_writer& w, const daydream::match_counts& m) {
  w.begin_object();
  w.field("matched", m.matched).field("renamed", m.renamed).field("only_predicted", m.only_predicted);
  w.field("only_measured", m.only_measured);
  w.end_object();
}

void write_comparison(daydream::io::json_writer& w, const comparison& c) {
  w.begin_object();
  w.field("before", c.before).field("after", c.after).field("pass", c.spec);
  w.field("predicted_us", double(c.predicted) / 1e3).field("measured_us", double(c.measured) / 1e3);
  w.field("before_us", double(c.before_measured) / 1e3);
  w.key("error");
  if (std::isfinite(c.error)) w.value(c.error);
  else w.null();
  w.key("predicted_spread_us").begin_array().value(double(c.predicted_spread.first) / 1e3)
      .value(double(c.predicted_spread.second) / 1e3).end_array();
  w.key("measured_spread_us").begin_array().value(double(c.measured_spread.first) / 1e3)
      .value(double(c.measured_spread.second) / 1e3).end_array();
  w.field("predicted_iterations", c.predicted_iterations).field("measured_iterations", c.measured_iterations);
  w.key("rows").begin_array();
  for (auto& r : c.rows) {
    w.begin_object();
    w.field("key", r.key).field("kind", r.kind).field("before_us", r.before_us);
    w.field("predicted_us", r.predicted_us).field("measured_us", r.measured_us).field("delta_us", r.delta_us());
    w.end_object();
  }
  w.end_array();
  w.key("explanations").begin_array();
  for (auto& e : c.explanations) w.value(e);
  w.end_array();
  w.key("kernels");
  write_matches(w, c.kernels);
  w.key("operators");
  write_matches(w, c.operators);
  w.key("counts").begin_object();
  w.field("predicted_kernels", c.predicted_kernels).field("measured_kernels", c.measured_kernels);
  w.field("predicted_launches", c.predicted_launches).field("measured_launches", c.measured_launches);
  w.end_object();
  w.key("peak_memory");
  if (c.predicted_memory && c.measured_memory) {
    w.begin_object().field("predicted_bytes", *c.predicted_memory).field("measured_bytes", *c.measured_memory);
    w.end_object();
  } else {
    w.null();
  }
  w.key("reports").begin_array();
  for (auto& rep : c.reports) {
    w.begin_object().field("pass", rep.pass).field("applied", rep.applied).field("reason", rep.reason);
    w.key("items").begin_object();
    for (auto& [k, v] : rep.items) w.field(k, v);
    w.end_object();
    w.key("notes").begin_array();
    for (auto& n : rep.notes) w.value(n);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (auto& x : c.warnings) w.value(x);
  w.end_array();
  w.end_object();
}

void print_comparison(std::FILE* out, const comparison& c) {
  const bool plain = c.spec.empty();
  fmt::print(out, "daydream compare: {} -> {}{}\n", c.before, c.after,
             plain ? std::string(" (plain diff: BEFORE in the predicted column)") : " under " + c.spec);
  if (plain) {
    fmt::print(out, "  BEFORE {} ({} steady steps), AFTER {} ({} steady steps)\n", ms_ns(c.before_measured),
               c.predicted_iterations, ms_ns(c.measured), c.measured_iterations);
  } else {
    fmt::print(out, "  BEFORE {}; predicted {} (spread {} - {}); measured AFTER {} (spread {} - {}); error {}\n",
               ms_ns(c.before_measured), ms_ns(c.predicted), ms_ns(c.predicted_spread.first),
               ms_ns(c.predicted_spread.second), ms_ns(c.measured), ms_ns(c.measured_spread.first),
               ms_ns(c.measured_spread.second),
               std::isfinite(c.error) ? fmt::format("{:+.1f}%", 100 * c.error) : std::string("-"));
  }
  for (auto& rep : c.reports) {
    fmt::print(out, "  {}: {}\n", rep.pass, rep.applied ? "applied" : "no change: " + rep.reason);
    for (auto& [k, v] : rep.items) fmt::print(out, "    {}: {}\n", k, v);
    for (auto& n : rep.notes) fmt::print(out, "    note: {}\n", n);
  }
  fmt::print(out, "\n  {:<34} {:<6} {:>13} {:>13} {:>13} {:>13}\n", "per step", "kind", "BEFORE",
             plain ? "BEFORE" : "predicted", "AFTER", "AFTER - pred");
  for (auto& r : c.rows) {
    auto key = r.key.size() > 34 ? r.key.substr(0, 31) + "..." : r.key;
    fmt::print(out, "  {:<34} {:<6} {:>13} {:>13} {:>13} {:>13}\n", key, r.kind, ms(r.before_us), ms(r.predicted_us),
               ms(r.measured_us), fmt::format("{:+.3f} ms", r.delta_us() / 1e3));
  }
  fmt::print(out, "  {:<34} {:<6} {:>13} {:>13} {:>13}\n", "GPU tasks", "count", "",
             fmt::format("{:.0f}", c.predicted_kernels), fmt::format("{:.0f}", c.measured_kernels));
  fmt::print(out, "  {:<34} {:<6} {:>13} {:>13} {:>13}\n", "launch calls", "count", "",
             fmt::format("{:.0f}", c.predicted_launches), fmt::format("{:.0f}", c.measured_launches));
  if (c.predicted_memory && c.measured_memory)
    fmt::print(out, "  {:<34} {:<6} {:>13} {:>13} {:>13}\n", "peak memory", "bytes", "",
               fmt::format("{:.2f} GiB", double(*c.predicted_memory) / 1073741824.0),
               fmt::format("{:.2f} GiB", double(*c.measured_memory) / 1073741824.0));
  fmt::print(out, "\n  differences, largest first:\n");
  if (c.explanations.empty()) fmt::print(out, "    none above 1% of the step\n");
  for (auto& e : c.explanations) fmt::print(out, "    - {}\n", e);
  for (auto& w : c.warnings) fmt::print(out, "  warning: {}\n", w);
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '<') o += "&lt;";
    else if (ch == '>') o += "&gt;";
    else if (ch == '&') o += "&amp;";
    else o += ch;
  }
  return o;
}

std::string html_report(const comparison& c) {
  std::string h = "<!doctype html><html><head><meta charset=\"utf-8\"><title>daydream compare</title><style>"
                  "body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:right}"
                  "td:first-child,th:first-child{text-align:left}.bar{background:#4a90d9;height:10px}"
                  "</style></head><body>";
  h += "<h1>" + html_escape(c.before) + " &rarr; " + html_escape(c.after) + "</h1>";
  h += "<p>" + (c.spec.empty() ? std::string("plain diff") : "pass chain <code>" + html_escape(c.spec) + "</code>") +
       ": BEFORE " + ms_ns(c.before_measured) + ", predicted " + ms_ns(c.predicted) + ", measured " +
       ms_ns(c.measured) +
       (std::isfinite(c.error) ? fmt::format(", error {:+.1f}%", 100 * c.error) : std::string()) + "</p>";
  h += "<h2>Differences</h2><ul>";
  for (auto& e : c.explanations) h += "<li>" + html_escape(e) + "</li>";
  h += "</ul><h2>Per step</h2><table><tr><th>row</th><th>kind</th><th>BEFORE</th><th>predicted</th><th>AFTER</th>"
       "<th>AFTER - predicted</th></tr>";
  for (auto& r : c.rows)
    h += "<tr><td>" + html_escape(r.key) + "</td><td>" + r.kind + "</td><td>" + ms(r.before_us) + "</td><td>" +
         ms(r.predicted_us) + "</td><td>" + ms(r.measured_us) + "</td><td>" +
         fmt::format("{:+.3f} ms", r.delta_us() / 1e3) + "</td></tr>";
  h += "</table>";
  for (auto& w : c.warnings) h += "<p>warning: " + html_escape(w) + "</p>";
  h += "</body></html>\n";
  return h;
}

void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw daydream::error(fmt::format("daydream compare: cannot write {} to '{}'", what, path));
}

std::string join_specs(const std::vector<std::string>& specs) {
  std::string s;
  for (auto& x : specs) s += (s.empty() ? "" : "+") + x;
  return s;
}

/// Builds the chain of `spec` with the bundled registry; a bad spec is a usage error.
std::vector<daydream::passes::erased_pass<daydream::graph>> make_chain(const std::string& spec) {
  if (spec.empty()) return {};
  try {
    return daydream::passes::bundled().make_chain(spec);
  } catch (const daydream::usage_error&) {
    throw;
  } catch (const std::exception& e) {
    throw daydream::usage_error(e.what());
  }
}

comparison compare_files(const std::string& before_file, const std::string& after_file, const std::string& spec,
                         std::size_t layers, const std::string& step_annotation = {}) {
  const auto chain = make_chain(spec); // before any trace is read: a typo costs nothing
  const auto io = program::step_annotation_ingest("daydream compare", step_annotation);
  auto before = daydream::io::load_kineto(before_file, io);
  auto after = daydream::io::load_kineto(after_file, io);
  for (auto* t : {&before, &after})
    if (t->g.size() == 0) {
      auto problems = t->problems();
      throw daydream::error(problems.empty() ? t->info.path + ": the trace holds no CPU or GPU activity"
                                             : problems.front());
    }
  daydream::compare_options o;
  o.max_layers = layers;
  if (spec.empty()) return daydream::compare(before, after, o);
  return daydream::compare(before, after, daydream::predict(before, chain, spec), o);
}

int run_manifests(const options& o, std::FILE* out) {
  std::vector<daydream::validation_row> rows;
  for (auto& m : o.manifests)
    for (auto& p : daydream::read_pairs(m)) {
      daydream::validation_row r;
      r.pair = p;
      if (p.skipped.empty()) {
        // A pair whose pass does not exist yet, or whose traces cannot be read, is a row
        // that says why; the other pairs are still compared.
        try {
          r.result = compare_files(p.before.string(), p.after.string(), p.spec, o.layers);
        } catch (const std::exception& e) {
          r.failure = e.what();
        }
      }
      rows.push_back(std::move(r));
    }
  std::string command = "daydream compare";
  for (auto& m : o.manifests) command += " --manifest " + m;
  command += " --markdown " + (o.markdown.empty() ? std::string("-") : o.markdown);
  const auto md = daydream::validation_markdown(rows, command);
  if (o.markdown == "-" || (o.markdown.empty() && !o.json)) std::fputs(md.c_str(), out);
  else if (!o.markdown.empty()) write_file(o.markdown, md, "the validation table");
  if (o.json) {
    daydream::io::json_writer w(true);
    w.begin_object().key("pairs").begin_array();
    for (auto& r : rows) {
      w.begin_object().field("name", r.pair.name).field("pass", r.pair.spec).field("differs", r.pair.differs);
      if (!r.pair.skipped.empty()) w.field("skipped", r.pair.skipped);
      if (!r.failure.empty()) w.field("failure", r.failure);
      if (r.result) {
        w.key("comparison");
        write_comparison(w, *r.result);
      }
      w.end_object();
    }
    w.end_array().end_object();
    std::fputs((w.take() + "\n").c_str(), out);
  }
  int failed = 0;
  for (auto& r : rows) failed += !r.failure.empty();
  return failed ? 1 : 0;
}

} // namespace

int run(const options& o, std::FILE* out) {
  if (!o.manifests.empty()) {
    if (!o.traces.empty() || !o.specs.empty() || !o.report.empty())
      throw daydream::usage_error("daydream compare: --manifest compares the pairs it lists; give no traces, --pass "
                                  "or --report with it");
    return run_manifests(o, out);
  }
  if (!o.markdown.empty())
    throw daydream::usage_error("daydream compare: --markdown writes the validation table of --manifest files");
  if (o.traces.size() != 2)
    throw daydream::usage_error(fmt::format("daydream compare: give two traces, BEFORE and AFTER (got {})",
                                            o.traces.size()));
  const auto spec = join_specs(o.specs);
  const auto c = compare_files(o.traces[0], o.traces[1], spec, o.layers, o.step_annotation);
  if (o.json) {
    daydream::io::json_writer w(true);
    write_comparison(w, c);
    std::fputs((w.take() + "\n").c_str(), out);
  } else {
    print_comparison(out, c);
  }
  if (!o.report.empty()) write_file(o.report, html_report(c), "the report");
  return 0;
}

} // namespace compare_cmd
