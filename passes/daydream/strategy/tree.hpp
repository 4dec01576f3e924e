// Defines strategy_tree: a strategy set per module of the model (tensor-parallel partition, re-computation, pipeline stage), resolved into a plan per layer.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_STRATEGY_TREE_HPP
#define DAYDREAM_STRATEGY_TREE_HPP

#include <daydream/config.hpp>
#include <daydream/strategy/model.hpp>
#include <daydream/strategy/strategy_spec.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace daydream::strategy {

/// How tensor parallelism cuts a layer (Megatron-LM, Shoeybi et al. 2019).
enum class partition : std::uint8_t {
  auto_,     ///< chosen from the neighbours (strategy_tree::resolve)
  replicate, ///< not split: every tensor-parallel rank runs all of it on the whole activation
  column,    ///< weights split by output dimension: whole input, output split over the ranks
  row,       ///< weights split by reduction dimension: split input, output summed over the ranks
  block,     ///< a column-parallel then row-parallel pair inside the layer: whole input and output
  through,   ///< runs on its share of a split activation and passes it on split (element-wise
             ///< work, attention over its share of the heads)
};

/// "auto", "replicate", "column", "row", "block", "through".
inline constexpr std::string_view to_string(partition p) noexcept {
  switch (p) {
  case partition::replicate: return "replicate";
  case partition::column: return "column";
  case partition::row: return "row";
  case partition::block: return "block";
  case partition::through: return "through";
  default: return "auto";
  }
}

/// What a node of the tree sets; every field is optional (unset: the parent's).
struct node_config {
  std::optional<partition> part;          ///< of the layers in the subtree (see resolve)
  std::optional<bool> recompute;          ///< re-compute the subtree's forward in backward
  std::optional<std::uint32_t> stage;     ///< the pipeline stage of the whole subtree
  bool empty() const noexcept { return !part && !recompute && !stage; }
};

/// What compile does to one layer under a tree (strategy_tree::resolve).
///
/// Communication is tensor-parallel, on the layer's tensor-parallel group, and follows the
/// layer's computation in the same phase: forward all-reduce (row and block: the partial
/// sums of the output), forward all-gather (a split output whose consumer needs it whole),
/// backward all-reduce (column and block: the partial sums of the input gradient), backward
/// all-gather (a layer that takes a split input from a producer that made it whole: the
/// producer needs the whole gradient).
struct resolved_layer {
  std::string node;               ///< the tree node of the layer (its path)
  partition part = partition::replicate; ///< resolved: never auto
  bool split = false;             ///< its tensor-parallel work (and parameters) divided by tp
  bool fwd_all_reduce = false, fwd_all_gather = false;
  bool bwd_all_reduce = false, bwd_all_gather = false;
  bool recompute = false;
  std::int32_t stage = -1;        ///< pinned pipeline stage, -1: balance_stages chooses
};

/// A strategy with a plan per layer: what compile(strategy_plan) runs.
struct strategy_plan {
  strategy_spec spec;             ///< dp, tp, pp, micro, zero, schedule (recompute: see layers)
  std::vector<resolved_layer> layers; ///< per model layer, forward order
  std::string name;               ///< how output names it (spec.to_string() for a uniform plan)
};

/// The model as a tree of its modules, each node optionally configured.
///
/// Leaves are the model's layers (model_profile::layers); inner nodes the modules that
/// contain them, as the trace nests them (io::kineto_trace::modules); the root is the
/// model. A module that runs work outside its children is an inner node that is also a
/// layer (its `layer`). Layers the hierarchy does not name (`op#k`, a trace without
/// modules) hang from the root. Modules without a layer in the model are left out.
///
///     auto t = strategy_tree::build(model, names, parents);
///     t.root_spec = strategy_spec::parse("tp=2");
///     t.set("MLP_0", {.part = partition::column});
///     auto plan = t.resolve(model);
class strategy_tree {
public:
  struct node {
    std::string name;               ///< module name ("model" for the root)
    std::string path;               ///< dotted module names from the root's child ("" for the root)
    std::int32_t parent = -1;
    std::vector<std::uint32_t> children;
    std::int32_t layer = -1;        ///< index into model_profile::layers, -1 if none
    node_config config;
  };

  strategy_spec root_spec;          ///< the root's dp, tp, pp, micro, zero, recompute, schedule
  std::string source;               ///< the file it was read from, for errors ("" when built in code)

  /// A flat tree: root -> one leaf per layer.
  static strategy_tree flat(const model_profile& m) { return build(m, {}, {}); }

