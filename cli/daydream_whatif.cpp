// daydream-whatif: the same program as `daydream whatif` (cli/mains.cpp).
// SPDX-License-Identifier: MIT
#include "mains.hpp"

#ifndef DAYDREAM_DEFAULT_TRACE
#  define DAYDREAM_DEFAULT_TRACE "examples/traces/resnet50_v100.json.gz"
#endif

int main(int argc, char** argv) { return program::daydream_whatif_main(argc, argv, DAYDREAM_DEFAULT_TRACE); }
