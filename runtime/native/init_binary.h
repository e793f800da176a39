// The holder's program: sbx-init (tools/sbx-init.cpp), a small static binary
// embedded in sbx at build time (cmake/embed_binary.cmake) and written out once
// per run root, content-addressed, as RUN_ROOT/.init/sbx-init-<sha256>
// (owned by root, in the root-only run root). A created sandbox's init execs
// it (runtime/native/native_backend.cpp) instead of staying resident as a
// fork of sbx.
//
// Mode 0111, execute only, on purpose: a user-namespaced init (the sandbox's
// root, to which host root's files are "other") cannot read it, so the
// kernel's exec makes the holder non-dumpable at once and keeps its mm owned
// by the host's user namespace (fs/exec.c would_dump()): then even a sandbox
// process with CAP_SYS_PTRACE in its own user namespace cannot open
// /proc/1/{fd,mem,maps,environ,exe}. With 0555 the mm would belong to the
// sandbox's user namespace, and that capability would open them.
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// The SHA-256 (hex) of the embedded sbx-init.
const char* init_binary_sha256() noexcept;

/// Removes RUN_ROOT/.init/sbx-init-<sha256> files of other sbx builds that no
/// process executes now (no /proc/PID/exe is that file: the holders exec it
/// through a mount of the same inode), and temporary files of killed writers
/// (.tmp-*, older than a minute). The current build's file always stays. An
/// older build's create between its open of its file and its exec loses that
/// race and fails (it writes the file anew on the next try). Returns the
/// paths removed. No throw (a file it cannot remove stays, and is skipped).
std::vector<std::string> gc_init_binaries(const std::string& run_root) noexcept;

/// Opens RUN_ROOT/.init/sbx-init-<sha256> as an O_PATH | O_CLOEXEC fd (for
/// execveat(fd, "", ..., AT_EMPTY_PATH)), first writing it from the embedded
/// copy when it is missing or is not what sbx wrote (not a regular file, or
/// not ours: owner, mode 0111, size). The write is atomic (a temporary file
/// linked to the name; a correct file is never replaced, so a concurrent
/// start's mount of it stays valid). Other sbx builds' versions stay (one
/// file each; a run root on /run goes at reboot). Returns the fd (the
/// caller closes it). Throws sbx::Error naming the path when it cannot.
int open_init_binary(const std::string& run_root);

/// The same program as a detached mount of the one file (open_tree(2)
/// OPEN_TREE_CLONE of RUN_ROOT/.init/sbx-init-<sha256>; read-only, nosuid,
/// nodev), for the init to attach inside the sandbox (attach_init_mount) and
/// exec through: then the holder's /proc/1/exe is a file of the sandbox's own
/// mount namespace (as docker's /sbin/docker-init), which CRIU needs to dump
/// and restore it, and the sandbox can neither write nor replace it. Returns
/// an O_PATH | O_CLOEXEC fd (the caller closes it). Throws sbx::Error.
int open_init_mount(const std::string& run_root);

/// Where the init attaches that mount in the sandbox: on /dev, the tmpfs sbx
/// makes, so nothing is written to the image's layers.
inline constexpr const char* kInitMountPath = "/dev/.sbx-init";

/// In the sandbox, after pivot_root and with /dev mounted: creates
/// kInitMountPath (must not exist) and moves the detached mount `tree_fd`
/// there. `tree_fd` then names the attached mount (exec it with
/// execveat(tree_fd, "", ..., AT_EMPTY_PATH)). Throws sbx::Error.
void attach_init_mount(int tree_fd);

}  // namespace sbx::runtime
