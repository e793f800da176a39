// `sbx exec`: runs one more process inside a running (created) sandbox.
//
// The process joins the sandbox's cgroups, then all its namespaces at once with
// setns(pidfd, CLONE_NEW*) (user first when there is one; the kernel orders
// them), is forked again so that it is inside the sandbox's pid namespace (as
// a direct child of sbx, via CLONE_PARENT), and then gets exactly the first
// process's treatment: rlimits, bounding set, setgroups/setgid/setuid,
// capabilities, working directory, no_new_privs, seccomp last (the same
// functions as runtime/native_backend, in the same order). If sbx dies, the
// process is re-parented to the sandbox's init, which reaps it.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"
#include "runtime/state.h"

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
};

/// Runs `req` in the sandbox whose state dir is `dir` (its state `st` and spec
/// `spec`, from config.json), waits for it, forwarding signals, and returns
/// its exit status as `sbx run` does: the code, 128+N for signal N, 124 on
/// timeout, 126/127 when the command cannot be executed / is not found.
/// Touches DIR/activity at start, while it runs, and at the end (idle timeout).
/// Throws sbx::Error (125) when the sandbox is not running or joining fails.
/// From a process that uses fresh helpers (sbx serve; runtime/linux/self_exec.h)
/// the joining is done by a fresh exec of sbx, never by a fork of the caller.
int exec_in_sandbox(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req);

/// The fresh helper of exec_in_sandbox (runtime/native/fresh_helper.h runs
/// it): reads its request from `payload_fd`, joins the sandbox and starts the
/// process as exec_in_sandbox's child. Returns only on a malformed request
/// (exit status 125); else it ends with _exit.
int exec_helper_main(int payload_fd);

}  // namespace sbx::runtime
