// A sandbox's processes as `docker top` shows them (runtime/backend.h
// Backend::processes): a table of titles and one row of values per process.
// For sandboxes whose processes are host processes (native), read from their
// cgroups and /proc (proc(5): /proc/PID/stat, cmdline).
#pragma once
#include <string>
#include <vector>

namespace sbx::runtime {

struct ProcessTable {
  std::vector<std::string> titles;             ///< column titles ("UID", "PID", …)
  std::vector<std::vector<std::string>> rows;  ///< one per process: a value per title
};

/// Every process of the first of `cgroups` (cgroup dirs) that lists any in
/// its cgroup.procs, as host pids and host uids: UID PID PPID STAT TIME CMD
/// (TIME: user+system CPU as HH:MM:SS; CMD: the command line, or [comm] for
/// a process without one). A process that ends while it is read is left out.
/// Never throws for a cgroup or process that is gone.
ProcessTable cgroup_process_table(const std::vector<std::string>& cgroups);

}  // namespace sbx::runtime
