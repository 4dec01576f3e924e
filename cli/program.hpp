// Defines run_program: how the daydream programs parse options and map errors to exit status.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CLI_PROGRAM_HPP
#define DAYDREAM_CLI_PROGRAM_HPP

#include <daydream/config.hpp>
#include <daydream/io/json_writer.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <string_view>

namespace program {

/// Exit status: 0 success, 1 a failure (bad input, an unwritable file), 2 a usage error
/// (an unknown option, pass or parameter).
enum status : int { ok = 0, failure = 1, usage = 2 };

/// Prints `message` on stderr and, when the command line asked for JSON, as
/// `{"error": message, "status": code}` on stdout, so that a tool reading stdout sees why.
inline int fail(bool json, std::string_view message, int code) {
  fmt::print(stderr, "{}\n", message);
  if (json) {
    daydream::io::json_writer w(true);
    w.begin_object().field("error", message).field("status", code).end_object();
    std::fputs((w.take() + "\n").c_str(), stdout);
  }
  return code;
}

/// Parses the command line with `app`, then calls `action` (which returns the exit
/// status). CLI11 parse errors and daydream::usage_error give 2, other errors 1;
/// --help and --version print and give 0.
inline int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& action) {
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || std::string_view(argv[i]) == "--json";
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e); // --help, --version
    app.exit(e, std::cout, std::cerr);               // the message and a hint to use --help
    if (json) {
      daydream::io::json_writer w(true);
      w.begin_object().field("error", e.what()).field("status", int(usage)).end_object();
      std::fputs((w.take() + "\n").c_str(), stdout);
    }
    return usage;
  }
  try {
    return action();
  } catch (const daydream::usage_error& e) {
    return fail(json, e.what(), usage);
  } catch (const std::exception& e) {
    return fail(json, e.what(), failure);
  }
}

} // namespace program

#endif
