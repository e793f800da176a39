// Safe unpacking of one image layer (a tar, plain, gzip or zstd) into a
// directory that overlayfs can use as a read-only lower dir.
//
// Follows OCI image-spec layer.md: ".wh.NAME" becomes an overlay whiteout
// (a 0/0 character device NAME), ".wh..wh..opq" makes its directory opaque
// (xattr trusted.overlay.opaque=y); see the kernel's
// Documentation/filesystems/overlayfs.rst. Regular files (sparse too),
// directories, symlinks, hard links, device nodes and fifos are created with
// their owner, mode (incl. setuid/sticky), mtime and user.* /
// security.capability xattrs.
//
// The layer is hostile input: every path is resolved with openat2(2)
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS relative to the layer dir, so nothing
// is ever created outside it; ".." components, absolute paths (other than the
// root entry "/"), relative symlinks that climb out of the layer, hard links
// to anything outside this layer and parents that go through an escaping
// symlink are rejected with a clear sbx::Error.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sbx::oci {

struct UnpackLimits {
  uint64_t max_bytes = 64ull << 30;   ///< total file bytes (after decompression)
  uint64_t max_entries = 4u << 20;    ///< tar entries
};

struct UnpackResult {
  std::string diff_id_hex;  ///< sha256 of the whole uncompressed tar stream (the layer's diff id)
  uint64_t entries = 0;     ///< tar entries processed
  uint64_t bytes = 0;       ///< file bytes written (apparent size)
};

/// Unpacks the layer in file `blob_path` into `dest`, an existing empty
/// directory. `progress(compressed_bytes_read)` is called now and then.
/// `lowers` are the unpacked layers below this one, top first: a parent dir
/// the tar does not list takes its owner, mode and mtime from them (as if the
/// layer had been applied on top of its parents, as containerd does), else
/// root:root 0755.
/// Throws sbx::Error ("layer <blob_path>: entry 'x': ...") on hostile or broken
/// input (truncated, corrupt, unsupported compression, over `limits`); the
/// caller then removes `dest`, which may be partly filled.
UnpackResult unpack_layer(const std::string& blob_path, const std::string& dest,
                          const std::function<void(uint64_t)>& progress = {},
                          const std::vector<std::string>& lowers = {}, const UnpackLimits& limits = {});

}  // namespace sbx::oci
