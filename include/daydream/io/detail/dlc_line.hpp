// Defines the record-line stage of the DLC reader: one record line read into a record, or the reason it is unusable.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_DLC_LINE_HPP
#define DAYDREAM_IO_DETAIL_DLC_LINE_HPP

#include <daydream/io/detail/dlc_fields.hpp>
#include <daydream/io/dlc_record.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daydream::io::detail::dlc {

//! @cond DAYDREAM_INTERNAL

/// A record line as read: the record, and why it is unusable (the first reason found).
struct raw_record {
  dlc_record r;
  std::string bad; // reason key; empty: usable so far
  std::string detail;
};

/// Reads the fields of one record line (its tokens `t`) of a file with `W` workers and
/// `S` servers into `x`, checking each and then their consistency; the first problem
/// found makes the record unusable and the later checks keep it.
class record_line {
public:
  record_line(const std::vector<std::string_view>& t, std::int32_t W, std::int32_t S) : t_(t), W_(W), S_(S) {}

  /// The record of line `line`.
  raw_record read(std::size_t line) {
    x_.r.line = line;
    std::string_view name;
    const std::size_t next = operation(name);
    if (next == 0) return std::move(x_);
    leading_fields();
    auto op = parse_op(name);
    if (!op) {
      bad("unknown operation", "'" + std::string(name.substr(0, 40)) + "'");
      return std::move(x_);
    }
    x_.r.op = *op;
    if (x_.r.op == dlc_op::setup || !trailing_count(t_.size() - next)) return std::move(x_);
    op_id(t_[next]);
    trailing_numbers(next + 1);
    const std::string_view dep = t_[next + 5];
    id_dep(dep);
    if (!x_.bad.empty()) return std::move(x_);
    check_ranks();
    check_op_num();
    check_dep_type(dep);
    return std::move(x_);
  }

private:
  void bad(std::string why, std::string detail) {
    if (x_.bad.empty()) {
      x_.bad = std::move(why);
      x_.detail = std::move(detail);
    }
  }

