// User namespaces for sandboxes: host id ranges and idmapped mounts.
//
// Like podman's --userns=auto, every sandbox gets its own range of 65536 host
// uids/gids (0..65535 inside), taken from a pool: the "sbx" entries of
// /etc/subuid and /etc/subgid when present, else [2^31, 2^32 - 65536) (ids no
// login user has). A slot is taken by creating the symlink
// RUN_ROOT/.userns-<slot> -> <sandbox id> (EEXIST: taken), from a random slot
// on, so that a start costs the same whatever the number of live sandboxes;
// the slot is also recorded in the sandbox's own state dir (RUN_ROOT/<id>/userns).
// A range is held as long as its owner's state dir exists: released by the
// sandbox's end or rm; a link whose state dir is gone (a SIGKILLed create or
// rm, a host crash) is taken over by the next start that hits it, or removed
// by `sbx gc`.
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

#include "spec/sandbox_spec.h"

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
  int slot = -1;     ///< index in the pool
  std::string file;  ///< RUN_ROOT/<id>/userns, which holds the slot
  std::string link;  ///< RUN_ROOT/.userns-<slot> -> <id>, the host-wide claim
};

/// The pool: the first "sbx:START:COUNT" line of `subuid` when it has one and
/// `subgid` has the same (START and COUNT must match so that uid and gid
/// ranges line up), else [2^31, 2^32 - 65536). Throws sbx::Error when the
/// entries disagree or hold less than one range.
IdPool id_pool(const std::string& subuid = "/etc/subuid", const std::string& subgid = "/etc/subgid");

/// Takes a free range of `pool` for sandbox `sandbox_id`, whose state dir
/// RUN_ROOT/<sandbox_id> must exist: the first free slot from a random one on,
/// by symlink(2) of RUN_ROOT/.userns-<slot> (O(1) expected; reads no other
/// sandbox's state). A slot whose owner's state dir is gone is taken over.
/// Throws sbx::Error when every range is in use ("… all N user-namespace
/// ranges are in use; run 'sbx gc' or pass --userns host").
/// `prefer_slot` (>= 0): that slot when it is free (a restarted sandbox
/// whose kept writable layer is owned by its old range), else any free one.
IdRange allocate_id_range(const std::string& run_root, const std::string& sandbox_id, const IdPool& pool,
                          int prefer_slot = -1);

/// Moves the ownership of every file under `dir` (not following symlinks)
/// from ids [from, from + kIdRangeSize) to the same offsets in
/// [to, to + kIdRangeSize), uids and gids alike; other ids are left as they
/// are. For a writable layer kept across a restart that got another range.
/// Throws sbx::Error naming the path when a walk or lchown fails.
void shift_ids(const std::string& dir, uint32_t from, uint32_t to);

/// Releases `r` (removes its file, so the state dir can be removed, and its
/// slot link when it still names this sandbox). No throw.
void release_id_range(const IdRange& r) noexcept;

/// Releases the slot recorded in `dir`/userns (the state dir of sandbox `id`,
/// or where rm moved it) when RUN_ROOT/.userns-<slot> still names `id`.
/// For rm and gc. No throw.
void release_id_slot(const std::string& run_root, const std::string& id, const std::string& dir) noexcept;

/// Removes the slot link RUN_ROOT/`name` (.userns-<slot>) when its owner's
/// state dir is gone (checked under the lock allocation takes): true when
/// removed. For gc's bounded step. No throw.
bool release_stale_id_slot(const std::string& run_root, const std::string& name) noexcept;

/// `sbx gc`: removes every slot link whose owner's state dir is gone (the
/// paths removed). With `repair`, also links the slots recorded in state dirs
/// that have no link (sandboxes of an sbx from before the links). Reads every
/// state dir; never on a start. No throw.
std::vector<std::string> gc_id_slots(const std::string& run_root, bool repair) noexcept;

/// The maps of a range: container 0 -> host_start, 65536 ids.
std::vector<IdMapping> id_maps(const IdRange& r);

/// The host uid/gid that container id 0 maps to in `maps` (the sandbox's
/// root). Throws sbx::Error when the maps do not map id 0.
uint32_t host_root_id(const std::vector<IdMapping>& maps);

