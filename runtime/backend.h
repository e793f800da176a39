// A backend: what runs sandboxes (native namespaces, gVisor's runsc, later a
// microVM). One abstract class with every operation a sandbox supports, so
// that the engine (engine/engine.h), snapshot/ and every front end above them
// never ask which backend a sandbox runs on. Implementations wrap the
// mechanics that live in runtime/native/ and runtime/gvisor/; they are chosen
// by name or by a sandbox's state.json through the registry
// (runtime/backends.h), the one place besides the backends themselves that
// knows the backends' names and includes their headers.
//
// What a backend cannot do it says with one error, decided in one place:
// Backend::require(op) throws "<backend>: <why>" (Backend::refusal), and every
// operation of a backend that lacks it starts with that call.
//
// The request types every backend takes live beside this header, in
// runtime/: ExecRequest (exec_request.h), CopyResult (copy_result.h),
// PooledCommand and WarmSandbox (warm_sandbox.h), ProcessTable
// (runtime/linux/process_table.h).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/copy_result.h"
#include "runtime/host_support.h"
#include "runtime/exec_request.h"
#include "runtime/linux/process_table.h"
#include "runtime/state.h"
#include "runtime/warm_sandbox.h"
#include "spec/exit_status.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// The operations of Backend, for require()/supports().
enum class Operation {
  Run,          ///< run to completion (sbx run)
  Create,       ///< start detached (sbx create)
  Exec,         ///< one more process in a running sandbox
  CopyIn,       ///< host → sandbox
  CopyOut,      ///< sandbox → host
  Signal,       ///< kill, stop
  Wait,         ///< until it ends
  Stats,        ///< resource usage
  FsSnapshot,   ///< the writable layer as an image layer
  DirSnapshot,  ///< one directory of a running sandbox
  Checkpoint,   ///< memory (processes + in-memory fs)
  Restore,      ///< new sandboxes from a memory checkpoint
  Remove,       ///< delete
  Pause,        ///< freeze every process, and thaw (docker pause/unpause)
  Processes,    ///< list its processes (docker top)
  Warm,         ///< set up ahead of its command (the warm pool)
  NetworkConnect,  ///< join or leave a user-defined network while it runs
};

/// "fs snapshot", "checkpoint", ... (for messages).
const char* operation_name(Operation op) noexcept;

class Backend;
struct BackendOptions;

/// The backend of any sandbox, by its state.json (the registry's
/// runtime::backend_of, runtime/backends.h), for the flows that meet
/// sandboxes of every backend (gc, runtime/lifecycle.h); nullptr when no
/// backend has the name it records.
using BackendOf = std::unique_ptr<Backend> (*)(const SandboxState& st, const BackendOptions& opts);

/// What every call of a backend needs besides its arguments.
struct BackendOptions {
  std::string run_root = "/run/sbx";  ///< live sandbox state (RUN_ROOT/<id>)
  std::string runsc;                  ///< gVisor: runsc binary; empty: from $PATH
  /// Set by the registry (runtime/backends.h backend_for): how the backend
  /// finds the backend of another sandbox, for the gc of dead sandboxes its
  /// starts run while the new sandbox sets itself up. nullptr (a backend
  /// made without the registry): its starts collect nothing.
  BackendOf backend_of = nullptr;
};

/// A sandbox a backend acts on: its state dir and its state.json.
struct SandboxRef {
  std::string dir;     ///< RUN_ROOT/<id>
  SandboxState state;  ///< as read from DIR/state.json
  /// The spec it was created with (DIR/config.json). Throws sbx::Error when
  /// config.json is missing or malformed.
  SandboxSpec spec() const;
};

/// How `run` connects the sandbox to its caller.
struct RunIo {
  int stdin_fd = 0, stdout_fd = 1;  ///< pty relay ends (with spec.process.terminal)
  bool forward_signals = true;      ///< INT/TERM/HUP/… received by sbx go to the workload
};

