// Tests of catalogue files that are not valid (include/daydream/io/device_catalogue.hpp):
// each is refused with a daydream::usage_error naming the file, the device and the field.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/io/device_catalogue.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace io = daydream::io;
using daydream::usage_error;

namespace {

// A valid device entry, every field in the plain-number form, with `changes` applied:
// a pair replaces a field's JSON value (or adds the field), a value of "" drops it.
std::string device(const std::string& name, const std::vector<std::pair<std::string, std::string>>& changes = {}) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"name", "\"" + name + "\""}, {"vendor", "\"nvidia\""}, {"aliases", "[]"},
      {"sm_count", "108"}, {"boost_clock_mhz", "1410"}, {"memory_bandwidth_gbs", "2039"},
      {"memory_gb", "80"}, {"l2_cache_mb", "40"}, {"fp32_tflops", "19.5"},
      {"fp32_matrix_tflops", "null"}, {"tf32_tflops", "156"}, {"fp16_tflops", "312"},
      {"bf16_tflops", "312"}, {"fp8_tflops", "null"}, {"registers_per_sm", "65536"},
      {"max_registers_per_thread", "255"}, {"register_allocation_unit", "256"},
      {"warp_allocation_granularity", "4"}, {"shared_memory_per_sm_kib", "164"},
      {"shared_memory_per_block_kib", "163"}, {"reserved_shared_memory_per_block_bytes", "1024"},
      {"shared_memory_allocation_unit_bytes", "128"}, {"max_threads_per_sm", "2048"},
      {"max_warps_per_sm", "64"}, {"max_blocks_per_sm", "32"}, {"max_threads_per_block", "1024"},
      {"warp_size", "32"}, {"interconnect", "\"NVLink 3\""}, {"interconnect_gbs", "600"},
      {"pcie_generation", "4"}, {"pcie_gbs", "64"}};
  for (auto& [k, v] : changes) {
    bool found = false;
    for (auto& [fk, fv] : f)
      if (fk == k) {
        fv = v;
        found = true;
      }
    if (!found) f.emplace_back(k, v);
  }
  std::string out = "{";
  for (auto& [k, v] : f)
    if (!v.empty()) out += (out.size() > 1 ? ", " : "") + ("\"" + k + "\": ") + v;
  return out + "}";
}

std::string catalogue(const std::vector<std::string>& devices) {
  std::string out = R"({"format": "daydream-devices", "version": 1, "references": {"ds": {"title": "A datasheet", "url": "https://example.com/ds.pdf"}}, "devices": [)";
  for (std::size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + devices[i];
  return out + "]}";
}

auto parse(const std::string& text) { return io::parse_device_catalogue(text, "bad.json"); }

const std::string where = "daydream: device catalogue bad.json: device 1 ('Test-GPU'): ";

// `text` is refused with exactly `message` (kept alive here for doctest, which reads it
// after the expression ran).
void refused(const std::string& text, const std::string& message) {
  CAPTURE(text);
  CHECK_THROWS_WITH_AS(parse(text), message.c_str(), usage_error);
}

} // namespace

TEST_CASE("a valid file of the catalogue's form parses: plain numbers, nulls and sourced values") {
  auto cat = parse(catalogue({device("Test-GPU", {{"sm_count", R"({"value": 108, "source": "ds", "note": "Table 3"})"},
                                                  {"l2_cache_mb", R"({"value": null, "note": "not published"})"},
                                                  {"aliases", R"(["My GPU"])"}})}));
  REQUIRE(cat.size() == 1);
  const auto& d = cat.at("my gpu");
  CHECK(d.sm_count == 108u);
  CHECK_FALSE(d.l2_bytes.has_value());
  CHECK_FALSE(d.fp8_flops.has_value());
  CHECK(*d.fp32_flops == 19.5e12);
  CHECK(*d.sm.reserved_shared_memory_per_block == 1024u);
  REQUIRE(d.provenance_of("sm_count") != nullptr);
  CHECK(d.provenance_of("sm_count")->references == std::vector<std::string>{"ds"});
  CHECK(d.provenance_of("sm_count")->note == "Table 3");
  CHECK_FALSE(d.provenance_of("l2_cache_mb")->known);
  CHECK(d.provenance_of("l2_cache_mb")->note == "not published");
  CHECK(d.provenance_of("memory_gb")->references.empty()); // a plain number is unsourced
  CHECK(cat.references().at("ds").url == "https://example.com/ds.pdf");
  // A reserve of 0 is allowed (Volta, Turing); a list of sources too.
  auto v = parse(catalogue({device("Test-GPU", {{"reserved_shared_memory_per_block_bytes", "0"},
                                                {"warp_size", R"({"value": 32, "source": ["ds", "ds"]})"}})}));
  CHECK(*v.at("Test-GPU").sm.reserved_shared_memory_per_block == 0u);
}

TEST_CASE("a missing field is refused, naming the file, the device and the field") {
  refused(catalogue({device("Test-GPU", {{"l2_cache_mb", ""}})}),
          where + "field 'l2_cache_mb' is missing (give null if it is not published)");
  refused(catalogue({device("Test-GPU", {{"vendor", ""}})}), where + "field 'vendor' is missing");
  refused(catalogue({device("Test-GPU", {{"name", ""}})}),
          "daydream: device catalogue bad.json: device 1: field 'name' is missing");
  refused(catalogue({device("Test-GPU", {{"sm_count", R"({"source": "ds"})"}})}),
          where + "field 'sm_count' has no \"value\" (give null if it is not published)");
}

