// GvisorBackend: runtime/backend.h over gVisor's runsc
// (runtime/gvisor/gvisor_backend.h for run, gvisor_lifecycle.h for create,
// exec, kill, pause, ps and release, gvisor_copy.h for cp,
// gvisor_checkpoint.h for memory checkpoints, nvproxy.h for GPUs). The
// sandbox's files live in runsc's memory overlay, out of the host's reach:
// no fs or directory snapshots; memory checkpoints instead.
#pragma once
#include <string_view>

#include "runtime/backend.h"

namespace sbx::runtime {

class GvisorBackend final : public Backend {
 public:
  static constexpr const char* kName = "gvisor";
  using Backend::Backend;

  const char* name() const noexcept override { return kName; }
  bool supports(Operation op) const noexcept override;
  std::string refusal(Operation op) const override;
  /// runsc (BackendOptions::runsc, or on $PATH): its version and features
  /// (runtime/gvisor/runsc_features.h); needs root.
  RuntimeSupport probe() const override;
  ExitStatus run(const SandboxSpec& spec, bool userns, const RunIo& io) override;
  std::string create(SandboxSpec spec, bool userns, int stdin_fd, bool reuse_layer) override;
  int exec(const SandboxRef& sb, const ExecRequest& req) override;
  CopyResult copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) override;
  CopyResult copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path,
                      uint64_t max_bytes) override;
  /// stat_in_gvisor: the first header of the image's tar of the path,
  /// nothing staged on the host.
  PathStat stat_path(const SandboxRef& sb, const std::string& sandbox_path) override;
  /// kill_gvisor: SIGKILL through runsc (kill --all), others to the monitor.
  void signal(const SandboxRef& sb, int sig) override;
  /// `runsc ps`: the processes as the Sentry sees them (pids inside the sandbox).
  ProcessTable processes(const SandboxRef& sb) override;
  /// `runsc pause` / `runsc resume`.
  void pause(const SandboxRef& sb) override;
  void unpause(const SandboxRef& sb) override;
  /// `runsc checkpoint` (runtime/gvisor/gvisor_checkpoint.h); leave_running:
  /// checkpoint, then restore in place.
  CheckpointResult checkpoint(const SandboxRef& sb, const CheckpointRequest& req) override;
  /// `runsc restore`, one sandbox after another.
  std::vector<RestoredSandbox> restore(const RestoreRequest& req) override;
  /// runsc kill --all.
  void end_all(const SandboxRef& sb) noexcept override;
  /// release_gvisor (runsc delete --force, runsc's cgroups), recorded as
  /// killed when it has no end record yet.
  std::string release(const SandboxRef& sb) noexcept override;
  /// GPUs pass through runsc --nvproxy (runtime/gvisor/nvproxy.h): refuses a
  /// runsc without it; marks the spec (annotation dev.sbx.gvisor.nvproxy).
  void accept_gpus(SandboxSpec& spec, const std::string& host_driver_version) const override;
};

/// `runsc ps`'s table (a header line UID PID PPID C TTY STIME TIME CMD, then a
/// line per process; columns separated by spaces; the last column takes the
/// rest of its line; lines before the header, such as warnings, skipped) as a
/// ProcessTable.
ProcessTable parse_runsc_ps(std::string_view text);

}  // namespace sbx::runtime