  /// The tree of `m`'s layers under the modules `names` (each with its `parents` index,
  /// -1 for a top-level module; parents precede children). A layer is the node of the
  /// same name; the others hang from the root.
  static strategy_tree build(const model_profile& m, const std::vector<std::string>& names,
                             const std::vector<std::int32_t>& parents) {
    DAYDREAM_ASSERT(names.size() == parents.size(), "strategy_tree::build: names and parents differ in length");
    strategy_tree t;
    t.nodes_.push_back({"model", "", -1, {}, -1, {}});
    // Which modules hold a layer in their subtree.
    std::unordered_map<std::string, std::size_t> module_of;
    for (std::size_t i = 0; i < names.size(); ++i) module_of.emplace(names[i], i);
    std::vector<std::int32_t> layer_of(names.size(), -1);
    std::vector<bool> keep(names.size(), false);
    std::vector<std::int32_t> loose;
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      auto it = module_of.find(m.layers[l].name);
      if (it == module_of.end() || layer_of[it->second] >= 0) { loose.push_back(std::int32_t(l)); continue; }
      layer_of[it->second] = std::int32_t(l);
      for (std::int32_t k = std::int32_t(it->second); k >= 0 && !keep[std::size_t(k)]; k = parents[std::size_t(k)])
        keep[std::size_t(k)] = true;
    }
    std::vector<std::int32_t> id(names.size(), -1);
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!keep[i]) continue;
      const std::int32_t p = parents[i] >= 0 ? id[std::size_t(parents[i])] : 0;
      DAYDREAM_ASSERT(p >= 0, "strategy_tree::build: a parent follows its child");
      node n;
      n.name = names[i];
      n.path = p == 0 ? names[i] : t.nodes_[std::size_t(p)].path + "." + names[i];
      n.parent = p;
      n.layer = layer_of[i];
      id[i] = std::int32_t(t.nodes_.size());
      t.nodes_[std::size_t(p)].children.push_back(std::uint32_t(t.nodes_.size()));
      t.nodes_.push_back(std::move(n));
    }
    for (auto l : loose) {
      node n;
      n.name = n.path = m.layers[std::size_t(l)].name;
      // A name the modules already use (a layer whose module name repeats) gets its index.
      if (t.find(n.path) >= 0) n.name = n.path = n.path + "#layer" + std::to_string(l);
      n.parent = 0;
      n.layer = l;
      t.nodes_[0].children.push_back(std::uint32_t(t.nodes_.size()));
      t.nodes_.push_back(std::move(n));
    }
    t.layers_ = m.layers.size();
    return t;
  }

  const std::vector<node>& nodes() const noexcept { return nodes_; }
  const node& root() const noexcept { return nodes_[0]; }
  std::size_t layers() const noexcept { return layers_; }

  /// The node with this path or, when only one node has it, this name; -1 if none.
  std::int32_t find(std::string_view key) const {
    std::int32_t by_name = -1, named = 0;
    for (std::size_t i = 1; i < nodes_.size(); ++i) {
      if (nodes_[i].path == key) return std::int32_t(i);
      if (nodes_[i].name == key) { by_name = std::int32_t(i); ++named; }
    }
    if (key == "model" || key.empty()) return 0;
    return named == 1 ? by_name : -1;
  }

  /// The nodes a pattern names. Without a dot it is a name: the nodes of that name
  /// (module names are unique; a layer's name can repeat one only as `NAME#layerK`).
  /// With a dot it is a path: the nodes whose path is it or ends in it after a dot
  /// (`MLP_0.fc2` names `Net_0.MLP_0.fc2`). `*` matches any run of characters (dots
  /// included), `?` one character. "model" is the root. Empty when nothing matches.
  std::vector<std::uint32_t> match(std::string_view pattern) const {
    std::vector<std::uint32_t> out;
    if (pattern == "model") return {0};
    const bool by_path = pattern.find('.') != std::string_view::npos;
    for (std::size_t i = 1; i < nodes_.size(); ++i) {
      std::string_view s = by_path ? std::string_view(nodes_[i].path) : std::string_view(nodes_[i].name);
      bool hit = glob(pattern, s);
      for (std::size_t k = 0; by_path && !hit && (k = s.find('.', k)) != std::string_view::npos; ++k)
        hit = glob(pattern, s.substr(k + 1));
      if (hit) out.push_back(std::uint32_t(i));
    }
    return out;
  }

  /// Sets (overrides field by field) the configuration of node `i`.
  void set(std::uint32_t i, const node_config& c) {
    DAYDREAM_ASSERT(i < nodes_.size(), "strategy_tree::set: no such node");
    auto& n = nodes_[i].config;
    if (c.part) n.part = c.part;
    if (c.recompute) n.recompute = c.recompute;
    if (c.stage) n.stage = c.stage;
  }
  /// Sets the configuration of every node `pattern` names; throws daydream::usage_error when none.
  void set(std::string_view pattern, const node_config& c) {
    auto hit = match(pattern);
    if (hit.empty()) throw usage_error(what() + "no node '" + std::string(pattern) + "'");
    for (auto i : hit) set(i, c);
  }

  /// Whether any node other than the root is configured, or the root sets a partition or
  /// a stage: false means the tree is its root spec applied uniformly.
  bool uniform() const {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      auto& c = nodes_[i].config;
      if (i == 0 ? (c.part || c.stage) : !c.empty()) return false;
    }
    return true;
  }

  /// The layers in the order activations flow through the tree, which resolve()
  /// propagates along: depth first, a node's children by their first layer in forward
  /// order, a module's own work (its layer) after its children's (an attention module's
  /// score computation after its projections, a residual block's add after its
  /// convolutions). For a flat tree, the forward order.
  std::vector<std::size_t> data_order() const {
    std::vector<std::size_t> first(nodes_.size(), SIZE_MAX);
    for (std::size_t i = nodes_.size(); i-- > 0;) { // children follow their parents
      if (nodes_[i].layer >= 0) first[i] = std::min(first[i], std::size_t(nodes_[i].layer));
      if (i > 0) first[std::size_t(nodes_[i].parent)] = std::min(first[std::size_t(nodes_[i].parent)], first[i]);
    }
    std::vector<std::size_t> out;
    auto walk = [&](auto&& self, std::size_t i) -> void {
      auto kids = nodes_[i].children;
      std::stable_sort(kids.begin(), kids.end(), [&](auto a, auto b) { return first[a] < first[b]; });
      for (auto c : kids) self(self, c);
      if (nodes_[i].layer >= 0) out.push_back(std::size_t(nodes_[i].layer));
    };
    walk(walk, 0);
    return out;
  }

  /// The plan per layer of `m` (the model the tree was built from).
  ///
  /// Propagation, parent to child: a node's unset fields are its parent's; the root's
  /// defaults are partition auto, recompute from root_spec, no stage. A partition set on
  /// a layer's own node applies to it; one it inherits applies only when it has
  /// tensor-parallel work (layer_profile::splits()) or is replicate, else the layer is
  /// auto, so that `column` on a module cuts its GEMMs and leaves its element-wise layers
  /// to follow them.
  ///
  /// Propagation along the data dependencies, the layers in data_order() each taking the
  /// previous one's output: a layer's input is split when the previous layer's output is
  /// (column, through), whole otherwise (the first layer: whole). auto becomes:
  /// with tensor-parallel work, row after a split input (so a column layer and the next
  /// one form a Megatron pair) and block otherwise (the layer is a pair itself, as a
  /// uniform spec treats every layer); without, through after a split input and
  /// replicate otherwise. Column layers in a row under the same parent (the query, key
  /// and value projections) are branches on one input: no gather between them, and one
  /// all-reduce of their summed input gradients (after the first one's backward, the
  /// last to run). With tp = 1 every layer is replicate.
  ///
  /// A split layer (column, row, block; through with tensor-parallel work: attention on
  /// its share of the heads) divides its tensor-parallel time and its parameters by tp.
  /// Communication: see resolved_layer. Stage pins are inherited like the other fields.
  /// Throws daydream::usage_error (naming the node) when a pin names a stage >= pp or
  /// pins go backwards along the layers' forward order.
  std::vector<resolved_layer> resolve(const model_profile& m) const {
    DAYDREAM_ASSERT(m.layers.size() == layers_, "strategy_tree::resolve: not the model the tree was built from");
    const auto n = m.layers.size();
    std::vector<resolved_layer> out(n);
    std::vector<bool> own(n, false);
    std::vector<std::int32_t> parent(n, -1);
    std::vector<node_config> eff(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const auto& c = nodes_[i].config;
      node_config e = i == 0 ? node_config{partition::auto_, root_spec.recompute == recompute_mode::blocks, {}}
                             : eff[std::size_t(nodes_[i].parent)];
      if (c.part) e.part = c.part;
      if (c.recompute) e.recompute = c.recompute;
      if (c.stage) e.stage = c.stage;
      eff[i] = e;
      if (nodes_[i].layer < 0) continue;
      const auto l = std::size_t(nodes_[i].layer);
      auto& p = out[l];
      p.node = i == 0 ? "model" : nodes_[i].path;
      p.part = *e.part;
      p.recompute = *e.recompute;
      p.stage = e.stage ? std::int32_t(*e.stage) : -1;
      own[l] = c.part.has_value();
      parent[l] = nodes_[i].parent;
    }
    const bool tp = root_spec.tp > 1;
    bool split_in = false;
    const auto order = data_order();
    std::size_t prev = n; // the layer before in data order; n: none
    for (const auto l : order) {
      auto& p = out[l];
      const bool work = m.layers[l].splits();
      if (!tp) p.part = partition::replicate;
      else if (!work && !own[l] && p.part != partition::replicate) p.part = partition::auto_;
      if (p.part == partition::auto_)
        p.part = work ? (split_in ? partition::row : partition::block)
                      : (split_in ? partition::through : partition::replicate);
      p.split = tp && (p.part == partition::column || p.part == partition::row || p.part == partition::block ||
                       (p.part == partition::through && work));
      const bool wants_split = p.part == partition::row || p.part == partition::through;
      p.fwd_all_reduce = p.part == partition::row || p.part == partition::block;
      p.bwd_all_reduce = p.part == partition::column || p.part == partition::block;
      // A whole activation cut for a split consumer: its gradient is gathered back (not
      // for the first layer: nothing needs the model input's gradient).
      p.bwd_all_gather = wants_split && !split_in && prev < n;
      const bool branch = prev < n && p.part == partition::column && out[prev].part == partition::column &&
                          parent[l] == parent[prev];
      if (branch) p.bwd_all_reduce = false;
      // A split activation whose consumer needs it whole.
      else if (prev < n && split_in && !wants_split) out[prev].fwd_all_gather = true;
      split_in = p.part == partition::column || p.part == partition::through;
      prev = l;
    }
    // The model's output goes to the loss whole.
    if (prev < n && split_in) out[prev].fwd_all_gather = true;
    std::int32_t last = -1;
    std::string last_node;
    for (auto& p : out) {
      if (p.stage < 0) continue;
      if (p.stage >= std::int32_t(root_spec.pp))
        throw usage_error(what() + "node '" + p.node + "' is pinned to stage " +
                          std::to_string(p.stage) + ", the pipeline has " + std::to_string(root_spec.pp) +
                          " stages (0 to " + std::to_string(root_spec.pp - 1) + ")");
      if (p.stage < last)
        throw usage_error(what() + "node '" + p.node + "' is pinned to stage " +
                          std::to_string(p.stage) + " but runs after '" + last_node + "' on stage " +
                          std::to_string(last) + ": stages follow the layers' forward order");
      last = p.stage;
      last_node = p.node;
    }
    return out;
  }

  /// The plan compile runs: resolve() under root_spec, named `name` (empty:
  /// root_spec.to_string(), the uniform spec's name).
  strategy_plan plan(const model_profile& m, std::string name = {}) const {
    strategy_plan p;
    p.spec = root_spec;
    p.layers = resolve(m);
    p.name = name.empty() ? root_spec.to_string() : std::move(name);
    return p;
  }

  /// "daydream: strategy tree SOURCE: ", the start of its errors.
  std::string what() const { return "daydream: strategy tree" + (source.empty() ? "" : " " + source) + ": "; }

private:
  static bool glob(std::string_view p, std::string_view s) {
    // Iterative wildcard match with one backtrack point.
    std::size_t i = 0, j = 0, star = std::string_view::npos, mark = 0;
    while (j < s.size()) {
      if (i < p.size() && (p[i] == '?' || p[i] == s[j])) { ++i; ++j; }
      else if (i < p.size() && p[i] == '*') { star = i++; mark = j; }
      else if (star != std::string_view::npos) { i = star + 1; j = ++mark; }
      else return false;
    }
    while (i < p.size() && p[i] == '*') ++i;
    return i == p.size();
  }

  std::vector<node> nodes_;
  std::size_t layers_ = 0;
};

/// The plan of a uniform spec: the flat tree with only the root set (what compile(spec) runs).
inline strategy_plan uniform_plan(const strategy_spec& s, const model_profile& m) {
  auto t = strategy_tree::flat(m);
  t.root_spec = s;
  return t.plan(m);
}

} // namespace daydream::strategy

#endif
