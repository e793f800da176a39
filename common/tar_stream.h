// A tar of a host path, written as it is made to a sink (an HTTP response, a
// pipe): nothing of it is held whole in memory, whatever the size of the
// files. Sparse files keep their holes: their data extents are found with
// lseek(2) SEEK_DATA/SEEK_HOLE and written as PAX entries with a GNU sparse
// map (format 1.0, read by GNU tar, bsdtar/libarchive, Go's archive/tar —
// docker cp — and Python's tarfile), so a 1 TiB file of holes is a few KiB
// of tar.
#pragma once
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sbx {

/// The data extents (offset, length in bytes) of the open regular file `fd`
/// of `size` bytes, in order; a file system without SEEK_DATA gives one
/// extent for all of it. Throws sbx::Error when lseek fails otherwise.
std::vector<std::pair<off_t, off_t>> data_extents(int fd, off_t size);

/// Receives the tar's bytes in order; false stops the tar (the reader left).
using TarSink = std::function<bool(std::string_view)>;

/// Writes a tar (PAX) of HOST_PATH, not followed when a symlink, and
/// everything below it, its top entry named `name`, to `sink`. Regular files,
/// directories and symlinks, with modes, owners and mtimes; other types are
/// skipped. Returns false when the sink stopped it; throws sbx::Error when a
/// file cannot be read.
bool write_tar(const std::string& host_path, const std::string& name, const TarSink& sink);

}  // namespace sbx
