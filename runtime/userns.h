// User namespaces for sandboxes: host id ranges and idmapped mounts.
//
// Like podman's --userns=auto, every sandbox gets its own range of 65536 host
// uids/gids (0..65535 inside), taken from a pool: the "sbx" entries of
// /etc/subuid and /etc/subgid when present, else [2^31, 2^32 - 65536) (ids no
// login user has). A range is held by a file RUN_ROOT/userns/<slot> naming the
// sandbox; allocation runs under an flock on RUN_ROOT/userns/.lock; the range
// is released when the sandbox ends, and a range whose sandbox state dir
// RUN_ROOT/<id> is gone (sbx was SIGKILLed, and `sbx gc` removed the state) is
// reclaimed by the next allocation or gc_id_ranges().
//
// The image layers stay shared and unchanged on disk: the sandbox sees them
// through idmapped mounts (mount_setattr(2) MOUNT_ATTR_IDMAP with the
// sandbox's user namespace), so host uid 0 on disk is uid 0 inside and the
// sandbox's root is an unprivileged uid on the host.
// Kernel docs: admin-guide/namespaces, user_namespaces(7),
// filesystems/idmappings.rst; mount_setattr(2).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/spec.h"

namespace sbx::runtime {

/// Ids per sandbox: 0..65535 inside, as podman --userns=auto.
inline constexpr uint32_t kIdRangeSize = 65536;

/// Where ranges come from: host ids [start, start + count).
struct IdPool {
  uint32_t start = 0;
  uint32_t count = 0;
};

/// One sandbox's range: host ids [host_start, host_start + kIdRangeSize).
struct IdRange {
  uint32_t host_start = 0;
  int slot = -1;  ///< index in the pool; the name of its file under RUN_ROOT/userns
};

/// The pool: the first "sbx:START:COUNT" line of `subuid` when it has one and
/// `subgid` has the same (START and COUNT must match so that uid and gid
/// ranges line up), else [2^31, 2^32 - 65536). Throws sbx::Error when the
/// entries disagree or hold less than one range.
IdPool id_pool(const std::string& subuid = "/etc/subuid", const std::string& subgid = "/etc/subgid");

/// Takes the first free range of `pool` for sandbox `sandbox_id`. Call it after
/// RUN_ROOT/<sandbox_id> exists (a range whose state dir is missing counts as
/// free). Throws sbx::Error when every range is in use ("… all N user-namespace
/// ranges are in use; run 'sbx gc' or pass --userns host").
IdRange allocate_id_range(const std::string& run_root, const std::string& sandbox_id, const IdPool& pool);

/// Releases `r` (removes its file). No throw.
void release_id_range(const std::string& run_root, const IdRange& r) noexcept;

/// Removes the ranges whose sandbox state dir RUN_ROOT/<id> is gone; returns
/// their file paths. No throw.
std::vector<std::string> gc_id_ranges(const std::string& run_root) noexcept;

/// The maps of a range: container 0 -> host_start, 65536 ids.
std::vector<IdMapping> id_maps(const IdRange& r);

/// Writes /proc/PID/uid_map and gid_map (the caller is root in the parent
/// namespace, so setgroups stays allowed). Throws sbx::Error naming the file.
void write_id_maps(pid_t pid, const std::vector<IdMapping>& uids, const std::vector<IdMapping>& gids);

/// A detached copy of the mount tree at `path` (open_tree(2) OPEN_TREE_CLONE,
/// AT_RECURSIVE when `recursive`) made read-only when `read_only` and idmapped
/// with the user namespace `userns_fd` (an fd of /proc/PID/ns/user). Attach
/// it with move_mount(2); it is not visible anywhere until then. Needs
/// CAP_SYS_ADMIN in the initial user namespace and a file system that supports
/// idmapped mounts (ext4, xfs, btrfs, tmpfs, overlay lower layers, …). Throws
/// sbx::Error naming the path (EINVAL: the file system cannot be idmapped).
int open_idmapped_tree(const std::string& path, int userns_fd, bool recursive, bool read_only);

/// The same for a detached tree `tree_fd` already opened (open_tree
/// OPEN_TREE_CLONE) and not attached yet; `what` names it in errors.
void idmap_tree(int tree_fd, int userns_fd, bool recursive, bool read_only, const std::string& what);

}  // namespace sbx::runtime
