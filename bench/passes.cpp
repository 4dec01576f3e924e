// Benchmarks every bundled pass (filled in below).
// SPDX-License-Identifier: MIT
#include "workloads.hpp"
#include <benchmark/benchmark.h>
