// Tests of the device description and its computations (passes/daydream/semantics/device.hpp,
// occupancy.hpp, device_catalogue.hpp) on devices built here, with every answer worked by
// hand from the occupancy calculator's rules.
// SPDX-License-Identifier: MIT
#include <daydream/config.hpp>
#include <daydream/semantics/device.hpp>
#include <daydream/semantics/device_catalogue.hpp>
#include <daydream/semantics/kernel_family.hpp>
#include <daydream/semantics/occupancy.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>

namespace dp = daydream::passes;
using dp::occupancy_limit;

namespace {

// The per-SM limits of a compute capability, written out here from the CUDA C++
// Programming Guide's table and cuda_occupancy.h (not read from the catalogue, which
// tests/devices/catalogue.cpp checks against these same answers).
dp::device cuda_gpu(std::string name, std::uint32_t sms, std::uint32_t smem_kib, std::uint32_t block_kib,
                    std::uint32_t reserve, std::uint32_t smem_unit, std::uint32_t max_warps, std::uint32_t max_blocks) {
  dp::device d;
  d.name = std::move(name);
  d.sm_count = sms;
  auto& s = d.sm;
  s.registers_per_sm = 65536;
  s.max_registers_per_thread = 255;
  s.register_allocation_unit = 256;
  s.warp_allocation_granularity = 4;
  s.shared_memory_per_sm = smem_kib * 1024;
  s.shared_memory_per_block = block_kib * 1024;
  s.reserved_shared_memory_per_block = reserve;
  s.shared_memory_allocation_unit = smem_unit;
  s.max_threads_per_sm = max_warps * 32;
  s.max_warps_per_sm = max_warps;
  s.max_blocks_per_sm = max_blocks;
  s.max_threads_per_block = 1024;
  s.warp_size = 32;
  return d;
}
dp::device a100() { return cuda_gpu("A100", 108, 164, 163, 1024, 128, 64, 32); } // compute capability 8.0
dp::device v100() { return cuda_gpu("V100", 80, 96, 96, 0, 256, 64, 32); }       // compute capability 7.0

dp::occupancy occ(const dp::device& d, std::uint32_t threads, std::uint32_t regs, std::uint32_t smem) {
  auto o = dp::occupancy_of(d, {.blocks = 1, .threads_per_block = threads, .registers_per_thread = regs,
                                .shared_memory_per_block = smem});
  REQUIRE(o.has_value());
  return *o;
}

} // namespace

TEST_CASE("occupancy of a registers-bound kernel: warps per sub-partition, rounded to the allocation unit") {
  SUBCASE("A100: 256 threads x 70 registers") {
    // 70 x 32 = 2240 registers per warp, allocated 2304 (9 x 256); a sub-partition holds
    // 16384 / 2304 = 7 warps, the SM 28, that is 3 blocks of 8 warps. Warps allow 64 / 8
    // = 8, shared memory (the 1 KiB reserve) 164, block slots 32.
    auto o = occ(a100(), 256, 70, 0);
    CHECK(o.registers_per_warp == 2304);
    CHECK(o.by_registers == 3);
    CHECK(o.by_warps == 8);
    CHECK(o.by_shared_memory == 164);
    CHECK(o.by_blocks == 32);
    CHECK(o.blocks_per_sm == 3);
    CHECK(o.limit == occupancy_limit::registers);
    CHECK(o.fraction() == doctest::Approx(24.0 / 64));
  }
  SUBCASE("V100: 128 threads x 40 registers") {
    // 40 x 32 = 1280 (5 x 256); 16384 / 1280 = 12 warps per sub-partition, 48 per SM, 12
    // blocks of 4 warps. Warps allow 16; no shared memory and no reserve: no limit.
    auto o = occ(v100(), 128, 40, 0);
    CHECK(o.registers_per_warp == 1280);
    CHECK(o.by_registers == 12);
    CHECK(o.by_warps == 16);
    CHECK(o.by_shared_memory == 0xffffffffu);
    CHECK(o.blocks_per_sm == 12);
    CHECK(o.limit == occupancy_limit::registers);
    CHECK(o.fraction() == doctest::Approx(48.0 / 64));
  }
}