  // Field `field` (token `tok`) as an integer in [lo, hi] into `out`; false (the record
  // unusable) if it is not one.
  bool num(std::string_view field, std::string_view tok, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
    if (!parse_int(tok, out)) {
      const bool digits = !tok.empty() && std::all_of(tok.begin() + (tok[0] == '-' || tok[0] == '+'), tok.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
      if (digits && tok.size() > 1)
        bad("number out of range", std::string(field) + " " + std::string(tok.substr(0, 40)) + " does not fit 64 bits");
      else bad("bad number", std::string(field) + " '" + std::string(tok.substr(0, 40)) + "' is not an integer");
      return false;
    }
    if (out < lo || out > hi) {
      bad("number out of range", std::string(field) + " " + std::string(tok.substr(0, 40)) + " is not in [" +
                                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
      return false;
    }
    return true;
  }

  // The operation, `OP:= Name` or `OP:=Name`, as the sixth field: its name, and the index
  // of the field after it (0: the record is unusable).
  std::size_t operation(std::string_view& name) {
    std::size_t opi = t_.size();
    for (std::size_t k = 0; k < t_.size(); ++k)
      if (istarts(t_[k], "OP:=")) { opi = k; break; }
    if (opi == t_.size()) {
      std::int64_t v = 0;
      if (!parse_int(t_[0], v)) bad("not a record", "the line does not start with a record id");
      else bad("truncated record", "no operation field (OP:=)");
      return 0;
    }
    name = t_[opi].substr(4);
    std::size_t next = opi + 1;
    if (name.empty()) {
      if (next < t_.size()) name = t_[next++];
      else {
        bad("truncated record", "the operation has no name");
        return 0;
      }
    }
    if (opi != 5) {
      bad(opi < 5 ? "truncated record" : "too many fields",
          std::to_string(opi) + " fields before the operation (id src dst length num_pp)");
      return 0;
    }
    return next;
  }

  // id src dst length num_pp.
  void leading_fields() {
    auto& r = x_.r;
    std::int64_t v = 0;
    num("id", t_[0], 0, std::int64_t(1) << 53, r.id);
    if (num("src", t_[1], 0, max_nodes * 2, v)) r.src = std::int32_t(v);
    if (num("dst", t_[2], 0, max_nodes * 2, v)) r.dst = std::int32_t(v);
    if (num("length", t_[3], 0, max_length, v)) r.length = std::uint64_t(v);
    num("num_pp", t_[4], -max_int32, max_int32, r.num_pp);
  }

  // Whether `rest` fields follow the operation, as they must: 6.
  bool trailing_count(std::size_t rest) {
    if (rest < 6) bad("truncated record", std::to_string(rest) + " of the 6 fields after the operation");
    else if (rest > 6) bad("too many fields", std::to_string(rest) + " fields after the operation, not 6");
    return rest == 6;
  }

  void op_id(std::string_view tok) {
    dlc_ref self;
    if (!parse_ref(tok, true, W_, S_, self))
      bad("bad op_id", "'" + std::string(tok.substr(0, 40)) + "' is not key-operation_num-node with a node of the header");
    x_.r.key = self.key;
    x_.r.op_num = self.op_num;
    x_.r.peer = self.peer;
  }

  // dep_type d_time time_sec time_usec, from field `at`.
  void trailing_numbers(std::size_t at) {
    auto& r = x_.r;
    std::int64_t v = 0;
    if (num("dep_type", t_[at], 0, 4, v)) r.dep_type = std::int32_t(v);
    num("d_time", t_[at + 1], 0, max_d_time, r.d_time_us);
    std::int64_t sec = 0, usec = 0;
    const bool sec_ok = num("time_sec", t_[at + 2], 0, max_time_sec, sec);
    const bool usec_ok = num("time_usec", t_[at + 3], 0, 999'999, usec);
    if (sec_ok && usec_ok) r.time_us = sec * 1'000'000 + usec;
  }

  // id_dep: -1, one op_id, or a parenthesized list.
  void id_dep(std::string_view dep) {
    auto& r = x_.r;
    if (dep == "-1") {
      r.form = dlc_dep_form::none;
    } else if (!dep.empty() && dep.front() == '(') {
      r.form = dlc_dep_form::many;
      dep_list(dep);
    } else {
      r.form = dlc_dep_form::one;
      dlc_ref ref;
      if (!parse_ref(dep, true, W_, S_, ref)) bad("bad id_dep", "'" + std::string(dep.substr(0, 40)) + "' is not -1, an op_id or (...)");
      else r.dep.push_back(ref);
    }
  }

  // `(a.b,c;d)`: op_ids, or operation numbers and nodes.
  void dep_list(std::string_view dep) {
    auto& r = x_.r;
    if (dep.size() < 2 || dep.back() != ')') {
      bad("bad id_dep", "'" + std::string(dep.substr(0, 40)) + "' has no closing ')'");
      return;
    }
    auto body = dep.substr(1, dep.size() - 2);
    std::size_t a = 0;
    while (a < body.size() && x_.bad.empty()) {
      auto b = body.find_first_of(".,;", a);
      if (b == std::string_view::npos) b = body.size();
      auto item = body.substr(a, b - a);
      a = b + 1;
      if (item.empty()) continue;
      dlc_ref ref;
      if (!parse_ref(item, true, W_, S_, ref) && !parse_ref(item, false, W_, S_, ref))
        bad("bad id_dep", "'" + std::string(item.substr(0, 40)) + "' in " + std::string(dep.substr(0, 40)) +
                              " is neither key-operation_num-node nor operation_num-node");
      else r.dep.push_back(ref);
    }
    if (r.dep.empty()) bad("bad id_dep", "'" + std::string(dep.substr(0, 40)) + "' names no operation");
  }

  // src and dst are ranks of the header (not the scheduler's), the operation fits them,
  // and op_id's node is the peer.
  void check_ranks() {
    const auto& r = x_.r;
    const std::int32_t sched = W_ + S_;
    if (r.src == sched || r.dst == sched) {
      bad("scheduler record", "records with the scheduler are not part of a DLC trace");
      return;
    }
    if (r.src >= sched || r.dst >= sched) {
      bad("number out of range", "src " + std::to_string(r.src) + " or dst " + std::to_string(r.dst) +
                                     " is not a rank of the header's " + std::to_string(W_) + " workers and " +
                                     std::to_string(S_) + " servers");
      return;
    }
    const auto me = r.performer(), other = is_send(r.op) ? r.dst : r.src;
    const bool me_worker = me < W_, other_worker = other < W_;
    if (me_worker != is_worker_op(r.op) || other_worker == me_worker)
      bad("operation does not fit the ranks",
          std::string(to_string(r.op)) + " from " + std::to_string(r.src) + " to " + std::to_string(r.dst) +
              " (ranks below " + std::to_string(W_) + " are workers)");
    else if (r.peer != other)
      bad("op_id node is not the peer",
          "op_id's node is rank " + std::to_string(r.peer) + ", the record's peer is " + std::to_string(other));
  }

  // The operation number fits the operation and gives an iteration in range.
  void check_op_num() {
    auto& r = x_.r;
    const auto c = r.op_num - dlc_step(r.op);
    if (x_.bad.empty() && (c % 2) != 0)
      bad("bad op_id", "operation number " + std::to_string(r.op_num) + " does not fit " + std::string(to_string(r.op)));
    const auto iteration = floor_div(c + 2, 4);
    if (x_.bad.empty() && (iteration < 0 || iteration >= max_iteration))
      bad("bad op_id", "operation number " + std::to_string(r.op_num) + " is outside iterations 0 to " +
                           std::to_string(max_iteration - 1));
    r.iteration = std::int32_t(std::clamp<std::int64_t>(iteration, 0, max_iteration));
  }

  // dep_type is 0 exactly for a record without dependency, else the operation's.
  void check_dep_type(std::string_view dep) {
    const auto& r = x_.r;
    if (!x_.bad.empty()) return;
    const bool independent = r.form == dlc_dep_form::none;
    if ((r.dep_type == 0) != independent || (!independent && r.dep_type != dlc_dep_type(r.op)))
      bad("dep_type does not fit the operation", "dep_type " + std::to_string(r.dep_type) + " with " +
                                                     std::string(to_string(r.op)) + " and id_dep " +
                                                     std::string(dep.substr(0, 40)));
  }

  const std::vector<std::string_view>& t_;
  std::int32_t W_, S_;
  raw_record x_;
};

//! @endcond

} // namespace daydream::io::detail::dlc

#endif
