// The main functions of the programs daydream and daydream-whatif, compiled once in daydream_cli
// (cli/daydream.cpp and cli/daydream_whatif.cpp each call one).
// SPDX-License-Identifier: MIT
//
// daydream: one command, one subcommand per question.
//   daydream whatif TRACE [--pass SPEC ...]   what would these optimizations do?
//   daydream optimize TRACE... [--workers N]  which plan is best? (under mpirun: on every rank)
//   daydream strategy TRACE --cluster C --strategy S ... [--grid]  which dp x tp x pp strategy is best?
//   daydream dlc analyze|replay|export ...    SketchDLC communication traces
//   daydream ps TRACE [--workers 1-16]       asynchronous parameter-server throughput for W workers
//   daydream compare BEFORE AFTER [--pass S]  a prediction of AFTER from BEFORE next to AFTER as measured
//   daydream sensitivity TRACE [--by layer]   the step if each layer alone were X times faster
//   daydream export --chakra DIR TRACE...     Chakra execution traces (ASTRA-sim's input), one per NPU
#include "mains.hpp"

#include "compare/compare_cmd.hpp"
#include "dlc/dlc.hpp"
#include "export/export_cmd.hpp"
#include "optimize/optimize.hpp"
#include "program.hpp"
#include "ps/ps.hpp"
#include "sensitivity/sensitivity_cmd.hpp"
#include "strategy/strategy.hpp"
#include "whatif/whatif.hpp"

#include <daydream/config.hpp>

#include <fmt/format.h>

#include <unistd.h>

namespace program {

int daydream_main(int argc, char** argv, const char* default_trace) {
  CLI::App app{"daydream: what-if analysis of DNN training from PyTorch profiler (Kineto) traces.\n"
               "Run `daydream COMMAND --help` for a command's options."};
  app.set_version_flag("--version", fmt::format("daydream {}.{}.{}", DAYDREAM_VERSION_MAJOR,
                                                DAYDREAM_VERSION_MINOR, DAYDREAM_VERSION_PATCH));
  app.require_subcommand(1);

  whatif_cmd::options wo;
  wo.trace = default_trace;
  auto* whatif_cmd = app.add_subcommand(
      "whatif", "predict the iteration time and memory of a training run under optimizations, from one trace");
  whatif_cmd::add_options(*whatif_cmd, wo);
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
  sensitivity_cmd::options sen;
  auto* sensitivity_sub = app.add_subcommand(
      "sensitivity", "for every layer (kernel family, kernel) the step predicted if it alone ran X times faster, "
                     "next to its share of GPU time: what is worth optimizing");
  sensitivity_cmd::add_options(*sensitivity_sub, sen);
  export_cmd::options eo;
  auto* export_sub = app.add_subcommand(
      "export", "write a trace, a what-if of it (--pass) or a job's traces in another format: Chakra execution "
                "traces, one per NPU, for ASTRA-sim (--chakra DIR)");
  export_cmd::add_options(*export_sub, eo);

  return run_program(app, argc, argv, [&] {
    if (whatif_cmd->parsed()) {
      wo.progress = !wo.json && ::isatty(STDERR_FILENO);
      return whatif_cmd::run(wo, stdout, stderr);
    }
    if (optimize_sub->parsed()) return optimize_cmd::run(oo, stdout);
    if (strategy_sub->parsed()) return strategy_cmd::run(so, stdout);
    if (dlc_cmds.dlc->parsed()) return dlc_cmd::run(dlc_cmds, dlco, stdout);
    if (ps_sub->parsed()) return ps_cmd::run(po, stdout);
    if (compare_sub->parsed()) return compare_cmd::run(co, stdout);
    if (sensitivity_sub->parsed()) return sensitivity_cmd::run(sen, stdout);
    if (export_sub->parsed()) return export_cmd::run(eo, stdout);
    return int(usage);
  });
}

// daydream-whatif: predicts what optimizations would do to a traced training iteration
// (the same program as `daydream whatif`).
int daydream_whatif_main(int argc, char** argv, const char* default_trace) {
  CLI::App app{"daydream-whatif: predict the iteration time and memory of a training run under "
               "optimizations, from one PyTorch profiler (Kineto) trace (the same as `daydream whatif`)."};
  whatif_cmd::options o;
  o.trace = default_trace;
  whatif_cmd::add_options(app, o);
  return run_program(app, argc, argv, [&] {
    o.progress = !o.json && ::isatty(STDERR_FILENO);
    return whatif_cmd::run(o, stdout, stderr);
  });
}

} // namespace program