TEST_CASE("occupancy of a shared-memory-bound kernel: the reserve and the allocation unit count") {
  SUBCASE("A100: 40,000 bytes per block") {
    // 40,000 + 1,024 reserved = 41,024, rounded to 128: 41,088; 167,936 / 41,088 = 4.
    // Registers: 32 x 32 = 1024 per warp, 16 warps per sub-partition, 64 per SM = 16 blocks.
    auto o = occ(a100(), 128, 32, 40000);
    CHECK(o.shared_memory_per_block == 41088);
    CHECK(o.by_shared_memory == 4);
    CHECK(o.by_registers == 16);
    CHECK(o.by_warps == 16);
    CHECK(o.blocks_per_sm == 4);
    CHECK(o.limit == occupancy_limit::shared_memory);
  }
  SUBCASE("V100: 20,000 bytes per block") {
    // No reserve on Volta; rounded to 256: 20,224; 98,304 / 20,224 = 4.
    auto o = occ(v100(), 128, 32, 20000);
    CHECK(o.shared_memory_per_block == 20224);
    CHECK(o.by_shared_memory == 4);
    CHECK(o.blocks_per_sm == 4);
    CHECK(o.limit == occupancy_limit::shared_memory);
  }
}

TEST_CASE("occupancy of large blocks is bound by the warp slots, of small ones by the block slots") {
  SUBCASE("A100: 768 threads (24 warps)") {
    // 64 / 24 = 2 blocks; registers (16 x 32 = 512 per warp) would allow 128 / 24 = 5.
    auto o = occ(a100(), 768, 16, 0);
    CHECK(o.warps_per_block == 24);
    CHECK(o.by_warps == 2);
    CHECK(o.by_registers == 5);
    CHECK(o.blocks_per_sm == 2);
    CHECK(o.limit == occupancy_limit::warps);
    CHECK(o.fraction() == doctest::Approx(48.0 / 64));
  }
  SUBCASE("V100: 512 threads x 24 registers") {
    // Registers: 768 per warp, 21 per sub-partition, 84 per SM = 5 blocks of 16 warps;
    // warps: 64 / 16 = 4.
    auto o = occ(v100(), 512, 24, 0);
    CHECK(o.by_registers == 5);
    CHECK(o.by_warps == 4);
    CHECK(o.blocks_per_sm == 4);
    CHECK(o.limit == occupancy_limit::warps);
  }
  SUBCASE("one-warp blocks hit the 32 block slots on both") {
    for (auto d : {a100(), v100()}) {
      CAPTURE(d.name);
      auto o = occ(d, 32, 16, 0);
      CHECK(o.by_warps == 64);
      CHECK(o.by_registers == 128);
      CHECK(o.blocks_per_sm == 32);
      CHECK(o.limit == occupancy_limit::blocks);
      CHECK(o.limited_by(occupancy_limit::blocks));
      CHECK_FALSE(o.limited_by(occupancy_limit::warps));
      CHECK(o.fraction() == doctest::Approx(0.5));
    }
  }
}

TEST_CASE("a block that does not fit has no resident blocks, and says which resource refused it") {
  const auto d = a100();
  SUBCASE("more threads than a block may have") {
    auto o = occ(d, 1025, 16, 0);
    CHECK(o.blocks_per_sm == 0);
    CHECK(o.limit == occupancy_limit::warps);
  }
  SUBCASE("more registers per thread than the maximum") {
    auto o = occ(d, 128, 256, 0);
    CHECK(o.blocks_per_sm == 0);
    CHECK(o.limit == occupancy_limit::registers);
  }
  SUBCASE("a block's registers beyond the register file, warps rounded to the sub-partitions") {
    // 288 threads = 9 warps x 7168 registers = 64,512 fits 65,536, but the hardware
    // checks 12 warps (9 rounded up to 4 sub-partitions): 86,016.
    CHECK(occ(d, 288, 224, 0).blocks_per_sm == 0);
    CHECK(occ(d, 1024, 128, 0).blocks_per_sm == 0);
    // 1024 x 64 registers is exactly the register file: one block.
    auto o = occ(d, 1024, 64, 0);
    CHECK(o.blocks_per_sm == 1);
    CHECK(o.limit == occupancy_limit::registers);
  }
  SUBCASE("shared memory beyond the per-block maximum") {
    // 163 KiB + the 1 KiB reserve is the whole carveout: one block; one byte more: none.
    CHECK(occ(d, 128, 32, 163 * 1024).blocks_per_sm == 1);
    auto o = occ(d, 128, 32, 163 * 1024 + 1);
    CHECK(o.blocks_per_sm == 0);
    CHECK(o.limit == occupancy_limit::shared_memory);
  }
  SUBCASE("an empty block") {
    CHECK(occ(d, 0, 0, 0).blocks_per_sm == 0);
  }
}

