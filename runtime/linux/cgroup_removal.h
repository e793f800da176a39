// Removing a sandbox's cgroups: every process in them killed, every dir
// removed, with one deadline for all of them together. Kernel docs:
// admin-guide/cgroup-v1/cgroups.rst (rmdir of a cgroup with tasks is EBUSY),
// admin-guide/cgroup-v2.rst ("Removing a cgroup").
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

/// Removes the cgroup dirs (one per hierarchy, v1 or v2; a dir that is
/// already gone is fine): rmdir each; while one is busy (EBUSY), SIGKILL the
/// processes its cgroup.procs lists and try them all again, until every dir
/// is gone or `budget_ms` (ms) has passed since the first try. The dirs are
/// retried together, so a dir whose processes exit late (a sandbox's last
/// ones, on a loaded host) is not given up on while the others are still
/// being waited for. A dir still there at the end is logged with what holds
/// it (pid, name, state) for 'sbx gc' to retry. Returns the first errno
/// (EBUSY when the budget ran out), 0 when all are gone. No throw.
int remove_cgroup_dirs(const std::vector<std::string>& dirs, int budget_ms = 2000) noexcept;

}  // namespace sbx::runtime
