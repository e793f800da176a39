#include "snapshot/fs_snapshot.h"

#include <unistd.h>

#include <chrono>
#include <memory>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/tree.h"
#include "runtime/linux/cgroup_freeze.h"

namespace sbx::snapshot {

FsSnapshotResult snapshot_upper(oci::Store& store, const FsSnapshotRequest& req) {
  // Resolve first: a bad image name fails before anything is frozen or written.
  oci::ImageRecord parent = store.resolve(req.parent_image);
  fs::mkdir_p(store.root() + "/tmp");
  std::string tmpl = store.root() + "/tmp/.snapshot-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw_errno("create temp dir in " + store.root() + "/tmp");
  const std::string tmp = tmpl;
  FsSnapshotResult res;
  try {
    const std::string tar = tmp + "/layer.tar";
    {
      std::unique_ptr<runtime::CgroupFreeze> freeze;
      auto t0 = std::chrono::steady_clock::now();
      if (!req.freeze_cgroups.empty())
        freeze = std::make_unique<runtime::CgroupFreeze>(req.freeze_cgroups, std::chrono::milliseconds(5000), req.freeze_members);
      res.layer = upper_to_layer(req.upper_dir, tar, req.uid_map, req.gid_map);
      if (freeze) {
        freeze->thaw();
        res.frozen_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      }
    }
    res.image = oci::commit_layer(store, parent.id, tar, res.layer.digest_hex, req.commit);
    oci::remove_tree(tmp);
    return res;
  } catch (...) {
    try {
      oci::remove_tree(tmp);
    } catch (const Error& e) {
      log::warn(std::string("could not remove temp dir (sbx gc will): ") + e.what());
    }
    throw;
  }
}

}  // namespace sbx::snapshot
