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

/// What kind of failure an error is, set where it is raised, so that front
/// ends map it to a status (HTTP, exit code) from a table, never from the
/// message's words. The *NotFound kinds name what is missing; not_found()
/// tells any of them.
enum class ErrorKind {
  Internal,          ///< sbx itself failed (the default)
  InvalidArgument,   ///< a malformed or out-of-range value, an ambiguous reference
  NotFound,          ///< something else named is missing
  SandboxNotFound,   ///< no sandbox has this id, prefix or name
  ImageNotFound,     ///< not in the store / not on the registry
  SnapshotNotFound,  ///< no snapshot of that name
  FileNotFound,      ///< a path inside a sandbox or on the host (ENOENT)
  Conflict,          ///< the state forbids it now: a name in use, not running, running, in use
  Unsupported,       ///< a valid request sbx (or this backend, this host) does not do
  Forbidden,         ///< never allowed, whatever the state (a predefined network cannot be removed)
};

/// The kind's name for people and wire formats ("SandboxNotFound", …).
const char* error_kind_name(ErrorKind k) noexcept;

/// True for NotFound and every *NotFound kind.
inline bool not_found(ErrorKind k) noexcept {
  return k == ErrorKind::NotFound || k == ErrorKind::SandboxNotFound || k == ErrorKind::ImageNotFound ||
         k == ErrorKind::SnapshotNotFound || k == ErrorKind::FileNotFound;
}

/// A library error. `what()` is a full sentence for a person: the operation,
/// the path or id, the errno text when there is one, and a hint when known.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg, int err = 0, int exit_code = kExitSbxFailed)
      : std::runtime_error(msg), errno_(err), exit_code_(exit_code), kind_(ErrorKind::Internal) {}
  /// An error of a known kind: Error(ErrorKind::SandboxNotFound, "no such sandbox 'x'; …").
  Error(ErrorKind kind, const std::string& msg, int err = 0, int exit_code = kExitSbxFailed)
      : std::runtime_error(msg), errno_(err), exit_code_(exit_code), kind_(kind) {}
  /// The same error with another message (context added), kind, errno and exit code kept.
  Error(const Error& e, const std::string& msg)
      : std::runtime_error(msg), errno_(e.errno_), exit_code_(e.exit_code_), kind_(e.kind_) {}
  int err() const noexcept { return errno_; }
  int exit_code() const noexcept { return exit_code_; }
  ErrorKind kind() const noexcept { return kind_; }

 private:
  int errno_;
  int exit_code_;
  ErrorKind kind_;
};

/// Builds "WHAT: strerror(err)" and throws. Use right after a failed syscall:
///   if (mount(...) < 0) throw_errno("mount overlay on " + target);
[[noreturn]] void throw_errno(const std::string& what, int err = errno);

/// Same, with a hint appended ("...: EACCES; run as root").
[[noreturn]] void throw_errno_hint(const std::string& what, const std::string& hint, int err = errno);

/// Short errno name, e.g. "ENOENT" (falls back to the number).
std::string errno_name(int err);

}  // namespace sbx
