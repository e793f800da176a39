// Writing a cgroup's control files: the limits a sandbox or an OCI container
// asks for (memory, swap, cpu, cpuset, pids, v1 device rules) and signalling
// every process in it. One writer for `sbx run` (runtime/linux/cgroups.h,
// which places "sbx-<id12>") and sbx-runc (ocirt/cgroup_paths.h, which places
// the caller's linux.cgroupsPath): placement differs, the files do not.
// Kernel docs: admin-guide/cgroup-v1/{memory,cpusets,pids,devices,freezer-subsystem}.rst,
// admin-guide/cgroup-v2.rst, scheduler/sched-bwc.rst (cfs quota/period).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "spec/cgroup_limits.h"

namespace sbx::runtime {

using CgroupLimits = spec::CgroupLimits;

/// One cgroup's directory per role, "" where it has none. `dirs` holds them
/// all (one per hierarchy), for moving processes in and listing them.
struct CgroupRoles {
  std::vector<std::string> dirs;
  std::string memory, pids, cpu, devices, freezer, unified;

  /// Finds each role among `dirs` by the files the kernel puts there (one
  /// stat per file): for a cgroup rebuilt from a record. No throw.
  static CgroupRoles probe(const std::vector<std::string>& dirs);
};

/// Writes `limits` to the cgroup's files: on a unified host to `roles.unified`,
/// else to the v1 controllers' dirs (cpuset files in every dir that has them).
/// Device rules: one open per run of rules for the same file (the kernel takes
/// one rule per write). A limit whose controller the cgroup lacks is an
/// error; one with no kernel interface on this host (swappiness,
/// disableOOMKiller, kernelTCP on v2) is logged and skipped, as runc does.
/// Throws sbx::Error naming the file and value.
void write_cgroup_limits(const CgroupRoles& roles, const CgroupLimits& limits);

/// Sends `sig` to every process in the cgroup. SIGKILL: cgroup.kill where
/// the cgroup has a v2 dir that has it; else, on v1, the freezer holds the
/// processes while each is killed (no fork escapes), up to three rounds.
/// Other signals: once to each process listed. No throw.
void signal_cgroup(const CgroupRoles& roles, int sig) noexcept;

/// The pids in the cgroup (pids, memory or the first dir's cgroup.procs). No throw.
std::vector<pid_t> cgroup_pids(const CgroupRoles& roles) noexcept;

}  // namespace sbx::runtime
