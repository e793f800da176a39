// The sandbox's file system, built inside its own mount namespace so that the
// kernel tears every mount down when the namespace dies (nothing is mounted on
// the host, nothing to clean up after a crash).
//
// Order (called by runtime/native/native_backend.cpp in the sandbox's init):
//   make_mounts_private → mount_rootfs (tmpfs for upper/work, overlay of the
//   layers) → open_bind_sources → pivot_into → mount_system (/proc, /sys, /dev)
//   → mount_user (volumes, --tmpfs) → mask_and_readonly_paths → finish_rootfs.
// Kernel docs: filesystems/overlayfs.rst, sharedsubtree.rst; pivot_root(2);
// runc's libcontainer/rootfs_linux.go for the defaults (masked/read-only paths).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

/// Makes every mount in the (new) mount namespace private, so that nothing we
/// mount propagates back to the host. Throws sbx::Error.
void make_mounts_private();

/// Mounts a private tmpfs on `staging` (an existing directory; size=
/// spec.disk_bytes when set, see tmpfs_size_option), creates the overlay
/// upper/work dirs on it (or uses spec.upper_dir) and mounts the
/// overlay of spec.layer_dirs (bottom first) on `staging`/root, which it
/// returns. Uses fsopen/fsconfig "lowerdir+" (kernel >= 6.8, no option-length
/// limit) and falls back to mount(2) with a lowerdir= list. Throws sbx::Error
/// ("mount overlay on …: EINVAL") on failure.
///
/// `idmapped_layers` (user namespace only): detached, idmapped trees of
/// spec.layer_dirs (bottom first, from runtime/linux/userns.h open_idmapped_tree);
/// they are attached on the tmpfs as `staging`/lower<N> and used instead of
/// the paths, so the shared layers are seen with the sandbox's ids.
std::string mount_rootfs(const SandboxSpec& spec, const std::string& staging,
                         const std::vector<int>& idmapped_layers = {}, bool staging_mounted = false);

/// `staging_mounted` means user-namespace mode: the staging tmpfs is already
/// mounted (mount_staging_at) and the overlay uses the option userxattr.
///
/// User namespace: the sandbox's root (an unprivileged host uid) may not be
/// able to walk to its state dir (e.g. a run root under a 0700 temp dir), so
/// the init opens the dir (O_PATH) while it still has its host uid, and later
/// mounts the staging tmpfs on that fd with the new mount API. Returns an fd
/// of the tmpfs's root; "/proc/self/fd/N" is the staging path for
/// mount_rootfs(…, staging_mounted=true). The caller closes it right after
/// pivot_root: no fd of a host directory may reach the workload
/// (CVE-2024-21626). Throws sbx::Error.
/// `disk_bytes` > 0 (--disk) gives the tmpfs that size: the sandbox's writes
/// to its root file system then fail with ENOSPC beyond it.
int mount_staging_at(int state_dir_fd, uint64_t disk_bytes = 0);

/// Inodes (files, dirs, links) a --disk limit of `bytes` allows: one per
/// 4 KiB, at least 4096 (ext4 makes one per 16 KiB). Without such a cap a
/// tmpfs allows half of RAM in pages as inodes, and empty files cost kernel
/// memory that size= does not count.
uint64_t tmpfs_inodes_for(uint64_t bytes);

/// "size=BYTES,nr_inodes=N" for a tmpfs holding a --disk limited upper dir
/// (tmpfs rounds the size up to whole pages; Documentation/filesystems/tmpfs.rst).
std::string tmpfs_size_option(uint64_t bytes);

/// A host-side bind source, opened (open_tree(OPEN_TREE_CLONE)) while the host
/// file system is still reachable; attached inside the rootfs after pivot_root.
struct BindSource {
  const Mount* mount = nullptr;
  int tree_fd = -1;
  bool is_dir = true;
};

/// Opens every bind mount's source in spec.mounts. Throws sbx::Error naming the
/// host path when it does not exist.
std::vector<BindSource> open_bind_sources(const SandboxSpec& spec);

/// pivot_root into `new_root` and detaches the old root (the pivot_root(".",
/// ".") idiom of runc: no directory for the old root is needed).
void pivot_into(const std::string& new_root);

/// Fresh /proc, read-only /sys, and a minimal /dev on a tmpfs: null zero full
/// random urandom tty, pts (devpts newinstance), shm, mqueue, fd/stdin/stdout/
/// stderr links, plus spec.devices. Run after pivot_root.
void mount_system(const SandboxSpec& spec);

/// In a user namespace the kernel refuses mknod, and refuses a new proc or
/// sysfs unless one is already fully visible in the mount namespace
/// (mount_too_revealing): so /proc and /sys are mounted into `root` before
/// pivot_root (resolved with openat2 RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS,
/// a symlinked /proc or /sys in the image is refused), and the device nodes
/// are bind mounts of the host's, opened before pivot_root too.
struct UsernsSystem {
  std::vector<std::pair<std::string, int>> devices;  ///< path in the sandbox, open_tree fd of the host node
};
/// Before pivot_root, in a user namespace: mounts proc and sysfs (read-only)
/// in `root` and opens the host's /dev/null, zero, full, random, urandom, tty
/// and spec.devices. Throws sbx::Error.
UsernsSystem prepare_system_in_userns(const SandboxSpec& spec, const std::string& root);
/// mount_system for a user namespace: /dev as in mount_system, with the nodes
/// of `u` bind-mounted instead of created; /proc and /sys are already there.
void mount_system_in_userns(const SandboxSpec& spec, UsernsSystem& u);

/// Volumes (-v), --tmpfs and other spec.mounts, in order. Targets are created
/// inside the new root (symlinks resolve inside it: the host root is gone).
void mount_user(const SandboxSpec& spec, std::vector<BindSource>& binds);

/// Masks (/proc/kcore, /proc/keys, …) and read-only paths (/proc/sys, …) as
/// runc's and docker's defaults.
void mask_and_readonly_paths();

/// The same for given lists (sbx-runc: config.json's linux.maskedPaths and
/// readonlyPaths), paths as seen from the current root, as runc's maskPath and
/// readonlyPath: masked directories get one empty read-only tmpfs (bound on
/// each), a masked file /dev/null bound over it; a read-only path becomes a recursive
/// read-only, nosuid, nodev, noexec bind mount of itself. Paths that do not
/// exist are skipped. Throws sbx::Error naming the path.
void mask_and_readonly_paths(const std::vector<std::string>& masked, const std::vector<std::string>& readonly);

/// Makes / read-only when spec.readonly_rootfs.
void finish_rootfs(const SandboxSpec& spec);

/// runc's default masked and read-only paths (for tests and the OCI bundle writer).
const std::vector<std::string>& default_masked_paths();
const std::vector<std::string>& default_readonly_paths();

}  // namespace sbx::runtime
