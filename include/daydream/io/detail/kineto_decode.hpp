// Defines io::detail::decode_kineto: one pass of simdjson On-Demand over a Kineto trace into compact event tables.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DETAIL_KINETO_DECODE_HPP
#define DAYDREAM_IO_DETAIL_KINETO_DECODE_HPP

#include <daydream/config.hpp>
#include <daydream/io/detail/kineto_events.hpp>
#include <daydream/io/detail/kineto_json_reader.hpp>
#include <daydream/io/detail/kineto_table_writer.hpp>

#include <simdjson.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace daydream::io::detail {

//! @cond DAYDREAM_INTERNAL
/// The decoder: owns nothing but the parse state; results go to `out`. It reads either a
/// whole document (run) or, when the trace is streamed, the windows of `traceEvents`
/// (window) and then the rest of the document with that array left empty (run again).
/// It reads values with kineto_json_reader and files events with kineto_table_writer.
class kineto_decoder : public kineto_table_writer {
public:
  /// `input_size`: the size of the input as the user has it, named as its end in errors.
  kineto_decoder(std::string_view source, decoded_trace& out, std::size_t input_size)
      : kineto_table_writer(source, out, input_size) {}

  /// Decodes one window of a streamed traceEvents array: `json` is `[` followed by whole
  /// events and `]` (set_text names where its bytes are in the input).
  void window(simdjson::ondemand::parser& parser, simdjson::padded_string_view json) {
    simdjson::ondemand::document doc;
    if (auto err = parser.iterate(json).get(doc)) syntax(err, nullptr);
    simdjson::ondemand::array arr;
    if (auto err = doc.get_array().get(arr)) syntax(err, &doc);
    events(arr, doc);
    out_.events = index_;
  }

  /// Decodes a whole document; with `streamed`, its traceEvents array (or, for the
  /// array form, the document) was decoded window by window and is empty here. Throws
  /// daydream::error naming the source and the byte offset (syntax) or the event index
  /// (content).
  void run(simdjson::ondemand::parser& parser, simdjson::padded_string_view json, bool streamed = false) {
    using namespace simdjson;
    ondemand::document doc;
    if (auto err = parser.iterate(json).get(doc)) syntax(err, nullptr);
    ondemand::json_type top;
    if (auto err = doc.type().get(top)) syntax(err, &doc);
    if (top == json_type::array) {
      // The JSON Array Format of Chrome traces (older Kineto and other tools): the
      // events themselves, with no metadata around them.
      ondemand::array arr;
      if (auto err = doc.get_array().get(arr)) syntax(err, &doc);
      if (!streamed) events(arr, doc);
      out_.events = index_;
      return;
    }
    if (top != json_type::object)
      fail_doc(std::string("the top-level JSON value is ") + std::string(type_name(top)) +
               ", not an object with a \"traceEvents\" array nor an array of events");
    ondemand::object root;
    if (auto err = doc.get_object().get(root)) syntax(err, &doc);
    bool seen_events = false;
    for (auto field_r : root) {
      ondemand::field field;
      if (auto err = std::move(field_r).get(field)) syntax(err, &doc);
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) syntax(err, &doc);
      ondemand::value v = field.value();
      if (key == "traceEvents") {
        if (seen_events) fail_doc("\"traceEvents\" appears twice");
        seen_events = true;
        json_type t;
        if (auto err = v.type().get(t)) syntax(err, &doc);
        if (t != json_type::array)
          fail_doc("\"traceEvents\" is " + std::string(type_name(t)) + ", not an array");
        ondemand::array arr;
        if (auto err = v.get_array().get(arr)) syntax(err, &doc);
        if (!streamed) events(arr, doc); // else decoded already, and empty here
        streamed = false;                // a second one is refused above
      } else if (key == "distributedInfo") {
        json_type t;
        if (!v.type().get(t) && t == json_type::object) distributed(v, doc);
      } else if (key == "deviceProperties") {
        json_type t;
        if (!v.type().get(t) && t == json_type::array) devices(v, doc);
      }
    }
    if (!seen_events) fail_doc("no \"traceEvents\" array (is this a Kineto / PyTorch profiler trace?)");
    out_.events = index_;
  }

