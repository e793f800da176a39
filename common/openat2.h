// Opening a path confined below a directory with openat2(2), the one way sbx
// resolves names chosen by someone else (an image's symlinks, a tar entry, a
// path in `sbx cp` or an API request) without following them out.
// Kernel doc: openat2(2), Documentation/filesystems/path-lookup.rst.
#pragma once
#include <sys/types.h>

#include <string>

namespace sbx {

/// Opens `path` inside the root directory `rootfd` with RESOLVE_IN_ROOT: the
/// lookup treats `rootfd` as "/", so "..", absolute names and symlinks all
/// resolve inside it, as they would for a process chrooted there (a
/// container's root). /proc magic links are refused (RESOLVE_NO_MAGICLINKS);
/// `no_symlinks` adds RESOLVE_NO_SYMLINKS (then any symlink fails with ELOOP).
/// Leading '/' are dropped and "" means the root itself. O_CLOEXEC is added
/// to `flags`. EAGAIN (a rename raced the lookup) and EINTR are retried.
/// Returns the new fd, or -1 with errno set (like open(2); no throw).
int openat2_in_root(int rootfd, const std::string& path, int flags, bool no_symlinks = false);

/// Opens `path` below `dirfd` with RESOLVE_BENEATH: any step out of `dirfd`
/// ("..", an absolute name or symlink, a symlink pointing above it) fails with
/// EXDEV instead of being re-rooted, which is what a hostile archive needs.
/// /proc magic links are refused; O_CLOEXEC is added; `mode` is used with
/// O_CREAT/O_TMPFILE. "" means `dirfd` itself. EAGAIN and EINTR are retried.
/// Returns the new fd, or -1 with errno set (no throw).
int openat2_beneath(int dirfd, const std::string& path, int flags, mode_t mode = 0);

}  // namespace sbx
