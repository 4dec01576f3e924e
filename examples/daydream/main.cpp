// daydream: one command, one subcommand per question.
// SPDX-License-Identifier: MIT
//
//   daydream whatif TRACE [--pass SPEC ...]   what would these optimizations do?
#include "../program.hpp"
#include "../whatif/whatif.hpp"

#include <daydream/config.hpp>

#include <fmt/format.h>

#include <unistd.h>

#ifndef DAYDREAM_DEFAULT_TRACE
#  define DAYDREAM_DEFAULT_TRACE "examples/traces/resnet50_v100.json.gz"
#endif

int main(int argc, char** argv) {
  CLI::App app{"daydream: what-if analysis of DNN training from PyTorch profiler (Kineto) traces.\n"
               "Run `daydream COMMAND --help` for a command's options."};
  app.set_version_flag("--version", fmt::format("daydream {}.{}.{}", DAYDREAM_VERSION_MAJOR,
                                                DAYDREAM_VERSION_MINOR, DAYDREAM_VERSION_PATCH));
  app.require_subcommand(1);

  auto reg = daydream::passes::bundled();
  whatif::options wo;
  wo.trace = DAYDREAM_DEFAULT_TRACE;
  auto* whatif_cmd = app.add_subcommand(
      "whatif", "predict the iteration time and memory of a training run under optimizations, from one trace");
  whatif::add_options(*whatif_cmd, wo, reg);

  return program::run_program(app, argc, argv, [&] {
    if (whatif_cmd->parsed()) {
      wo.progress = !wo.json && ::isatty(STDERR_FILENO);
      return whatif::run(wo, stdout, stderr);
    }
    return int(program::usage);
  });
}