TEST_CASE("a kernel without registers or shared memory is limited by warps and blocks only") {
  auto o = occ(v100(), 64, 0, 0);
  CHECK(o.by_registers == 0xffffffffu);
  CHECK(o.by_shared_memory == 0xffffffffu);
  CHECK(o.blocks_per_sm == 32);
}

TEST_CASE("occupancy needs every per-SM limit; missing_occupancy_fields names the absent ones") {
  dp::device d;
  d.name = "bare";
  CHECK_FALSE(dp::occupancy_of(d, {.blocks = 1, .threads_per_block = 128}).has_value());
  CHECK(dp::missing_occupancy_fields(d).size() == 11);
  auto a = a100();
  CHECK(dp::missing_occupancy_fields(a).empty());
  a.sm.max_blocks_per_sm.reset();
  auto missing = dp::missing_occupancy_fields(a);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0] == "max_blocks_per_sm");
  CHECK_FALSE(dp::waves(a, {.blocks = 10, .threads_per_block = 128}).has_value());
}

TEST_CASE("waves are ceil(blocks / (SMs x blocks per SM))") {
  CHECK(dp::waves(1000, 132, 3) == 3u); // 396 per wave
  CHECK(dp::waves(396, 132, 3) == 1u);
  CHECK(dp::waves(397, 132, 3) == 2u);
  CHECK(dp::waves(1, 132, 3) == 1u);
  CHECK(dp::waves(0, 132, 3) == 0u);
  CHECK_FALSE(dp::waves(10, 0, 3).has_value());
  CHECK_FALSE(dp::waves(10, 132, 0).has_value());
  static_assert(dp::waves(265, 132, 1) == 3u);

  // On a device: the registers-bound A100 kernel holds 3 blocks on each of 108 SMs.
  const dp::launch_shape k{.blocks = 324, .threads_per_block = 256, .registers_per_thread = 70};
  CHECK(dp::waves(a100(), k) == 1u);
  CHECK(dp::waves(a100(), dp::launch_shape{.blocks = 325, .threads_per_block = 256, .registers_per_thread = 70}) == 2u);
  // The shared-memory-bound V100 kernel: 4 blocks x 80 SMs = 320 per wave.
  CHECK(dp::waves(v100(), {.blocks = 1000, .threads_per_block = 128, .registers_per_thread = 32,
                           .shared_memory_per_block = 20000}) == 4u);
  // A block that does not fit never runs.
  CHECK_FALSE(dp::waves(a100(), {.blocks = 10, .threads_per_block = 2048}).has_value());
  auto no_sms = a100();
  no_sms.sm_count.reset();
  CHECK_FALSE(dp::waves(no_sms, k).has_value());
}

TEST_CASE("the ridge point is peak FLOP/s over memory bytes/s, per precision") {
  dp::device d;
  d.memory_bandwidth = 2039e9;
  d.fp32_flops = 19.5e12;
  d.tf32_flops = 156e12;
  d.bf16_flops = 312e12;
  using dp::numeric_precision;
  CHECK(*d.ridge_point(numeric_precision::bf16) == doctest::Approx(312.0e3 / 2039).epsilon(1e-12));
  CHECK(*dp::ridge_point(d, numeric_precision::fp32) == doctest::Approx(19.5e3 / 2039).epsilon(1e-12));
  CHECK(*d.ridge_point(numeric_precision::tf32) == doctest::Approx(156.0e3 / 2039).epsilon(1e-12));
  CHECK_FALSE(d.ridge_point(numeric_precision::fp16).has_value()); // no FP16 rate given
  CHECK_FALSE(d.ridge_point(numeric_precision::fp64).has_value()); // not catalogued
  CHECK_FALSE(d.ridge_point(numeric_precision::unknown).has_value());
  d.memory_bandwidth.reset();
  CHECK_FALSE(d.ridge_point(numeric_precision::bf16).has_value());
}

