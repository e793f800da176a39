// Resource accounting of one sandbox: what its cgroups (and, where the host's
// cgroups lack a controller, its processes' rusage and /proc) say it used.
// Read-only: it never creates, changes or removes a cgroup (that is
// runtime/linux/cgroups.h).
//
// Files read (kernel docs admin-guide/cgroup-v1/{cpuacct,memory,blkio-controller}.rst,
// admin-guide/cgroup-v2.rst):
//   cpu      v1 cpuacct.usage (ns) · v2 cpu.stat usage_usec
//   memory   v1 memory.usage_in_bytes, memory.max_usage_in_bytes, memory.limit_in_bytes
//            v2 memory.current, memory.peak (5.19+), memory.max
//   block IO v1 blkio.throttle.io_service_bytes (Read/Write) · v2 io.stat rbytes/wbytes
//   pids     pids.current, pids.max
// On a hybrid host a sandbox has only memory, pids and devices cgroups (one
// attach per hierarchy costs an RCU grace period, so sbx makes no cpuacct or
// blkio cgroup): cpu time and block I/O then come from the processes
// (/proc/PID/stat utime+stime+cutime+cstime, /proc/PID/io) while it runs and
// from the init's rusage (wait4(2)) when it has ended.
#pragma once
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/exit_status.h"

namespace sbx::runtime {

/// What a sandbox's cgroup dirs tell (nullopt: no dir has that file).
struct CgroupUsage {
  std::optional<uint64_t> cpu_ns;          ///< cpuacct.usage / cpu.stat usage_usec × 1000
  std::optional<uint64_t> memory_bytes;    ///< memory.usage_in_bytes / memory.current
  std::optional<uint64_t> memory_peak;     ///< memory.max_usage_in_bytes / memory.peak
  std::optional<uint64_t> memory_limit;    ///< memory.limit_in_bytes / memory.max (unlimited: nullopt)
  std::optional<uint64_t> io_read_bytes;   ///< blkio / io.stat
  std::optional<uint64_t> io_write_bytes;
  std::optional<uint64_t> pids;            ///< pids.current
  std::optional<uint64_t> pids_limit;      ///< pids.max (max: nullopt)
  std::vector<pid_t> procs;                ///< members (cgroup.procs of the first dir that lists any)
};

/// Reads every accounting file there is in `dirs` (a sandbox's cgroup dirs,
/// one per hierarchy; absolute paths). Missing files are simply absent from
/// the result. No throw.
CgroupUsage read_cgroup_usage(const std::vector<std::string>& dirs) noexcept;

/// CPU time (ns) of processes `pids` and of every child each of them has
/// reaped (/proc/PID/schedstat's run time in ns, else /proc/PID/stat
/// utime+stime; plus cutime+cstime, clock ticks): the CPU
/// of a live process tree whose root reaps its orphans (a sandbox's init).
/// Vanished pids count 0. No throw.
uint64_t procs_cpu_ns(const std::vector<pid_t>& pids) noexcept;

/// Storage I/O of live processes `pids` (/proc/PID/io read_bytes,
/// write_bytes), summed. No throw.
std::pair<uint64_t, uint64_t> procs_io_bytes(const std::vector<pid_t>& pids) noexcept;

/// A sandbox's usage once it has ended: `cg` read before its cgroups are
/// removed, `ru` the rusage wait4(2) gave for its init (the init's own and
/// its reaped descendants' CPU, max RSS, blocks), `duration_ms` its wall
/// time. The cgroup's numbers win where it has them. No throw.
ResourceUsage ended_usage(const CgroupUsage& cg, const struct rusage& ru, uint64_t duration_ms) noexcept;

/// A running sandbox's usage so far (cgroups, then /proc of its members).
/// `started_ms`: unix ms it started (0: duration unknown). No throw.
ResourceUsage live_usage(const CgroupUsage& cg, int64_t started_ms) noexcept;

}  // namespace sbx::runtime
