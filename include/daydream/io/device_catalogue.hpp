// Defines parse_device_catalogue, load_device_catalogue and bundled_device_catalogue: GPU catalogues read from JSON (data/devices.json and files of its form; needs daydream::semantics too).
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_IO_DEVICE_CATALOGUE_HPP
#define DAYDREAM_IO_DEVICE_CATALOGUE_HPP

#include <daydream/config.hpp>
#include <daydream/semantics/device.hpp>
#include <daydream/semantics/device_catalogue.hpp>

#include <simdjson.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

// The bundled catalogue, embedded from data/devices.json when CMake configures daydream
// (cmake/daydream_embed.cmake); a build without that header reads the file instead.
#if __has_include(<daydream/io/detail/devices_json.hpp>)
#  include <daydream/io/detail/devices_json.hpp>
#  define DAYDREAM_IO_BUNDLED_DEVICES 1
#endif

namespace daydream::io {

//! @cond DAYDREAM_INTERNAL
namespace device_json_detail {

/// How a numeric field is read: its unit factor, whether it must be whole, and where it
/// goes in a device.
struct numeric_field {
  std::string_view name;
  double scale;        // file unit -> SI
  bool whole;          // a count: a whole number
  bool zero_allowed;   // may be 0 (else positive)
  void (*store)(passes::device&, double);
};

// clang-format off
inline constexpr std::array<numeric_field, 27> numeric_fields{{
  {"sm_count", 1, true, false, [](passes::device& d, double v) { d.sm_count = std::uint32_t(v); }},
  {"boost_clock_mhz", 1e6, false, false, [](passes::device& d, double v) { d.clock_hz = v; }},
  {"memory_bandwidth_gbs", 1e9, false, false, [](passes::device& d, double v) { d.memory_bandwidth = v; }},
  {"memory_gb", 1073741824.0, false, false, [](passes::device& d, double v) { d.memory_bytes = std::uint64_t(std::llround(v)); }},
  {"l2_cache_mb", 1048576.0, false, false, [](passes::device& d, double v) { d.l2_bytes = std::uint64_t(std::llround(v)); }},
  {"fp32_tflops", 1e12, false, false, [](passes::device& d, double v) { d.fp32_flops = v; }},
  {"fp32_matrix_tflops", 1e12, false, false, [](passes::device& d, double v) { d.fp32_matrix_flops = v; }},
  {"tf32_tflops", 1e12, false, false, [](passes::device& d, double v) { d.tf32_flops = v; }},
  {"fp16_tflops", 1e12, false, false, [](passes::device& d, double v) { d.fp16_flops = v; }},
  {"bf16_tflops", 1e12, false, false, [](passes::device& d, double v) { d.bf16_flops = v; }},
  {"fp8_tflops", 1e12, false, false, [](passes::device& d, double v) { d.fp8_flops = v; }},
  {"registers_per_sm", 1, true, false, [](passes::device& d, double v) { d.sm.registers_per_sm = std::uint32_t(v); }},
  {"max_registers_per_thread", 1, true, false, [](passes::device& d, double v) { d.sm.max_registers_per_thread = std::uint32_t(v); }},
  {"register_allocation_unit", 1, true, false, [](passes::device& d, double v) { d.sm.register_allocation_unit = std::uint32_t(v); }},
  {"warp_allocation_granularity", 1, true, false, [](passes::device& d, double v) { d.sm.warp_allocation_granularity = std::uint32_t(v); }},
  {"shared_memory_per_sm_kib", 1024, true, false, [](passes::device& d, double v) { d.sm.shared_memory_per_sm = std::uint32_t(v); }},
  {"shared_memory_per_block_kib", 1024, true, false, [](passes::device& d, double v) { d.sm.shared_memory_per_block = std::uint32_t(v); }},
  {"reserved_shared_memory_per_block_bytes", 1, true, true, [](passes::device& d, double v) { d.sm.reserved_shared_memory_per_block = std::uint32_t(v); }},
  {"shared_memory_allocation_unit_bytes", 1, true, false, [](passes::device& d, double v) { d.sm.shared_memory_allocation_unit = std::uint32_t(v); }},
  {"max_threads_per_sm", 1, true, false, [](passes::device& d, double v) { d.sm.max_threads_per_sm = std::uint32_t(v); }},
  {"max_warps_per_sm", 1, true, false, [](passes::device& d, double v) { d.sm.max_warps_per_sm = std::uint32_t(v); }},
  {"max_blocks_per_sm", 1, true, false, [](passes::device& d, double v) { d.sm.max_blocks_per_sm = std::uint32_t(v); }},
  {"max_threads_per_block", 1, true, false, [](passes::device& d, double v) { d.sm.max_threads_per_block = std::uint32_t(v); }},
  {"warp_size", 1, true, false, [](passes::device& d, double v) { d.sm.warp_size = std::uint32_t(v); }},
  {"interconnect_gbs", 1e9, false, false, [](passes::device& d, double v) { d.interconnect_bandwidth = v; }},
  {"pcie_generation", 1, true, false, [](passes::device& d, double v) { d.pcie_generation = std::uint32_t(v); }},
  {"pcie_gbs", 1e9, false, false, [](passes::device& d, double v) { d.pcie_bandwidth = v; }},
}};
// clang-format on

struct reader {
  std::string source;
  std::string where; // "device 3 ('H100-SXM')"
  const passes::device_catalogue* refs = nullptr;

