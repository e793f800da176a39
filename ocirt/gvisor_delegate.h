// Containers that ask for gVisor (annotation dev.sbx.runtime: gvisor) run
// under runsc, gVisor's OCI runtime, through sbx's gVisor backend
// (runtime/gvisor/gvisor_bundle.h): the runsc flags and the changes to the
// spec are the ones `sbx run --runtime gvisor` uses (runsc_sandbox_flags,
// gvisor_pids_bounds), so one runtime (one Kubernetes RuntimeClass handler,
// one podman --runtime) serves both isolation modes with sbx's settings.
//
// At create (or restore) sbx-runc records the choice in ROOT/.gvisor/<id>
// (the runsc flags to use, one per line) and writes the config runsc runs to
// ROOT/.gvisor-bundles/<id>/config.json: the caller's config.json with
// root.path made absolute and the backend's changes. Every later command for
// that id goes to runsc with --root ROOT/.gvisor/runsc and the caller's own
// arguments; a successful `delete` removes both.
#pragma once
#include <string>
#include <vector>

#include "ocirt/config.h"

namespace sbx::ocirt {

/// Where runsc is: $SBX_RUNSC, else runsc on $PATH (runtime::find_runsc).
/// Throws sbx::Error naming what to install when there is none.
std::string runsc_binary();

/// Whether the bundle's config.json asks for gVisor (annotation
/// dev.sbx.runtime: gvisor). Throws sbx::Error when it cannot be read.
bool bundle_wants_gvisor(const std::string& bundle);

/// Whether `id` was created under gVisor (its marker exists).
bool is_gvisor_container(const std::string& root, const std::string& id) noexcept;

/// The runsc global flags for a container with config `cfg`: the network
/// from linux.namespaces (a new namespace without a path: none, as podman
/// --network none and ctr without --net-host; one joined by path: runsc's
/// netstack in it; none listed: the host's), and the rootfs writes going to
/// the bundle's rootfs (--overlay2=none, as runc: podman cp/commit see
/// them), read-only with root.readonly. Pure.
std::vector<std::string> gvisor_flags(const Config& cfg);

/// The config.json runsc runs for the caller's `config_text` (parsed as
/// `cfg`): root.path absolute (the bundle runsc sees is sbx-runc's), and
/// linux.resources.pids.limit also given to gVisor's kernel as RLIMIT_NPROC
/// with head room on the host cgroup (gvisor_pids_bounds: runsc's pids
/// cgroup holds only the sentry, so without it a fork bomb in the
/// container is not bounded). Throws sbx::Error on malformed JSON.
std::string gvisor_config(const std::string& config_text, const Config& cfg);

/// `create`, `run` or `restore` of a gVisor container: records the marker
/// and the bundle (above) and runs `runsc VERB_ARGS --bundle B ID`, where
/// `verb_args` is the command word and its options (create: --pid-file,
/// --console-socket; restore: --image-path, --detach, …). Signals sbx-runc
/// gets meanwhile go on to runsc. Returns runsc's exit status (for run or
/// restore without --detach: the container's); the marker and bundle are
/// removed again when it fails (and after a run or restore without
/// --detach, which ends with the container).
/// Throws sbx::Error when runsc cannot be found or the id exists.
int gvisor_create(const std::string& root, const std::string& id, const Config& cfg, const std::string& config_text,
                  const std::vector<std::string>& global_args, const std::vector<std::string>& verb_args);

/// Any other command for a gVisor container: runs runsc with the recorded
/// flags, `global_args` (--log, --log-format) and `args` (the command word
/// and its arguments). exec and other streaming commands get the caller's
/// stdio; the one-shot ones (start, kill, delete, state, ps, pause, resume,
/// update) return as soon as runsc exits, with its output copied (a process
/// runsc leaves behind never holds the caller's pipes). Where runsc's answer
/// differs from runc's, runc's is given: `kill` of a created container tears
/// it down (exit 0); `kill` of one that ended says "container not running";
/// a container runsc no longer knows is "stopped" to `state` and `delete`
/// removes it. Returns the exit status (throws sbx::Error for "container not
/// running", so that it reaches the --log file the shim reads); after a successful `delete` the
/// marker and bundle are removed (one runsc fails to delete keeps them).
int gvisor_command(const std::string& root, const std::string& id, const std::vector<std::string>& global_args,
                   const std::vector<std::string>& args);

/// runsc's status for gVisor container `id` ("created", "running",
/// "stopped", …), "" when runsc does not know it. No output.
std::string gvisor_status(const std::string& root, const std::string& id, const std::vector<std::string>& flags);

/// The runsc arguments for sbx-runc's `args` (the command word and what
/// follows): runc's one-letter options become runsc's long ones (delete -f,
/// kill -a, ps -f, exec -d/-p/-e/-u), and for exec --preserve-fds N becomes
/// runsc's --pass-fd 3:3 … (N+2):(N+2); the exec'd command itself is left
/// alone. Throws sbx::Error when N is not a number.
std::vector<std::string> runsc_exec_args(const std::vector<std::string>& args);

/// The bundle runsc runs a gVisor container `id` from (ROOT/.gvisor-bundles/<id>).
std::string gvisor_bundle(const std::string& root, const std::string& id);

}  // namespace sbx::ocirt
