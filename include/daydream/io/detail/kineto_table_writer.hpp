// Defines io::detail::kineto_table_writer: each decoded Kineto event filed into its event table, and tables decoded apart appended in order.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_TABLE_WRITER_HPP
#define DAYDREAM_IO_DETAIL_KINETO_TABLE_WRITER_HPP

#include <daydream/io/detail/decimal.hpp>
#include <daydream/io/detail/json_text.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_json_reader.hpp>
#include <daydream/kinds.hpp>
#include <daydream/task.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL
/// The fields of one event, before classification.
struct raw_event {
  std::string_view ph, cat, name;
  std::string_view ts_text, dur_text;
  id_value pid, tid;
  bool has_id = false;
  std::int64_t id = 0;
  // args
  bool has_args = false;
  std::int64_t correlation = -1, seq = -1, device = -1, bytes = -1;
  bool has_stream = false;
  std::int64_t stream = -1;
  std::string_view input_dims, input_types, collective, dtype, sync_kind;
  std::string_view pg_name, pg_ranks; // process group of a collective (record_param_comms)
  std::string_view concrete_inputs;   // `Concrete Inputs` (raw JSON)
  std::int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  bool has_mem_bytes = false;
  std::int64_t mem_bytes = 0, total_allocated = -1, device_type = -1, device_id = -1;
  std::int64_t wait_stream = -1, wait_record = -1;
  // a kernel's launch: grid and block (their products, 0 when absent), resources (-1 when absent)
  std::uint64_t grid_blocks = 0, block_threads = 0;
  std::int64_t registers = -1, shared_memory = -1, occupancy = -1;
};

/// Writes decoded events into the event tables (`decoded_trace`): files each raw event
/// into the table of its phase and category, or counts it as ignored with the reason;
/// gives ids to strings written as ids, numbers to threads and records to operator
/// arguments; and appends tables another writer filled (absorb). It is built on the
/// reader for the number of the current event and the errors that name it.
class kineto_table_writer : public kineto_json_reader {
public:
  /// `input_size`: the size of the input as the user has it, named as its end in errors.
  kineto_table_writer(std::string_view source, decoded_trace& out, std::size_t input_size)
      : kineto_json_reader(source, input_size), out_(out) {}

  /// Reserves the event tables for an input of `bytes` bytes of JSON.
  void reserve_for(std::size_t bytes) {
    // Kineto events average 200-300 bytes: reserve for the common categories up front.
    const std::size_t guess = bytes / 400;
    out_.cpu.reserve(guess);
    out_.gpu.reserve(guess / 4);
    out_.flows.reserve(guess / 2);
  }

  /// The strings given ids so far (string pids and tids, string flow ids), in the order
  /// they were first seen: id k is the k-th.
  std::vector<std::string_view> string_ids_in_order() const {
    std::vector<std::string_view> v(string_ids_.size());
    for (const auto& [s, id] : string_ids_) v[static_cast<std::size_t>(id - string_id_base)] = s;
    return v;
  }

