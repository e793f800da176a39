// The one ladder every sbx front end (sbx, sbx-runc) ends its main with:
// CLI11's help and version requests, parse errors, and the errors the
// library throws while the command runs, turned into a message on stderr and
// an exit code. Each front end says only what differs: its name, how a
// parse error is worded, which exit code an sbx::Error gets, and where else
// a message goes (sbx-runc's --log).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "common/error.h"

namespace sbx::cli {

/// Runs `parse` (app.parse on the command line). --help, --help-all and
/// --version are printed by CLI11 and their exit code (0) is returned; any
/// other CLI::ParseError goes to `on_error`, whose result is the exit code.
/// Returns nullopt when the command line parsed and the command should run.
inline std::optional<int> parse_command_line(CLI::App& app, const std::function<void()>& parse,
                                             const std::function<int(const CLI::ParseError&)>& on_error) {
  try {
    parse();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return on_error(e);
  }
  return std::nullopt;
}

/// How run_reporting_errors words and codes a failure.
struct ErrorReport {
  std::string prog;          ///< "sbx", "sbx-runc": the message's first word
  std::string error_prefix;  ///< after "PROG: " for an sbx::Error ("error: " for sbx, "" for sbx-runc)
  /// The exit code for an sbx::Error (default: its own, Error::exit_code()).
  std::function<int(const Error&)> exit_code;
  int internal_exit_code = kExitSbxFailed;  ///< for any other exception
  /// Also gets each message (without "PROG: "), e.g. sbx-runc's --log; may be empty.
  std::function<void(const std::string&)> also;
};

/// Runs `action` and returns its exit code; an exception it throws is
/// reported on stderr (stdout flushed first, so the message comes after the
/// output) as ErrorReport says, and its exit code returned.
inline int run_reporting_errors(const std::function<int()>& action, const ErrorReport& r) {
  try {
    return action ? action() : 0;
  } catch (const Error& e) {
    std::fflush(stdout);
    std::cerr << r.prog << ": " << r.error_prefix << e.what() << "\n";
    if (r.also) r.also(e.what());
    return r.exit_code ? r.exit_code(e) : e.exit_code();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << r.prog << ": internal error: " << e.what() << "\n";
    if (r.also) r.also(std::string("internal error: ") + e.what());
    return r.internal_exit_code;
  }
}

}  // namespace sbx::cli
