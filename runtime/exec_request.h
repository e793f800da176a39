// What one more process in a running sandbox is (`sbx exec`): the request
// every backend's exec takes (runtime/backend.h Backend::exec; native:
// runtime/native/exec.h, gVisor: runtime/gvisor/gvisor_lifecycle.h).
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace sbx::runtime {

struct ExecRequest {
  std::vector<std::string> args;  ///< the command (PATH searched with the sandbox's env)
  std::vector<std::string> env;   ///< -e KEY=VALUE, over the sandbox's env by key
  std::string cwd;                ///< -w; empty: the sandbox's working directory
  std::string user;               ///< -u; empty: the sandbox's user
  bool interactive = false;       ///< -i: keep stdin (else /dev/null)
  bool tty = false;               ///< -t: a pty from the sandbox's devpts, relayed
  std::chrono::milliseconds timeout{0};  ///< 0: none; then SIGKILL and exit code 124
  /// Without tty: the process's stdin/stdout/stderr (-1: sbx's own; stdin is
  /// then /dev/null unless `interactive`). For front ends that capture output.
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  int cancel_fd = -1;  ///< once readable, SIGKILL the command (-1: none): sbx cp (gVisor), sbx serve (native)
  /// Relay the caller's signals (INT, TERM, HUP, …) to the command, as the CLI
  /// does. False for a multi-threaded caller (sbx serve): its signals are its
  /// own, and the command starts with an empty signal mask.
  bool forward_signals = true;
  /// Told the host pid of the process that stands for the command once it
  /// runs (native: the command itself; gVisor: its `runsc exec`, which
  /// forwards signals to it), and 0 just before that process is reaped —
  /// after which the pid may be another process's. Runs on the exec's thread.
  /// For front ends that publish the pid (Docker's exec inspect).
  std::function<void(int pid)> on_pid;
};

}  // namespace sbx::runtime
