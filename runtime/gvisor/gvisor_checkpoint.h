// gVisor memory checkpoints: a running sandbox's processes (memory, threads,
// file descriptors, kernel state) plus its in-memory filesystem are saved,
// and any number of new sandboxes continue from that exact point
// (runtime/backend.h Backend::checkpoint/restore of the gVisor backend; the
// snapshot catalog around them is snapshot/checkpoint.h's).
//
// `runsc checkpoint --image-path DIR ID` and `runsc restore --image-path DIR
// --bundle B ID` (https://gvisor.dev/docs/user_guide/checkpoint_restore/).
// The sandbox's writes live in runsc's memory overlay (--overlay2=root:memory),
// so they are part of the checkpoint image.
//
// A checkpoint directory (CheckpointRequest::dir):
//   image/        runsc's checkpoint image (checkpoint.img)
//   config.json   the sandbox's OCI runtime config at checkpoint time
//   meta.json     {"layer_dirs": [...], "runsc_flags": [...], "container_id": …, "image": …, "image_ref": …}
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// A running gVisor sandbox to checkpoint.
struct GvisorCheckpointRequest {
  std::string runsc;          ///< runsc binary (see runtime::find_runsc)
  std::string runsc_root;     ///< runsc --root holding the container's state
  std::string container_id;   ///< runsc container id (sbx uses the sandbox id)
  std::string bundle;         ///< the bundle it runs from (config.json is copied)
  std::vector<std::string> runsc_flags;  ///< global flags it was started with (e.g. --network=none, --overlay2=root:memory)
  std::vector<std::string> layer_dirs;   ///< image layers of its rootfs, bottom first
  std::string image;          ///< image ref or id (recorded in meta.json)
  std::string image_ref;      ///< the image's name as the user gave it (restored copies show it in ps)
  bool leave_running = false; ///< keep the sandbox running (else runsc stops it)
};

/// The checkpoint request for a gVisor sandbox started by `sbx create
/// --runtime gvisor` or restore_gvisor (RUN_ROOT/<id>/{runsc,bundle,meta.json}).
/// Throws sbx::Error when the state dir lacks them.
GvisorCheckpointRequest gvisor_request(const std::string& run_root, const SandboxState& st);

/// Throws sbx::Error when `req` is a sandbox with NVIDIA GPUs (runsc_flags has
/// --nvproxy, or its bundle config lists /dev/nvidia* devices): gVisor cannot
/// checkpoint GPU state (nvproxy keeps device memory and driver objects in the
/// host driver; runsc has no save/restore for them), so sbx refuses before
/// writing anything rather than leave a snapshot that cannot be restored.
void refuse_gpu_checkpoint(const GvisorCheckpointRequest& req);

/// Checkpoints the container into `dir` (created; must not exist). Throws
/// sbx::Error with runsc's error output when the checkpoint fails,
/// refuse_gpu_checkpoint's error for a sandbox with GPUs, and a refusal for
/// one with --network private (before anything is written); `dir` is gone
/// then.
void checkpoint_gvisor(const std::string& dir, const GvisorCheckpointRequest& req);

struct GvisorRestoreOptions {
  std::string runsc;            ///< runsc binary
  std::string run_root;         ///< where the new sandboxes' state dirs go
  int count = 1;                ///< copies to start (the fork primitive), 1..4096
  std::string name;             ///< name of the new sandbox; with count > 1: NAME-1 … NAME-N; empty: none
  std::vector<std::string> layer_dirs;  ///< override the recorded image layers (must be the same content)
  /// Only with count 1: the sandbox continues as this one (its id, name,
  /// labels, image, command, created time and log), for --leave-running.
  const SandboxState* resume = nullptr;
  std::string resume_log;       ///< with `resume`: its log so far, kept at the top of the new log
};

/// Starts `opts.count` independent sandboxes from the checkpoint in `dir`
/// (snapshot `name`: messages and the label sbx.restored-from=NAME), one
/// after another. Each is an ordinary long-lived gVisor sandbox
/// (runtime/gvisor/gvisor_lifecycle.h: its own id, state dir, name, monitor,
/// runsc root, cgroups /sbx-<id12>, bundle, and a private copy of the
/// checkpointed memory and in-memory filesystem; siblings share nothing
/// mutable), so `sbx ps/exec/logs/stop/rm` work on it. If any copy fails, the
/// ones started are removed and sbx::Error carries runsc's error.
std::vector<RestoredSandbox> restore_gvisor(const std::string& dir, const std::string& name,
                                            const GvisorRestoreOptions& opts);

/// `sbx checkpoint --leave-running` of a gVisor sandbox created by sbx in
/// `run_root`: checkpoints it into `dir` (the sandbox stops), then restores it
/// from that very checkpoint under the same id and name, keeping its labels
/// and log, so it goes on from the same point. This is what runsc's own
/// `checkpoint --leave-running` does (destroy, then restore in place), which
/// fails on Debian 12's runsc 20221219 ("stopping container: context deadline
/// exceeded") and kills the sandbox. Processes of `sbx exec` in it end.
/// Throws sbx::Error as checkpoint_gvisor; when the restore fails the
/// checkpoint is kept and its error comes back in the result.
CheckpointResult checkpoint_gvisor_resume(const std::string& dir, const std::string& name, const std::string& run_root,
                                          GvisorCheckpointRequest req);

}  // namespace sbx::runtime
