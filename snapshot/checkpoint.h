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

#include "snapshot/catalog.h"

namespace sbx::snapshot {

/// Throws sbx::Error explaining why native (CRIU) memory snapshots cannot work
/// on this host: CRIU missing, or `criu check` failing (its first error line is
/// quoted; Debian 12's CRIU 3.17 fails on newer kernels' vDSO layout, fixed in
/// CRIU 4.1), always suggesting `--runtime gvisor`. When `criu check` passes it
/// still throws: native checkpointing through CRIU is not implemented yet.
[[noreturn]] void fail_native_checkpoint();

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

/// Checkpoints the container into the catalog of store `root` and returns the
/// record (kind "memory", runtime "gvisor"). Throws sbx::Error with runsc's
/// error output when the checkpoint fails; nothing is recorded then.
SnapshotRecord checkpoint_gvisor(const std::string& root, const GvisorCheckpointRequest& req);

/// One sandbox restored from a memory snapshot.
struct RestoredSandbox {
  std::string id;         ///< new sandbox id (also its runsc container id)
  std::string dir;        ///< RUN_ROOT/<id>: a gVisor sandbox state dir (runtime/gvisor_lifecycle.h)
  std::string runsc_root; ///< RUN_ROOT/<id>/runsc
  std::string output;     ///< RUN_ROOT/<id>/log: the first process's stdout+stderr (bounded, as `sbx logs`)
  pid_t pid = 0;          ///< host pid of its monitor (state.json's pid)
  double restore_ms = 0;  ///< time until runsc restore returned
};

struct RestoreOptions {
  std::string runsc;            ///< runsc binary
  std::string run_root;         ///< where the new sandboxes' state dirs go
  int count = 1;                ///< copies to start (the fork primitive)
  std::string name;             ///< sandbox name (NAME, or NAME-1..N with count > 1); ids are always fresh
  std::vector<std::string> layer_dirs;  ///< override the recorded image layers (must be the same content)
};

/// Starts `opts.count` independent sandboxes from memory snapshot `name`, in
/// parallel. Each gets its own id, state dir, runsc root, cgroup
/// (/sbx-<id12>), bundle and a private copy of the checkpointed memory and
/// in-memory filesystem; siblings share nothing mutable. Each runs under its
/// own monitor (runtime/gvisor_lifecycle.h), so ps/exec/logs/stop/rm work on
/// it as on a created sandbox; destroy_restored() is `sbx rm -f`. If any copy fails, the ones started are
/// destroyed and sbx::Error carries runsc's error. Updates last_used.
std::vector<RestoredSandbox> restore_gvisor(const std::string& root, const std::string& name, const RestoreOptions& opts);

/// Starts a long-lived gVisor sandbox from an OCI runtime config (`config_json`)
/// on `layer_dirs`, detached under a monitor, with the state layout of every
/// gVisor sandbox (runtime/gvisor_lifecycle.h), so it can be checkpointed. `runsc_flags` are runsc's global flags (e.g.
/// --network=none, --overlay2=root:memory). This is the launch path `sbx
/// restore` uses; `sbx create --runtime gvisor` should share it. Throws
/// sbx::Error with runsc's output when it fails (nothing is left behind).
RestoredSandbox start_gvisor_detached(const std::string& runsc, const std::string& run_root, const std::string& id,
                                      const std::string& config_json, const std::vector<std::string>& layer_dirs,
                                      const std::vector<std::string>& runsc_flags, const std::string& image = "");

/// Kills and deletes a restored sandbox and removes its state dir, as `sbx rm
/// -f` (no throw; problems are logged). `runsc` is unused (meta.json names it).
void destroy_restored(const std::string& runsc, const RestoredSandbox& s);

/// Reads a restored sandbox back from its state dir RUN_ROOT/<id>.
RestoredSandbox restored_from_dir(const std::string& run_root, const std::string& id);

}  // namespace sbx::snapshot