  [[noreturn]] void fail(const std::string& why) const {
    throw usage_error("daydream: device catalogue " + source + ": " + (where.empty() ? "" : where + ": ") + why);
  }
  static std::string text(simdjson::dom::element v) { return simdjson::minify(v); }

  std::string string_of(simdjson::dom::element v, std::string_view field) const {
    std::string_view s;
    if (v.get(s)) fail("field '" + std::string(field) + "' must be a string, not " + text(v));
    return std::string(s);
  }

  // The references of a number's "source": a key or a list of keys of `references`.
  std::vector<std::string> sources_of(simdjson::dom::element v, std::string_view field) const {
    std::vector<std::string> out;
    auto one = [&](simdjson::dom::element e) {
      std::string_view s;
      if (e.get(s) || s.empty())
        fail("field '" + std::string(field) + "': a source is a key of \"references\" or a list of them, not " + text(e));
      if (!refs->references().count(std::string(s)))
        fail("field '" + std::string(field) + "': source '" + std::string(s) + "' is not in \"references\"");
      out.emplace_back(s);
    };
    simdjson::dom::array list;
    if (!v.get(list)) {
      for (auto e : list) one(e);
      if (out.empty()) fail("field '" + std::string(field) + "': an empty list of sources");
    } else {
      one(v);
    }
    return out;
  }

