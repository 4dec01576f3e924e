// daydream-whatif: predicts what optimizations would do to a traced training iteration
// (the same program as `daydream whatif`).
// SPDX-License-Identifier: MIT
#include "program.hpp"
#include "whatif/whatif.hpp"

#include <unistd.h>

#ifndef DAYDREAM_DEFAULT_TRACE
#  define DAYDREAM_DEFAULT_TRACE "examples/traces/resnet50_v100.json.gz"
#endif

int main(int argc, char** argv) {
  CLI::App app{"daydream-whatif: predict the iteration time and memory of a training run under "
               "optimizations, from one PyTorch profiler (Kineto) trace (the same as `daydream whatif`)."};
  whatif::options o;
  o.trace = DAYDREAM_DEFAULT_TRACE;
  whatif::add_options(app, o);
  return program::run_program(app, argc, argv, [&] {
    o.progress = !o.json && ::isatty(STDERR_FILENO);
    return whatif::run(o, stdout, stderr);
  });
}
