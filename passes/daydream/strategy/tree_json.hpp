// Defines configure_tree and load_tree_file: a strategy tree's configuration read from a JSON file (needs simdjson: link daydream::io).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_TREE_JSON_HPP
#define DAYDREAM_STRATEGY_TREE_JSON_HPP

#include <daydream/config.hpp>
#include <daydream/strategy/strategy_spec.hpp>
#include <daydream/strategy/tree.hpp>

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace daydream::strategy {

//! @cond DAYDREAM_INTERNAL
namespace tree_json_detail {
struct reader {
  std::string source;
  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw usage_error("daydream: strategy tree " + source + ": " + where + (where.empty() ? "" : ": ") + why);
  }
  std::uint32_t whole(simdjson::dom::element v, const std::string& where, const char* key, std::uint32_t lo) const {
    double x = 0;
    if (v.is_int64()) x = double(std::int64_t(v.get_int64()));
    else if (v.is_uint64()) x = double(std::uint64_t(v.get_uint64()));
    else if (v.is_double()) x = double(v.get_double());
    else fail(where, std::string(key) + " must be a whole number, not " + text(v));
    if (x < lo || x != std::floor(x) || x > 1e6)
      fail(where, std::string(key) + " must be a whole number " + (lo ? "from 1" : "from 0") + ", not " + text(v));
    return static_cast<std::uint32_t>(x);
  }
  static std::string text(simdjson::dom::element v) { return simdjson::minify(v); }
  bool flag(simdjson::dom::element v, const std::string& where, const char* key) const {
    if (v.is_bool()) return bool(v.get_bool());
    if (v.is_string()) {
      std::string_view s = v.get_string();
      if (s == "blocks" || s == "on") return true;
      if (s == "none" || s == "off") return false;
    }
    fail(where, std::string(key) + " must be true, false, \"on\", \"off\", \"blocks\" or \"none\", not " + text(v));
  }
  partition part(simdjson::dom::element v, const std::string& where) const {
    if (v.is_string()) {
      std::string_view s = v.get_string();
      for (auto p : {partition::auto_, partition::replicate, partition::column, partition::row, partition::block,
                     partition::through})
        if (s == to_string(p)) return p;
    }
    fail(where, "partition must be \"auto\", \"replicate\", \"column\", \"row\", \"block\" or \"through\", "
                "not " + text(v));
  }
  node_config node(simdjson::dom::element v, const std::string& where) const {
    simdjson::dom::object o;
    if (v.get(o)) fail(where, "a node's settings must be an object, not " + text(v));
    node_config c;
    for (auto [k, x] : o) {
      if (k == "partition") c.part = part(x, where);
      else if (k == "recompute") c.recompute = flag(x, where, "recompute");
      else if (k == "stage") c.stage = whole(x, where, "stage", 0);
      else if (k == "dp" || k == "tp" || k == "pp" || k == "zero" || k == "micro" || k == "schedule" ||
               k == "strategy")
        fail(where, "'" + std::string(k) + "' can be set on the root only (the file's top level): the whole model "
                    "runs one pipeline schedule on one device grid");
      else fail(where, "unknown key '" + std::string(k) + "' (partition, recompute, stage)");
    }
    return c;
  }
};
} // namespace tree_json_detail
//! @endcond

