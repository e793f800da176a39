// Private temp dirs of `sbx serve` for one request's files: a spooled request
// body, an archive being unpacked, a copy on its way into or out of a
// sandbox. They live under the image store's root (ROOT/.serve-tmp), on disk:
// RUN_ROOT (/run) and /tmp may be tmpfs, where a 1 GiB upload would be 1 GiB
// of the host's memory.
#pragma once
#include <string>

#include "common/fd.h"

namespace sbx::server {

/// A fresh directory ROOT/.serve-tmp/XXXXXX (mode 0700), removed with
/// everything in it (without following symlinks) when the object goes. While
/// it exists this process holds a shared flock(2) on it, so that
/// sweep_stale_temp_dirs() of a later server removes only the dirs of a
/// server that died (SIGKILL, a crash). Throws sbx::Error when the directory
/// cannot be made.
class TempDir {
 public:
  explicit TempDir(const std::string& root);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  Fd lock_;
};

/// Removes the dirs under ROOT/.serve-tmp that no live process holds (their
/// server died) and that are older than a minute. No throw: a dir that
/// cannot be removed is logged and left.
void sweep_stale_temp_dirs(const std::string& root);

}  // namespace sbx::server
