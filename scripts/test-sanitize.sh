#!/usr/bin/env bash
# Builds every test and example with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DDAYDREAM_SANITIZE=ON, -O1 -g) in its own build directory and runs the whole suite.
#   scripts/test-sanitize.sh                 # everything
#   scripts/test-sanitize.sh -R hostile      # extra arguments go to ctest
# DAYDREAM_BUILD_DIR (default build-san), DAYDREAM_JOBS (default: all cores) and CXX
# (default g++; clang++ also builds and runs the libFuzzer targets) change the set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DAYDREAM_BUILD_DIR:-build-san}
jobs=${DAYDREAM_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${CXX:-g++}" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DDAYDREAM_SANITIZE=ON
cmake --build "$build" -j "$jobs"
# Any finding stops the test that made it, with a stack trace; leaks count as findings.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:check_initialization_order=1:strict_init_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 1800 "$@"
