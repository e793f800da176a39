#include "runtime/gvisor/gvisor.h"

#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/gvisor/gvisor_copy.h"
#include "runtime/gvisor/gvisor_lifecycle.h"
#include "runtime/lifecycle.h"

namespace sbx::runtime {

bool GvisorBackend::supports(Operation op) const noexcept {
  return op != Operation::FsSnapshot && op != Operation::DirSnapshot;
}

std::string GvisorBackend::refusal(Operation op) const {
  if (op == Operation::DirSnapshot) return "directory snapshots need a native sandbox (its files live in runsc's memory)";
  if (op == Operation::FsSnapshot)
    return "file system snapshots need a native sandbox (its writes live in runsc's memory, not in a host directory); "
           "save it with 'sbx checkpoint' instead";
  return Backend::refusal(op);
}

ExitStatus GvisorBackend::run(const SandboxSpec& spec, bool /*userns: runsc runs the sandbox as its own user*/,
                              const RunIo& /*io: runsc_process relays sbx's own stdio*/) {
  // gVisor's own kernel is the boundary; runsc runs the sandbox's processes
  // as an unprivileged user of its own.
  GvisorOptions go;
  go.run_root = opts_.run_root;
  go.runsc = opts_.runsc;
  return run_gvisor(spec, go);
}

std::string GvisorBackend::create(SandboxSpec spec, bool /*userns*/, int stdin_fd, bool reuse_layer) {
  if (reuse_layer) remove_sandbox(opts_.run_root, spec.id, true);  // (its layer was in runsc's memory)
  const int in = spec.stdin_open ? stdin_fd : -1;
  return create_gvisor_sandbox(std::move(spec), opts_.run_root, opts_.runsc, in);
}

int GvisorBackend::exec(const SandboxRef& sb, const ExecRequest& req) {
  return exec_in_gvisor(sb.dir, sb.state, sb.spec(), req);
}

CopyResult GvisorBackend::copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) {
  return copy_into_gvisor(sb.dir, sb.state, sb.spec(), host_path, sandbox_path);
}

CopyResult GvisorBackend::copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path) {
  return copy_from_gvisor(sb.dir, sb.state, sb.spec(), sandbox_path, host_path);
}

}  // namespace sbx::runtime
