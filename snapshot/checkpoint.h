// Memory snapshots: a running sandbox's processes (memory, threads, file
// descriptors, kernel state) plus its in-memory filesystem are saved, and
// any number of new sandboxes continue from that exact point.
//
// gVisor: `runsc checkpoint --image-path DIR ID` and `runsc restore
// --image-path DIR --bundle B ID` (https://gvisor.dev/docs/user_guide/checkpoint_restore/).
// The sandbox's writes live in runsc's memory overlay (--overlay2=root:memory),
// so they are part of the checkpoint image.
// Native: CRIU, where the host has a working one (`criu check`).
//
// Layout: ROOT/snapshots/checkpoints/<name>/
//   image/        runsc's checkpoint image (checkpoint.img)
//   config.json   the sandbox's OCI runtime config at checkpoint time
//   meta.json     {"layer_dirs": [...], "runsc_flags": [...], "container_id": …}
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/native/criu.h"
#include "runtime/state.h"
#include "snapshot/catalog.h"

namespace sbx::snapshot {

/// Native memory snapshots: see runtime/native/criu.h (the native backend's
/// refusal of checkpoints).
using runtime::fail_native_checkpoint;

/// A running gVisor sandbox to checkpoint.
struct GvisorCheckpointRequest {
  std::string runsc;          ///< runsc binary (see runtime::find_runsc)
  std::string runsc_root;     ///< runsc --root holding the container's state
  std::string container_id;   ///< runsc container id (sbx uses the sandbox id)
  std::string bundle;         ///< the bundle it runs from (config.json is copied)
  std::vector<std::string> runsc_flags;  ///< global flags it was started with (e.g. --network=none, --overlay2=root:memory)
  std::vector<std::string> layer_dirs;   ///< image layers of its rootfs, bottom first
  std::string name;           ///< snapshot name; empty: "ckpt-" + id prefix + time
  std::string parent;         ///< sandbox id (for `sbx snapshots`)
  std::string image;          ///< image ref or id (for `sbx snapshots`)
  bool leave_running = false; ///< keep the sandbox running (else runsc stops it)
};

/// Throws sbx::Error when `req` is a sandbox with NVIDIA GPUs (runsc_flags has
/// --nvproxy, or its bundle config lists /dev/nvidia* devices): gVisor cannot
/// checkpoint GPU state (nvproxy keeps device memory and driver objects in the
/// host driver; runsc has no save/restore for them), so sbx refuses before
/// writing anything rather than leave a snapshot that cannot be restored.
void refuse_gpu_checkpoint(const GvisorCheckpointRequest& req);

/// Checkpoints the container into the catalog of store `root` and returns the
/// record (kind "memory", runtime "gvisor"). Throws sbx::Error with runsc's
/// error output when the checkpoint fails, and refuse_gpu_checkpoint's error
/// for a sandbox with GPUs; nothing is recorded then.
SnapshotRecord checkpoint_gvisor(const std::string& root, const GvisorCheckpointRequest& req);

/// One sandbox restored from a memory snapshot.
struct RestoredSandbox {
  std::string id;         ///< new sandbox id (64 hex; also its runsc container id)
  std::string dir;        ///< RUN_ROOT/<id>: the state dir (runtime/gvisor/gvisor_lifecycle.h)
  std::string runsc_root; ///< RUN_ROOT/<id>/runsc
  std::string output;     ///< RUN_ROOT/<id>/ctr.log: the restored processes' stdout and stderr as records (runtime/sandbox_log.h; `sbx logs`)
  pid_t pid = 0;          ///< host pid of the sandbox's monitor (state.json "pid")
  double restore_ms = 0;  ///< time until the copy ran (ms)
};

struct RestoreOptions {
  std::string runsc;            ///< runsc binary
  std::string run_root;         ///< where the new sandboxes' state dirs go
  int count = 1;                ///< copies to start (the fork primitive), 1..4096
  std::string name;             ///< name of the new sandbox; with count > 1: NAME-1 … NAME-N; empty: none
  std::vector<std::string> layer_dirs;  ///< override the recorded image layers (must be the same content)
  /// Only with count 1: the sandbox continues as this one (its id, name,
  /// labels, image, command, created time and log), for --leave-running.
  const runtime::SandboxState* resume = nullptr;
  std::string resume_log;       ///< with `resume`: its log so far, kept at the top of the new log
};

/// Starts `opts.count` independent sandboxes from memory snapshot `name`, one
/// after another. Each is an ordinary long-lived gVisor sandbox
/// (runtime/gvisor/gvisor_lifecycle.h: its own id, state dir, name, monitor, runsc
/// root, cgroups /sbx-<id12>, bundle, and a private copy of the checkpointed
/// memory and in-memory filesystem; siblings share nothing mutable), so `sbx
/// ps/exec/logs/stop/rm` work on it; it is labelled sbx.restored-from=NAME.
/// If any copy fails, the ones started are removed and sbx::Error carries
/// runsc's error. Updates the snapshot's last_used.
std::vector<RestoredSandbox> restore_gvisor(const std::string& root, const std::string& name, const RestoreOptions& opts);

/// `sbx checkpoint --leave-running` of a gVisor sandbox created by sbx in
/// `run_root`: checkpoints it (the sandbox stops), then restores it from that
/// very checkpoint under the same id and name, keeping its labels and log, so
/// it goes on from the same point. This is what runsc's own
/// `checkpoint --leave-running` does (destroy, then restore in place), which
/// fails on Debian 12's runsc 20221219 ("stopping container: context deadline
/// exceeded") and kills the sandbox. Processes of `sbx exec` in it end. Throws
/// sbx::Error as checkpoint_gvisor / restore_gvisor (when the restore fails,
/// the checkpoint is kept and the error says so).
SnapshotRecord checkpoint_gvisor_resume(const std::string& root, const std::string& run_root,
                                        GvisorCheckpointRequest req);

/// Removes a restored sandbox as `sbx rm -f` does: kills it, releases runsc's
/// state and cgroups, removes its state dir (no throw; problems are logged).
void destroy_restored(const std::string& runsc, const RestoredSandbox& s);

}  // namespace sbx::snapshot
