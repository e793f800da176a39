// Long-lived sandboxes without a daemon: create, signal, stop, wait, remove,
// gc and logs, acting only on the state dir (runtime/state.h), the kernel
// (pidfds, cgroups) and the sandbox's own init (runtime/native/holder.h).
//
// Every function may run in any number of sbx processes at once: changes to a
// sandbox's state dir happen under its flock; readers never need the lock
// (state.json is replaced atomically, `end` is created with link(2)).
// Every function dispatches on SandboxState::runtime ("native", or "gvisor":
// runtime/gvisor/gvisor_lifecycle.h, whose monitor process plays the init's part).
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"
#include "runtime/sandbox_log.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Creates and starts a detached sandbox from `spec` (spec.id is filled when
/// empty; an empty spec.process.args means "hold only": the sandbox runs just
/// its init). Returns the id once the first process has exec'd. The state dir
/// is RUN_ROOT/<id>; the spec is kept as its config.json. Throws sbx::Error
/// (125, or 126/127 when the command cannot be executed / is not found) and
/// leaves nothing behind on a throw.
/// spec.disk_bytes (--disk) puts the upper dir on a tmpfs of that size mounted
/// at RUN_ROOT/<id>/fs (removed with the state dir by rm and gc).
struct CreateOptions {
  /// A user namespace, as `sbx run` (runtime/linux/userns.h): the range is recorded
  /// in config.json (linux.uidMappings) and the upper dir is owned by the
  /// sandbox's root. Off: --userns host.
  bool userns = false;
  /// spec.stdin_open: the first process's stdin (native: StartOptions::detached_stdin).
  int stdin_fd = -1;
  /// Docker's restart: spec.id names an ended native sandbox, which the new
  /// one replaces on the same writable layer (RUN_ROOT/<id>/fs moves over;
  /// files written before survive) and, when it is free, the same
  /// user-namespace range (else the layer's owners are shifted to the new
  /// one, shift_ids). Throws sbx::Error when that sandbox is missing or still
  /// running. A layer on a --disk tmpfs cannot move: the new one starts empty.
  bool reuse_layer = false;
};
std::string create_sandbox(SandboxSpec spec, const std::string& run_root, const CreateOptions& opts = {});

/// Test-only: when the environment variable SBX_TEST_CRASH_AT equals `step`,
/// sbx SIGKILLs itself right there (crash-injection tests). Steps: create-dir,
/// create-name, create-state, create-started, create-done, exec-joined,
/// rm-killed, rm-cgroups, rm-renamed.
void crash_point(const char* step) noexcept;

/// Shared by the native and gVisor create paths (runtime/create.cpp,
/// runtime/gvisor/gvisor_lifecycle.cpp).
/// The state.json of a sandbox being built from `spec`: status "creating",
/// its runtime, command and limits, and this sbx as its creator.
SandboxState creating_state(const SandboxSpec& spec);
/// Runs `start` (which starts the sandbox in RUN_ROOT/<id> and records its
/// init in state.json), then marks it "running" with its start time. On a
/// throw removes the sandbox (as rm -f; a failure there is logged and left to
/// `sbx gc`) and rethrows. `commit` (may be empty) runs right after
/// "running" is on record: from then on the sandbox may outlive this sbx
/// (native: Sandbox::commit; until then it dies with its creator).
void start_created(const std::string& run_root, const std::string& id, const std::function<void()>& start,
                   const std::function<void()>& commit = {});

/// Sends `sig` to the sandbox's init (which forwards it to the first process;
/// with none, a terminating signal ends the sandbox). SIGKILL ends it at once
/// and is recorded as "killed". Throws sbx::Error when it is not running.
void kill_sandbox(const std::string& dir, int sig);

/// SIGTERM (or `sig`), then SIGKILL after `grace`; returns once it has ended.
/// Stopping an ended sandbox is not an error (as podman). Throws sbx::Error.
void stop_sandbox(const std::string& dir, std::chrono::milliseconds grace, int sig = 15);

/// Blocks until the sandbox has ended (or `timeout` passed: nullopt) and
/// returns how it ended. timeout 0: wait forever. Throws sbx::Error.
std::optional<EndRecord> wait_sandbox(const std::string& dir, std::chrono::milliseconds timeout = {});

/// Removes the sandbox: refuses a running one unless `force` (then kills it,
/// recorded as "killed"), then removes its cgroups, its name and its state dir
/// (renamed to RUN_ROOT/.trash-<id> first, so a crash half-way leaves nothing
/// `ps` shows and `gc` finishes it). Idempotent. Throws sbx::Error.
void remove_sandbox(const std::string& run_root, const std::string& id, bool force);

/// Kills every process in the cgroup dirs and removes them (v1 and v2; a dir
/// that is already gone is fine). Returns the first errno (0 on success).
int destroy_cgroup_dirs(const std::vector<std::string>& dirs) noexcept;

/// Prints (through `out`) the log of the first process, stdout and stderr
/// interleaved as written (ctr.log.1 then ctr.log; a raw log of an older
/// sandbox as it is). With `follow`, keeps reading until the sandbox has
/// ended. Throws sbx::Error.
void read_logs(const std::string& dir, bool follow, const std::function<void(const char*, size_t)>& out);

/// The log of the first process as records (runtime/sandbox_log.h), oldest
/// first: each keeps its stream and time. A raw log of an older sandbox
/// (STATE_DIR/log) comes as stdout records with time 0. `follow`: until the
/// sandbox has ended. `out` gets views valid during the call. Throws sbx::Error.
void read_log_records(const std::string& dir, bool follow, const std::function<void(const LogRecord&)>& out);

}  // namespace sbx::runtime
