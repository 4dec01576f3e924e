// Defines the file stage of the DLC reader: the file's node, duplicate op_ids, dependencies resolved, unusable records propagated, cycles, and the file made of what is left.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_DLC_RESOLVE_HPP
#define DAYDREAM_IO_DETAIL_DLC_RESOLVE_HPP

#include <daydream/io/detail/dlc_line.hpp>
#include <daydream/io/dlc_record.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace daydream::io::detail::dlc {

//! @cond DAYDREAM_INTERNAL

/// The checks that take a file's records together, in order: the file's node (the
/// performer of most records), duplicate op_ids (the first is kept), dependencies
/// resolved (a record is usable only if all of them are, and none is later than it),
/// unusable records propagated to what depends on them, cycles; then the file's usable
/// records and report.
class file_records {
public:
  /// The records of a file with `W` workers, each read from its line.
  file_records(std::vector<raw_record>& raw, std::int32_t W)
      : raw_(raw), W_(W), deps_(raw.size()), users_(raw.size()) {}

  /// Runs the checks and fills `f`'s rank, records and report.
  void run(dlc_file& f, const dlc_options& opt) {
    f.rank = file_node();
    mark_other_nodes(f.rank);
    mark_duplicates();
    resolve_dependencies();
    propagate_unusable();
    mark_cycles();
    fill(f, opt);
  }

private:
  using op_id = std::tuple<std::int64_t, std::int64_t, std::int32_t>; // key, operation number, peer

  bool kept(std::size_t i) const { return raw_[i].bad.empty() && raw_[i].r.op != dlc_op::setup; }

  // The performer of most usable records (the lowest rank of a tie); -1 if none.
  std::int32_t file_node() const {
    std::map<std::int32_t, std::size_t> votes;
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (kept(i)) ++votes[raw_[i].r.performer()];
    std::size_t best = 0;
    std::int32_t node = -1;
    for (auto& [rank, n] : votes)
      if (n > best) { best = n; node = rank; }
    return node;
  }

  void mark_other_nodes(std::int32_t node) {
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (kept(i) && raw_[i].r.performer() != node)
        raw_[i].bad = "performed by another node", raw_[i].detail = "rank " + std::to_string(raw_[i].r.performer()) +
                                                                    " performs it; the file holds rank " +
                                                                    std::to_string(node);
  }

  void mark_duplicates() {
    for (std::size_t i = 0; i < raw_.size(); ++i) {
      auto& x = raw_[i];
      if (!kept(i)) continue;
      auto [it, fresh] = by_id_.emplace(std::make_tuple(x.r.key, x.r.op_num, x.r.peer), i);
      if (!fresh) x.bad = "duplicate op_id", x.detail = "line " + std::to_string(raw_[it->second].r.line) + " has the same op_id";
    }
  }

  // The records of `ref` into deps_[i]; false if it names none.
  bool resolve(std::size_t i, const dlc_ref& ref,
               const std::map<std::pair<std::int64_t, std::int32_t>, std::vector<std::size_t>>& by_num) {
    const auto before = deps_[i].size();
    if (ref.key >= 0) {
      auto it = by_id_.find(std::make_tuple(ref.key, ref.op_num, ref.peer));
      if (it != by_id_.end()) deps_[i].push_back(it->second);
    } else if (auto it = by_num.find({ref.op_num, ref.peer}); it != by_num.end()) {
      deps_[i].insert(deps_[i].end(), it->second.begin(), it->second.end());
    }
    return deps_[i].size() != before;
  }

  std::string dangling(const dlc_ref& ref) const {
    return "id_dep names " + (ref.key >= 0 ? std::to_string(ref.key) + "-" : std::string()) +
           std::to_string(ref.op_num) + "-" + (ref.peer < W_ ? "w" : "s") +
           std::to_string(ref.peer < W_ ? ref.peer : ref.peer - W_) + ", which no usable record of the file is";
  }

