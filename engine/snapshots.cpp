// Engine: snapshots — fs (the writable layer as an image), dir (one
// directory), memory (checkpoint, restore / fork N), list, rm, extract, prune.
// Whether a sandbox's backend can take a kind of snapshot is the backend's
// decision (runtime/backend.h require/check_*); the catalog and the
// snapshot formats are snapshot/'s.
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/recording.h"
#include "runtime/backends.h"
#include "snapshot/checkpoint.h"
#include "snapshot/dir_snapshot.h"

namespace sbx::engine {

snapshot::FsSnapshotResult Engine::snapshot_fs(const FsSnapshotRequest& r) {
  oci::Store store(cfg_.root);
  snapshot::FsSnapshotRequest req;
  std::string parent_id;
  std::optional<fs::FileLock> one_at_a_time;
  if (!r.upper_dir.empty()) {
    if (r.parent_image.empty() || !r.sandbox.empty()) throw Error("--upper needs --image and no sandbox ID");
    req.upper_dir = r.upper_dir;
    req.parent_image = r.parent_image;
  } else {
    if (r.sandbox.empty()) throw Error("sbx snapshot: give a sandbox ID (or --upper DIR --image IMAGE)");
    auto sb = runtime::open_sandbox(cfg_.run_root, resolve(r.sandbox));
    auto backend = runtime::backend_for(sb.state, backend_options());
    backend->require(runtime::Operation::FsSnapshot);
    // Two snapshots of one sandbox at once: the first thaw would let the
    // second read a running sandbox. They take turns.
    one_at_a_time.emplace(sb.dir + "/snapshot.lock");
    runtime::WritableLayer layer = backend->writable_layer(sb);
    req.upper_dir = layer.upper_dir;
    req.freeze_cgroups = layer.freeze_cgroups;
    req.uid_map = layer.uid_map;
    req.gid_map = layer.gid_map;
    req.freeze_members = layer.freeze_members;
    req.parent_image = sb.state.image_id.empty() ? sb.state.image_ref : sb.state.image_id;
    parent_id = sb.state.id;
  }
  req.commit.name = r.name;
  req.commit.created_by = "sbx snapshot " + (parent_id.empty() ? req.upper_dir : parent_id);
  req.commit.labels = {{"sbx.snapshot.kind", "fs"},
                       {"sbx.snapshot.parent", parent_id.empty() ? req.parent_image : parent_id}};
  auto res = snapshot::snapshot_upper(store, req);
  if (!parent_id.empty()) trajectory::record_snapshot(cfg_.run_root, parent_id, "fs", res.image.id, r.name);
  return res;
}

snapshot::SnapshotRecord Engine::snapshot_dir(const DirSnapshotRequest& r) {
  snapshot::DirSnapshotRequest req;
  req.name = r.name;
  if (!r.host_dir.empty()) {
    if (!r.sandbox.empty()) throw Error("--host-dir takes no sandbox ID");
    req.dir = r.host_dir;
    req.parent = "host";
    return snapshot::snapshot_dir(cfg_.root, req);
  }
  if (r.sandbox.empty() || r.path.empty())
    throw Error("sbx snapshot-dir: give a sandbox ID and a PATH inside it (or --host-dir DIR)");
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(r.sandbox));
  auto backend = runtime::backend_for(sb.state, backend_options());
  backend->require(runtime::Operation::DirSnapshot);
  req.parent = sb.state.id;
  fs::FileLock one_at_a_time(sb.dir + "/snapshot.lock");  // as snapshot_fs
  runtime::SnapshotView view = backend->snapshot_view(sb);
  req.freeze_cgroups = view.freeze_cgroups;
  req.freeze_members = view.freeze_members;
  req.uid_map = view.uid_map;
  req.gid_map = view.gid_map;
  auto rec = snapshot::snapshot_sandbox_dir(cfg_.root, sb.state.pid, r.path, req);
  trajectory::record_snapshot(cfg_.run_root, sb.state.id, "dir", rec.id, rec.name);
  return rec;
}

snapshot::SnapshotRecord Engine::checkpoint(const CheckpointRequest& r) {
  auto sb = runtime::open_sandbox(cfg_.run_root, resolve(r.sandbox));
  // The backend decides (native: the CRIU message) before anything is
  // written, and takes the checkpoint; the catalog records it.
  auto backend = runtime::backend_for(sb.state, backend_options(r.runsc));
  backend->check_checkpoint(sb);
  auto rec = snapshot::checkpoint_sandbox(cfg_.root, *backend, sb, r.name, r.leave_running);
  trajectory::record_snapshot(cfg_.run_root, sb.state.id, "memory", rec.id, rec.name);
  return rec;
}

std::vector<runtime::RestoredSandbox> Engine::restore(const RestoreRequest& r) {
  // The backend that took it restores it.
  auto rec = snapshot::find_record(cfg_.root, r.snapshot, "memory");
  auto backend = runtime::backend_for(rec.runtime, backend_options(r.runsc));
  return snapshot::restore_sandboxes(cfg_.root, *backend, r.snapshot, r.name, r.count);
}

std::vector<snapshot::SnapshotRecord> Engine::list_snapshots() { return snapshot::list_all(cfg_.root); }

snapshot::SnapshotRecord Engine::remove_snapshot(const std::string& name) {
  return snapshot::remove_snapshot(cfg_.root, cfg_.run_root, name);
}

void Engine::extract_snapshot(const std::string& name, const std::string& dir) {
  if (fs::exists(dir) && !std::filesystem::is_empty(dir)) throw Error("extract: " + dir + " is not empty");
  snapshot::extract_dir_snapshot(cfg_.root, name, dir);
}

std::vector<snapshot::SnapshotRecord> Engine::prune_snapshots(int64_t older_than_s) {
  return snapshot::gc(cfg_.root, cfg_.run_root, older_than_s);
}

}  // namespace sbx::engine