private:
  /// Reads `distributedInfo`: the rank, the world size and the backend.
  void distributed(simdjson::ondemand::value v, simdjson::ondemand::document& doc) {
    simdjson::ondemand::object o;
    if (v.get_object().get(o)) return;
    for (auto f_r : o) {
      simdjson::ondemand::field f;
      if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
      std::string_view k;
      if (auto err = f.unescaped_key().get(k)) syntax(err, &doc);
      auto val = f.value();
      std::int64_t n = 0;
      if (is(k, "rank")) { if (read_int(val, n)) out_.rank = static_cast<std::int32_t>(n); }
      else if (is(k, "world_size")) { if (read_int(val, n)) out_.world_size = static_cast<std::int32_t>(n); }
      else if (is(k, "backend")) {
        std::string_view s;
        if (!val.get_string().get(s)) out_.backend = std::string(s);
      }
    }
  }

  /// Reads `deviceProperties`: the GPUs, their names and figures (a figure that is not a
  /// non-negative integer is left 0).
  void devices(simdjson::ondemand::value v, simdjson::ondemand::document& doc) {
    simdjson::ondemand::array a;
    if (v.get_array().get(a)) return;
    for (auto el_r : a) {
      simdjson::ondemand::value el;
      if (auto err = std::move(el_r).get(el)) syntax(err, &doc);
      simdjson::ondemand::object o;
      if (el.get_object().get(o)) continue;
      recorded_device d;
      d.id = static_cast<std::int32_t>(out_.devices.size());
      bool named = false;
      for (auto f_r : o) {
        simdjson::ondemand::field f;
        if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
        std::string_view k;
        if (auto err = f.unescaped_key().get(k)) syntax(err, &doc);
        auto val = f.value();
        if (is(k, "name")) {
          std::string_view s;
          if (!val.get_string().get(s)) { out_.gpus.emplace_back(s); d.name = std::string(s); named = true; }
          continue;
        }
        std::int64_t n = 0;
        if (!read_int(val, n) || n < 0) continue;
        auto u32 = [&](std::uint32_t& dst) { dst = n > 0xffffffffLL ? 0xffffffffu : std::uint32_t(n); };
        if (is(k, "id")) d.id = static_cast<std::int32_t>(std::min<std::int64_t>(n, 0x7fffffff));
        else if (is(k, "totalGlobalMem")) d.memory_bytes = std::uint64_t(n);
        else if (is(k, "computeMajor")) u32(d.compute_major);
        else if (is(k, "computeMinor")) u32(d.compute_minor);
        else if (is(k, "maxThreadsPerBlock")) u32(d.max_threads_per_block);
        else if (is(k, "maxThreadsPerMultiprocessor")) u32(d.max_threads_per_sm);
        else if (is(k, "regsPerBlock")) u32(d.registers_per_block);
        else if (is(k, "regsPerMultiprocessor")) u32(d.registers_per_sm);
        else if (is(k, "warpSize")) u32(d.warp_size);
        else if (is(k, "sharedMemPerBlock")) u32(d.shared_memory_per_block);
        else if (is(k, "sharedMemPerBlockOptin")) u32(d.shared_memory_per_block_optin);
        else if (is(k, "sharedMemPerMultiprocessor")) u32(d.shared_memory_per_sm);
        else if (is(k, "numSms")) u32(d.sm_count);
      }
      if (named) out_.devices.push_back(std::move(d));
    }
  }

  /// The product of an array of non-negative integers (`grid`, `block`); 0 when `v` is
  /// not one.
  std::uint64_t product(simdjson::ondemand::value& v, simdjson::ondemand::document& doc) {
    json_type t;
    if (v.type().get(t) || t != json_type::array) return 0;
    simdjson::ondemand::array a;
    if (auto err = v.get_array().get(a)) syntax(err, &doc);
    std::uint64_t p = 1;
    std::size_t n = 0;
    for (auto x_r : a) {
      simdjson::ondemand::value x;
      if (auto err = std::move(x_r).get(x)) syntax(err, &doc);
      std::int64_t k = 0;
      if (!read_int(x, k) || k < 0) return 0;
      constexpr std::uint64_t cap = std::uint64_t(1) << 40; // saturate: kernel_launch caps it lower
      p = k != 0 && p > cap / std::uint64_t(k) ? cap : p * std::uint64_t(k);
      ++n;
    }
    return n ? p : 0;
  }

  /// Reads the arguments of event `e` that the tables keep.
  void args(simdjson::ondemand::value& v, raw_event& e, simdjson::ondemand::document& doc) {
    json_type t;
    if (auto err = v.type().get(t)) syntax(err, &doc);
    if (t != json_type::object) fail_event("field 'args' must be an object, not " + std::string(type_name(t)));
    simdjson::ondemand::object o;
    if (auto err = v.get_object().get(o)) syntax(err, &doc);
    e.has_args = true;
    for (auto f_r : o) {
      simdjson::ondemand::field f;
      if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
      std::string_view k = key_of(f, doc);
      simdjson::ondemand::value val = f.value();
      auto as_int = [&](std::int64_t& dst) { std::int64_t n; if (read_int(val, n)) dst = n; };
      auto as_str = [&](std::string_view& dst) {
        json_type vt;
        if (!val.type().get(vt) && vt == json_type::string) {
          if (auto err = get_text(val, dst)) syntax(err, &doc);
        }
      };
      auto as_raw = [&](std::string_view& dst) {
        json_type vt;
        if (!val.type().get(vt) && vt == json_type::array) {
          simdjson::ondemand::array a;
          if (auto err = val.get_array().get(a)) syntax(err, &doc);
          if (auto err = a.raw_json().get(dst)) syntax(err, &doc);
        }
      };
      switch (k.size()) {
      case 5:
        if (is(k, "Bytes")) { std::int64_t n; if (read_int(val, n)) { e.mem_bytes = n; e.has_mem_bytes = true; } }
        else if (is(k, "bytes")) as_int(e.bytes); // gpu_memcpy / gpu_memset size
        else if (is(k, "dtype")) as_str(e.dtype);
        else if (is(k, "block")) e.block_threads = product(val, doc);
        break;
      case 6:
        if (is(k, "stream")) { std::int64_t n; if (read_int(val, n)) { e.stream = n; e.has_stream = true; } }
        else if (is(k, "device")) as_int(e.device);
        break;
      case 10:
        if (is(k, "Input Dims") || is(k, "Input dims")) as_raw(e.input_dims);
        else if (is(k, "Input type")) as_raw(e.input_types);
        else if (is(k, "Group size")) as_int(e.group_size);
        break;
      case 4: if (is(k, "grid")) e.grid_blocks = product(val, doc); break;
      case 20: if (is(k, "registers per thread")) as_int(e.registers); break;
      case 25: if (is(k, "est. achieved occupancy %")) as_int(e.occupancy); break;
      case 5 + 6:
        if (is(k, "correlation")) as_int(e.correlation);
        else if (is(k, "Device Type")) as_int(e.device_type);
        break;
      case 9: if (is(k, "Device Id")) as_int(e.device_id); break;
      case 13:
        if (is(k, "In msg nelems")) as_int(e.in_nelems);
        else if (is(k, "shared memory")) as_int(e.shared_memory);
        break;
      case 14:
        if (is(k, "Out msg nelems")) as_int(e.out_nelems);
        else if (is(k, "cuda_sync_kind")) as_str(e.sync_kind);
        else if (is(k, "wait_on_stream")) as_int(e.wait_stream);
        break;
      case 15:
        if (is(k, "Sequence number")) as_int(e.seq);
        else if (is(k, "Total Allocated")) as_int(e.total_allocated);
        else if (is(k, "Collective name")) as_str(e.collective);
        else if (is(k, "Concrete Inputs")) as_raw(e.concrete_inputs);
        break;
      case 18: if (is(k, "Process Group Name")) as_str(e.pg_name); break;
      case 19:
        if (is(k, "Process Group Ranks")) { as_str(e.pg_ranks); as_raw(e.pg_ranks); } // "[0, 1]" or [0, 1]
        break;
      case 33: if (is(k, "wait_on_cuda_event_record_corr_id")) as_int(e.wait_record); break;
      default: break;
      }
    }
  }

  /// Whether the arguments of an event matter (ph, cat and name come first in Kineto's
  /// output; when they do not, every argument is read).
  static bool wants_args(const raw_event& e) noexcept {
    if (e.ph.empty() || e.cat.empty()) return true;
    switch (e.ph[0]) {
    case 'X': {
      auto c = classify_category(e.cat);
      return c != ecat::python_function && c != ecat::gpu_annotation && c != ecat::trace_span && c != ecat::other;
    }
    case 'i': case 'I': return e.name.empty() || e.name == "[memory]";
    default: return false;
    }
  }

  /// Decodes every event of `arr` and files it.
  void events(simdjson::ondemand::array& arr, simdjson::ondemand::document& doc) {
    for (auto el_r : arr) {
      in_event_ = true;
      simdjson::ondemand::value el;
      if (auto err = std::move(el_r).get(el)) syntax(err, &doc);
      json_type t;
      if (auto err = el.type().get(t)) syntax(err, &doc);
      if (t != json_type::object) fail_event("is " + std::string(type_name(t)) + ", not an object");
      simdjson::ondemand::object o;
      if (auto err = el.get_object().get(o)) syntax(err, &doc);
      raw_event e;
      bool has_ts = false, has_dur = false;
      for (auto f_r : o) {
        simdjson::ondemand::field f;
        if (auto err = std::move(f_r).get(f)) syntax(err, &doc);
        std::string_view k = key_of(f, doc);
        simdjson::ondemand::value v = f.value();
        switch (k.size()) {
        case 2:
          if (is(k, "ph")) e.ph = read_string(v, "ph", doc);
          else if (is(k, "ts")) { e.ts_text = read_number_text(v, "ts", doc); has_ts = true; }
          else if (is(k, "id")) {
            std::int64_t n;
            if (read_int(v, n)) { e.id = n; e.has_id = true; }
            else {
              json_type it;
              if (!v.type().get(it) && it == json_type::string) {
                std::string_view s;
                if (auto err = v.get_string().get(s)) syntax(err, &doc);
                e.id = string_id(s);
                e.has_id = true;
              }
            }
          }
          break;
        case 3:
          if (is(k, "cat")) e.cat = read_string(v, "cat", doc);
          else if (is(k, "pid")) read_id(v, e.pid, "pid", doc);
          else if (is(k, "tid")) read_id(v, e.tid, "tid", doc);
          else if (is(k, "dur")) { e.dur_text = read_number_text(v, "dur", doc); has_dur = true; }
          break;
        case 4:
          if (is(k, "name")) {
            // a flow's or a metadata event's name is never used: do not unescape it
            const bool unused = e.ph.size() == 1 && (e.ph[0] == 's' || e.ph[0] == 'f' || e.ph[0] == 't' || e.ph[0] == 'M');
            if (!unused) e.name = read_string(v, "name", doc);
          }
          else if (is(k, "args")) { if (wants_args(e)) args(v, e, doc); else check_object(v, doc); }
          break;
        default: break;
        }
      }
      classify(e, has_ts, has_dur);
      ++index_;
      in_event_ = false;
    }
  }
};
//! @endcond

/// Decodes the Kineto trace in `json` (padded) into `out`. `source` names it in errors.
/// The string views in `out` point into `out.strings`: neither `json` nor the parser
/// need outlive `out` (kineto_stream.hpp decodes a file a window at a time).
/// `input_size` is the size of the input as the user has it, named as its end in errors
/// (a JSON array left open is decoded with its `]` appended).
inline void decode_kineto(simdjson::ondemand::parser& parser, simdjson::padded_string_view json,
                          std::string_view source, decoded_trace& out,
                          std::size_t input_size = std::size_t(-1)) {
  if (json.size() == 0) throw error("daydream: " + std::string(source) + ": empty file");
  kineto_decoder d(source, out, std::min(json.size(), input_size));
  d.set_text(json.data(), std::min(json.size(), input_size));
  d.reserve_for(json.size());
  d.run(parser, json);
}

} // namespace daydream::io::detail

#endif
