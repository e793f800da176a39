#include "common/openat2.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace sbx {
namespace {

// openat2 answers EAGAIN when a concurrent rename or mount changed the tree
// during a RESOLVE_IN_ROOT/BENEATH lookup; the kernel expects a retry.
constexpr int kMaxRetries = 100;

int openat2_retry(int dirfd, const char* path, int flags, mode_t mode, uint64_t resolve) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = resolve;
  for (int tries = 0;; ++tries) {
    long r = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (r >= 0) return static_cast<int>(r);
    if ((errno == EAGAIN || errno == EINTR) && tries < kMaxRetries) continue;
    return -1;
  }
}

}  // namespace

int openat2_in_root(int rootfd, const std::string& path, int flags, bool no_symlinks) {
  size_t skip = path.find_first_not_of('/');
  const char* rel = skip == std::string::npos ? "." : path.c_str() + skip;
  uint64_t resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | (no_symlinks ? RESOLVE_NO_SYMLINKS : 0);
  return openat2_retry(rootfd, rel, flags, 0, resolve);
}

int openat2_beneath(int dirfd, const std::string& path, int flags, mode_t mode) {
  return openat2_retry(dirfd, path.empty() ? "." : path.c_str(), flags, mode,
                       RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
}

}  // namespace sbx
