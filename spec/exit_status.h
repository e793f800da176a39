// How a sandbox's workload ended, as every backend reports it; cli/ turns it
// into an exit code and a message (timeout, OOM) the same way for all of them.
#pragma once
#include <cstdint>

namespace sbx::spec {

struct ExitStatus {
  int exit_code = 0;        ///< the workload's code, 128+N for signal N
  int signal = 0;           ///< N when the workload was killed by a signal
  bool timed_out = false;   ///< the timeout fired (the sandbox was killed)
  bool oom_killed = false;  ///< the workload died of the cgroup's OOM killer
  uint64_t oom_kills = 0;   ///< OOM kills in the sandbox (any process)
  uint64_t pids_max_hits = 0;  ///< forks refused at the pids limit
  int forwarded_signal = 0;    ///< last signal sbx received and forwarded
};

}  // namespace sbx::spec

namespace sbx {
using spec::ExitStatus;
}
namespace sbx::runtime {
using spec::ExitStatus;  // runtime::ExitStatus, as the backends return it
}