  /// Appends the events of `part`, which another decoder decoded from the window of
  /// events that follows everything decoded here, as if this decoder had decoded them:
  /// event numbers, threads, argument records and string ids go on from where they are
  /// here, in the same order (`part_ids`: that decoder's string_ids_in_order). The
  /// strings of `part` must live as long as the output (the caller keeps their pool).
  /// `part` is left empty, its tables' memory kept.
  void absorb(decoded_trace& part, const std::vector<std::string_view>& part_ids) {
    // Ids in the order the strings were first seen, as a decoder of the whole text
    // gives them: those new here follow, in the part's order.
    std::vector<std::int64_t> id_map(part_ids.size());
    for (std::size_t k = 0; k < part_ids.size(); ++k) id_map[k] = string_id(part_ids[k]);
    auto id = [&](std::int64_t v) {
      const std::uint64_t k = std::uint64_t(v) - std::uint64_t(string_id_base);
      return k < id_map.size() ? id_map[k] : v;
    };
    std::vector<std::uint32_t> thread_map(part.threads.size());
    for (std::size_t k = 0; k < part.threads.size(); ++k) {
      const pidtid key{id(part.threads[k].pid), id(part.threads[k].tid)};
      auto [it, fresh] = thread_index_.try_emplace(key, static_cast<std::uint32_t>(out_.threads.size()));
      if (fresh) {
        out_.threads.push_back(key);
        out_.thread_labels.push_back(part.thread_labels[k]);
      }
      thread_map[k] = it->second;
    }
    const auto first = static_cast<std::uint32_t>(index_);
    const auto meta0 = static_cast<std::uint32_t>(out_.metas.size());
    auto meta = [meta0](std::uint32_t m) { return m == no_index ? m : m + meta0; };
    for (auto e : part.cpu) {
      e.index += first;
      e.thread = thread_map[e.thread];
      e.meta = meta(e.meta);
      out_.cpu.push_back(e);
    }
    for (auto e : part.gpu) {
      e.index += first;
      e.meta = meta(e.meta);
      out_.gpu.push_back(e);
    }
    for (auto e : part.flows) {
      e.index += first;
      e.id = id(e.id);
      e.where = {id(e.where.pid), id(e.where.tid)};
      e.stream = id(e.stream);
      out_.flows.push_back(e);
    }
    for (auto e : part.memory) {
      e.index += first;
      e.thread = thread_map[e.thread];
      out_.memory.push_back(e);
    }
    for (auto e : part.syncs) {
      e.index += first;
      out_.syncs.push_back(e);
    }
    out_.metas.insert(out_.metas.end(), part.metas.begin(), part.metas.end());
    for (const auto& [why, n] : part.ignored) out_.ignored[why] += n;
    index_ += part.events;
    out_.events = index_;
    part.cpu.clear();
    part.gpu.clear();
    part.flows.clear();
    part.memory.clear();
    part.syncs.clear();
    part.metas.clear();
    part.threads.clear();
    part.thread_labels.clear();
    part.ignored.clear();
    part.events = 0;
  }

protected:
  /// The id of a string written as an id (a pid, a tid, a flow id): the next one the
  /// first time it is seen.
  std::int64_t string_id(std::string_view s) {
    auto it = string_ids_.find(s);
    if (it != string_ids_.end()) return it->second;
    std::int64_t id = string_id_base + std::int64_t(string_ids_.size());
    string_ids_.emplace(keep(s), id);
    return id;
  }

  /// Files event `e` (`has_ts`, `has_dur`: whether it has those fields) by its phase.
  void classify(const raw_event& e, bool has_ts, bool has_dur) {
    if (e.ph.empty()) fail_event("has no 'ph' field");
    const char ph = e.ph.size() == 1 ? e.ph[0] : '?';
    switch (ph) {
    case 'M': ignore("metadata"); return;
    case 'X': complete(e, has_ts, has_dur); return;
    case 'i': case 'I': instant(e, has_ts); return;
    case 's': case 'f': case 't': flow(e, ph, has_ts); return;
    case 'C': ignore("counter event"); return;
    case 'B': case 'E': ignore("begin/end pair event (not written by Kineto)"); return;
    default: ignore("unsupported phase \"" + std::string(e.ph.substr(0, 8)) + "\""); return;
    }
  }

  decoded_trace& out_;

private:
  /// String ids count up from here: far from any id a trace writes as a number.
  static constexpr std::int64_t string_id_base = std::numeric_limits<std::int64_t>::min() / 2;
  /// A kernel's launch from its arguments (grid, block, registers, shared memory,
  /// occupancy); a field out of range is left unknown.
  static kernel_launch launch_of(const raw_event& e) noexcept {
    kernel_launch l;
    if (e.grid_blocks == 0 || e.block_threads == 0 || e.block_threads > 0xffff) return l;
    l.blocks = e.grid_blocks > 0xffffffffu ? 0xffffffffu : std::uint32_t(e.grid_blocks);
    l.threads = std::uint16_t(e.block_threads);
    if (e.registers >= 0 && e.registers <= 255 && e.shared_memory >= 0 && e.shared_memory <= 0xffffffffLL) {
      l.registers = std::uint8_t(e.registers);
      l.shared_memory = std::uint32_t(e.shared_memory);
      l.recorded = 1;
    }
    if (e.occupancy >= 0 && e.occupancy <= 100) l.occupancy_pct = std::uint8_t(e.occupancy);
    return l;
  }
  /// The pooled copy of a string the tables keep.
  std::string_view keep(std::string_view s) { return out_.strings.intern(s); }
  /// A pid or tid as a number: the number written, or a string's id.
  std::int64_t id_of(const id_value& v) { return v.is_string ? string_id(v.str) : v.num; }

