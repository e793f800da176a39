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
// sandbox, runtime/native/init.h) ─fork→ workload (exec's the command).
#pragma once
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/linux/cgroups.h"
#include "runtime/linux/sandbox_network.h"
#include "spec/exit_status.h"
#include "spec/sandbox_spec.h"
#include "runtime/state.h"
#include "runtime/warm_sandbox.h"  // PooledCommand
#include "runtime/linux/userns.h"

namespace sbx::runtime {

struct StartOptions {
  std::string run_root = "/run/sbx";  ///< state dirs live in RUN_ROOT/<id>
  /// Write RUN_ROOT/<id>/state.json (what `sbx rmi`/`sbx ps`/gc read).
  bool write_state = true;
  /// sbx create (runtime/lifecycle.h): the sandbox outlives sbx. The init
  /// becomes runtime/native/holder.h's holder (spec.timeout / spec.idle_timeout, the
  /// log, the end record) and stops dying with sbx once state.json names it;
  /// the first process's stdout and stderr go to STATE_DIR/log and its stdin is
  /// /dev/null; an empty spec.process.args runs no first process (hold only);
  /// the state dir may already exist. Not with spec.process.terminal.
  bool detached = false;
  /// Detached with spec.stdin_open: the first process's stdin (a pipe's read
  /// end the caller keeps no copy of beyond this call; -1: /dev/null). How
  /// `sbx serve` gives a Docker container opened with OpenStdin its input.
  int detached_stdin = -1;
  /// Fields of state.json start() does not know (labels, command, status, …);
  /// start() fills in pid, pid_start, cgroups and the spec's ids.
  const SandboxState* state_template = nullptr;
  /// Runs while the sandbox sets itself up: the backend's gc of dead
  /// sandboxes (runtime/lifecycle.h gc()), which then costs no wall time.
  /// Empty: nothing.
  std::function<void()> gc_stale;
  /// Run the sandbox in its own user namespace (runtime/linux/userns.h): uid/gid
  /// 0..65535 inside are a per-sandbox range of unprivileged host ids, the
  /// image layers and volumes are idmapped. `sbx run` sets it unless
  /// --userns host (or an option that needs the host's ids). With
  /// spec.uid_mappings set, those are used (the caller allocated the range,
  /// as sbx create does); otherwise start() allocates one and frees it in
  /// destroy(). A disk-backed spec.upper_dir is then owned by the sandbox's
  /// root (runtime/linux/userns.h prepare_upper_for_userns).
  bool userns = false;
  /// A warm-pool sandbox (engine/pool.h): everything is set up (namespaces,
  /// cgroup, network, root file system) but no command runs; start() returns
  /// once the init waits for one, and run_pooled() gives it exactly one.
  /// spec.process.args is ignored. Not with `detached` or a terminal. The
  /// init keeps no fd of the caller's but its setup channel, and its stdio is
  /// /dev/null until the command's fds arrive.
  bool pooled = false;
  /// pooled: the signal mask the command starts with (else the caller's).
  sigset_t command_mask{};
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
  struct rusage rusage {};  ///< the init's, once reaped: its own and its reaped descendants' (wait4(2))
  sigset_t saved_mask{}; ///< signal mask of the caller before start()
  IdRange id_range;            ///< with StartOptions::userns: the host ids it holds
  /// Detached only: sbx's end of the commit socket pair. Until commit() the
  /// sandbox's init dies with this sbx (PR_SET_PDEATHSIG, and EOF here):
  /// a create killed at any moment leaves no live sandbox.
  int commit_fd = -1;
  /// --network private or user-defined networks: its addresses, veths and
  /// rules (released by destroy()).
  SandboxNetworks net;
  /// StartOptions::pooled: sbx's end of the setup channel until run_pooled().
  int setup_sock = -1;
  /// start() blocked signals in its thread and destroy() gives the old mask
  /// back (and drops forwarded signals still pending); false for a pooled
  /// sandbox handed to another thread, whose mask destroy() leaves alone.
  bool owns_mask = true;

  /// Detached only: the caller has recorded the sandbox as running; from now
  /// on it outlives this sbx. Returns once the init has taken it (or died).
  /// No throw.
  void commit() noexcept;

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
/// signals of runtime/native/init.h forwarded_signals() plus SIGCHLD in the calling
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


/// Waits for the sandbox's workload to end (or the timeout), relaying the pty
/// and forwarding signals. On a timeout or a second INT/TERM it kills the
/// sandbox. Reads OOM and pids events before returning. Throws sbx::Error only
/// on a failure of sbx itself.
ExitStatus wait(Sandbox& sb, const WaitOptions& opts);

/// Runs `cmd` in the pooled sandbox `sb` (from start() with
/// StartOptions::pooled): sends it to the waiting init, which writes the
/// files and forks the command; returns once the command has been exec'd and
/// restarts sb.started (wait()'s timeout and the wall time count from here).
/// Then wait() and destroy() as for any sandbox; a pooled sandbox runs one
/// command only. Errors: sbx::Error with 127/126 (not found / not
/// executable), 125 (a file could not be written, the sandbox died, or it
/// is not a waiting pooled sandbox).
void run_pooled(Sandbox& sb, const PooledCommand& cmd);

/// The fresh helper of start() (runtime/native/fresh_helper.h runs it, for a
/// caller that uses fresh helpers: runtime/linux/self_exec.h): reads the
/// init's context from `payload_fd`, clones the init (as start()'s child,
/// CLONE_PARENT) and answers on `answer_fd` (runtime/linux/clone_child.h
/// answer_clone). Never returns.
[[noreturn]] void init_helper_main(int payload_fd, int answer_fd);

}  // namespace sbx::runtime