TEST_CASE("a negative, zero or fractional figure is refused") {
  refused(catalogue({device("Test-GPU", {{"sm_count", "-3"}})}), where + "field 'sm_count' must not be negative, not -3");
  refused(catalogue({device("Test-GPU", {{"memory_gb", R"({"value": -1.5, "source": "ds"})"}})}),
          where + "field 'memory_gb' must not be negative, not -1.5");
  refused(catalogue({device("Test-GPU", {{"warp_size", "0"}})}),
          where + "field 'warp_size' must be positive, not 0 (give null if it is not published)");
  refused(catalogue({device("Test-GPU", {{"sm_count", "10.5"}})}),
          where + "field 'sm_count' must be a whole number below 2^32, not 10.5");
  refused(catalogue({device("Test-GPU", {{"boost_clock_mhz", "\"1410\""}})}),
          where + "field 'boost_clock_mhz' must be a number, {\"value\": number, \"source\": ...} or null, not \"1410\"");
}

TEST_CASE("an unknown field, a field given twice and an unknown source are refused") {
  refused(catalogue({device("Test-GPU", {{"sm_cnt", "108"}})}),
          where + "unknown field 'sm_cnt' (docs/cross_gpu.md lists the fields)");
  // The same key twice in one entry: JSON allows it, a catalogue does not.
  auto twice = device("Test-GPU");
  twice.insert(twice.size() - 1, ", \"sm_count\": 132");
  refused(catalogue({twice}), where + "field 'sm_count' appears twice");
  refused(catalogue({device("Test-GPU", {{"sm_count", R"({"value": 108, "source": "nope"})"}})}),
          where + "field 'sm_count': source 'nope' is not in \"references\"");
  refused(catalogue({device("Test-GPU", {{"sm_count", R"({"value": 108, "cite": "ds"})"}})}),
          where + "field 'sm_count': unknown key 'cite' (value, source, note)");
  refused(catalogue({device("Test-GPU", {{"vendor", "\"intel\""}})}),
          where + "field 'vendor' must be \"nvidia\" or \"amd\", not \"intel\"");
}

TEST_CASE("a name or alias two devices share is refused, naming both") {
  CHECK_THROWS_WITH_AS(parse(catalogue({device("Test-GPU"), device("test gpu")})),
                       "daydream: device catalogue bad.json: duplicate name 'test gpu': device 'test gpu' and device 'Test-GPU' both answer to it",
                       usage_error);
  CHECK_THROWS_WITH_AS(parse(catalogue({device("Test-GPU", {{"aliases", R"(["G1"])"}}), device("Other", {{"aliases", R"(["g1"])"}})})),
                       "daydream: device catalogue bad.json: duplicate name 'g1': device 'Other' and device 'Test-GPU' both answer to it",
                       usage_error);
}

TEST_CASE("bad JSON and a file of another form are refused") {
  CHECK_THROWS_WITH_AS(parse(R"({"devices": [)"), doctest::Contains("daydream: device catalogue bad.json: not valid JSON: "),
                       usage_error);
  CHECK_THROWS_WITH_AS(parse("[1, 2]"),
                       "daydream: device catalogue bad.json: the top level must be an object with \"devices\"", usage_error);
  CHECK_THROWS_WITH_AS(parse(R"({"format": "daydream-devices"})"), "daydream: device catalogue bad.json: no \"devices\" list",
                       usage_error);
  CHECK_THROWS_WITH_AS(parse(R"({"format": "kineto", "devices": []})"),
                       "daydream: device catalogue bad.json: \"format\" must be \"daydream-devices\", not \"kineto\"", usage_error);
  CHECK_THROWS_WITH_AS(parse(R"({"devices": [], "gpus": []})"),
                       "daydream: device catalogue bad.json: unknown top-level key 'gpus' (format, version, about, references, devices)",
                       usage_error);
  CHECK_THROWS_WITH_AS(parse(R"({"devices": [42]})"), "daydream: device catalogue bad.json: device 1: a device must be an object, not 42",
                       usage_error);
  CHECK_THROWS_WITH_AS(parse(R"({"references": {"ds": {"url": "x"}}, "devices": []})"),
                       "daydream: device catalogue bad.json: reference 'ds': has no \"title\"", usage_error);
  CHECK(parse(R"({"devices": []})").size() == 0);
}

TEST_CASE("a user's file is read from disk and can correct a bundled entry") {
  CHECK_THROWS_WITH_AS(io::load_device_catalogue("/nonexistent/gpus.json"),
                       "daydream: device catalogue /nonexistent/gpus.json: cannot be read", usage_error);
  const auto path = std::filesystem::temp_directory_path() / "daydream_test_devices_user.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << catalogue({device("H100-SXM", {{"sm_count", "144"}}), device("Lab-GPU")});
  }
  auto user = io::load_device_catalogue(path);
  std::filesystem::remove(path);
  CHECK(user.source() == path.string());
  auto cat = io::bundled_device_catalogue();
  const auto before = cat.size();
  cat.merge(user);
  CHECK(cat.size() == before + 1);
  CHECK(cat.at("H100-SXM").sm_count == 144u);
  CHECK(cat.find("NVIDIA H100 80GB HBM3") == nullptr); // the bundled entry, aliases and all, is replaced
  CHECK(cat.at("lab gpu").name == "Lab-GPU");
  CHECK(io::bundled_device_catalogue().at("H100").sm_count == 132u); // the bundled one is unchanged
}
