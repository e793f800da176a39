// Running runsc: one-shot commands (`runsc kill`, `runsc delete`) and the
// supervision of a foreground runsc process (`runsc run`, later `runsc exec`)
// until it ends, which forwards the signals sbx receives to the sandbox's
// processes (`runsc kill --all`), kills the sandbox at the timeout or at a
// second SIGINT/SIGTERM, and relays a pseudo-terminal (runtime/pty_relay.h)
// when the workload has one. The gVisor counterpart of native wait().
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace sbx::runtime {

/// Runs `argv` (argv[0] an absolute path) to completion with stdio on
/// /dev/null; returns its raw wait status (127 << 8 when it cannot be
/// executed). Never throws; -1 when fork fails.
int run_quiet(const std::vector<std::string>& argv) noexcept;

/// The signals the caller must block (sigprocmask) before it forks runsc, so
/// that none is lost or acts on sbx itself before wait_runsc() reads them:
/// those the native backend forwards (runtime/init.h forwarded_signals())
/// and SIGCHLD.
const sigset_t& runsc_wait_signals();

struct RunscWaitOptions {
  std::string runsc;   ///< runsc binary
  std::string root;    ///< its --root (state dir)
  std::string id;      ///< container id, for `runsc kill --all ID SIG`
  std::chrono::steady_clock::time_point deadline{};  ///< kill then; {} = none
  /// After a forwarded INT/TERM/HUP/QUIT the sandbox is killed when it has
  /// not ended within this (as the native backend's WaitOptions::kill_grace).
  std::chrono::milliseconds kill_grace{10000};
  int pty_master = -1;  ///< the workload's pty (console socket); -1 = none
  int stdin_fd = 0, stdout_fd = 1;  ///< the user's side of the pty relay
};

struct RunscWaitResult {
  int wait_status = 0;       ///< runsc's raw wait status
  bool timed_out = false;    ///< the deadline fired and the sandbox was killed
  int forwarded_signal = 0;  ///< last signal forwarded to the sandbox (0: none)
};

/// Waits for `pid` (a child of the caller running runsc) to end, with the
/// signals of runsc_wait_signals() blocked by the caller. Restores the
/// user's terminal mode on every path when a pty is relayed. Throws
/// sbx::Error only when sbx itself fails (signalfd, poll).
RunscWaitResult wait_runsc(pid_t pid, const RunscWaitOptions& o);

}  // namespace sbx::runtime
