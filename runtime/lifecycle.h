// Long-lived sandboxes without a daemon: create, signal, stop, wait, remove,
// gc and logs, acting only on the state dir (runtime/state.h), the kernel
// (pidfds, cgroups) and the sandbox's own init (runtime/native/holder.h).
//
// Every function may run in any number of sbx processes at once: changes to a
// sandbox's state dir happen under its flock; readers never need the lock
// (state.json is replaced atomically, `end` is created with link(2)).
// They name no backend: where a backend does a step its own way (gVisor,
// whose monitor process plays the init's part, kills through runsc and
// leaves runsc's state to release), they take the sandbox's Backend
// (runtime/backend.h end_all, release) and call it; the backends call them
// (runtime/native/create.h, runtime/gvisor/gvisor_lifecycle.h).
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "spec/sandbox_spec.h"
#include "runtime/sandbox_log.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Test-only: when the environment variable SBX_TEST_CRASH_AT equals `step`,
/// sbx SIGKILLs itself right there (crash-injection tests). Steps: create-dir,
/// create-name, create-state, create-started, create-done, exec-joined,
/// rm-killed, rm-cgroups, rm-renamed.
void crash_point(const char* step) noexcept;

/// Shared by the native and gVisor create paths (runtime/native/create.cpp,
/// runtime/gvisor/gvisor_lifecycle.cpp); defined in runtime/create.cpp.
/// The state.json of a sandbox being built from `spec`: status "creating",
/// its runtime, command and limits, and this sbx as its creator.
SandboxState creating_state(const SandboxSpec& spec);
/// Runs `start` (which starts the sandbox in RUN_ROOT/<id> and records its
/// init in state.json), then marks it "running" with its start time. On a
/// throw removes the sandbox (as rm -f; a failure there is logged and left to
/// `sbx gc`) and rethrows. `commit` (may be empty) runs right after
/// "running" is on record: from then on the sandbox may outlive this sbx
/// (native: Sandbox::commit; until then it dies with its creator).
/// `backend`: the sandbox's, for remove_sandbox (nullptr: none needed).
void start_created(const std::string& run_root, const std::string& id, const std::function<void()>& start,
                   const std::function<void()>& commit = {}, Backend* backend = nullptr);

/// Sends `sig` to the sandbox's init (which forwards it to the first process;
/// with none, a terminating signal ends the sandbox). SIGKILL ends it at once
/// and is recorded as "killed". Throws sbx::Error when it is not running.
void kill_sandbox(const std::string& dir, int sig);

/// SIGTERM (or `sig`), then SIGKILL after `grace`; returns once it has ended.
/// Stopping an ended sandbox is not an error (as podman). `backend`: the
/// sandbox's, whose end_all runs before the SIGKILL (nullptr: none). Throws
/// sbx::Error.
void stop_sandbox(const std::string& dir, std::chrono::milliseconds grace, int sig = 15, Backend* backend = nullptr);

/// Blocks until the sandbox has ended (or `timeout` passed: nullopt) and
/// returns how it ended. timeout 0: wait forever. Throws sbx::Error.
std::optional<EndRecord> wait_sandbox(const std::string& dir, std::chrono::milliseconds timeout = {});

/// Removes the sandbox: refuses a running one unless `force` (then kills it,
/// recorded as "killed"), then removes its cgroups, its name and its state dir
/// (renamed to RUN_ROOT/.trash-<id> first, so a crash half-way leaves nothing
/// `ps` shows and `gc` finishes it). Idempotent. `backend`: the sandbox's,
/// whose end_all runs before its init is killed and whose release runs once
/// it has ended (nullptr: neither; what a native sandbox needs, and all there
/// is to do for a dir without a readable state.json). Throws sbx::Error.
void remove_sandbox(const std::string& run_root, const std::string& id, bool force, Backend* backend = nullptr);

/// Removes RUN_ROOT/<id> dirs whose sandbox is gone (no live init, no live
/// creator), with their cgroups, and stale sandbox cgroups (runtime/linux/cgroups.h);
/// a created sandbox that ended keeps its record, and its backend releases
/// what it still holds (Backend::release). `backend_of` gives each sandbox's
/// backend (runtime/backends.h backend_of; nullptr: none, each is removed
/// without a backend's steps). Returns the removed paths. No throw.
std::vector<std::string> gc(const std::string& run_root, BackendOf backend_of);

/// The bounded gc a start runs: the next few entries of the run root (one
/// getdents64 of at most `max_bytes`, from where the last step stopped: a
/// cursor kept as an xattr of the run root, around again at its end), each
/// checked as gc checks it. Its cost does not grow with the number of
/// sandboxes; every dead sandbox is still reached within (sandboxes / entries
/// per step) starts, and at once by `sbx gc`. Returns the removed paths. No throw.
std::vector<std::string> gc_step(const std::string& run_root, BackendOf backend_of, size_t max_bytes = 512);

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
