// sbx-runc's commands: the OCI runtime command line (runtime-spec runtime.md,
// runc's man pages) over a container record in ROOT (ocirt/state_store.h).
//
// No sbx process stays with a container. `create` clones the container's
// process into its namespaces; it builds the root file system, then blocks
// opening ROOT/<id>/exec.fifo for writing (runc's exec fifo) and create
// exits — the process is re-parented to the caller's subreaper (conmon,
// containerd-shim), which waits for it. `start` opens the fifo for reading,
// which lets it exec process.args. The caller's fds 0-2 are the container's
// stdio (pass-through); with process.terminal the pty's master goes to the
// caller over --console-socket (SCM_RIGHTS).
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "ocirt/config.h"

namespace sbx::ocirt {

/// Where sbx-runc keeps its records when --root is not given.
inline constexpr const char* kDefaultRoot = "/run/sbx-runc";

/// The annotation that picks a container's isolation: "native" (the
/// default) or "gvisor" (the container is handed to runsc:
/// ocirt/gvisor_delegate.h).
inline constexpr const char* kRuntimeAnnotation = "dev.sbx.runtime";

struct CreateRequest {
  std::string id;
  std::string bundle = ".";    ///< directory holding config.json
  std::string pid_file;        ///< written with the container's host pid
  std::string console_socket;  ///< with process.terminal: where the pty master goes
  bool no_pivot = false;       ///< MS_MOVE + chroot instead of pivot_root
  bool no_new_keyring = false; ///< accepted; sbx-runc makes no session keyring either way
  unsigned preserve_fds = 0;   ///< --preserve-fds N: the caller's fds 3..3+N-1 pass to the process
  /// For a gVisor container (handed to runsc): the global flags to pass on
  /// (--log FILE --log-format F).
  std::vector<std::string> runsc_global_args;
};

/// `create`: builds the container and leaves its process waiting for start.
/// Runs prestart/createRuntime (here) and createContainer (in the container)
/// hooks. Throws sbx::Error naming the field or step; nothing is left behind
/// on a throw (no record, cgroup or process). Returns the container
/// process's host pid (a child of the caller until the caller exits: `run`
/// waits for it); 0 for a gVisor container (runsc's).
pid_t create(const std::string& root, const CreateRequest& req);

/// `run` without --detach: create, start, wait for the process (forwarding
/// the signals the caller gets), delete. A gVisor container: `runsc run` in
/// the foreground. Returns the process's exit status (128+N for signal N).
/// Throws sbx::Error as create and start.
int run(const std::string& root, const CreateRequest& req);

/// `start`: lets a created container exec its process; runs poststart hooks
/// (a failing one is logged, as runc). Throws sbx::Error when it is not
/// "created" or its process died.
void start(const std::string& root, const std::string& id);

/// `state`: the runtime-spec state JSON (indented). Throws sbx::Error when
/// the container does not exist.
std::string state(const std::string& root, const std::string& id);

/// `kill`: sends `sig` to the container's process (`all`: to every process in
/// its cgroup). Throws sbx::Error when it is not created, running or paused.
void kill(const std::string& root, const std::string& id, int sig, bool all);

/// `delete`: removes a stopped (or created) container: kills what is left of
/// it, removes its cgroup, runs poststop hooks, removes its record. `force`:
/// a running one is killed first, and one that does not exist is no error
/// (as runc). Throws sbx::Error when it is running without force, or does not
/// exist without force.
void remove(const std::string& root, const std::string& id, bool force);

struct ExecRequest {
  std::string id;
  std::string process_file;        ///< --process: a config.json "process" object
  std::vector<std::string> args;   ///< without --process: the command
  std::string cwd;                 ///< "" : config.json's
  std::vector<std::string> env;    ///< added to config.json's
  std::string user;                ///< "UID[:GID]"; "" : config.json's
  bool tty = false;
  bool detach = false;
  std::string pid_file;
  std::string console_socket;
  unsigned preserve_fds = 0;       ///< --preserve-fds N: the caller's fds 3..3+N-1 pass to it
};

/// `exec`: runs one more process in the container (its namespaces, cgroup,
/// capabilities, seccomp profile). Returns its exit status (128+N for a
/// signal) or, with detach, 0 once it runs (it is re-parented to the
/// caller's subreaper). Throws sbx::Error (exit code 127/126 when the command
/// is not found / not executable).
int exec(const std::string& root, const ExecRequest& req);

/// Waits for `pid` (a child of the caller) to end, forwarding every signal
/// the caller receives meanwhile to it (runc's signal forwarding: all but
/// SIGCHLD, SIGWINCH, SIGKILL and SIGSTOP), then restores the caller's
/// handlers. `unblock`: the mask to set once the handlers are in place (see
/// ForwardedSignalsBlocked: signals that came before are forwarded then).
/// Returns its exit code, or 128+N when signal N killed it. No throw.
int wait_forwarding_signals(pid_t pid, const sigset_t* unblock = nullptr);

/// Blocks the signals wait_forwarding_signals forwards from construction
/// until destruction, so that one arriving between the fork of a process and
/// the wait (the process may already run and print) is held, then forwarded,
/// instead of killing sbx-runc. A child forked meanwhile must call
/// restore_in_child() first. No throw.
struct ForwardedSignalsBlocked {
  sigset_t old;
  ForwardedSignalsBlocked();
  ~ForwardedSignalsBlocked();
  ForwardedSignalsBlocked(const ForwardedSignalsBlocked&) = delete;
  ForwardedSignalsBlocked& operator=(const ForwardedSignalsBlocked&) = delete;
  /// In a child forked while blocked: back to the caller's mask.
  void restore_in_child() const noexcept;
};

/// `ps`: the host pids in the container's cgroup.
std::vector<pid_t> pids(const std::string& root, const std::string& id);

/// `pause` (true) / `resume`: freezes or thaws the container's cgroup.
void pause(const std::string& root, const std::string& id, bool paused);

/// `update --resources`: writes `res` to the container's cgroup.
void update(const std::string& root, const std::string& id, const Resources& res);

/// One row of `list`.
struct ListEntry {
  std::string id, status, bundle, created;
  pid_t pid = 0;
};
std::vector<ListEntry> list(const std::string& root);

/// `features`: the runtime-spec features document (features.md) as JSON text.
std::string features_json();

}  // namespace sbx::ocirt