/// A disk-backed overlay upper dir (`upper_dir`/upper and /work, as sbx
/// create keeps it) for a sandbox in a user namespace whose root is host
/// uid/gid `uid`/`gid`: creates upper (0755: the root of the sandbox's "/")
/// and work (0700), owned by that root, and makes `upper_dir` itself 0700 and
/// its own. Files the sandbox writes then land on disk with its mapped
/// (unprivileged) host ids. The sandbox's init must open `upper_dir` (O_PATH)
/// itself, in its own mount namespace (overlayfs clones the upper dir's mount,
/// which must be in the mounter's namespace) and before it becomes the
/// namespace's root (its way there is closed to that uid: RUN_ROOT is 0700
/// and host root's). Throws sbx::Error.
void prepare_upper_for_userns(const std::string& upper_dir, uint32_t uid, uint32_t gid);

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

/// How a read-write volume's files map between the sandbox and the host disk
/// (the default, and the old `:idmap=host`). See volume_idmap_userns.
enum class VolumeIdmap {
  Owner,  ///< sandbox root <-> the host dir's owner, or an unprivileged id
  Host,   ///< sandbox id N <-> host id N on disk (`:idmap=host`, opt-in)
};

/// The user namespace to idmap a read-write volume with, so that nothing the
/// sandbox writes there is owned by host root: the sandbox's root
/// (host id `root_host`, the start of its range) writes files as the volume
/// directory's owner `owner_uid`/`owner_gid` (podman's keep-id/`:U` idea), and
/// every other sandbox id as its own unprivileged host id. On-disk id 0 is
/// never mapped: host root's files in the volume appear as nobody (65534)
/// inside, and the kernel refuses the sandbox chown, chmod (set-id bits) and
/// security.capability on them (capable_wrt_inode_uidgid needs a mapped
/// owner). A directory owned by kVolumeIdBase (a named volume's, engine/
/// volumes.h) maps every sandbox id N to on-disk id kVolumeIdBase+N instead,
/// as host_ids_volume_userns does. Returns -1 when no idmap is needed (an owner of 0, or one inside
/// the sandbox's range: the sandbox's own mapping already writes its
/// unprivileged ids), else an fd of a new user namespace (close it after
/// idmap_tree). Needs CAP_SETUID/CAP_SETGID. Throws sbx::Error.
/// Kernel docs: filesystems/idmappings.rst; user_namespaces(7).
int volume_idmap_userns(uint32_t root_host, uint32_t owner_uid, uint32_t owner_gid);

/// A new user namespace with the maps `uids`/`gids` (container_id: the id
/// inside, here the id on disk; host_id: the kernel id) held by no process:
/// an fd of it, for idmap_tree (close it after). Throws sbx::Error.
int idmap_userns(const std::vector<IdMapping>& uids, const std::vector<IdMapping>& gids);

/// The user namespace to idmap a read-write volume with when the sandbox's
/// ids are host ids (gVisor's gofer writes as host root; native --userns
/// host): kernel id 0 (the sandbox's root) writes as the source's owner
/// `owner_uid`/`owner_gid`, or, for host root's source, the unprivileged id
/// kVolumeIdBase; kernel ids 1..65535 as kVolumeIdBase+1.. (above sbx's
/// default pool of native ranges, so no login user's). Host id 0 on disk is
/// not mapped: host root's files there show as nobody, and cannot be chowned,
/// made set-id or given file capabilities. An fd; close it after idmap_tree.
/// Throws sbx::Error.
inline constexpr uint32_t kVolumeIdBase = 4294901759u;  // 2^32 - 65537; +65535 = 2^32 - 2
int host_ids_volume_userns(uint32_t owner_uid, uint32_t owner_gid);

/// The same for a detached tree `tree_fd` already opened (open_tree
/// OPEN_TREE_CLONE) and not attached yet; `what` names it in errors.
void idmap_tree(int tree_fd, int userns_fd, bool recursive, bool read_only, const std::string& what);

}  // namespace sbx::runtime