  // Each kept record's dependencies as raw indices (sorted, each once), and their users.
  void resolve_dependencies() {
    std::map<std::pair<std::int64_t, std::int32_t>, std::vector<std::size_t>> by_num;
    for (auto& [k, i] : by_id_) by_num[{std::get<1>(k), std::get<2>(k)}].push_back(i);
    for (std::size_t i = 0; i < raw_.size(); ++i) {
      auto& x = raw_[i];
      if (!kept(i)) continue;
      for (auto& ref : x.r.dep)
        if (!resolve(i, ref, by_num) && x.bad.empty()) {
          x.bad = "dangling id_dep";
          x.detail = dangling(ref);
        }
      auto& d = deps_[i];
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
      for (auto j : d) {
        users_[j].push_back(i);
        if (x.bad.empty() && raw_[j].bad.empty() && raw_[j].r.time_us > x.r.time_us) {
          x.bad = "depends on a later record";
          x.detail = "its dependency on line " + std::to_string(raw_[j].r.line) + " is " +
                     std::to_string(raw_[j].r.time_us - x.r.time_us) + " us later";
        }
      }
    }
  }

  // Whatever depends on an unusable record is unusable too.
  void propagate_unusable() {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (!raw_[i].bad.empty()) todo.push_back(i);
    while (!todo.empty()) {
      auto j = todo.back();
      todo.pop_back();
      for (auto i : users_[j]) {
        if (!raw_[i].bad.empty()) continue;
        raw_[i].bad = "depends on an unusable record";
        raw_[i].detail = "its dependency on line " + std::to_string(raw_[j].r.line) + " is unusable (" + raw_[j].bad + ")";
        todo.push_back(i);
      }
    }
  }

  // Cycles (possible only among records of equal time): what Kahn's order over the kept
  // records does not reach.
  void mark_cycles() {
    std::vector<std::size_t> indeg(raw_.size(), 0);
    std::vector<std::vector<std::size_t>> out(raw_.size());
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (kept(i))
        for (auto j : deps_[i]) { ++indeg[i]; out[j].push_back(i); }
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (kept(i) && !indeg[i]) todo.push_back(i);
    std::vector<bool> done(raw_.size(), false);
    while (!todo.empty()) {
      auto i = todo.back();
      todo.pop_back();
      done[i] = true;
      for (auto k : out[i])
        if (!--indeg[k]) todo.push_back(k);
    }
    for (std::size_t i = 0; i < raw_.size(); ++i)
      if (kept(i) && !done[i]) raw_[i].bad = "dependency cycle", raw_[i].detail = "its id_dep leads back to itself";
  }

  // The report, the usable records (moved out of raw_) and their dependencies as
  // indices into f.records.
  void fill(dlc_file& f, const dlc_options& opt) {
    std::vector<std::size_t> index(raw_.size(), 0);
    std::map<std::int64_t, std::size_t> ids;
    std::int64_t last_time = -1;
    for (std::size_t i = 0; i < raw_.size(); ++i) {
      auto& x = raw_[i];
      if (!x.bad.empty()) {
        ++f.report.unusable[x.bad];
        if (f.report.problems.size() < opt.max_problems)
          f.report.problems.push_back(f.path + ":" + std::to_string(x.r.line) + ": " + x.bad + ": " + x.detail);
        continue;
      }
      if (x.r.op == dlc_op::setup) { ++f.report.setup; continue; }
      if (!ids.emplace(x.r.id, i).second) ++f.report.duplicate_ids;
      if (x.r.time_us < last_time) ++f.report.out_of_order;
      last_time = x.r.time_us;
      index[i] = f.records.size();
      f.records.push_back(std::move(x.r));
    }
    for (std::size_t i = 0, k = 0; i < raw_.size(); ++i) {
      if (!kept(i)) continue;
      for (auto j : deps_[i]) f.records[k].deps.push_back(index[j]);
      ++k;
    }
    f.report.usable = f.records.size();
    if (f.records.empty()) f.rank = -1;
  }

  std::vector<raw_record>& raw_;
  std::int32_t W_;
  std::map<op_id, std::size_t> by_id_;
  std::vector<std::vector<std::size_t>> deps_, users_;
};

//! @endcond

} // namespace daydream::io::detail::dlc

#endif
