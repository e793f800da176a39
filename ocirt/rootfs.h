// The container's file system from config.json, built in its init (new mount
// namespace) as runc's libcontainer/rootfs_linux.go does: root propagation,
// root.path bind-mounted on itself, every "mounts" entry in order (targets
// resolved inside the root with openat2(RESOLVE_IN_ROOT), so a symlink in the
// image cannot send a mount onto the host), the devices, pivot_root; then
// sysctls, readonlyPaths, maskedPaths and a read-only root.
// Kernel docs: filesystems/sharedsubtree.rst, pivot_root(2), mount(2).
#pragma once
#include <string>

#include "ocirt/cgroup_paths.h"
#include "ocirt/config.h"

namespace sbx::ocirt {

/// Before pivot_root: propagation, the root bind, the mounts and /dev.
/// `cgroup`: the container's cgroup dirs (for "cgroup" mounts); `in_userns`:
/// device nodes are bind mounts of the host's (mknod is refused there).
/// Throws sbx::Error naming the mount ("mounts[/dev/pts]: mount devpts: EINVAL").
void prepare_rootfs(const Config& c, const CgroupPaths& cgroup, bool in_userns);

/// Makes root.path the root: pivot_root, or with `no_pivot` (--no-pivot, for
/// a root on a ramfs) MS_MOVE + chroot. Throws sbx::Error.
void enter_rootfs(const Config& c, bool no_pivot);

/// After pivot_root: linux.sysctl, readonlyPaths, maskedPaths, root.readonly.
/// Throws sbx::Error naming the path.
void finish_rootfs(const Config& c);

}  // namespace sbx::ocirt
