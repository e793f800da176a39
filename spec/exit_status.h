// How a sandbox's workload ended, as every backend reports it; cli/ turns it
// into an exit code and a message (timeout, OOM) the same way for all of them.
#pragma once
#include <cstdint>

namespace sbx::spec {

/// What a sandbox used, for cost attribution (`--end-record`, `inspect`,
/// `sbx stats`, batch results). Read from the sandbox's cgroups where the host
/// has the controller (runtime/linux/cgroup_stats.h), else from the init's
/// rusage (wait4(2): the init and every process it reaped). 0: unknown.
struct ResourceUsage {
  uint64_t cpu_ms = 0;            ///< user+system CPU time, ms
  uint64_t max_rss_bytes = 0;     ///< peak memory: memory cgroup's high-water mark (incl. page cache), bytes
  uint64_t io_read_bytes = 0;     ///< block I/O read, bytes
  uint64_t io_write_bytes = 0;    ///< block I/O written, bytes
  uint64_t duration_ms = 0;       ///< wall time from start to end, ms
};

struct ExitStatus {
  int exit_code = 0;        ///< the workload's code, 128+N for signal N
  int signal = 0;           ///< N when the workload was killed by a signal
  bool timed_out = false;   ///< the timeout fired (the sandbox was killed)
  bool oom_killed = false;  ///< the workload died of the cgroup's OOM killer
  uint64_t oom_kills = 0;   ///< OOM kills in the sandbox (any process)
  uint64_t pids_max_hits = 0;  ///< forks refused at the pids limit
  int forwarded_signal = 0;    ///< last signal sbx received and forwarded
  ResourceUsage usage;         ///< what the sandbox used (native: always; gVisor: wall time)
};

/// The authoritative end reason of `s`, in the words of the end record
/// (runtime/state.h EndRecord): "timeout" (sbx's --timeout killed it), "oom"
/// (the memory cgroup's OOM killer killed the workload), "signal" (a signal
/// ended it), "exit". Unlike the workload's stderr and exit code, which it
/// controls, this comes from sbx's own bookkeeping.
inline const char* end_reason(const ExitStatus& s) {
  if (s.timed_out) return "timeout";
  if (s.oom_killed) return "oom";
  if (s.signal) return "signal";
  return "exit";
}

/// The exit code sbx reports for `s` on every path (sbx run's own status,
/// its --end-record, inspect, batch results): 124 when sbx's timeout killed
/// the workload (as timeout(1)), 137 when the OOM killer did (as docker), the
/// workload's own code (128+N for signal N) otherwise.
inline int reported_exit_code(const ExitStatus& s) {
  if (s.timed_out) return 124;
  if (s.oom_killed) return 137;
  return s.exit_code;
}

}  // namespace sbx::spec

namespace sbx {
using spec::ExitStatus;
using spec::reported_exit_code;
using spec::ResourceUsage;
}
namespace sbx::runtime {
using spec::ExitStatus;  // runtime::ExitStatus, as the backends return it
using spec::ResourceUsage;
using spec::end_reason;
using spec::reported_exit_code;
}
