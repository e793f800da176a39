// Which controller files a cgroup directory can hold: on cgroup v1 each
// hierarchy is mounted at /sys/fs/cgroup/<controllers> (cgroups(7)) and
// holds the files of its own controllers only, so a reader that knows the
// hierarchy skips the opens that would fail (a listing of thousands of
// sandboxes reads several hierarchies each).
#pragma once
#include <string>

namespace sbx::runtime {

/// False when `dir` is under /sys/fs/cgroup/<H>/ where H is a v1 hierarchy
/// named by its controllers (comma-separated, e.g. "cpu,cpuacct", or
/// "name=systemd") that does not include `controller` ("memory", "pids",
/// "cpuacct", "blkio", …); true otherwise (cgroup v2, the unified
/// hierarchy, any other path: every file may be there). No I/O, no throw.
bool cgroup_may_have(const std::string& dir, const char* controller) noexcept;

}  // namespace sbx::runtime
