// The gVisor backend: runs a SandboxSpec under gVisor's runsc
// (https://gvisor.dev/docs/), with the same flags and exit codes as the
// native backend. sbx writes an OCI bundle (config.json from the spec, rootfs
// from an overlay of the image layers) and delegates to `runsc run`.
// Writes the sandbox makes land in runsc's memory-backed root overlay
// (--overlay2=root:memory): nothing is written to the image layers or the host.
#pragma once
#include <functional>
#include <string>

#include "spec/exit_status.h"
#include "spec/sandbox_spec.h"

namespace sbx::runtime {

struct GvisorOptions {
  std::string runsc;     ///< path to runsc; empty: search $PATH
  std::string run_root;  ///< sbx's run root; runsc's --root lives under it
  /// Runs before the sandbox starts (the backend's gc of dead sandboxes,
  /// runtime/lifecycle.h gc); empty: nothing.
  std::function<void()> gc_stale;
};

/// Finds runsc: `explicit_path` if given (must be executable), else $PATH.
/// Throws sbx::Error "runsc not found …; install the Debian package 'runsc'
/// or pass --runsc PATH".
std::string find_runsc(const std::string& explicit_path);

/// Returns the version line of runsc ("runsc version 0.0~20221219.0"), or
/// throws sbx::Error when it cannot be executed.
std::string runsc_version(const std::string& runsc);

/// Runs `spec` to completion under runsc. Returns how the workload ended:
/// its own code, 128+N for signal N, timed_out when spec.timeout fired,
/// oom_killed (137) when the sandbox's memory cgroup OOM-killed it (gVisor
/// has no OOM killer of its own: the host's kills the Sentry or a stub, which
/// ends the whole sandbox). With spec.process.terminal the workload gets a pty
/// from runsc (--console-socket, runtime/linux/console_socket.h) that is relayed to
/// sbx's stdin/stdout (runtime/linux/pty_relay.h); signals, the timeout and a second
/// SIGINT/SIGTERM are handled as natively (runtime/gvisor/runsc_process.h).
/// Throws sbx::Error with exit code 127/126 when the command is missing / not
/// executable in the sandbox, 125 when runsc itself fails (its log is then part
/// of the message), and before anything starts for options gVisor cannot honour.
/// Everything it creates (bundle, runsc state, cgroups, mounts) is gone when it returns.
ExitStatus run_gvisor(const SandboxSpec& spec, const GvisorOptions& opts);

}  // namespace sbx::runtime
