// Filesystem snapshots (`sbx snapshot ID`): a sandbox's writable layer (its
// overlay upper dir) becomes one new layer on top of its image, stored as an
// ordinary image that shares every lower layer with its parent.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "oci/commit.h"
#include "oci/image.h"
#include "oci/store.h"
#include "snapshot/upper_to_layer.h"

namespace sbx::snapshot {

struct FsSnapshotRequest {
  std::string upper_dir;     ///< the sandbox's overlay upper dir (on disk)
  std::string parent_image;  ///< the sandbox's image (a ref or id the store resolves)
  /// Cgroup dirs to freeze while the upper dir is read (a running sandbox);
  /// empty for a stopped one. See freezer.h.
  std::vector<std::string> freeze_cgroups;
  /// The sandbox's user-namespace maps (SandboxFs): owners go into the layer
  /// as container ids. Empty: as on disk.
  std::vector<IdMapping> uid_map, gid_map;
  /// The sandbox's own cgroups when freeze_cgroups[0] was made lazily (see
  /// runtime/linux/sandbox_freezer.h, CgroupFreeze): their processes are gathered in.
  std::vector<std::string> freeze_members;
  oci::CommitOptions commit;  ///< name, history and labels of the new image
};

struct FsSnapshotResult {
  oci::ImageRecord image;  ///< the new image
  LayerTar layer;          ///< the new layer (digest, bytes, entries, whiteouts)
  double frozen_ms = 0;    ///< how long the sandbox was frozen (0 when not)
};

/// Writes the upper dir as a layer (under ROOT/tmp, freezing the cgroups only
/// while it is read) and commits it on top of the parent image. Throws
/// sbx::Error (see upper_to_layer, CgroupFreeze, commit_layer); on error no
/// image is added and the temp files are removed.
FsSnapshotResult snapshot_upper(oci::Store& store, const FsSnapshotRequest& req);

}  // namespace sbx::snapshot
