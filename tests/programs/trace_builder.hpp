// Defines small Kineto traces for the program tests: training steps with known kernel times.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_TESTS_PROGRAMS_TRACE_BUILDER_HPP
#define DAYDREAM_TESTS_PROGRAMS_TRACE_BUILDER_HPP

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h> // getpid, for a private temporary directory

namespace programs_test {

/// A complete ('X') event; times in microseconds.
inline std::string X(std::string_view cat, std::string_view name, int pid, int tid, long long ts, long long dur,
                     std::string_view args = "{}") {
  return "{\"ph\": \"X\", \"cat\": \"" + std::string(cat) + "\", \"name\": \"" + std::string(name) +
         "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " +
         std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + ", \"args\": " + std::string(args) + "}";
}

/// A device [memory] event of `bytes` leaving `total` allocated.
inline std::string memory_event(long long ts, long long bytes, long long total) {
  return "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, "
         "\"tid\": 1, \"ts\": " + std::to_string(ts) + ", \"args\": {\"Total Reserved\": 0, \"Total Allocated\": " +
         std::to_string(total) + ", \"Bytes\": " + std::to_string(bytes) + ", \"Device Id\": 0, \"Device Type\": 1}}";
}

/// What a generated training trace holds.
struct trace_spec {
  std::vector<long long> kernel_us;   ///< one step per entry: its one kernel's duration
  bool gpu = true;                    ///< false: CPU events only (ProfilerActivity.CUDA forgotten)
  long long memory_before = -1;       ///< >= 0: [memory] events, this much allocated before the first
};

/// A trace of steps ProfilerStep#1..n on thread 1 of process 1. Step k launches one kernel
/// (`kernel_us[k]` long, stream 7) and waits for it with cudaDeviceSynchronize, so each
/// step lasts about its kernel plus 30 us of CPU work. With memory, each step allocates
/// 1000 bytes when it launches and frees them after the sync.
inline std::string training_trace(const trace_spec& s) {
  std::string ev;
  auto add = [&](std::string e) { ev += (ev.empty() ? "" : ",\n") + e; };
  long long t = 0, allocated = s.memory_before;
  int corr = 1;
  for (std::size_t k = 0; k < s.kernel_us.size(); ++k) {
    const long long d = s.kernel_us[k];
    const long long step = 10 + 5 + 5 + d + 10;
    add(X("user_annotation", "ProfilerStep#" + std::to_string(k + 1), 1, 1, t, step));
    add(X("cpu_op", "aten::mm", 1, 1, t + 2, 16));
    if (s.gpu) {
      add(X("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 10, 5, "{\"correlation\": " + std::to_string(corr) + "}"));
      add(X("kernel", "gemm_kernel", 0, 7, t + 15, d,
            "{\"device\": 0, \"stream\": 7, \"correlation\": " + std::to_string(corr) + "}"));
      ++corr;
      add(X("cuda_runtime", "cudaDeviceSynchronize", 1, 1, t + 18, d, "{\"correlation\": " + std::to_string(corr) + "}"));
      ++corr;
    } else {
      add(X("cpu_op", "aten::add", 1, 1, t + 18, d));
    }
    if (s.memory_before >= 0) {
      allocated += 1000;
      add(memory_event(t + 3, 1000, allocated));
      allocated -= 1000;
      add(memory_event(t + 19 + d, -1000, allocated));
    }
    t += step;
  }
  return "{\"traceEvents\": [" + ev + "]}";
}

/// A private scratch directory for files of this test run.
inline std::filesystem::path scratch() {
  auto dir = std::filesystem::temp_directory_path() / ("daydream-programs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

/// Writes `text` to `name` in the scratch directory and returns its path.
inline std::string write_file(const std::string& name, const std::string& text) {
  auto p = scratch() / name;
  std::ofstream f(p, std::ios::binary);
  f << text;
  REQUIRE(f.good());
  return p.string();
}

} // namespace programs_test

#endif
