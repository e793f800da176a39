// Turns an overlayfs upper dir (a sandbox's writable layer) back into an OCI
// image layer: a tar whose whiteouts follow OCI image-spec layer.md.
//
// overlayfs (kernel Documentation/filesystems/overlayfs.rst) records a deleted
// lower file as a whiteout — a character device 0/0 (or, for "xwhiteouts", a
// regular file with xattr trusted.overlay.whiteout) — and a directory that
// hides everything below it as opaque (xattr trusted.overlay.opaque="y").
// OCI layers express the same as ".wh.NAME" and ".wh..wh..opq" entries.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::snapshot {

/// What upper_to_layer wrote.
struct LayerTar {
  std::string digest_hex;  ///< sha256 of the tar file (uncompressed, so it is also the layer's diff id)
  uint64_t size = 0;       ///< bytes of the tar file
  uint64_t entries = 0;    ///< tar entries written (whiteouts included)
  uint64_t whiteouts = 0;  ///< ".wh." entries written (opaque markers included)
};

/// Writes the upper dir `upper` as an uncompressed OCI layer tar at `out_path`
/// (created or truncated, mode 0644). Entries are relative paths sorted
/// depth-first by byte order, in PAX format, with numeric owners, modes,
/// mtimes (ns) and xattrs other than overlayfs' own (trusted.overlay.* and
/// user.overlay.*); hard links inside the upper dir stay hard links. The output
/// is deterministic: the same upper dir gives the same digest.
/// The upper dir must not change while this runs (freeze the sandbox first,
/// see freezer.h). Throws sbx::Error naming the path on I/O errors, and when
/// the upper dir uses overlay features a layer cannot express (redirect_dir,
/// metacopy): those need the overlay mounted without them.
/// `uid_map`/`gid_map`: the sandbox's user-namespace maps (config.json
/// linux.uidMappings), so owners are written as the sandbox saw them (see
/// TreeTarOptions); empty for a sandbox with the host's ids.
LayerTar upper_to_layer(const std::string& upper, const std::string& out_path,
                        const std::vector<IdMapping>& uid_map = {}, const std::vector<IdMapping>& gid_map = {});

}  // namespace sbx::snapshot
