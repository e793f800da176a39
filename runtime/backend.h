// A backend: what runs sandboxes (native namespaces, gVisor's runsc, later a
// microVM). One abstract class with every operation a sandbox supports, so
// that the engine (engine/engine.h) and every front end above it never ask
// which backend a sandbox runs on. Implementations wrap the mechanics that
// live in runtime/native/ and runtime/gvisor/; they are chosen by name or by a
// sandbox's state.json through the registry (runtime/backends.h), the one
// place besides the gVisor backend itself that knows the backends' names.
//
// What a backend cannot do it says with one error, decided in one place:
// Backend::require(op) throws "<backend>: <why>" (Backend::refusal), and every
// operation of a backend that lacks it starts with that call.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/native/copy.h"
#include "runtime/native/exec.h"
#include "runtime/state.h"
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
};

/// "fs snapshot", "checkpoint", ... (for messages).
const char* operation_name(Operation op) noexcept;

/// What every call of a backend needs besides its arguments.
struct BackendOptions {
  std::string run_root = "/run/sbx";  ///< live sandbox state (RUN_ROOT/<id>)
  std::string runsc;                  ///< gVisor: runsc binary; empty: from $PATH
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

/// What a file-system snapshot of a sandbox's writable layer reads
/// (snapshot/fs_snapshot.h): its overlay upper dir on the host and what
/// freezes the sandbox while it is read.
struct WritableLayer {
  std::string upper_dir;
  std::vector<std::string> freeze_cgroups;  ///< empty when it is not running
  std::vector<std::string> freeze_members;  ///< see runtime::SandboxFreezer::members
  std::vector<IdMapping> uid_map, gid_map;  ///< the sandbox's user-namespace maps (empty: host ids)
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
  /// Runs one more process in the running sandbox; returns its exit status
  /// as `run` (124 timeout, 126/127, 128+N).
  virtual int exec(const SandboxRef& sb, const ExecRequest& req) = 0;
  /// Copies HOST_PATH into the sandbox at SANDBOX_PATH (docker cp semantics).
  virtual CopyResult copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) = 0;
  /// Copies SANDBOX_PATH out to HOST_PATH.
  virtual CopyResult copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path) = 0;
  /// Sends `sig` to the sandbox (SIGKILL: all of it, recorded as "killed").
  virtual void signal(const SandboxRef& sb, int sig);
  /// SIGTERM (or `sig`), then SIGKILL after `grace`; returns once it ended.
  virtual void stop(const SandboxRef& sb, std::chrono::milliseconds grace, int sig = 15);
  /// Blocks until it ended (or `timeout`, 0: forever: nullopt).
  virtual std::optional<EndRecord> wait(const SandboxRef& sb, std::chrono::milliseconds timeout = {});
  /// Current resource usage from its cgroups.
  virtual Stats stats(const SandboxRef& sb);
  /// The writable layer for an fs snapshot.
  virtual WritableLayer writable_layer(const SandboxRef& sb);
  /// Checks that a directory of `sb` can be snapshotted (DirSnapshot) now.
  virtual void check_dir_snapshot(const SandboxRef& sb);
  /// Checks that `sb` can be checkpointed (Checkpoint) now.
  virtual void check_checkpoint(const SandboxRef& sb);
  /// Removes it (force: kills a running one first). Idempotent.
  virtual void remove(const std::string& id, bool force);

  /// Whether GPUs given with --gpus reach the sandbox through gVisor's
  /// nvproxy (the caller checks runsc for it and marks the spec), rather than
  /// as device nodes and bind mounts the backend needs nothing more for.
  virtual bool gpus_need_nvproxy() const noexcept { return false; }
  /// Whether a one-shot run's writable layer is a tmpfs that takes a default
  /// size and inode bound (runtime/default_bounds.h); gVisor keeps writes in
  /// the Sentry's memory, bounded by the memory limit instead.
  virtual bool run_layer_takes_disk_bound() const noexcept { return false; }

  const BackendOptions& options() const noexcept { return opts_; }

 protected:
  BackendOptions opts_;
};

}  // namespace sbx::runtime
