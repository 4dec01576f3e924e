// Defines the paths of the DLC test inputs (tests/data/dlc); a missing input fails the test.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_DLC_DATA_HPP
#define DAYDREAM_TESTS_DLC_DATA_HPP

#include <daydream/io/dlc.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace dlc_test {

inline std::filesystem::path data(const std::string& rel) {
  auto p = std::filesystem::path(DAYDREAM_SOURCE_DIR) / "tests" / "data" / "dlc" / rel;
  REQUIRE_MESSAGE(std::filesystem::exists(p), "missing test input " << p.string());
  return p;
}

/// The paper's Figure 8 fragment (worker 0 of 2 workers and 1 server, LeNet-5).
inline std::filesystem::path figure8() { return data("figure8_worker0.dlc"); }

/// The small hand-built job: 2 workers, 1 server, keys 0 and 1, initialization and 2 iterations.
inline std::vector<std::filesystem::path> small_job() {
  return {data("small/worker_0.dlc"), data("small/worker_1.dlc"), data("small/server_0.dlc")};
}

} // namespace dlc_test

#endif
