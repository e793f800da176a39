// Long-lived gVisor sandboxes (`sbx create --runtime gvisor`, and the
// sandboxes `sbx restore` starts): the same state dir and commands as native
// ones (runtime/state.h, runtime/lifecycle.h), with runsc underneath.
//
// No daemon: each sandbox has one small monitor process (as podman's conmon),
// forked by `sbx create`, in its own session, that
//   - holds a private mount namespace with the rootfs overlay of the image
//     layers (so the mount can never leak into the host's namespace);
//   - is the parent of `runsc run` (or `runsc restore`), so it learns the
//     first process's exit status with waitpid, and runsc's sandbox, started
//     "attached", dies with it;
//   - forwards the signals `sbx kill`/`stop` send it (runsc kill);
//   - enforces --timeout and --idle-timeout (mtime of STATE_DIR/activity);
//   - copies the first process's stdout and stderr to STATE_DIR/ctr.log as
//     records (runtime/sandbox_log.h; bounded: ctr.log + ctr.log.1);
//   - writes STATE_DIR/end (reasons exit, signal, timeout, idle) and, when the
//     sandbox ends, runs `runsc delete` and removes runsc's cgroups.
// state.json (runtime "gvisor") records the monitor's pid and start time: it
// is the sandbox's "init" for ps/wait/stop. A SIGKILLed monitor takes runsc
// with it (PR_SET_PDEATHSIG); `sbx gc`/`rm` then release what is left
// (release_gvisor).
//
// Extra files in a gVisor state dir:
//   bundle/config.json  the OCI config runsc runs (user resolved, pause helper)
//   bundle/rootfs       mount point of the rootfs (mounted only in the monitor's namespace)
//   runsc/              runsc --root
//   runsc.log           runsc's own log
//   meta.json           {"runsc", "runsc_flags", "layer_dirs", "image"}: what
//                       every later runsc call (exec, checkpoint) needs
//   released            present once runsc's state and cgroups are gone
#pragma once
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/exec_request.h"
#include "spec/sandbox_spec.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Path of the tiny static helper that is the first process of a "hold only"
/// gVisor sandbox (tools/sbx-pause.c): next to the sbx binary, or in
/// ../libexec/sbx/. Throws sbx::Error when it is missing.
std::string find_pause_helper();

/// How the monitor launches runsc.
struct GvisorLaunch {
  std::string runsc;                      ///< runsc binary (find_runsc)
  std::vector<std::string> runsc_flags;   ///< global flags: --network=none, --overlay2=root:memory
  std::vector<std::string> layer_dirs;    ///< image layers for the rootfs, bottom first
  std::string restore_image;              ///< non-empty: `runsc restore --image-path` this checkpoint
  std::string image;                      ///< image ref/id, for meta.json
  int64_t timeout_ms = 0;                 ///< 0: none
  int64_t idle_timeout_ms = 0;            ///< 0: none
  bool hold_only = false;                 ///< the first process is the pause helper
  /// The sandbox's cgroup dirs, made by sbx (Cgroup::create): the monitor
  /// moves the process that becomes runsc into them before exec and runs
  /// runsc with --ignore-cgroups (no join/leave of cgroups by runsc, each an
  /// RCU grace period; as `sbx run --runtime gvisor`). Empty: runsc does its
  /// own cgroups from the config's linux.cgroupsPath.
  std::vector<std::string> cgroup_dirs;
  /// The first process's stdin (a pipe's read end; not owned), or -1:
  /// /dev/null. The monitor keeps a copy and gives it to runsc as its fd 0,
  /// which runsc passes to the first process (`docker run -i`).
  int stdin_fd = -1;
};

/// Creates and starts a long-lived gVisor sandbox from `spec` (spec.runtime
/// "gvisor"; spec.id filled when empty; empty process.args: hold only) under
/// `run_root`, with runsc at `runsc_path` (empty: find_runsc). Returns the id
/// once the first process runs. Throws sbx::Error: 127/126 when the command
/// is not found / not executable, 125 with runsc's errors otherwise; leaves
/// nothing behind on a throw.
/// `stdin_fd`: the first process's stdin (GvisorLaunch::stdin_fd), or -1.
/// `gc_stale`: runs before the sandbox starts (the backend's gc of dead
/// sandboxes); empty: nothing.
std::string create_gvisor_sandbox(SandboxSpec spec, const std::string& run_root, const std::string& runsc_path,
                                  int stdin_fd = -1, const std::function<void()>& gc_stale = {});

/// Starts the monitor for the state dir `dir` (sandbox `id`), whose
/// bundle/config.json is written by `write_config` inside the monitor's mount
/// namespace once the rootfs is mounted (it gets the rootfs path; empty
/// function: bundle/config.json exists already). Records the monitor in
/// DIR/state.json (from `st`; the caller then sets status "running") and returns once runsc runs
/// the first process (or it has already ended). Throws sbx::Error as
/// create_gvisor_sandbox; the caller removes the dir on a throw.
void start_gvisor_monitor(const std::string& dir, SandboxState st, const GvisorLaunch& launch,
                          const std::function<void(const std::string& rootfs)>& write_config);

/// `sbx kill` on a gVisor sandbox: SIGKILL is recorded as "killed" and sent to
/// every process of the sandbox (runsc kill --all); other signals go to the
/// monitor, which forwards them to the first process (runsc kill). Throws
/// sbx::Error when it is not running.
void kill_gvisor(const std::string& dir, const SandboxState& st, int sig);

/// `docker pause`/`unpause` of a gVisor sandbox: `runsc pause` stops every
/// task in the Sentry, `runsc resume` lets them go on (runsc's own commands:
/// its sandbox runs with --ignore-cgroups, so there is no freezer to write).
/// Throws sbx::Error when it is not running or runsc fails (its exit status).
void pause_gvisor(const std::string& dir, const SandboxState& st, bool pause);

/// `docker top` of a gVisor sandbox: `runsc ps`, the processes as the Sentry
/// sees them (their pids inside the sandbox; CMD is the command's name).
/// Returns runsc's table as text: a header line (UID PID PPID C TTY STIME
/// TIME CMD), then a line per process, columns separated by spaces. Throws
/// sbx::Error when it is not running or runsc fails (with its output).
std::string ps_gvisor(const std::string& dir, const SandboxState& st);

/// Releases what a gVisor sandbox holds on the host: its runsc processes and
/// state (runsc delete --force) and runsc's cgroups; marks DIR/released.
/// Idempotent, no throw (problems are logged).
void release_gvisor(const std::string& dir, const SandboxState& st) noexcept;

/// `sbx exec` in a gVisor sandbox through `runsc exec`, with the env, user
/// (resolved in the image's /etc/passwd) and cwd native exec computes.
/// Returns the exit status as exec_in_sandbox (126/127/124/128+N). Throws
/// sbx::Error (125) when the sandbox is not running.
int exec_in_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req);

/// exec_in_gvisor with the process's stdin/stdout/stderr on the given fds
/// (-1: sbx's own; stdin then /dev/null unless req.interactive). For sbx cp.
int exec_in_gvisor_io(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req,
                      int in_fd, int out_fd, int err_fd);

/// Reads DIR/meta.json's runsc path and global flags. Throws sbx::Error.
GvisorLaunch read_gvisor_meta(const std::string& dir);

}  // namespace sbx::runtime
