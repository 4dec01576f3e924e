#!/usr/bin/env bash
# Installs the dependencies, builds every test, example and fuzz target with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer, and runs the whole test suite: unit
# and property tests, real traces end to end, hostile inputs, the examples, and each
# libFuzzer target for DAYDREAM_FUZZ_SECONDS. Any sanitizer finding fails its test.
#   scripts/test.sh                       # everything (what CI runs)
#   scripts/test.sh -R hostile            # extra arguments go to ctest
# The real-trace tests read the corpus bundled in tests/data and examples/traces, plus the
# traces of DAYDREAM_EXTRA_TRACES (a folder; default: ../shared/traces beside the checkout,
# when it exists); the run ends by saying how many traces they used.
# Environment: DAYDREAM_BUILD_DIR (build-test), DAYDREAM_JOBS (all cores),
# DAYDREAM_FUZZ_SECONDS (30), CXX (clang++; with g++ there are no fuzz targets),
# DAYDREAM_SANITIZE=OFF for an optimized build without sanitizers (RelWithDebInfo),
# DAYDREAM_UNITY_BUILD (ON: each test suite and cli/ compile as one translation unit, the
# fastest full build; OFF for a build dir you keep editing in).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${DAYDREAM_BUILD_DIR:-build-test}
jobs=${DAYDREAM_JOBS:-$(nproc)}
sanitize=${DAYDREAM_SANITIZE:-ON}
if [ "$sanitize" = ON ]; then
  # -O1 keeps the sanitized suite fast; line tables give findings their source lines.
  flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only")
else
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${CXX:-clang++}" "${flags[@]}" \
  -DDAYDREAM_SANITIZE="$sanitize" -DDAYDREAM_FUZZ_SECONDS="${DAYDREAM_FUZZ_SECONDS:-30}" \
  -DDAYDREAM_UNITY_BUILD="${DAYDREAM_UNITY_BUILD:-ON}"
cmake --build "$build" -j "$jobs"
# Leaks count as findings; a finding aborts the test that made it, with its stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:check_initialization_order=1:strict_init_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 1200 "$@"
# How many real traces the real-trace tests used (bundled, and extra ones when present).
if [ -x "$build/tests/traces/test_traces" ]; then
  "$build/tests/traces/test_traces" --test-case='the bundled corpus is all there*' | grep -o 'real traces used: .*' || true
fi
