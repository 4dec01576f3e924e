// Tests of units.hpp: size and time literals.
// SPDX-License-Identifier: MIT
#include <daydream/task.hpp>
#include <daydream/units.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>

using namespace daydream::literals;

static_assert(std::is_same_v<decltype(25_MiB), std::uint64_t>);
static_assert(std::is_same_v<decltype(5_ms), daydream::time_ns>);
static_assert(25_MiB == 25ull << 20);
static_assert(1_KiB == 1024 && 1_GiB == 1ull << 30 && 2_TiB == 2ull << 40);
static_assert(4_KB == 4'000 && 160_KB == 160'000 && 1_GB == 1'000'000'000 && 1_TB == 1'000'000'000'000);
static_assert(7_B == 7);
static_assert(1.5_GiB == 3ull << 29);
static_assert(0.5_KiB == 512 && 2.5_MB == 2'500'000 && 0.1_KB == 100);
static_assert(300_ns == 300 && 5_us == 5'000 && 1_ms == 1'000'000 && 2_s == 2'000'000'000);
static_assert(1.5_ms == 1'500'000 && 0.25_us == 250 && 0.5_s == 500'000'000);
static_assert(16777215_TiB == 16777215ull << 40); // the most whole tebibytes that fit in 64 bits

TEST_CASE("size and time literals are plain integers in bytes and nanoseconds") {
  using namespace daydream;
  const std::uint64_t cap = 25_MiB;
  CHECK(cap == 26'214'400);
  const time_ns cycle = 5_ms;
  CHECK(cycle == 5'000'000);
  CHECK(-2_us == -2'000);
}
