// Declares the main functions of the programs, compiled once in daydream_cli (cli/mains.cpp):
// each program's own main (cli/daydream.cpp, cli/daydream_whatif.cpp) calls one with the trace
// it reads when none is given.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_MAINS_HPP
#define DAYDREAM_CLI_MAINS_HPP

namespace program {

/// `daydream COMMAND ...`: one subcommand per question (whatif, optimize, strategy, dlc, ps,
/// compare). `default_trace` is what `daydream whatif` reads without a trace.
int daydream_main(int argc, char** argv, const char* default_trace);

/// `daydream-whatif ...`: the same as `daydream whatif ...`.
int daydream_whatif_main(int argc, char** argv, const char* default_trace);

} // namespace program

#endif
