// Supervising a foreground runsc process (`runsc run`, later `runsc exec`)
// until it ends: it forwards the signals sbx receives to the sandbox's
// processes (`runsc kill --all`), kills the sandbox at the timeout or at a
// second SIGINT/SIGTERM, and relays a pseudo-terminal (runtime/linux/pty_relay.h)
// when the workload has one (the gVisor counterpart of native wait()); and
// whether runsc left state behind that needs a `runsc delete`.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>

namespace sbx::runtime {

/// Whether runsc left container state under its --root `root` (a `runsc run`
/// that ends normally deletes its container and leaves the dir empty; one
/// that was killed or failed does not, and needs `runsc delete --force`).
/// True when `root` cannot be read (cleanup errs on the side of doing more);
/// false when it does not exist. No throw.
bool runsc_left_state(const std::string& root) noexcept;

/// The signals the caller must block (sigprocmask) before it forks runsc, so
/// that none is lost or acts on sbx itself before wait_runsc() reads them:
/// those the native backend forwards (runtime/native/init.h forwarded_signals())
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
