// Tests of the bundled GPU catalogue (data/devices.json, read by
// include/daydream/io/device_catalogue.hpp): it is embedded unchanged, lists every GPU
// docs/cross_gpu.md promises with its figures, cites a source for every number, agrees
// with the deviceProperties real traces recorded, and gives the hand-computed ridge points,
// occupancies and waves.
// SPDX-License-Identifier: MIT
#include <daydream/io/detail/trace_file.hpp>
#include <daydream/io/device_catalogue.hpp>
#include <daydream/semantics/device.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/occupancy.hpp>

#include <support/corpus.hpp>

#include <simdjson.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace dp = daydream::passes;
namespace io = daydream::io;
using dp::numeric_precision;

namespace {

const dp::device_catalogue& bundled() { return io::bundled_device_catalogue(); }

std::string read_source_file(const std::filesystem::path& rel) {
  std::ifstream in(std::filesystem::path(DAYDREAM_SOURCE_DIR) / rel, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The GPUs docs/cross_gpu.md promises, by catalogue name.
const std::vector<std::string_view> required = {
    "V100-SXM2-32GB", "T4",        "RTX-2080-Ti", "A100-SXM4-40GB", "A100-SXM4-80GB", "A10",
    "L4",             "L40S",      "H100-SXM",    "H100-PCIe",      "H200",           "B200",
    "GB200",          "MI250X",    "MI300X",      "MI355X"};

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (n == name) return true;
  return false;
}

} // namespace

TEST_CASE("the bundled catalogue is data/devices.json, embedded byte for byte, ASCII") {
  REQUIRE(io::has_bundled_device_catalogue());
  const auto file = read_source_file("data/devices.json");
  CHECK(io::bundled_device_catalogue_json() == file);
  CHECK(std::all_of(file.begin(), file.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  // The file parses on its own, as a user's file would.
  auto cat = io::load_device_catalogue(std::filesystem::path(DAYDREAM_SOURCE_DIR) / "data" / "devices.json");
  CHECK(cat.size() == bundled().size());
  CHECK(bundled().source() == "data/devices.json (bundled)");
}

TEST_CASE("every promised GPU is catalogued with the figures the model needs") {
  const auto& cat = bundled();
  CHECK(cat.size() == required.size());
  for (auto name : required) {
    CAPTURE(name);
    const auto* d = cat.find(name);
    REQUIRE(d != nullptr);
    CHECK(d->name == name);
    CHECK(d->memory_bandwidth.has_value());
    CHECK(d->memory_bytes.has_value());
    CHECK(d->fp32_flops.has_value());
    CHECK(d->fp16_flops.has_value());
    CHECK(d->pcie_generation.has_value());
    CHECK(d->pcie_bandwidth.has_value());
    CHECK(d->sm.warp_size == (d->vendor == dp::gpu_vendor::amd ? 64u : 32u));
    CHECK(d->sm.registers_per_sm.has_value());
    CHECK(d->sm.shared_memory_per_sm.has_value());
    // Not published: the L4's SMs (not on its datasheet) and a GB200 GPU's.
    CHECK(d->sm_count.has_value() == !is_one_of(name, {"L4", "GB200"}));
    // BF16 and TF32 tensor cores from compute capability 8.0; FP8 from 8.9 and on CDNA 3.
    const bool ampere_on = d->vendor == dp::gpu_vendor::nvidia && !is_one_of(name, {"V100-SXM2-32GB", "T4", "RTX-2080-Ti"});
    CHECK(d->tf32_flops.has_value() == (ampere_on || name == "MI300X"));
    CHECK(d->bf16_flops.has_value() == (ampere_on || d->vendor == dp::gpu_vendor::amd));
    const bool fp8 = (ampere_on && !is_one_of(name, {"A100-SXM4-40GB", "A100-SXM4-80GB", "A10"})) ||
                     is_one_of(name, {"MI300X", "MI355X"});
    CHECK(d->fp8_flops.has_value() == fp8);
    CHECK(d->fp32_matrix_flops.has_value() == (d->vendor == dp::gpu_vendor::amd));
    // Occupancy can be computed on every NVIDIA GPU; AMD's rules are not NVIDIA's.
    CHECK(dp::missing_occupancy_fields(*d).empty() == (d->vendor == dp::gpu_vendor::nvidia));
  }
}

TEST_CASE("every number of the bundled catalogue names its source, and every missing one says why") {
  const auto& cat = bundled();
  REQUIRE(!cat.references().empty());
  for (auto& ref : cat.references()) {
    CAPTURE(ref.first);
    CHECK(!ref.second.title.empty());
  }
  std::size_t figures = 0;
  for (auto& d : cat) {
    CAPTURE(d.name);
    CHECK(d.provenance.size() == 27); // every numeric field, each given once
    for (auto& p : d.provenance) {
      CAPTURE(p.field);
      ++figures;
      if (p.known) {
        CHECK(!p.references.empty());
        for (auto& r : p.references) CHECK(cat.references().count(r) == 1);
      } else {
        CHECK(!p.note.empty());
      }
    }
    // Derived figures say how.
    if (auto* p = d.provenance_of("sm_count"); p && p->known && p->note.rfind("derived", 0) == 0)
      CHECK(p->note.find('/') != std::string::npos);
  }
  CHECK(figures == 27 * required.size());
}

TEST_CASE("the catalogue agrees with the deviceProperties that real traces recorded") {
  struct recorded {
    const char* trace;
    const char* entry; // the catalogue entry its name must find
  };
  const recorded traces[] = {
      {"dlrm_v100_rank0.json.gz", "V100-SXM2-32GB"},
      {"param_linear_rtx2080ti/linear_kineto.iterations1-6.json.gz", "RTX-2080-Ti"},
      {"hta_micro_a100/alexnet_fwd_benchmark_result_2869224_1695835535_trace.json.gz", "A100-SXM4-40GB"},
      {"hta_ddp_a100_16rank/rank0.steps550-553.json.gz", "A100-SXM4-80GB"},
      {"ground_truth/h100-80gb-hbm3-repeat/mlp_fp32.json.gz", "H100-SXM"},
      {"ground_truth/h200/gpt2_bf16.json.gz", "H200"},
      {"tracelens_b200_eager/eager_trace.json.gz", "B200"},
      {"tracelens_mi300_ddp_8rank/resnet_act_checkpoint.json.gz", "MI300X"},
      {"tracelens_mi300_inference/gaunernst_bert-small-uncased__1016001.json.gz", "MI300X"},
  };
  const auto& cat = bundled();
  simdjson::dom::parser parser;
  for (auto& t : traces) {
    CAPTURE(t.trace);
    auto text = io::detail::read_trace_file(daydream::testing::bundled(t.trace));
    simdjson::dom::element doc;
    REQUIRE(!parser.parse(text.data(), text.size(), false).get(doc));
    simdjson::dom::object props;
    REQUIRE(!doc["deviceProperties"].at(0).get(props));
    auto num = [&](const char* key) -> std::int64_t {
      std::int64_t v = -1;
      if (props[key].get(v)) return -1;
      return v;
    };
    std::string_view name;
    REQUIRE(!props["name"].get(name));
    CAPTURE(name);
    const auto* d = cat.find_kineto(name);
    REQUIRE(d != nullptr);
    CHECK(d->name == t.entry);
    CHECK(std::int64_t(*d->sm_count) == num("numSms"));
    CHECK(std::int64_t(*d->sm.warp_size) == num("warpSize"));
    CHECK(std::int64_t(*d->sm.max_threads_per_sm) == num("maxThreadsPerMultiprocessor"));
    CHECK(std::int64_t(*d->sm.max_threads_per_block) == num("maxThreadsPerBlock"));
    if (d->vendor == dp::gpu_vendor::nvidia) {
      CHECK(std::int64_t(*d->sm.registers_per_sm) == num("regsPerMultiprocessor"));
      CHECK(std::int64_t(*d->sm.shared_memory_per_sm) == num("sharedMemPerMultiprocessor"));
      CHECK(std::int64_t(*d->sm.shared_memory_per_block) == num("sharedMemPerBlockOptin"));
      // The reserve is the per-SM carveout less what one block may have.
      CHECK(std::int64_t(*d->sm.reserved_shared_memory_per_block) ==
            num("sharedMemPerMultiprocessor") - num("sharedMemPerBlockOptin"));
    } else {
      CHECK(std::int64_t(*d->sm.shared_memory_per_sm) == num("maxSharedMemoryPerMultiProcessor"));
    }
    // Usable memory is a little below the nominal size the vendor prints.
    const auto total = num("totalGlobalMem");
    CHECK(total <= std::int64_t(*d->memory_bytes));
    CHECK(double(total) >= 0.9 * double(*d->memory_bytes));
  }
  // A GPU the catalogue does not describe is not mistaken for another.
  CHECK(cat.find_kineto("Tesla V100-SXM2-16GB") == nullptr);
  CHECK(cat.find_kineto("Quadro GP100") == nullptr);
  CHECK(cat.find_kineto("AMD Instinct MI210") == nullptr);
}

TEST_CASE("names, aliases and Kineto names find the catalogue's entries") {
  const auto& cat = bundled();
  CHECK(cat.at("H100").name == "H100-SXM");
  CHECK(cat.at("h100 sxm").name == "H100-SXM");
  CHECK(cat.at("NVIDIA H100 80GB HBM3").name == "H100-SXM");
  CHECK(cat.at("A100").name == "A100-SXM4-80GB");
  CHECK(cat.at("a100_40gb").name == "A100-SXM4-40GB");
  CHECK(cat.at("2080 Ti").name == "RTX-2080-Ti");
  CHECK(cat.find_kineto("NVIDIA GeForce RTX 2080 Ti")->name == "RTX-2080-Ti");
  CHECK(cat.find_kineto("NVIDIA A100-PG509-200")->name == "A100-SXM4-40GB");
  CHECK(cat.find_kineto("AMD Instinct MI300X VF")->name == "MI300X");
  CHECK(cat.find_kineto("NVIDIA L40S")->name == "L40S");
  CHECK_THROWS_AS(cat.at("B300"), daydream::usage_error);
}

TEST_CASE("ridge points of catalogued GPUs") {
  const auto& cat = bundled();
  CHECK(*cat.at("H100-SXM").ridge_point(numeric_precision::bf16) == doctest::Approx(989.4e3 / 3352).epsilon(1e-12));
  CHECK(*cat.at("H100-SXM").ridge_point(numeric_precision::fp8) == doctest::Approx(1978.9e3 / 3352).epsilon(1e-12));
  CHECK(*cat.at("A100-SXM4-80GB").ridge_point(numeric_precision::fp16) == doctest::Approx(312e3 / 2039).epsilon(1e-12));
  CHECK(*cat.at("A100-SXM4-40GB").ridge_point(numeric_precision::tf32) == doctest::Approx(156e3 / 1555).epsilon(1e-12));
  CHECK(*cat.at("V100").ridge_point(numeric_precision::fp32) == doctest::Approx(15.7e3 / 900).epsilon(1e-12));
  CHECK(*cat.at("MI300X").ridge_point(numeric_precision::fp8) == doctest::Approx(2614.9e3 / 5300).epsilon(1e-12));
  CHECK_FALSE(cat.at("V100").ridge_point(numeric_precision::bf16).has_value()); // Volta has no BF16
  // Units: MHz, GB/s, binary GB and MB as vendors print them, KiB.
  const auto& h = cat.at("H100-SXM");
  CHECK(*h.clock_hz == 1980e6);
  CHECK(*h.memory_bytes == 80ull << 30);
  CHECK(*h.l2_bytes == 50ull << 20);
  CHECK(*h.sm.shared_memory_per_sm == 228u * 1024);
  CHECK(*h.interconnect_bandwidth == 900e9);
  CHECK(h.interconnect == "NVLink 4");
  CHECK(cat.at("T4").interconnect.empty());
}

TEST_CASE("occupancy and waves on the catalogued A100 and V100 give the hand-computed answers") {
  // The cases of tests/devices/occupancy.cpp, worked there by hand, on the catalogue's entries.
  const auto& a100 = bundled().at("A100-SXM4-80GB");
  const auto& v100 = bundled().at("V100-SXM2-32GB");
  auto blocks = [](const dp::device& d, std::uint32_t threads, std::uint32_t regs, std::uint32_t smem) {
    auto o = dp::occupancy_of(d, {.blocks = 1, .threads_per_block = threads, .registers_per_thread = regs,
                                  .shared_memory_per_block = smem});
    REQUIRE(o.has_value());
    return std::pair{o->blocks_per_sm, o->limit};
  };
  using L = dp::occupancy_limit;
  CHECK(blocks(a100, 256, 70, 0) == std::pair{3u, L::registers});
  CHECK(blocks(a100, 128, 32, 40000) == std::pair{4u, L::shared_memory});
  CHECK(blocks(a100, 768, 16, 0) == std::pair{2u, L::warps});
  CHECK(blocks(a100, 32, 16, 0) == std::pair{32u, L::blocks});
  CHECK(blocks(v100, 128, 40, 0) == std::pair{12u, L::registers});
  CHECK(blocks(v100, 128, 32, 20000) == std::pair{4u, L::shared_memory});
  CHECK(blocks(v100, 512, 24, 0) == std::pair{4u, L::warps});
  CHECK(blocks(v100, 32, 16, 0) == std::pair{32u, L::blocks});
  // 108 SMs x 3 blocks = 324 per wave; 80 x 4 = 320.
  CHECK(dp::waves(a100, {.blocks = 1000, .threads_per_block = 256, .registers_per_thread = 70}) == 4u);
  CHECK(dp::waves(v100, {.blocks = 1000, .threads_per_block = 128, .registers_per_thread = 32,
                         .shared_memory_per_block = 20000}) == 4u);
  // The same kernel on an H100 (132 SMs, 228 KiB): 5 blocks of 41,088 bytes per SM.
  const auto& h100 = bundled().at("H100");
  CHECK(blocks(h100, 128, 32, 40000) == std::pair{5u, L::shared_memory});
  CHECK(dp::waves(h100, {.blocks = 1320, .threads_per_block = 128, .registers_per_thread = 32,
                         .shared_memory_per_block = 40000}) == 2u);
  // An AMD GPU has no NVIDIA occupancy: the pass falls back for it.
  CHECK_FALSE(dp::occupancy_of(bundled().at("MI300X"), {.blocks = 1, .threads_per_block = 256}).has_value());
}
