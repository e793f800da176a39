// Writing a directory tree as a deterministic tar stream (libarchive, PAX):
// the one walker behind layer snapshots (upper_to_layer.h) and directory
// snapshots (dir_snapshot.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::snapshot {

enum class Compression { None, Zstd };

struct TreeTarOptions {
  /// Translate overlayfs upper-dir markers into OCI whiteouts (char 0/0 and
  /// trusted.overlay.whiteout files → ".wh.NAME"; trusted.overlay.opaque=y →
  /// ".wh..wh..opq") and drop overlayfs' own xattrs. Off: devices and xattrs
  /// are archived as they are.
  bool overlay_upper = false;
  Compression compression = Compression::None;
  int zstd_level = 3;
  /// The tree belongs to a sandbox in a user namespace (linux.uidMappings /
  /// gidMappings of its config.json): owners are archived as the ids the
  /// sandbox saw (host id → container id), so the layer has root-owned files,
  /// not 2^31+ owners. Host ids the maps do not cover are archived as 65534,
  /// the kernel's overflow id that the sandbox saw for them. Empty: as on disk.
  std::vector<IdMapping> uid_map, gid_map;
};

struct TreeTarResult {
  std::string digest_hex;  ///< sha256 of the bytes written to the output file (compressed, if so)
  uint64_t size = 0;       ///< bytes written to the output file
  uint64_t entries = 0;    ///< tar entries
  uint64_t whiteouts = 0;  ///< ".wh." entries (overlay_upper only)
  uint64_t content_bytes = 0;  ///< bytes of regular-file data archived
};

/// Archives the tree under `dir` (not the directory entry itself; its
/// children, depth-first, names sorted by byte order) into `out_path`
/// (created or truncated, mode 0644). Owners are numeric, mtimes keep
/// nanoseconds, atime/ctime are not stored, so the same tree gives the same
/// bytes. Symlinks are archived, never followed; sockets are skipped (a tar
/// cannot hold them). Throws sbx::Error naming the path on any I/O error;
/// `out_path` may then be partly written (the caller removes it).
TreeTarResult write_tree_tar(const std::string& dir, const std::string& out_path, const TreeTarOptions& opts);

}  // namespace sbx::snapshot