TEST_CASE("a catalogue finds devices by name and alias, ignoring case, spaces, dashes and underscores") {
  dp::device_catalogue cat("test");
  auto h = a100();
  h.name = "H100-SXM";
  h.aliases = {"H100", "NVIDIA H100 80GB HBM3"};
  cat.add(h);
  auto v = v100();
  v.name = "V100-SXM2-32GB";
  v.aliases = {"Tesla V100-SXM2-32GB"};
  cat.add(v);
  CHECK(cat.size() == 2);
  CHECK(dp::device_name_key("  H100__SXM - 5 ") == "h100 sxm 5");
  for (auto n : {"H100-SXM", "h100 sxm", "H100_SXM", "h100", "nvidia h100 80gb hbm3"})
    CHECK(cat.find(n) == &cat.devices()[0]);
  CHECK(cat.find("H200") == nullptr);
  SUBCASE("Kineto's names, with or without the vendor's word") {
    CHECK(cat.find_kineto("NVIDIA H100 80GB HBM3")->name == "H100-SXM");
    CHECK(cat.find_kineto("NVIDIA H100")->name == "H100-SXM");
    CHECK(cat.find_kineto("Tesla V100-SXM2-32GB")->name == "V100-SXM2-32GB");
    CHECK(cat.find_kineto("V100-SXM2-32GB")->name == "V100-SXM2-32GB");
    CHECK(cat.find_kineto("Tesla V100-SXM2-16GB") == nullptr);
  }
  SUBCASE("at() lists the known names for an unknown one") {
    CHECK(cat.at("h100").name == "H100-SXM");
    CHECK_THROWS_WITH_AS(cat.at("B300"), "daydream: device catalogue test: no GPU named 'B300' (known: H100-SXM, V100-SXM2-32GB)",
                         daydream::usage_error);
  }
  SUBCASE("a name or alias two devices share is refused, naming both") {
    auto dup = v100();
    dup.name = "H100 PCIe";
    dup.aliases = {"h100"};
    CHECK_THROWS_WITH_AS(cat.add(dup), "daydream: device catalogue test: duplicate name 'h100': device 'H100 PCIe' and device 'H100-SXM' both answer to it",
                         daydream::usage_error);
    CHECK(cat.size() == 2);
    auto self = v100();
    self.name = "X";
    self.aliases = {"x"};
    CHECK_THROWS_WITH_AS(cat.add(self), "daydream: device catalogue test: duplicate name 'x' within device 'X'", daydream::usage_error);
  }
  SUBCASE("merge replaces a device of the same name and adds the others") {
    dp::device_catalogue user("mine.json");
    auto fixed = a100();
    fixed.name = "h100 sxm";
    fixed.sm_count = 144;
    user.add(fixed);
    auto extra = v100();
    extra.name = "My-GPU";
    user.add(extra);
    user.add_reference("lab", {"our measurements", ""});
    cat.merge(user);
    CHECK(cat.size() == 3);
    CHECK(cat.at("H100-SXM").sm_count == 144u);
    CHECK(cat.find("NVIDIA H100 80GB HBM3") == nullptr); // the replaced entry's aliases are gone
    CHECK(cat.at("my gpu").name == "My-GPU");
    CHECK(cat.references().count("lab") == 1);
    dp::device_catalogue clash("other.json");
    auto c = v100();
    c.name = "Another";
    c.aliases = {"V100-SXM2-32GB"};
    clash.add(c);
    CHECK_THROWS_AS(cat.merge(clash), daydream::usage_error);
  }
}
