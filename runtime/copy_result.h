// What every backend's copy between the host and a sandbox (`sbx cp`,
// runtime/backend.h Backend::copy_in/copy_out) reports, and the rule every
// copy to the host follows for set-id bits (native: runtime/native/copy.h,
// gVisor: runtime/gvisor/gvisor_copy.h).
#pragma once
#include <string>
#include <sys/stat.h>

#include <cstdint>

namespace sbx::runtime {

struct CopyResult {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

/// One path of a sandbox as lstat(2) sees it there (docker's HEAD
/// /containers/ID/archive): the entry itself, a symlink not followed.
struct PathStat {
  mode_t mode = 0;          ///< st_mode: type and permission bits
  uint64_t size = 0;        ///< st_size, bytes (a sparse file's holes included)
  int64_t mtime_s = 0;      ///< st_mtime, unix seconds
  std::string link_target;  ///< a symlink's target; empty otherwise
};

/// The permission bits a file copied out of a sandbox gets on the host: its
/// own, less set-uid and set-gid (a sandbox's set-id file never becomes one
/// on the host). Used by every copy to the host, native and gVisor; neither
/// copies extended attributes, so no file capability arrives either.
inline mode_t host_mode_from_sandbox(mode_t mode) { return mode & 07777 & ~static_cast<mode_t>(S_ISUID | S_ISGID); }

}  // namespace sbx::runtime
