#include "runtime/native/native.h"

#include "common/error.h"
#include "runtime/lifecycle.h"
#include "runtime/native/criu.h"
#include "runtime/native/native_backend.h"
#include "runtime/native/writable_layer.h"

namespace sbx::runtime {

bool NativeBackend::supports(Operation op) const noexcept {
  // Checkpoint/Restore: CRIU's answer depends on the host, so
  // check_checkpoint asks it (and explains); restore has nothing to restore.
  return op != Operation::Restore;
}

ExitStatus NativeBackend::run(const SandboxSpec& spec, bool userns, const RunIo& io) {
  StartOptions so;
  so.run_root = opts_.run_root;
  so.userns = userns;
  Sandbox sb = start(spec, so);
  WaitOptions wo;
  wo.timeout = spec.timeout;
  wo.forward_signals = io.forward_signals;
  wo.stdin_fd = io.stdin_fd;
  wo.stdout_fd = io.stdout_fd;
  ExitStatus st = runtime::wait(sb, wo);
  sb.destroy();
  return st;
}

std::string NativeBackend::create(SandboxSpec spec, bool userns, int stdin_fd, bool reuse_layer) {
  CreateOptions co;
  co.reuse_layer = reuse_layer;
  co.userns = userns;
  co.stdin_fd = stdin_fd;
  return create_sandbox(std::move(spec), opts_.run_root, co);
}

int NativeBackend::exec(const SandboxRef& sb, const ExecRequest& req) {
  return exec_in_sandbox(sb.dir, sb.state, sb.spec(), req);
}

CopyResult NativeBackend::copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) {
  uint32_t uid = 0, gid = 0;
  try {
    // Files are owned by the sandbox's root: the host ids it maps to.
    SandboxSpec spec = sb.spec();
    for (const auto& m : spec.uid_mappings)
      if (m.container_id == 0) uid = m.host_id;
    for (const auto& m : spec.gid_mappings)
      if (m.container_id == 0) gid = m.host_id;
  } catch (const Error&) {
  }
  return copy_into_sandbox(sb.state, host_path, sandbox_path, uid, gid);
}

CopyResult NativeBackend::copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path) {
  return copy_from_sandbox(sb.state, sandbox_path, host_path);
}

WritableLayer NativeBackend::writable_layer(const SandboxRef& sb) {
  return native_writable_layer(opts_.run_root, sb.state);
}

void NativeBackend::check_checkpoint(const SandboxRef&) { fail_native_checkpoint(); }

}  // namespace sbx::runtime
