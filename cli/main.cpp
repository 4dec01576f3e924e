// daydream: one command, one subcommand per question.
// SPDX-License-Identifier: MIT
//
//   daydream whatif TRACE [--pass SPEC ...]   what would these optimizations do?
//   daydream optimize TRACE... [--workers N]  which plan is best? (under mpirun: on every rank)
//   daydream strategy TRACE --cluster C --strategy S ... [--grid]  which dp x tp x pp strategy is best?
//   daydream dlc analyze|replay|export ...    SketchDLC communication traces
//   daydream ps TRACE [--workers 1-16]       asynchronous parameter-server throughput for W workers
//   daydream compare BEFORE AFTER [--pass S]  a prediction of AFTER from BEFORE next to AFTER as measured
#include "compare/compare_cmd.hpp"
#include "dlc/dlc.hpp"
#include "optimize/optimize.hpp"
#include "program.hpp"
#include "ps/ps.hpp"
#include "strategy/strategy.hpp"
#include "whatif/whatif.hpp"

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

  whatif::options wo;
  wo.trace = DAYDREAM_DEFAULT_TRACE;
  auto* whatif_cmd = app.add_subcommand(
      "whatif", "predict the iteration time and memory of a training run under optimizations, from one trace");
  whatif::add_options(*whatif_cmd, wo);
  optimize_cmd::options oo;
  auto* optimize_sub = app.add_subcommand(
      "optimize", "search the best gradient bucketing, partitioning and op fusion for a data-parallel job "
                  "(dPRO's optimizer), against the DDP, Horovod, BytePS and fuse-everything baselines");
  optimize_cmd::add_options(*optimize_sub, oo);
  strategy_cmd::options so;
  auto* strategy_sub = app.add_subcommand(
      "strategy", "predict hybrid parallel strategies (data x tensor x pipeline, ZeRO, re-computation) of the "
                  "model in one GPU's trace on a described cluster (Proteus)");
  strategy_cmd::add_options(*strategy_sub, so);
  dlc_cmd::options dlco;
  const auto dlc_cmds = dlc_cmd::add_commands(app, dlco);
  ps_cmd::options po;
  auto* ps_sub = app.add_subcommand(
      "ps", "predict asynchronous parameter-server training throughput for any number of workers from one "
            "worker's trace (Li et al., ICPE'20), beside the queueing and Cynthia models");
  ps_cmd::add_options(*ps_sub, po);
  compare_cmd::options co;
  auto* compare_sub = app.add_subcommand(
      "compare", "put a prediction of AFTER (from BEFORE under --pass) next to AFTER as measured, or diff two "
                 "traces; with --manifest, the validation table of before/after pairs (docs/validation.md)");
  compare_cmd::add_options(*compare_sub, co);

  return program::run_program(app, argc, argv, [&] {
    if (whatif_cmd->parsed()) {
      wo.progress = !wo.json && ::isatty(STDERR_FILENO);
      return whatif::run(wo, stdout, stderr);
    }
    if (optimize_sub->parsed()) return optimize_cmd::run(oo, stdout);
    if (strategy_sub->parsed()) return strategy_cmd::run(so, stdout);
    if (dlc_cmds.dlc->parsed()) return dlc_cmd::run(dlc_cmds, dlco, stdout);
    if (ps_sub->parsed()) return ps_cmd::run(po, stdout);
    if (compare_sub->parsed()) return compare_cmd::run(co, stdout);
    return int(program::usage);
  });
}
