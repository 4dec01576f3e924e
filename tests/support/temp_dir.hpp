// Defines temp_dir: a scratch folder for tests that write files, removed with the object.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_SUPPORT_TEMP_DIR_HPP
#define DAYDREAM_TESTS_SUPPORT_TEMP_DIR_HPP

#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <unistd.h> // getpid

namespace daydream::testing {

/// A folder under the system's temporary directory named `prefix` + the process id, created
/// on construction and removed (with what the test wrote) on destruction.
struct temp_dir {
  std::filesystem::path p;
  explicit temp_dir(std::string_view prefix = "daydream_test_") {
    p = std::filesystem::temp_directory_path() / (std::string(prefix) + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  /// Writes `bytes` to the file `name` in the folder.
  std::filesystem::path file(std::string_view name, std::string_view bytes) const {
    auto f = p / std::string(name);
    std::ofstream(f, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return f;
  }
  /// Writes `text` gzip-compressed to the file `name` in the folder.
  std::filesystem::path gz(std::string_view name, std::string_view text) const {
    auto f = p / std::string(name);
    gzFile z = gzopen(f.string().c_str(), "wb");
    REQUIRE(z != nullptr);
    gzwrite(z, text.data(), static_cast<unsigned>(text.size()));
    gzclose(z);
    return f;
  }
};

} // namespace daydream::testing

#endif
