// Errors of the sbx library: what failed, on what, the errno, and what to do.
// The library throws sbx::Error; only cli/ catches, prints and picks the exit code.
#pragma once
#include <cerrno>
#include <stdexcept>
#include <string>

namespace sbx {

/// Exit codes shared by every command (podman/docker conventions).
enum ExitCode : int {
  kExitOk = 0,
  kExitSbxFailed = 125,     ///< sbx itself failed (bad flag, missing image, setup error)
  kExitCannotExec = 126,    ///< the command exists but could not be executed
  kExitNotFound = 127,      ///< the command was not found in the sandbox
  kExitTimeout = 124,       ///< --timeout fired (as coreutils timeout(1))
  kExitOom = 137,           ///< killed by the OOM killer (128 + SIGKILL, as docker)
};

/// What kind of failure an Error is, for front ends that answer with a status
/// (sbx serve: 400, 404, 409, 403; Other: by its message, else 500).
enum class ErrorKind {
  Other,
  Invalid,    ///< bad input: a malformed or contradictory request
  NotFound,   ///< what it names does not exist
  Conflict,   ///< the state forbids it now: a name or subnet in use, a sandbox connected already, a network in use
  Forbidden,  ///< never allowed (a predefined network cannot be removed)
};

/// A library error. `what()` is a full sentence for a person: the operation,
/// the path or id, the errno text when there is one, and a hint when known.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, int err = 0, int exit_code = kExitSbxFailed)
      : std::runtime_error(msg), errno_(err), exit_code_(exit_code) {}
  /// An error of a kind a front end maps to a status (ErrorKind).
  Error(ErrorKind kind, const std::string& msg, int err = 0, int exit_code = kExitSbxFailed)
      : std::runtime_error(msg), errno_(err), exit_code_(exit_code), kind_(kind) {}
  int err() const noexcept { return errno_; }
  int exit_code() const noexcept { return exit_code_; }
  ErrorKind kind() const noexcept { return kind_; }

 private:
  int errno_;
  int exit_code_;
  ErrorKind kind_ = ErrorKind::Other;
};

/// Builds "WHAT: strerror(err)" and throws. Use right after a failed syscall:
///   if (mount(...) < 0) throw_errno("mount overlay on " + target);
[[noreturn]] void throw_errno(const std::string& what, int err = errno);

/// Same, with a hint appended ("...: EACCES; run as root").
[[noreturn]] void throw_errno_hint(const std::string& what, const std::string& hint, int err = errno);

/// Short errno name, e.g. "ENOENT" (falls back to the number).
std::string errno_name(int err);

}  // namespace sbx