/// Resource usage of a sandbox, read from its cgroups (what is available:
/// fields the host's cgroups do not provide stay 0).
struct Stats {
  uint64_t memory_bytes = 0;  ///< memory.current / memory.usage_in_bytes
  uint64_t pids = 0;          ///< pids.current
  uint64_t cpu_ns = 0;        ///< cpu.stat usage_usec*1000 / cpuacct.usage
  uint64_t oom_kills = 0;     ///< OOM kills in the sandbox so far
  uint64_t memory_limit_bytes = 0;  ///< memory.limit_in_bytes / memory.max (0: none)
  uint64_t pids_limit = 0;          ///< pids.max (0: none)
  ResourceUsage usage;              ///< cpu, peak memory, block I/O, wall time so far (cgroup_stats.h)
  /// --network private: bytes the sandbox received / sent so far (its host
  /// veth's counters, sandbox_network.h network_io_bytes); nullopt for none
  /// and host, whose traffic is not the sandbox's alone to count.
  std::optional<uint64_t> net_rx_bytes, net_tx_bytes;
};

/// How a snapshot reads a running sandbox's files (snapshot/dir_snapshot.h,
/// fs_snapshot.h): what freezes it while they are read, and the host ids
/// its files are owned by.
struct SnapshotView {
  std::vector<std::string> freeze_cgroups;  ///< empty when it is not running
  std::vector<std::string> freeze_members;  ///< see runtime::SandboxFreezer::members
  std::vector<IdMapping> uid_map, gid_map;  ///< the sandbox's user-namespace maps (empty: host ids)
};

/// What a file-system snapshot of a sandbox's writable layer reads
/// (snapshot/fs_snapshot.h): its overlay upper dir on the host, and how the
/// sandbox is frozen meanwhile.
struct WritableLayer : SnapshotView {
  std::string upper_dir;
};

/// A memory checkpoint to take (Backend::checkpoint).
struct CheckpointRequest {
  /// Where it goes: the backend creates this directory (it must not exist)
  /// and writes what its restore reads; on a failure nothing is left there.
  std::string dir;
  std::string name;            ///< the snapshot's name (messages, the restored sandboxes' label)
  bool leave_running = false;  ///< the sandbox goes on from the checkpoint under the same id (else it stops)
};

/// What a checkpoint wrote, for the snapshot catalog (snapshot/catalog.h).
struct CheckpointResult {
  std::string image;  ///< the image the sandbox ran (id, or the reference)
  /// leave_running: why the sandbox could not go on (it is stopped then;
  /// the checkpoint in `dir` is complete and kept). Empty: it goes on.
  std::string resume_error;
  int resume_exit_code = 0;  ///< with resume_error: the exit code of its sbx::Error
};

/// New sandboxes from a memory checkpoint (Backend::restore).
struct RestoreRequest {
  std::string dir;       ///< the checkpoint, as Backend::checkpoint wrote it
  std::string snapshot;  ///< its name: the label sbx.restored-from, and messages
  std::string name;      ///< new sandbox's name (count > 1: NAME-1, NAME-2, …); empty: none
  int count = 1;         ///< independent copies ("fork N"), 1..4096
};

/// One sandbox restored from a memory checkpoint: an ordinary long-lived
/// sandbox (ps, exec, logs, stop, rm).
struct RestoredSandbox {
  std::string id;         ///< new sandbox id (64 hex)
  std::string dir;        ///< RUN_ROOT/<id>: its state dir
  std::string output;     ///< its processes' stdout and stderr as records (runtime/sandbox_log.h; `sbx logs`)
  pid_t pid = 0;          ///< host pid of its init or monitor (state.json "pid")
  double restore_ms = 0;  ///< time until the copy ran (ms)
};