  /// The number of the thread of `e` (its pid and tid), given the first time it is seen.
  std::uint32_t thread_of(const raw_event& e) {
    pidtid k{id_of(e.pid), id_of(e.tid)};
    if (have_last_ && k == last_key_) return last_thread_;
    auto [it, fresh] = thread_index_.try_emplace(k, static_cast<std::uint32_t>(out_.threads.size()));
    if (fresh) {
      out_.threads.push_back(k);
      out_.thread_labels.push_back({e.pid.present ? keep(e.pid.text) : "0", e.tid.present ? keep(e.tid.text) : "0"});
    }
    have_last_ = true;
    last_key_ = k;
    last_thread_ = it->second;
    return it->second;
  }

  /// The nanoseconds of `text`, microseconds written as a JSON number (`field` names it).
  time_ns to_ns(std::string_view text, const char* field) {
    auto r = us_text_to_ns(text);
    switch (r.status) {
    case number_status::ok: return r.value;
    case number_status::not_finite: fail_event(std::string("field '") + field + "' is not a finite number");
    case number_status::out_of_range:
      fail_event(std::string("field '") + field + "' (" + std::string(text) + " us) is out of range");
    case number_status::not_a_number: break;
    }
    fail_event(std::string("field '") + field + "' is not a number (" + std::string(text) + ")");
  }

  /// Counts an event left out of the tables, by reason.
  void ignore(const char* reason) { ++out_.ignored[reason]; }
  void ignore(std::string reason) { ++out_.ignored[std::move(reason)]; }

  /// The record of the operator arguments of `e`, or no_index when it has none of them.
  std::uint32_t meta_of(const raw_event& e) {
    if (e.input_dims.empty() && e.collective.empty() && e.in_nelems < 0 && e.out_nelems < 0 &&
        e.group_size < 0 && e.dtype.empty() && e.pg_name.empty() && e.pg_ranks.empty())
      return no_index;
    out_.metas.push_back({keep(e.input_dims), keep(e.input_types), keep(e.collective), keep(e.dtype),
                          e.in_nelems, e.out_nelems, e.group_size, keep(e.pg_name), keep(e.pg_ranks),
                          // strides and paddings of convolutions (io/detail/op_flops.hpp); others' are not kept
                          e.name.find("conv") != std::string_view::npos ? keep(e.concrete_inputs) : std::string_view{}});
    return static_cast<std::uint32_t>(out_.metas.size() - 1);
  }

