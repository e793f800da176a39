// `sbx cp` for gVisor sandboxes. Their writes live in gVisor's memory overlay
// (--overlay2=root:memory), out of reach of the host's file system, so copies
// go through the sandbox: a tar stream to or from the image's own `tar`, run
// with `runsc exec` as the sandbox's root (runtime/gvisor/gvisor_lifecycle.h).
//
// Host side, as native cp (runtime/native/copy.h): the tar the sandbox sends is
// untrusted. Every entry must lie under the copied name; it is extracted with
// relative paths below the destination's parent, refusing ".." and absolute
// paths and any path through a symlink (libarchive's SECURE_* checks), so
// nothing lands outside the destination; symlinks are copied as symlinks, never
// followed; only regular files, directories, symlinks and hard links inside the
// copy are written; files are owned by the caller. Sandbox side, paths are
// resolved by gVisor's kernel, inside the sandbox. Semantics as `docker cp`.
#pragma once
#include <string>

#include "runtime/copy_result.h"
#include "spec/sandbox_spec.h"
#include "runtime/state.h"

namespace sbx::runtime {

/// Copies SANDBOX_PATH (absolute, not "/") of the gVisor sandbox in `dir` to
/// HOST_PATH. Holes stay holes: the image's GNU tar sends sparse entries
/// (--sparse), and runs of zero bytes from any tar are written as holes.
/// `max_bytes` (0: SBX_CP_MAX_BYTES or no bound): most bytes of tar stream
/// read from the sandbox; more: sbx::Error with errno EFBIG, the tar in the
/// sandbox is killed and nothing of the copy is left. Throws sbx::Error when
/// the sandbox is not running, the path does not exist, the image has no
/// `sh`/`tar`, or a write fails.
CopyResult copy_from_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec,
                            const std::string& sandbox_path, const std::string& host_path, uint64_t max_bytes = 0);

/// The lstat of SANDBOX_PATH (absolute) in the gVisor sandbox in `dir`,
/// nothing copied: the first header of the image's `tar` of that path (type,
/// permission bits, size with a sparse file's holes, mtime, a symlink's
/// target, not followed), then that tar is stopped. Throws sbx::Error: kind
/// FileNotFound when the path does not exist; when the sandbox is not
/// running or the image has no `sh`/`tar`.
PathStat stat_in_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec,
                        const std::string& sandbox_path);

/// Copies HOST_PATH (not followed when a symlink) into the sandbox at
/// SANDBOX_PATH, owned by the sandbox's root, modes and mtimes kept; an
/// existing non-directory at the destination (a symlink too) is replaced, not
/// written through. Throws sbx::Error.
CopyResult copy_into_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec,
                            const std::string& host_path, const std::string& sandbox_path);

}  // namespace sbx::runtime