/// One backend. Instances are cheap (no state beyond BackendOptions); get them
/// from runtime/backends.h. Every method throws sbx::Error: the backend's
/// refusal (require) for an operation it lacks, otherwise as the wrapped
/// function documents.
class Backend {
 public:
  explicit Backend(BackendOptions o) : opts_(std::move(o)) {}
  virtual ~Backend() = default;

  /// The name users type (--runtime NAME) and state.json records.
  virtual const char* name() const noexcept = 0;
  /// Whether this backend can do `op` at all (independent of the host).
  virtual bool supports(Operation op) const noexcept = 0;
  /// Why it cannot (only called when !supports(op)): the text after "<name>: ".
  virtual std::string refusal(Operation op) const;
  /// Throws sbx::Error "<name>: <refusal(op)>" unless supports(op). The single
  /// place a backend's missing operation becomes an error.
  void require(Operation op) const;

  /// What this host offers this backend (`sbx info`): whether it is usable,
  /// what was found or what is missing. Never throws.
  virtual RuntimeSupport probe() const = 0;

  /// Runs `spec` to completion in a throw-away sandbox; everything it made is
  /// gone when it returns. `userns`: its own user namespace (native).
  virtual ExitStatus run(const SandboxSpec& spec, bool userns, const RunIo& io) = 0;
  /// Creates a detached, long-lived sandbox; returns its id once the first
  /// process runs (empty process.args: it only holds). `stdin_fd`: with
  /// spec.stdin_open, the first process's stdin (native; gVisor: /dev/null);
  /// -1: /dev/null. The caller closes its copy after the call.
  /// `reuse_layer`: replaces the ended sandbox spec.id, on its writable layer
  /// where the backend keeps one on the host (native: CreateOptions::reuse_layer;
  /// gVisor keeps its writes in memory: the old sandbox goes, the new one
  /// starts on the image).
  virtual std::string create(SandboxSpec spec, bool userns, int stdin_fd = -1, bool reuse_layer = false) = 0;
  /// Starts a warm sandbox of `spec` (runtime/warm_sandbox.h; spec.process.args
  /// is ignored, spec.id must be set); returns once it waits for its command.
  /// Its init dies with the calling thread until run(). Not with a terminal.
  virtual std::unique_ptr<WarmSandbox> start_warm(const SandboxSpec& spec, bool userns);
  /// Runs one more process in the running sandbox; returns its exit status
  /// as `run` (124 timeout, 126/127, 128+N).
  virtual int exec(const SandboxRef& sb, const ExecRequest& req) = 0;
  /// Copies HOST_PATH into the sandbox at SANDBOX_PATH (docker cp semantics).
  virtual CopyResult copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) = 0;
  /// Copies SANDBOX_PATH out to HOST_PATH; holes of sparse files stay holes.
  /// `max_bytes` (0: no bound): most bytes read from the sandbox's files
  /// (holes kept as holes do not count); more: sbx::Error with errno EFBIG
  /// and nothing of the copy left behind.
  virtual CopyResult copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path,
                              uint64_t max_bytes) = 0;
  /// SANDBOX_PATH's lstat in the running sandbox, resolved there as copy_out
  /// resolves it, without copying anything. The default throws sbx::Error
  /// (Unsupported): a caller may then stat a copy_out instead.
  virtual PathStat stat_path(const SandboxRef& sb, const std::string& sandbox_path);
  /// Sends `sig` to the sandbox (SIGKILL: all of it, recorded as "killed").
  virtual void signal(const SandboxRef& sb, int sig);
  /// SIGTERM (or `sig`), then SIGKILL after `grace`; returns once it ended.
  virtual void stop(const SandboxRef& sb, std::chrono::milliseconds grace, int sig = 15);
  /// Blocks until it ended and returns how (nullopt: no end record), or
  /// until `timeout` passed (0: no limit; then nullopt).
  virtual std::optional<EndRecord> wait(const SandboxRef& sb, std::chrono::milliseconds timeout = {});
  /// Once a sandbox this process created has ended: collects what the
  /// process still holds of it — its init (native) or monitor (gVisor) is
  /// this process's child and is waited for, so no zombie stays. `st`: its
  /// state as create left it (the sandbox may be removed by now). Nothing to
  /// do for a sandbox created by another process. No throw.
  virtual void reap(const SandboxState& st) noexcept;
  /// Current resource usage from its cgroups.
  virtual Stats stats(const SandboxRef& sb);
  /// Its processes (docker top): host processes (native) or the ones its own
  /// kernel runs (gVisor). Throws when it is not running.
  virtual ProcessTable processes(const SandboxRef& sb);
  /// Freezes every process of the running sandbox and leaves it frozen
  /// (docker pause). Throws: not running, no way to freeze it on this host.
  virtual void pause(const SandboxRef& sb);
  /// Thaws what pause() froze (a no-op on a sandbox that is not frozen).
  virtual void unpause(const SandboxRef& sb);
  /// The writable layer for an fs snapshot.
  virtual WritableLayer writable_layer(const SandboxRef& sb);
  /// How a directory of the running sandbox is read for a snapshot (DirSnapshot).
  virtual SnapshotView snapshot_view(const SandboxRef& sb);
  /// Checks that `sb` can be checkpointed (Checkpoint) now, before anything
  /// is written.
  virtual void check_checkpoint(const SandboxRef& sb);
  /// Checkpoints the running sandbox's memory (its processes and in-memory
  /// files) into req.dir (after check_checkpoint). Throws with the
  /// mechanism's error; req.dir is then gone.
  virtual CheckpointResult checkpoint(const SandboxRef& sb, const CheckpointRequest& req);
  /// Starts req.count independent sandboxes, one after another, from a
  /// checkpoint this backend wrote. If any fails, the ones started are
  /// removed and the sbx::Error says why.
  virtual std::vector<RestoredSandbox> restore(const RestoreRequest& req);
  /// Removes it (force: kills a running one first). Idempotent.
  virtual void remove(const std::string& id, bool force);

  /// Hooks of the removal and gc flows (runtime/lifecycle.h remove_sandbox,
  /// gc), which act on the state dir and the kernel and ask the backend only
  /// for what it does its own way:
  /// before its init is killed, ends every process of the running sandbox
  /// by the backend's own means (gVisor: runsc kill --all, so that runsc
  /// deletes its own state); the default does nothing (killing the native
  /// init ends the sandbox). No throw.
  virtual void end_all(const SandboxRef& sb) noexcept;
  /// Releases what the ended sandbox still holds on the host besides its
  /// cgroups, name and state dir (gVisor: runsc's state and cgroups), once;
  /// returns what it released, for gc's report ("": nothing, the default).
  /// No throw.
  virtual std::string release(const SandboxRef& sb) noexcept;

  /// Marks `spec`, which has GPUs, for this backend: Throws sbx::Error when
  /// the backend cannot pass them through on this host (gVisor: runsc
  /// without --nvproxy, or whose nvproxy does not know the host's driver,
  /// `host_driver_version` as the kernel module reports it, "580.159.04").
  /// The default takes them as device nodes and mounts (gpu/nvidia.h) and
  /// needs nothing more.
  virtual void accept_gpus(SandboxSpec& spec, const std::string& host_driver_version) const;
  /// Whether a one-shot run's writable layer is a tmpfs that takes a default
  /// size and inode bound (runtime/default_bounds.h); gVisor keeps writes in
  /// the Sentry's memory, bounded by the memory limit instead.
  virtual bool run_layer_takes_disk_bound() const noexcept { return false; }
  /// Whether create() takes spec.stdin_pty_master (a pty master as the first
  /// process's stdin, which the sandbox keeps and logs from: docker run -t).
  virtual bool takes_stdin_pty() const noexcept { return false; }

  const BackendOptions& options() const noexcept { return opts_; }

 protected:
  BackendOptions opts_;
};

}  // namespace sbx::runtime
