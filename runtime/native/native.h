// NativeBackend: runtime/backend.h over the native mechanics (Linux
// namespaces, overlay, cgroups, seccomp: runtime/native/native_backend.h,
// runtime/lifecycle.h, exec.h, copy.h). Memory checkpoints need CRIU
// (runtime/native/criu.h), which sbx does not drive yet.
#pragma once
#include "runtime/backend.h"

namespace sbx::runtime {

class NativeBackend final : public Backend {
 public:
  static constexpr const char* kName = "native";
  using Backend::Backend;

  const char* name() const noexcept override { return kName; }
  bool run_layer_takes_disk_bound() const noexcept override { return true; }
  bool supports(Operation op) const noexcept override;
  ExitStatus run(const SandboxSpec& spec, bool userns, const RunIo& io) override;
  std::string create(SandboxSpec spec, bool userns, int stdin_fd, bool reuse_layer) override;
  int exec(const SandboxRef& sb, const ExecRequest& req) override;
  CopyResult copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) override;
  CopyResult copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path) override;
  WritableLayer writable_layer(const SandboxRef& sb) override;
  /// Throws the CRIU message (runtime/native/criu.h): CRIU missing, broken,
  /// or not driven by sbx yet.
  void check_checkpoint(const SandboxRef& sb) override;
};

}  // namespace sbx::runtime
