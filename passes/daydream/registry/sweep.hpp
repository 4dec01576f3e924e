// Defines passes::sweep_grid: a grid of pass chains x parameter values, expanded into the concrete scenarios to predict.
// SPDX-License-Identifier: MIT
//
//   chains {"ddp", "amp+ddp"}  x  axes {workers=8,64} x {bandwidth=10Gbps,100Gbps}
//     -> ddp:workers=8,bandwidth=10Gbps   ddp:workers=8,bandwidth=100Gbps   ...   (2 x 2 x 2 = 8 points)
#ifndef DAYDREAM_REGISTRY_SWEEP_HPP
#define DAYDREAM_REGISTRY_SWEEP_HPP

#include <daydream/config.hpp>
#include <daydream/registry/registry.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::passes {

/// One dimension of a sweep: a parameter and the values it takes, in order.
struct sweep_axis {
  std::string key;
  std::vector<std::string> values;

  /// Parses "key=v1,v2,..." (the --vary syntax). Throws usage_error for a missing key or
  /// value, an empty value or a value given twice.
  static sweep_axis parse(std::string_view text) {
    auto eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw usage_error("daydream: --vary '" + std::string(text) + "' is not of the form key=value,value,...");
    sweep_axis a;
    a.key = std::string(text.substr(0, eq));
    auto rest = text.substr(eq + 1);
    while (true) {
      auto comma = rest.find(',');
      auto v = std::string(rest.substr(0, comma));
      if (v.empty())
        throw usage_error("daydream: --vary " + a.key + ": an empty value in '" + std::string(text) + "'");
      if (std::find(a.values.begin(), a.values.end(), v) != a.values.end())
        throw usage_error("daydream: --vary " + a.key + ": the value '" + v + "' is given twice");
      a.values.push_back(std::move(v));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    return a;
  }
};

/// One point of a sweep: a chain at one value of every axis, as the spec that runs it.
struct sweep_point {
  std::size_t chain = 0;                       ///< index of the chain in the grid
  std::vector<std::size_t> at;                 ///< index of the value of each axis
  std::string spec;                            ///< the chain with the values in place ("ddp:workers=8")
  /// Axes that no pass of the chain takes: the point equals the chain without them.
  std::vector<std::string> unused;
  std::size_t same_as = 0;                     ///< the first point with the same spec (itself if none)
};

/// A grid of chains x axes, expanded: every chain at every combination of values (the last
/// axis varies fastest). A value reaches a pass of a chain in one of two ways:
///  - a placeholder `{key}` in the chain's spec is replaced by it ("ddp:workers={n}" with
///    --vary n=8,64), which puts it exactly where the user wants;
///  - otherwise `key=value` is added to every pass of the chain that takes `key`
///    (registry::parameters), and replaces the value the spec gave.
/// A key that reaches no pass of any chain is an error (a typo must not sweep nothing),
/// as is a placeholder with no axis. Points whose specs coincide (a chain that takes none
/// of an axis's values) name the first of them in `same_as`: predict it once.
struct sweep_grid {
  std::vector<std::string> chains;
  std::vector<sweep_axis> axes;
  std::vector<sweep_point> points;

  /// The number of distinct specs (what must be predicted).
  std::size_t distinct() const {
    std::size_t n = 0;
    for (std::size_t k = 0; k < points.size(); ++k) n += points[k].same_as == k;
    return n;
  }