  /// A complete event ('X'): a CPU event, a GPU op or a sync record, by its category.
  void complete(const raw_event& e, bool has_ts, bool has_dur) {
    const std::uint32_t idx = static_cast<std::uint32_t>(index_);
    if (!has_ts) fail_event("complete event ('X') without 'ts'");
    if (!has_dur) fail_event("complete event ('X') without 'dur'");
    time_ns ts = to_ns(e.ts_text, "ts");
    time_ns dur = to_ns(e.dur_text, "dur");
    if (dur < 0) fail_event("negative duration (dur = " + std::string(e.dur_text) + " us)");
    if (ts > std::numeric_limits<time_ns>::max() - dur) fail_event("'ts' + 'dur' is out of range");
    ecat c = classify_category(e.cat);
    if (is_cpu_category(c)) {
      cpu_event ce;
      ce.ts = ts; ce.dur = dur; ce.name = keep(e.name); ce.index = idx; ce.thread = thread_of(e);
      ce.correlation = e.correlation; ce.seq = e.seq; ce.meta = meta_of(e); ce.cat = c;
      out_.cpu.push_back(ce);
    } else if (is_gpu_category(c)) {
      gpu_event ge;
      ge.ts = ts; ge.dur = dur; ge.name = keep(e.name); ge.index = idx; ge.cat = c;
      std::int64_t dev = e.device;
      if (dev < 0) dev = e.pid.present && !e.pid.is_string ? e.pid.num : 0;
      std::int64_t st = e.stream;
      if (!e.has_stream) {
        if (e.tid.present && !e.tid.is_string) st = e.tid.num;
        else if (!e.tid.present || !trailing_integer(e.tid.str, st)) st = 0;
      }
      ge.device = static_cast<std::int32_t>(dev);
      ge.stream = static_cast<std::int32_t>(st);
      ge.correlation = e.correlation;
      ge.bytes = e.bytes > 0 ? static_cast<std::uint64_t>(e.bytes) : 0;
      ge.meta = meta_of(e);
      if (c == ecat::kernel) ge.launch = launch_of(e);
      out_.gpu.push_back(ge);
    } else if (c == ecat::cuda_sync) {
      sync_event se;
      se.ts = ts; se.dur = dur; se.index = idx; se.correlation = e.correlation;
      se.stream = e.stream; se.wait_stream = e.wait_stream; se.record_correlation = e.wait_record;
      se.device = static_cast<std::int32_t>(e.device >= 0 ? e.device : 0);
      se.kind = keep(e.sync_kind.empty() ? e.name : e.sync_kind);
      out_.syncs.push_back(se);
    } else if (c == ecat::gpu_annotation) {
      ignore("gpu_user_annotation (the GPU-side span of a CPU annotation)");
    } else if (c == ecat::trace_span) {
      ignore("profiler span (cat \"Trace\")");
    } else if (c == ecat::launch_flow || c == ecat::fwdbwd_flow || c == ecat::cpu_instant) {
      ignore("complete event with a flow or instant category");
    } else {
      ignore("unknown category \"" + std::string(e.cat.substr(0, 40)) + "\"");
    }
  }

  /// An instant event ('i', 'I'): a memory record, or ignored.
  void instant(const raw_event& e, bool has_ts) {
    const std::uint32_t idx = static_cast<std::uint32_t>(index_);
    if (!has_ts) fail_event("instant event without 'ts'");
    time_ns ts = to_ns(e.ts_text, "ts");
    if (e.name == "[memory]") {
      if (!e.has_mem_bytes) { ignore("[memory] event without Bytes"); return; }
      memory_event m;
      m.ts = ts; m.bytes = e.mem_bytes; m.total = e.total_allocated; m.index = idx;
      m.thread = thread_of(e);
      m.device_type = static_cast<std::int32_t>(e.device_type);
      m.device_id = static_cast<std::int32_t>(e.device_id);
      out_.memory.push_back(m);
      return;
    }
    if (e.cat.empty()) ignore("profiler marker (instant event without category)");
    else ignore("instant event \"" + std::string(e.name.substr(0, 40)) + "\"");
  }

  /// A flow event ('s', 'f', 't'): the start or end of a flow, or ignored.
  void flow(const raw_event& e, char ph, bool has_ts) {
    const std::uint32_t idx = static_cast<std::uint32_t>(index_);
    ecat c = classify_category(e.cat);
    if (c != ecat::launch_flow && c != ecat::fwdbwd_flow) {
      ignore("flow of unknown category \"" + std::string(e.cat.substr(0, 40)) + "\"");
      return;
    }
    if (!has_ts) fail_event("flow event without 'ts'");
    if (!e.has_id) { ignore("flow without id"); return; }
    if (ph == 't') { ignore("flow step ('t')"); return; }
    flow_event fe;
    fe.ts = to_ns(e.ts_text, "ts");
    fe.id = e.id; fe.index = idx; fe.where = {id_of(e.pid), id_of(e.tid)}; fe.ph = ph; fe.cat = c;
    fe.stream = fe.where.tid;
    if (e.tid.is_string && !trailing_integer(e.tid.str, fe.stream)) fe.stream = fe.where.tid;
    out_.flows.push_back(fe);
  }

  std::unordered_map<std::string_view, std::int64_t> string_ids_;
  std::unordered_map<pidtid, std::uint32_t, pidtid_hash> thread_index_;
  bool have_last_ = false;
  pidtid last_key_;
  std::uint32_t last_thread_ = 0;
};
//! @endcond

} // namespace daydream::io::detail

#endif
