// `sbx cp`: copies files between the host and a running sandbox.
//
// Paths inside the sandbox are resolved by the kernel, never by string
// concatenation: openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) relative to
// /proc/<init pid>/root, so ".." and symlinks (absolute ones included) stay
// inside the sandbox's root and its mounts. Below the resolved path every step
// is an *at() call on a directory fd with O_NOFOLLOW: a symlink is copied as a
// symlink, never followed. Regular files, directories and symlinks are copied
// with their permission bits and mtimes; other file types are skipped.
// RESOLVE_NO_MAGICLINKS refuses /proc/*/root, cwd, exe and fd/N on the way;
// /proc/self in the sandbox's /proc does not exist for sbx (another pid
// namespace). The copy runs without CAP_SYS_PTRACE, so sbx has no more access
// to the sandbox's processes (/proc/PID/environ, mem, …) than a process of its
// uid: a sandbox that plants /x -> /proc/1 gets sbx cp EACCES, as it does.
// Set-id bits never reach the host (cleared on every copy out), nor do
// extended attributes (file capabilities).
// Semantics as `docker cp`: if the destination is an existing directory the
// source is copied into it under its own name, else it is created.
#pragma once
#include <string>

#include "runtime/copy_result.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Copies SANDBOX_PATH (absolute, inside the sandbox) to HOST_PATH. Files
/// created on the host are owned by the caller; holes of sparse files stay
/// holes (lseek SEEK_DATA/SEEK_HOLE: only data extents are read and written).
/// `max_bytes` (0: no bound): most data bytes copied in all; more: sbx::Error
/// with errno EFBIG, and the partial copy is removed. Throws sbx::Error when
/// the sandbox is not running, the path does not exist, or a write fails.
CopyResult copy_from_sandbox(const SandboxState& st, const std::string& sandbox_path, const std::string& host_path,
                             uint64_t max_bytes = 0);

/// Copies HOST_PATH into the sandbox at SANDBOX_PATH. Entries are owned by the
/// sandbox's root (uid/gid `owner_uid`/`owner_gid` on the host, as mapped), and
/// replace existing files by rename(2) so a symlink at the destination is
/// replaced, not written through. Throws sbx::Error.
/// SANDBOX_PATH's lstat in the running sandbox `st`: resolved by the kernel
/// inside its root (openat2 RESOLVE_IN_ROOT), read as the sandbox's root
/// reads it, as copy_from_sandbox does, and nothing copied. Throws
/// sbx::Error (errno ENOENT …) when it does not exist or the sandbox is not
/// running.
PathStat stat_in_sandbox(const SandboxState& st, const std::string& sandbox_path);

CopyResult copy_into_sandbox(const SandboxState& st, const std::string& host_path, const std::string& sandbox_path,
                             uint32_t owner_uid = 0, uint32_t owner_gid = 0);

}  // namespace sbx::runtime