  /// The value of axis `axis` at point `p`.
  const std::string& value(const sweep_point& p, std::size_t axis) const { return axes[axis].values[p.at[axis]]; }
};

//! @cond DAYDREAM_INTERNAL
namespace detail {

/// The passes of "a+b:k=v+c".
inline std::vector<std::string> split_chain(std::string_view spec) {
  std::vector<std::string> out;
  while (true) {
    auto plus = spec.find('+');
    out.emplace_back(spec.substr(0, plus));
    if (plus == std::string_view::npos) break;
    spec = spec.substr(plus + 1);
  }
  return out;
}

/// `spec` with every "{key}" of `values` replaced; the keys replaced go to `used`.
inline std::string fill_placeholders(std::string spec, const std::map<std::string, std::string>& values,
                                     std::set<std::string>& used) {
  for (auto& [k, v] : values) {
    const std::string ph = "{" + k + "}";
    for (auto at = spec.find(ph); at != std::string::npos; at = spec.find(ph, at + v.size())) {
      spec.replace(at, ph.size(), v);
      used.insert(k);
    }
  }
  return spec;
}

/// "name:k=v,..." with `extra` set (replacing what the spec gave), keys in sorted order.
inline std::string with_params(std::string_view pass, const pass_params& given,
                               const std::vector<std::pair<std::string, std::string>>& extra) {
  auto items = given.items();
  for (auto& [k, v] : extra) items[k] = v;
  std::string out(pass.substr(0, pass.find(':')));
  char sep = ':';
  for (auto& [k, v] : items) {
    out += sep + k + "=" + v;
    sep = ',';
  }
  return out;
}

} // namespace detail
//! @endcond

/// Expands `chains` x `axes` with the passes of `reg` (see sweep_grid). Throws usage_error
/// for an unknown pass, a key no chain takes, a placeholder without an axis, a key given
/// by two axes, or no chain at all.
template <class Graph>
sweep_grid expand_sweep(const registry<Graph>& reg, std::vector<std::string> chains, std::vector<sweep_axis> axes) {
  if (chains.empty()) throw usage_error("daydream: a sweep needs at least one pass chain");
  for (std::size_t i = 0; i < axes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (axes[i].key == axes[j].key) throw usage_error("daydream: --vary " + axes[i].key + " is given twice");
  sweep_grid grid;
  grid.chains = std::move(chains);
  grid.axes = std::move(axes);

  std::set<std::string> reached; // axis keys some chain takes
  std::map<std::string, std::size_t> first_with_spec;
  std::vector<std::size_t> at(grid.axes.size(), 0);
  for (std::size_t c = 0; c < grid.chains.size(); ++c) {
    // A placeholder of no axis is a typo of an axis name.
    {
      std::map<std::string, std::string> probe;
      for (auto& a : grid.axes) probe[a.key] = a.values.front();
      std::set<std::string> ignored;
      auto filled = detail::fill_placeholders(grid.chains[c], probe, ignored);
      auto open = filled.find('{');
      if (open != std::string::npos)
        throw usage_error("daydream: '" + grid.chains[c] + "': the placeholder " +
                          filled.substr(open, filled.find('}', open) - open + 1) + " has no --vary");
    }
    std::fill(at.begin(), at.end(), 0);
    while (true) {
      std::map<std::string, std::string> values;
      for (std::size_t a = 0; a < grid.axes.size(); ++a) values[grid.axes[a].key] = grid.axes[a].values[at[a]];
      std::set<std::string> placed;
      auto filled = detail::fill_placeholders(grid.chains[c], values, placed);
      std::string spec;
      std::set<std::string> taken = placed;
      for (auto& pass : detail::split_chain(filled)) {
        auto [entry, given] = reg.parse(pass);
        auto keys = entry->parameters ? entry->parameters(given) : std::vector<std::string>{};
        std::vector<std::pair<std::string, std::string>> extra;
        for (auto& [k, v] : values)
          if (!placed.count(k) && std::find(keys.begin(), keys.end(), k) != keys.end()) {
            extra.emplace_back(k, v);
            taken.insert(k);
          }
        spec += (spec.empty() ? "" : "+") + (extra.empty() ? pass : detail::with_params(pass, given, extra));
      }
      sweep_point p;
      p.chain = c;
      p.at = at;
      p.spec = spec;
      for (auto& a : grid.axes)
        if (!taken.count(a.key)) p.unused.push_back(a.key);
      reached.insert(taken.begin(), taken.end());
      auto [it, fresh] = first_with_spec.emplace(spec, grid.points.size());
      p.same_as = it->second;
      (void)fresh;
      grid.points.push_back(std::move(p));
      // The next combination: the last axis fastest.
      std::size_t a = grid.axes.size();
      while (a > 0 && ++at[a - 1] == grid.axes[a - 1].values.size()) at[--a] = 0;
      if (a == 0) break;
    }
  }
  for (auto& a : grid.axes)
    if (!reached.count(a.key)) {
      std::string chains_list;
      for (auto& c : grid.chains) chains_list += (chains_list.empty() ? "" : ", ") + c;
      throw usage_error("daydream: --vary " + a.key + ": no pass of the sweep takes '" + a.key + "' (" + chains_list +
                        "); `daydream whatif --help` lists each pass's parameters");
    }
  return grid;
}

} // namespace daydream::passes

#endif
