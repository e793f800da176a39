// The native backend: one SandboxSpec → one running sandbox built from Linux
// namespaces, an overlay root, cgroups, capabilities and seccomp.
//
// Lifecycle, kept in three calls so that long-lived sandboxes (create/exec)
// and other front ends can reuse the parts:
//   Sandbox sb = start(spec, opts);   // returns once the workload has exec'd
//   ExitStatus st = wait(sb, wopts);  // timeout, signal forwarding, pty relay
//   sb.destroy();                     // (also by ~Sandbox) kill all, rm cgroup + state dir
//
// Process tree: sbx ─clone3(CLONE_NEW{NS,PID,IPC,UTS,NET})→ init (pid 1 in the
// sandbox, runtime/init.h) ─fork→ workload (exec's the command).
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/cgroups.h"
#include "runtime/spec.h"
#include "runtime/state.h"

namespace sbx::runtime {

struct StartOptions {
  std::string run_root = "/run/sbx";  ///< state dirs live in RUN_ROOT/<id>
  /// Write RUN_ROOT/<id>/state.json (what `sbx rmi`/`sbx ps`/gc read).
  bool write_state = true;
  /// sbx create (runtime/lifecycle.h): the sandbox outlives sbx. The init
  /// becomes runtime/holder.h's holder (spec.timeout / spec.idle_timeout, the
  /// log, the end record) and stops dying with sbx once state.json names it;
  /// the first process's stdout and stderr go to STATE_DIR/log and its stdin is
  /// /dev/null; an empty spec.process.args runs no first process (hold only);
  /// the state dir may already exist. Not with spec.process.terminal.
  bool detached = false;
  /// Fields of state.json start() does not know (labels, command, status, …);
  /// start() fills in pid, pid_start, cgroups and the spec's ids.
  const SandboxState* state_template = nullptr;
};

/// A started sandbox: a handle on its init process and its resources.
/// Movable, not copyable; the destructor destroys it (kills and cleans up).
class Sandbox {
 public:
  Sandbox() = default;
  Sandbox(Sandbox&& o) noexcept;
  Sandbox& operator=(Sandbox&& o) noexcept;
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  ~Sandbox();

  std::string id;
  pid_t pid = -1;       ///< host pid of the sandbox's init (pid 1 inside)
  int pidfd = -1;       ///< pidfd of the init (poll it to learn of its exit)
  int pty_master = -1;  ///< with spec.process.terminal: the pty's master side
  Cgroup cgroup;
  std::string state_dir;  ///< RUN_ROOT/<id>
  std::chrono::steady_clock::time_point started;
  int exit_status = -1;  ///< set once the init has been reaped (raw wait status)
  sigset_t saved_mask{}; ///< signal mask of the caller before start()

  /// Sends `sig` to the sandbox's init (which forwards it to the workload;
  /// SIGKILL kills the whole sandbox). No throw.
  void signal(int sig) noexcept;
  /// Forgets the sandbox without touching it (a detached one lives on), and
  /// restores the caller's signal mask. No throw.
  void release() noexcept;
  /// Kills everything, reaps the init, removes the cgroup and the state dir,
  /// restores the caller's signal mask. Idempotent, no throw.
  void destroy() noexcept;
};

/// Starts `spec`. Returns when the workload has been exec'd. Blocks the
/// signals of runtime/init.h forwarded_signals() plus SIGCHLD in the calling
/// thread (wait() consumes them; destroy() restores the old mask).
/// Errors: sbx::Error with exit code 125 for a setup failure ("mount overlay
/// on …: EINVAL"), 127 when the command is not found, 126 when it cannot be
/// executed; nothing is left behind on a throw.
Sandbox start(const SandboxSpec& spec, const StartOptions& opts);

struct WaitOptions {
  std::chrono::milliseconds timeout{0};          ///< 0: none; counted from start()
  bool forward_signals = true;                   ///< INT/TERM/HUP/… to the workload
  std::chrono::milliseconds kill_grace{10000};   ///< after a forwarded TERM/INT: then SIGKILL
  int stdin_fd = 0, stdout_fd = 1;               ///< pty relay ends (with a pty)
};

struct ExitStatus {
  int exit_code = 0;        ///< the workload's code, 128+N for signal N
  int signal = 0;           ///< N when the workload was killed by a signal
  bool timed_out = false;   ///< the timeout fired (the sandbox was killed)
  bool oom_killed = false;  ///< the workload died of the cgroup's OOM killer
  uint64_t oom_kills = 0;   ///< OOM kills in the sandbox (any process)
  uint64_t pids_max_hits = 0;  ///< forks refused at the pids limit
  int forwarded_signal = 0;    ///< last signal sbx received and forwarded
};

/// Waits for the sandbox's workload to end (or the timeout), relaying the pty
/// and forwarding signals. On a timeout or a second INT/TERM it kills the
/// sandbox. Reads OOM and pids events before returning. Throws sbx::Error only
/// on a failure of sbx itself.
ExitStatus wait(Sandbox& sb, const WaitOptions& opts);

/// A fresh sandbox id: 64 random hex chars (as docker/podman).
std::string new_sandbox_id();

}  // namespace sbx::runtime
