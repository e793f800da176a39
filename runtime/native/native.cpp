#include "runtime/native/native.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/cgroup_freeze.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/userns.h"
#include "runtime/native/copy.h"
#include "runtime/native/create.h"
#include "runtime/native/criu.h"
#include "runtime/native/criu_checkpoint.h"
#include "runtime/native/exec.h"
#include "runtime/native/native_backend.h"
#include "runtime/native/writable_layer.h"

namespace sbx::runtime {

namespace {

bool kernel_has_filesystem(const std::string& name) {
  try {
    std::string fs = fs::read_file("/proc/filesystems");
    return fs.find("\t" + name + "\n") != std::string::npos;
  } catch (const Error&) {
    return false;
  }
}

/// A pooled native sandbox (StartOptions::pooled) as a WarmSandbox.
class NativeWarmSandbox final : public WarmSandbox {
 public:
  NativeWarmSandbox(Sandbox sb, bool userns) : sb_(std::move(sb)), userns_(userns) {}
  ~NativeWarmSandbox() override { sb_.destroy(); }
  const std::string& id() const noexcept override { return sb_.id; }
  void run(const PooledCommand& cmd) override { run_pooled(sb_, cmd); }
  std::chrono::steady_clock::time_point started() const noexcept override { return sb_.started; }
  int ended_fd() const noexcept override { return sb_.pidfd; }
  void kill() noexcept override { sb_.signal(SIGKILL); }
  std::vector<IdMapping> id_map() const override {
    return userns_ ? id_maps(sb_.id_range) : std::vector<IdMapping>{};
  }
  ExitStatus wait(std::chrono::milliseconds timeout, bool forward_signals) override {
    WaitOptions wo;
    wo.timeout = timeout;
    wo.forward_signals = forward_signals;  // else the owner (the pool's) reads its signals itself
    return runtime::wait(sb_, wo);
  }

 private:
  Sandbox sb_;
  bool userns_;
};

/// What a start runs while its sandbox sets itself up: the gc of dead
/// sandboxes of every backend, when the registry made this backend: a bounded
/// step (the next few entries of the run root), so that a start costs the same
/// with 10 or 10,000 sandboxes alive; `sbx gc` checks them all.
std::function<void()> gc_while_starting(const BackendOptions& o) {
  if (!o.backend_of) return {};
  return [run_root = o.run_root, of = o.backend_of] { gc_step(run_root, of); };
}

}  // namespace

bool NativeBackend::supports(Operation op) const noexcept {
  // Checkpoint/Restore: CRIU's answer depends on the host and the sandbox,
  // so check_checkpoint asks it (and explains).
  (void)op;
  return true;
}

RuntimeSupport NativeBackend::probe() const {
  RuntimeSupport native{kName, true, "", {}};
  std::string missing;
  if (::geteuid() != 0) missing += "needs root; ";
  if (!kernel_has_filesystem("overlay")) missing += "overlayfs missing (modprobe overlay); ";
  for (const char* ns : {"mnt", "pid", "net", "ipc", "uts", "cgroup"}) {
    if (!fs::exists(std::string("/proc/self/ns/") + ns)) missing += std::string(ns) + " namespace missing; ";
  }
  if (!fs::exists("/proc/sys/kernel/seccomp/actions_avail")) missing += "seccomp filters missing; ";
  if (missing.empty()) {
    native.detail = "namespaces, overlayfs, seccomp; cgroups " + cgroup_mode_name() + "; " + describe_criu(criu_info());
  } else {
    native.usable = false;
    native.detail = missing.substr(0, missing.size() - 2);
  }
  // What memory snapshots (CRIU) can use here: "criu" (criu check passes)
  // and "criu_<feature>" (CriuInfo::features, runtime/native/criu.h).
  const CriuInfo& criu = criu_info();
  native.features["criu"] = criu.works;
  for (const auto& [f, ok] : criu.features) native.features["criu_" + f] = ok;
  return native;
}

ExitStatus NativeBackend::run(const SandboxSpec& spec, bool userns, const RunIo& io) {
  StartOptions so;
  so.run_root = opts_.run_root;
  so.userns = userns;
  so.gc_stale = gc_while_starting(opts_);
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
  co.gc_stale = gc_while_starting(opts_);
  return create_sandbox(std::move(spec), opts_.run_root, co);
}

std::unique_ptr<WarmSandbox> NativeBackend::start_warm(const SandboxSpec& spec, bool userns) {
  StartOptions so;
  so.run_root = opts_.run_root;
  so.userns = userns;
  so.pooled = true;
  sigemptyset(&so.command_mask);  // the command starts with no signal blocked
  SandboxState tmpl;
  tmpl.labels = spec.labels;  // what the sandbox is for (a build step: sbx.build)
  tmpl.labels["sbx.pool"] = "warm";
  so.state_template = &tmpl;
  return std::make_unique<NativeWarmSandbox>(start(spec, so), userns);
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

CopyResult NativeBackend::copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path,
                                   uint64_t max_bytes) {
  return copy_from_sandbox(sb.state, sandbox_path, host_path, max_bytes);
}

PathStat NativeBackend::stat_path(const SandboxRef& sb, const std::string& sandbox_path) {
  return stat_in_sandbox(sb.state, sandbox_path);
}

ProcessTable NativeBackend::processes(const SandboxRef& sb) { return cgroup_process_table(sb.state.cgroups); }

void NativeBackend::pause(const SandboxRef& sb) {
  // The cgroups that freeze all of it: the ones a snapshot freezes.
  std::vector<std::string> cgroups, members;
  freeze_cgroups(opts_.run_root, sb.state, cgroups, members);
  if (cgroups.empty()) throw Error(ErrorKind::Conflict,
              "cannot pause sandbox " + sb.state.id.substr(0, 12) + ": it is not running");
  CgroupFreeze f(cgroups, std::chrono::milliseconds(5000), members);
  f.release();
}

void NativeBackend::unpause(const SandboxRef& sb) {
  std::vector<std::string> cgroups, members;
  freeze_cgroups(opts_.run_root, sb.state, cgroups, members);
  thaw_cgroups(cgroups);
}

WritableLayer NativeBackend::writable_layer(const SandboxRef& sb) {
  return native_writable_layer(opts_.run_root, sb.state);
}

SnapshotView NativeBackend::snapshot_view(const SandboxRef& sb) {
  if (!state_alive(sb.state))
    throw Error(ErrorKind::Conflict,
                "sandbox " + sb.state.id.substr(0, 12) + " is not running; start it to snapshot a directory of it");
  SnapshotView v;
  freeze_cgroups(opts_.run_root, sb.state, v.freeze_cgroups, v.freeze_members);
  sandbox_id_maps(opts_.run_root, sb.state, v.uid_map, v.gid_map);
  return v;
}

void NativeBackend::check_checkpoint(const SandboxRef& sb) {
  if (!state_alive(sb.state))
    throw Error(ErrorKind::Conflict,
                "sandbox " + sb.state.id.substr(0, 12) + " is not running; only a running sandbox can be checkpointed");
  // What CRIU cannot save, or sbx cannot restore yet, comes first with its
  // reason; nothing is written.
  refuse_native_checkpoint(sb.state, sb.spec());
}

CheckpointResult NativeBackend::checkpoint(const SandboxRef& sb, const CheckpointRequest& req) {
  return checkpoint_native(opts_.run_root, sb.state, sb.spec(), req);
}

std::vector<RestoredSandbox> NativeBackend::restore(const RestoreRequest& req) {
  if (!criu_info().works) fail_native_checkpoint();
  return restore_native(opts_.run_root, req);
}

}  // namespace sbx::runtime