  // A number's value (nullopt for null) and its provenance; checks sign, zero and wholeness.
  std::optional<double> number(simdjson::dom::element v, const numeric_field& f, passes::field_provenance& p) const {
    const std::string name(f.name);
    simdjson::dom::element value = v;
    simdjson::dom::object o;
    if (!v.get(o)) {
      bool have_value = false;
      std::set<std::string_view> seen;
      for (auto [k, x] : o) {
        if (!seen.insert(k).second) fail("field '" + name + "': key '" + std::string(k) + "' appears twice");
        if (k == "value") {
          value = x;
          have_value = true;
        } else if (k == "source") {
          p.references = sources_of(x, f.name);
        } else if (k == "note") {
          p.note = string_of(x, name + ".note");
        } else {
          fail("field '" + name + "': unknown key '" + std::string(k) + "' (value, source, note)");
        }
      }
      if (!have_value) fail("field '" + name + "' has no \"value\" (give null if it is not published)");
    }
    if (value.is_null()) return std::nullopt;
    double x = 0;
    if (value.get(x) || !std::isfinite(x))
      fail("field '" + name + "' must be a number, {\"value\": number, \"source\": ...} or null, not " + text(value));
    if (x < 0) fail("field '" + name + "' must not be negative, not " + text(value));
    if (x == 0 && !f.zero_allowed) fail("field '" + name + "' must be positive, not 0 (give null if it is not published)");
    if (f.whole) {
      const double scaled = x * f.scale;
      if (x != std::floor(x) || scaled > 4294967295.0)
        fail("field '" + name + "' must be a whole number below 2^32, not " + text(value));
    }
    p.known = true;
    return x * f.scale;
  }
};

inline passes::gpu_vendor vendor_of(const reader& r, simdjson::dom::element v) {
  auto s = r.string_of(v, "vendor");
  if (s == "nvidia") return passes::gpu_vendor::nvidia;
  if (s == "amd") return passes::gpu_vendor::amd;
  r.fail("field 'vendor' must be \"nvidia\" or \"amd\", not " + reader::text(v));
}

inline passes::device parse_device(reader& r, simdjson::dom::element e, std::size_t index) {
  r.where = "device " + std::to_string(index + 1);
  simdjson::dom::object o;
  if (e.get(o)) r.fail("a device must be an object, not " + reader::text(e));
  passes::device d;
  if (simdjson::dom::element n; !o["name"].get(n)) {
    d.name = r.string_of(n, "name");
    if (d.name.empty()) r.fail("field 'name' is empty");
    r.where += " ('" + d.name + "')";
  }
  std::set<std::string_view> seen;
  for (auto [k, v] : o) {
    const std::string key(k);
    if (!seen.insert(k).second) r.fail("field '" + key + "' appears twice");
    if (k == "name") continue;
    if (k == "aliases") {
      simdjson::dom::array list;
      if (v.get(list)) r.fail("field 'aliases' must be a list of strings, not " + reader::text(v));
      for (auto a : list) d.aliases.push_back(r.string_of(a, "aliases"));
    } else if (k == "vendor") {
      d.vendor = vendor_of(r, v);
    } else if (k == "architecture") {
      d.architecture = r.string_of(v, key);
    } else if (k == "target") {
      d.target = r.string_of(v, key);
    } else if (k == "about") {
      d.about = r.string_of(v, key);
    } else if (k == "interconnect") {
      if (!v.is_null()) d.interconnect = r.string_of(v, key);
    } else {
      const numeric_field* f = nullptr;
      for (auto& nf : numeric_fields)
        if (nf.name == k) f = &nf;
      if (!f) r.fail("unknown field '" + key + "' (docs/cross_gpu.md lists the fields)");
      passes::field_provenance p;
      p.field = key;
      if (auto x = r.number(v, *f, p)) f->store(d, *x);
      d.provenance.push_back(std::move(p));
    }
  }
  for (std::string_view required : {std::string_view("name"), std::string_view("vendor")})
    if (!seen.count(required))
      r.fail("field '" + std::string(required) + "' is missing");
  for (auto& nf : numeric_fields)
    if (!seen.count(nf.name))
      r.fail("field '" + std::string(nf.name) + "' is missing (give null if it is not published)");
  return d;
}

inline void parse_references(reader& r, simdjson::dom::element e, passes::device_catalogue& cat) {
  simdjson::dom::object o;
  if (e.get(o)) r.fail("\"references\" must be an object of {\"title\", \"url\"} by key, not " + reader::text(e));
  std::set<std::string_view> keys;
  for (auto [k, v] : o) {
    r.where = "reference '" + std::string(k) + "'";
    if (!keys.insert(k).second) r.fail("appears twice");
    simdjson::dom::object ro;
    if (v.get(ro)) r.fail("must be an object {\"title\", \"url\"}, not " + reader::text(v));
    passes::device_reference ref;
    std::set<std::string_view> seen;
    for (auto [rk, rv] : ro) {
      if (!seen.insert(rk).second) r.fail("key '" + std::string(rk) + "' appears twice");
      if (rk == "title") ref.title = r.string_of(rv, "title");
      else if (rk == "url") ref.url = r.string_of(rv, "url");
      else r.fail("unknown key '" + std::string(rk) + "' (title, url)");
    }
    if (ref.title.empty()) r.fail("has no \"title\"");
    cat.add_reference(std::string(k), std::move(ref));
  }
  r.where.clear();
}

} // namespace device_json_detail
//! @endcond

/// Reads a device catalogue from the JSON text `json`; `source` names it (a file) in
/// errors. The form (docs/cross_gpu.md, "The catalogue"): an object with `devices` (a
/// list of devices) and optionally `format` ("daydream-devices"), `version` (1), `about`
/// and `references` (key -> {"title", "url"}). A device has `name` and `vendor`
/// ("nvidia" or "amd"), optionally `aliases`, `architecture`, `target`, `about` and
/// `interconnect`, and every numeric field of the catalogue, each a number, null (not
/// published) or {"value": number or null, "source": key or [keys], "note": text}.
///
/// Throws daydream::usage_error naming the file, the device and the field for: bad JSON,
/// a missing field, a negative number (or 0 where it must be positive), a fractional
/// count, a string where a number belongs, an unknown field, a field given twice, a
/// source not in `references`, and a name or alias two devices share.
///
///     auto cat = daydream::io::parse_device_catalogue(R"({"devices": [...]})", "inline");
inline passes::device_catalogue parse_device_catalogue(std::string_view json, std::string_view source) {
  using namespace device_json_detail;
  passes::device_catalogue cat{std::string(source)};
  reader r{std::string(source), {}, &cat};
  simdjson::dom::parser parser;
  simdjson::padded_string text(json);
  simdjson::dom::element doc;
  if (auto err = parser.parse(text).get(doc)) r.fail(std::string("not valid JSON: ") + simdjson::error_message(err));
  simdjson::dom::object top;
  if (doc.get(top)) r.fail("the top level must be an object with \"devices\"");
  std::set<std::string_view> seen;
  for (auto [k, v] : top)
    if (!seen.insert(k).second) r.fail("top-level key '" + std::string(k) + "' appears twice");
  // References first: the devices' sources refer to them, wherever they stand in the file.
  if (simdjson::dom::element refs; !top["references"].get(refs)) parse_references(r, refs, cat);
  simdjson::dom::array devices;
  bool have_devices = false;
  for (auto [k, v] : top) {
    if (k == "references") continue;
    if (k == "format") {
      if (r.string_of(v, "format") != "daydream-devices")
        r.fail("\"format\" must be \"daydream-devices\", not " + reader::text(v));
    } else if (k == "version") {
      std::int64_t ver = 0;
      if (v.get(ver) || ver != 1) r.fail("\"version\" must be 1, not " + reader::text(v));
    } else if (k == "about") {
      r.string_of(v, "about");
    } else if (k == "devices") {
      if (v.get(devices)) r.fail("\"devices\" must be a list of devices, not " + reader::text(v));
      have_devices = true;
    } else {
      r.fail("unknown top-level key '" + std::string(k) + "' (format, version, about, references, devices)");
    }
  }
  if (!have_devices) r.fail("no \"devices\" list");
  std::size_t i = 0;
  for (auto e : devices) cat.add(parse_device(r, e, i++));
  return cat;
}

/// Reads the device catalogue file `path` (parse_device_catalogue). Throws
/// daydream::usage_error when it cannot be read or is not a valid catalogue.
inline passes::device_catalogue load_device_catalogue(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error("daydream: device catalogue " + path.string() + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_device_catalogue(ss.str(), path.string());
}

/// Whether this build has the bundled catalogue embedded (always, when daydream is
/// configured with CMake).
inline constexpr bool has_bundled_device_catalogue() noexcept {
#ifdef DAYDREAM_IO_BUNDLED_DEVICES
  return true;
#else
  return false;
#endif
}

/// The text of the bundled catalogue, data/devices.json as it was when CMake configured
/// daydream. Throws daydream::error in a build without it (has_bundled_device_catalogue).
inline std::string bundled_device_catalogue_json() {
#ifdef DAYDREAM_IO_BUNDLED_DEVICES
  std::string out;
  for (auto part : detail::bundled_devices_json_parts) out += part;
  return out;
#else
  throw error("daydream: the bundled device catalogue is not in this build (CMake embeds data/devices.json "
              "when it configures daydream); read the file with io::load_device_catalogue");
#endif
}

/// The bundled device catalogue (data/devices.json: the GPUs of docs/cross_gpu.md, each
/// figure with its source), parsed once per process. It is embedded in the headers when
/// CMake configures daydream, so programs find it in the build tree, after
/// `cmake --install` and under add_subdirectory alike. Copy it to add devices:
///
///     auto cat = daydream::io::bundled_device_catalogue();
///     cat.merge(daydream::io::load_device_catalogue("my_gpus.json"));
inline const passes::device_catalogue& bundled_device_catalogue() {
  static const passes::device_catalogue cat = parse_device_catalogue(bundled_device_catalogue_json(), "data/devices.json (bundled)");
  return cat;
}

} // namespace daydream::io

#endif
