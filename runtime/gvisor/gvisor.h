// GvisorBackend: runtime/backend.h over gVisor's runsc
// (runtime/gvisor/gvisor_backend.h for run, gvisor_lifecycle.h for create and
// exec, gvisor_copy.h for cp). The sandbox's files live in runsc's memory
// overlay, out of the host's reach: no fs or directory snapshots; memory
// checkpoints instead (snapshot/checkpoint.h).
#pragma once
#include "runtime/backend.h"

namespace sbx::runtime {

class GvisorBackend final : public Backend {
 public:
  static constexpr const char* kName = "gvisor";
  using Backend::Backend;

  const char* name() const noexcept override { return kName; }
  bool supports(Operation op) const noexcept override;
  std::string refusal(Operation op) const override;
  ExitStatus run(const SandboxSpec& spec, bool userns, const RunIo& io) override;
  std::string create(SandboxSpec spec, bool userns, int stdin_fd, bool reuse_layer) override;
  int exec(const SandboxRef& sb, const ExecRequest& req) override;
  CopyResult copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) override;
  CopyResult copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path) override;
  bool gpus_need_nvproxy() const noexcept override { return true; }
};

}  // namespace sbx::runtime
