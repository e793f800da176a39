// A container's cgroup at linux.cgroupsPath, in every cgroup hierarchy the
// host mounts under /sys/fs/cgroup (v1 controllers, named v1 hierarchies, the
// unified one), as runc's cgroupfs driver places it: an absolute cgroupsPath
// is taken from each hierarchy's root ("/libpod_parent/libpod-ID", as podman
// with --cgroup-manager cgroupfs passes), a relative one from the cgroup
// sbx-runc runs in; none: "sbx-runc/<id>" under the caller's. Resources are
// written as config.json linux.resources asks by sbx's one cgroup writer
// (runtime/linux/cgroup_control.h); pause and resume use sbx's freezer
// (runtime/linux/cgroup_freeze.h). Kernel docs: admin-guide/cgroup-v1/*.rst, cgroup-v2.rst.
// (runtime/linux/cgroups.h names its cgroups after sandbox ids; an OCI
// runtime must use the caller's path, so only the placement is its own.)
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "ocirt/config.h"
#include "runtime/linux/cgroup_control.h"

namespace sbx::ocirt {

/// The directories of one container's cgroup, one per hierarchy, by role.
/// Plain data: `dirs` is stored in the container's state and rebuilt from it.
struct CgroupPaths : runtime::CgroupRoles {

  /// Creates the directories for `cgroups_path` (empty: "sbx-runc/<id>"
  /// under the caller's cgroup) and applies `res`. Throws sbx::Error naming
  /// the file and errno; on a throw the leaf dirs it made are removed.
  static CgroupPaths create(const std::string& cgroups_path, const std::string& id, const Resources& res);
  /// Rebuilds the role fields from `dirs` (after reading state).
  static CgroupPaths from_dirs(const std::vector<std::string>& dirs);

  /// Writes `res` to the cgroup files (create, update). Throws sbx::Error.
  void apply(const Resources& res) const;
  /// Moves `pid` into every dir. Throws sbx::Error naming the file.
  void add(pid_t pid) const;
  /// The pids in the cgroup (pids, memory or the first hierarchy's cgroup.procs).
  std::vector<pid_t> procs() const;
  /// Sends `sig` to every pid in it (kill --all; runtime::signal_cgroup). No throw.
  void signal_all(int sig) const noexcept;
  /// Freezes (true: waits until the kernel reports it frozen) or thaws the
  /// cgroup (v1 freezer.state / v2 cgroup.freeze). Throws sbx::Error when
  /// there is no freezer or the freeze does not complete.
  void freeze(bool frozen) const;
  /// Whether the cgroup is frozen now.
  bool frozen() const noexcept;
  /// Kills what is left and removes the dirs (retrying while the kernel
  /// still counts dying tasks), and the default parent "sbx-runc" once no
  /// container uses it. No throw; returns the dirs it could not remove.
  std::vector<std::string> destroy() const noexcept;

 private:
  /// The dir that freezes the container: the v1 freezer, else the v2 dir ("" : none).
  std::string freeze_dir() const;
  /// One attempt of create() for the cgroup path `rel` (mkdir -p in every
  /// hierarchy, then `res`). Throws sbx::Error (ENOENT: a parent vanished).
  static CgroupPaths create_once(const std::string& rel, const Resources& res);
};

}  // namespace sbx::ocirt
