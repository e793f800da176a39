// Native memory checkpoints through CRIU (https://criu.org): `sbx
// checkpoint` of a running native sandbox (runtime/native/native.h
// NativeBackend::checkpoint) and `sbx restore` of it into new sandboxes
// (NativeBackend::restore). The snapshot catalog around them is
// snapshot/checkpoint.h's.
//
// Checkpoint: the sandbox is frozen (its cgroup freezer,
// runtime/linux/sandbox_freezer.h), its writable layer copied, then `criu
// dump --freeze-cgroup` of its holder (pid 1) and everything under it. What
// lies outside the sandbox is named to CRIU as external: bind mounts whose
// source the sandbox's mount namespace does not hold (/dev/.sbx-init, the
// host's device nodes and the masked /proc files of a user-namespaced
// sandbox: `--external mnt[MOUNTPOINT]:KEY`) and the holder's fds of the
// state dir and its log (`--external file[MNT_ID:INODE]`). A user-namespaced
// holder is not dumpable (runtime/native/holder.h); it is made dumpable only
// while the rest of the sandbox is frozen, and not dumpable again before the
// thaw (holder_dumpable_signal).
//
// A checkpoint directory (CheckpointRequest::dir):
//   image/       CRIU's images
//   upper/       the writable layer (the overlay upper dir) at dump time
//   config.json  the sandbox's config.json
//   meta.json    {"lower_dirs", "mounts": {KEY: HOST_PATH}, "files": {"state"|"log": KEY}, "image", …}
//
// Restore: each copy gets a state dir, a copy of upper/, an overlay of the
// image's layers over it mounted at STATE/mnt, its own cgroups (criu restore
// runs in them, --manage-cgroups=ignore), then `criu restore --root
// STATE/mnt` with the externals given back (`--external mnt[KEY]:HOST_PATH`,
// `--inherit-fd` of the copy's own state dir and log). Once the copy runs,
// the host's mount of its overlay is detached (the copy's mount namespace
// holds its own). Each copy is then an ordinary created sandbox (exec, logs,
// stop, rm).
#pragma once
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Throws sbx::Error (before anything is written) when the native sandbox
/// `st` (spec `spec`) cannot be checkpointed here: CRIU missing or failing
/// `criu check`, GPUs, a network of its own or the host's, volumes, a
/// terminal, or a user namespace (restoring one is not implemented yet).
void refuse_native_checkpoint(const SandboxState& st, const SandboxSpec& spec);

/// Checkpoints the running native sandbox `st` of `run_root` into req.dir
/// (created; must not exist). With req.leave_running the sandbox goes on
/// after the dump, else it is killed. Throws sbx::Error with CRIU's log tail
/// when the dump fails; req.dir is gone then and the sandbox keeps running.
CheckpointResult checkpoint_native(const std::string& run_root, const SandboxState& st, const SandboxSpec& spec,
                                   const CheckpointRequest& req);

/// Restores req.count copies of the checkpoint in req.dir into `run_root`,
/// one after another. Throws sbx::Error (a corrupt checkpoint, CRIU's log
/// tail); the copies made so far are removed then.
std::vector<RestoredSandbox> restore_native(const std::string& run_root, const RestoreRequest& req);

}  // namespace sbx::runtime
