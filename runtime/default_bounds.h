// Default bounds: what every sandbox gets when the user does not
// ask for more, so that a few default sandboxes cannot take the host down.
//
//   memory      --memory: min(4 GiB, the sandboxes' parent limit). A memory
//               cgroup is always made; tmpfs pages, inodes and open files
//               written or opened in the sandbox are charged to it.
//   parent      every sandbox's memory cgroup sits below one cgroup of sbx's,
//               "sbx" at the top of the memory hierarchy, limited to the host's
//               MemTotal minus max(20 %, 2 GiB): no mix of sandboxes can take
//               the host's last fifth. Made with the first sandbox, removed
//               with the last (runtime/linux/cgroups.h).
//   disk        `sbx run` (native): the writable layer is a tmpfs of 2 GiB with
//               one inode per 4 KiB (--disk raises it); gVisor keeps writes in
//               the Sentry's memory, bounded by the memory limit.
//   /dev        64 MiB, 4096 inodes; /dev/shm 64 MiB, 16384 inodes
//               (--tmpfs /dev/shm:size=… replaces it).
//   nofile      RLIMIT_NOFILE 1024 soft, 65536 hard (--ulimit nofile=…).
//   pids        1024 (--pids-limit).
// Kernel docs: admin-guide/cgroup-v1/memory.rst, cgroup-v2.rst, filesystems/tmpfs.rst.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spec/sandbox_spec.h"

namespace sbx::runtime {

struct DefaultBounds {
  uint64_t host_memory_bytes = 0;    ///< MemTotal
  uint64_t parent_memory_bytes = 0;  ///< the "sbx" parent cgroup's limit
  int64_t memory_bytes = 0;          ///< per sandbox, without --memory
  uint64_t disk_bytes = 0;           ///< `sbx run` writable layer, without --disk
  uint64_t disk_inodes = 0;          ///< its inodes (tmpfs nr_inodes)
  uint64_t dev_bytes = 0, dev_inodes = 0;  ///< /dev
  uint64_t shm_bytes = 0, shm_inodes = 0;  ///< /dev/shm
  uint64_t nofile_soft = 0, nofile_hard = 0;
  int64_t pids = 0;
};

/// The defaults on this host (MemTotal read once from /proc/meminfo). No throw
/// (an unreadable /proc/meminfo counts as 4 GiB).
const DefaultBounds& default_bounds();

/// The memory limit of the sandboxes' parent cgroup for a host with `total`
/// bytes: total - max(total / 5, 2 GiB), and never below total / 2.
uint64_t parent_memory_limit(uint64_t total);

/// Fills in what the user left unset: resources.memory_bytes, an
/// RLIMIT_NOFILE rlimit, and, when `writable_layer` (native `sbx run`: a
/// tmpfs upper dir), disk_bytes. Never changes what the user asked for.
/// (The pids default is the --pids-limit flag's default.)
void apply_default_bounds(SandboxSpec& spec, bool writable_layer);

/// The defaults as lines "NAME  VALUE  (how to raise it)", for `sbx run
/// --help` and `sbx info`.
std::vector<std::pair<std::string, std::string>> describe_default_bounds();

/// "size=BYTES,nr_inodes=N" of the sandbox's /dev and /dev/shm tmpfs.
std::string dev_tmpfs_options();
std::string shm_tmpfs_options();

}  // namespace sbx::runtime