/// Configures `t` from the JSON text of a strategy tree file (docs/strategy.md, "Strategy
/// tree"); `source` names the file in errors. The top level is the root: `strategy` (a
/// spec string, the base), then `dp`, `tp`, `pp`, `micro`, `zero`, `schedule`,
/// `recompute` (true/false or "blocks"/"none"), `partition`, `stage`; `nodes` maps a
/// node pattern (strategy_tree::match: a name, a dotted path, or a glob) to its
/// settings (`partition`, `recompute`, `stage`), applied in file order, a later entry
/// overriding an earlier one field by field. Throws daydream::usage_error naming the
/// file, the node and the problem: bad JSON, an unknown key, a bad value, a pattern
/// that names no node, a degree that validate() or resolve() refuses.
inline void configure_tree(strategy_tree& t, std::string_view json, std::string_view source) {
  tree_json_detail::reader r{std::string(source)};
  simdjson::dom::parser parser;
  simdjson::padded_string text(json);
  simdjson::dom::element doc;
  if (auto err = parser.parse(text).get(doc)) r.fail("", std::string("not valid JSON: ") + simdjson::error_message(err));
  simdjson::dom::object top;
  if (doc.get(top)) r.fail("", "the top level must be an object (the root's settings and \"nodes\")");
  strategy_spec s;
  bool micro_set = false;
  if (simdjson::dom::element base; !top["strategy"].get(base)) {
    std::string_view spec;
    if (base.get(spec)) r.fail("root", "strategy must be a spec string (\"dp=2,tp=2\"), not " + r.text(base));
    try {
      s = strategy_spec::parse(spec);
      micro_set = spec.find("micro") != std::string_view::npos;
    } catch (const usage_error& e) {
      r.fail("root", e.what());
    }
  }
  node_config rc;
  simdjson::dom::object nodes;
  bool have_nodes = false;
  for (auto [k, v] : top) {
    if (k == "strategy") continue;
    if (k == "dp") s.dp = r.whole(v, "root", "dp", 1);
    else if (k == "tp") s.tp = r.whole(v, "root", "tp", 1);
    else if (k == "pp") s.pp = r.whole(v, "root", "pp", 1);
    else if (k == "micro") { s.micro = r.whole(v, "root", "micro", 1); micro_set = true; }
    else if (k == "zero") {
      s.zero = r.whole(v, "root", "zero", 0);
      if (s.zero > 3) r.fail("root", "zero must be 0, 1, 2 or 3, not " + r.text(v));
    } else if (k == "schedule") {
      std::string_view sc;
      if (v.get(sc) || (sc != "1f1b" && sc != "gpipe"))
        r.fail("root", "schedule must be \"1f1b\" or \"gpipe\", not " + r.text(v));
      s.schedule = sc == "gpipe" ? pipeline_schedule::gpipe : pipeline_schedule::one_f_one_b;
    } else if (k == "recompute") s.recompute = r.flag(v, "root", "recompute") ? recompute_mode::blocks : recompute_mode::none;
    else if (k == "partition") rc.part = r.part(v, "root");
    else if (k == "stage") rc.stage = r.whole(v, "root", "stage", 0);
    else if (k == "nodes") {
      if (v.get(nodes)) r.fail("", "\"nodes\" must be an object mapping node names to their settings");
      have_nodes = true;
    } else
      r.fail("root", "unknown key '" + std::string(k) +
                         "' (strategy, dp, tp, pp, micro, zero, schedule, recompute, partition, stage, nodes)");
  }
  // As in a spec: micro defaults to pp when neither the base spec nor the file sets it.
  if (!micro_set) s.micro = s.pp;
  t.root_spec = s;
  t.source = std::string(source);
  t.set(0, rc);
  if (!have_nodes) return;
  for (auto [k, v] : nodes) {
    const std::string where = "node '" + std::string(k) + "'";
    auto c = r.node(v, where);
    auto hit = t.match(k);
    if (hit.empty())
      r.fail(where, std::string(k.find_first_of("*?") == std::string_view::npos ? "no such node"
                                                                               : "the pattern matches no node") +
                        " (daydream strategy --show-tree lists the model's nodes)");
    for (auto i : hit) t.set(i, c);
  }
}

/// Reads the strategy tree file `path` into `t` (configure_tree). Throws
/// daydream::usage_error when the file cannot be read.
inline void load_tree_file(strategy_tree& t, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error("daydream: strategy tree " + path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  configure_tree(t, ss.str(), path);
}

} // namespace daydream::strategy

#endif
