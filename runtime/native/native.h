// NativeBackend: runtime/backend.h over the native mechanics (Linux
// namespaces, overlay, cgroups, seccomp: runtime/native/native_backend.h,
// create.h, exec.h, copy.h, writable_layer.h; runtime/lifecycle.h). Memory
// checkpoints go through CRIU (runtime/native/criu.h, criu_checkpoint.h).
#pragma once
#include "runtime/backend.h"

namespace sbx::runtime {

class NativeBackend final : public Backend {
 public:
  static constexpr const char* kName = "native";
  using Backend::Backend;

  const char* name() const noexcept override { return kName; }
  bool run_layer_takes_disk_bound() const noexcept override { return true; }
  bool takes_stdin_pty() const noexcept override { return true; }
  bool supports(Operation op) const noexcept override;
  /// Root, the namespaces, overlayfs, seccomp filters; the cgroup mode.
  RuntimeSupport probe() const override;
  ExitStatus run(const SandboxSpec& spec, bool userns, const RunIo& io) override;
  std::string create(SandboxSpec spec, bool userns, int stdin_fd, bool reuse_layer) override;
  /// StartOptions::pooled (runtime/native/native_backend.h), labelled sbx.pool=warm.
  std::unique_ptr<WarmSandbox> start_warm(const SandboxSpec& spec, bool userns) override;
  int exec(const SandboxRef& sb, const ExecRequest& req) override;
  CopyResult copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) override;
  CopyResult copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path,
                      uint64_t max_bytes) override;
  /// lstat in the sandbox's root, as copy_out reads it (runtime/native/copy.h).
  PathStat stat_path(const SandboxRef& sb, const std::string& sandbox_path) override;
  /// Its cgroups' processes (runtime/linux/process_table.h): host pids and uids.
  ProcessTable processes(const SandboxRef& sb) override;
  /// The cgroup freezer, as a snapshot freezes it (runtime/linux/cgroup_freeze.h):
  /// throws when the freeze does not complete in 5 s (then it is thawed).
  void pause(const SandboxRef& sb) override;
  void unpause(const SandboxRef& sb) override;
  WritableLayer writable_layer(const SandboxRef& sb) override;
  SnapshotView snapshot_view(const SandboxRef& sb) override;
  /// Throws why `sb` cannot be checkpointed (runtime/native/criu_checkpoint.h
  /// refuse_native_checkpoint: CRIU missing or broken, GPUs, a network, …).
  void check_checkpoint(const SandboxRef& sb) override;
  /// CRIU dump of the sandbox (runtime/native/criu_checkpoint.h checkpoint_native).
  CheckpointResult checkpoint(const SandboxRef& sb, const CheckpointRequest& req) override;
  /// CRIU restore of req.count copies (runtime/native/criu_checkpoint.h restore_native).
  std::vector<RestoredSandbox> restore(const RestoreRequest& req) override;
};

}  // namespace sbx::runtime
