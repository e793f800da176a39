// Control groups for one sandbox: limits (memory, CPU, pids, devices), a way
// to kill every process in it, and OOM / pids-limit reporting.
//
// The host's cgroup layout is detected once (statfs on /sys/fs/cgroup, as crun
// does): unified (v2 only), legacy (v1 only) or hybrid (v1 controllers plus a
// cgroup2 at /sys/fs/cgroup/unified). The sandbox's cgroup is named
// "sbx-<id12>": its memory cgroup (v2: its one cgroup) is a child of the
// sandboxes' parent "sbx" (sandboxes_parent_dir), the others children of
// the cgroup sbx itself runs in (from /proc/self/cgroup). Nothing else is touched.
// Kernel docs: admin-guide/cgroup-v1/*.rst, admin-guide/cgroup-v2.rst.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/linux/cgroup_control.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

enum class CgroupMode { Unified, Legacy, Hybrid };

/// The host's cgroup mode, detected once per process (statfs of /sys/fs/cgroup
/// and /sys/fs/cgroup/unified).
CgroupMode cgroup_mode();

/// One sandbox's cgroup, in every hierarchy sbx uses. Not copyable; movable.
class Cgroup {
 public:
  Cgroup() = default;
  /// Creates "sbx-<id12>" under sbx's own cgroup in each hierarchy it needs and
  /// applies `res` (memory.limit / memory.max, cpu quota, pids.max, device
  /// allow list). Throws sbx::Error naming the cgroup file and errno; on a
  /// throw nothing is left behind.
  static Cgroup create(const std::string& id, const Resources& res);

  Cgroup(Cgroup&& o) noexcept;
  Cgroup& operator=(Cgroup&& o) noexcept;
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;
  ~Cgroup();

  /// Moves process `pid` (0: the caller) into the cgroup (writes it to every
  /// cgroup.procs). Throws sbx::Error naming the file.
  /// Cost: the first write takes the global cgroup_threadgroup_rwsem for
  /// writing, i.e. waits for an RCU grace period (milliseconds); sbx does it
  /// from the parent while the sandbox builds its file system, in parallel.
  void add(pid_t pid) const;

  /// Kills every process in the cgroup (signal_cgroup with SIGKILL:
  /// cgroup.kill on v2; on v1 freeze, SIGKILL each, thaw). No throw.
  void kill_all() noexcept;

  /// OOM kills so far (memory.oom_control "oom_kill" on v1, memory.events on v2).
  uint64_t oom_kills() const noexcept;
  /// How often fork/clone failed at pids.max (pids.events "max").
  uint64_t pids_max_hits() const noexcept;

  /// Kills what is left and removes the directories. Idempotent, no throw
  /// (a directory that cannot be removed is logged and left for `sbx gc`).
  void destroy() noexcept;

  /// Forgets the directories without removing them (a detached sandbox keeps
  /// its cgroup; `sbx rm` removes it by the paths in state.json). No throw.
  void release() noexcept {
    roles_ = {};
    procs_.clear();
  }

  /// The directories, one per hierarchy (for state.json and tests).
  const std::vector<std::string>& paths() const { return roles_.dirs; }
  bool empty() const { return roles_.dirs.empty(); }

 private:
  CgroupRoles roles_;                ///< created dirs, by role ("" when not used)
  std::vector<std::string> procs_;   ///< their cgroup.procs files
};

/// The sandboxes' parent cgroup: "sbx" at the top of the memory
/// hierarchy (v1: /sys/fs/cgroup/memory/sbx; v2: /sys/fs/cgroup/sbx, which
/// holds each sandbox's whole cgroup). Its memory limit is
/// default_bounds().parent_memory_bytes (runtime/default_bounds.h), so no mix
/// of sandboxes can take the host's headroom. "" without a memory controller.
std::string sandboxes_parent_dir();

/// Makes the parent cgroup when it is missing and writes its limit then (a
/// present one is left as it is: an admin may have raised it); costs one
/// mkdir(2) otherwise. Returns its path ("" without a memory controller).
/// Throws sbx::Error naming the dir.
std::string ensure_sandboxes_parent();

/// Removes the parent cgroup once no sandbox is left below it (rmdir(2)
/// fails with EBUSY while one is), so that sbx leaves no cgroup behind when
/// its last sandbox ends. Called after a sandbox's cgroups are removed; one
/// rmdir(2). A start racing with it finds the parent gone and makes it again
/// (Cgroup::create). No throw.
void release_sandboxes_parent() noexcept;

/// Where a sandbox's cgroup "sbx-<id12>" is, or would be, in every cgroup
/// hierarchy mounted under /sys/fs/cgroup that sbx is in (v1 controllers,
/// named v1 hierarchies such as name=systemd, the unified one): beside the
/// dirs Cgroup::create makes, those an OCI runtime makes for the relative
/// linux.cgroupsPath "sbx-<id12>" (runsc does, for every hierarchy). For
/// cleanup and state.json. No throw (an empty list when /proc/self/cgroup
/// cannot be read).
std::vector<std::string> sandbox_cgroup_dirs(const std::string& id) noexcept;

/// Where a sandbox's freezer cgroup goes when it is made lazily, at snapshot
/// time (runtime/linux/sandbox_freezer.h) rather than at every start: on a hybrid
/// host "sbx-<id12>" in the empty cgroup2 tree at /sys/fs/cgroup/unified
/// (cgroup.freeze needs no controller), on a legacy host in the v1 freezer
/// hierarchy; both under sbx's own cgroup there. "" on a unified host (the
/// sandbox's own cgroup has cgroup.freeze) or a legacy one without a freezer.
std::string lazy_freezer_dir(const std::string& id);

/// Removes stale sandbox cgroups: "sbx-*" children of sbx's own cgroup (in
/// every hierarchy) that hold no process and are older than `min_age_s`
/// seconds (a sandbox being started holds its empty cgroup for about a
/// millisecond, between mkdir and moving its init in). Returns
/// the paths removed. Never throws.
std::vector<std::string> gc_stale_cgroups(int min_age_s = 2) noexcept;

}  // namespace sbx::runtime
