// Directory snapshots (`sbx snapshot-dir ID PATH`): one directory of a
// sandbox captured as a content-addressed, zstd-compressed tar
// (ROOT/snapshots/dirs/<sha256>.tar.zst; owners, modes, symlinks, hard links,
// xattrs kept) and mounted into other sandboxes of any image
// (`--mount-snapshot NAME:/target`) as a private writable copy, so the
// snapshot itself never changes.
#pragma once
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"
#include "snapshot/catalog.h"

namespace sbx::snapshot {

struct DirSnapshotRequest {
  std::string dir;     ///< host path of the directory to capture
  std::string name;    ///< catalog name; empty: "dir-" + the first 12 hex digits of the digest
  std::string parent;  ///< what it came from (sandbox id), for `sbx snapshots`
  std::string source;  ///< the path inside the sandbox, for `sbx snapshots`
  /// Cgroups to freeze while reading (a running sandbox), see freezer.h.
  std::vector<std::string> freeze_cgroups;
  /// A sandbox in a user namespace (Backend::snapshot_view): owners are
  /// stored as the ids it saw, see TreeTarOptions. Empty: as on disk.
  std::vector<IdMapping> uid_map, gid_map;
  /// The sandbox's own cgroups when freeze_cgroups[0] was made lazily (see
  /// runtime/linux/sandbox_freezer.h, CgroupFreeze): their processes are gathered in.
  std::vector<std::string> freeze_members;
};

/// Captures `req.dir` into the catalog of store `root`. The blob is named by
/// its sha256, so the same content is stored once. Replaces a snapshot of the
/// same name. Returns the record. Throws sbx::Error on I/O errors; nothing
/// is recorded then.
SnapshotRecord snapshot_dir(const std::string& root, const DirSnapshotRequest& req);

/// Captures PATH inside the running native sandbox whose init is `pid`: PATH
/// is resolved inside the sandbox's root (openat2 RESOLVE_IN_ROOT via
/// /proc/PID/root, so a symlink in the sandbox cannot point the snapshot at a
/// host directory), with the sandbox frozen while it is read.
SnapshotRecord snapshot_sandbox_dir(const std::string& root, pid_t pid, const std::string& path,
                                    DirSnapshotRequest req);

/// Extracts snapshot `name` into `dest` (created; must be absent or empty),
/// keeping owners, modes, mtimes and xattrs. The blob is hostile input: entries
/// with absolute paths or "..", and writes through symlinks, are refused
/// (libarchive's ARCHIVE_EXTRACT_SECURE_* checks). Updates last_used.
/// Throws sbx::Error (exit code 1 when the snapshot does not exist).
void extract_dir_snapshot(const std::string& root, const std::string& name, const std::string& dest);

/// For `--mount-snapshot NAME:/target`: extracts a private copy of the
/// snapshot into `copy_dir` (a dir the sandbox owns, e.g. in its state dir,
/// removed with it) and returns the read-write bind mount to add to the
/// SandboxSpec (`idmap=host`: the snapshot's ids are the ids inside). Throws sbx::Error for a malformed spec or unknown snapshot.
Mount mount_snapshot(const std::string& root, const std::string& spec, const std::string& copy_dir);

}  // namespace sbx::snapshot
