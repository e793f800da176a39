// The parts of runtime/backend.h every backend shares: the refusal, and the
// operations that act only on the state dir and the kernel (runtime/lifecycle.h,
// which asks the backend for its own steps: end_all, release).
#include "runtime/backend.h"

#include "runtime/linux/cgroup_stats.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>

#include "common/error.h"
#include "common/fs.h"
#include "oci/runtime_config.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/sandbox_network.h"

namespace sbx::runtime {

const char* operation_name(Operation op) noexcept {
  switch (op) {
    case Operation::Run: return "run";
    case Operation::Create: return "create";
    case Operation::Exec: return "exec";
    case Operation::CopyIn: return "copy into a sandbox";
    case Operation::CopyOut: return "copy out of a sandbox";
    case Operation::Signal: return "signal";
    case Operation::Wait: return "wait";
    case Operation::Stats: return "stats";
    case Operation::FsSnapshot: return "file system snapshots";
    case Operation::DirSnapshot: return "directory snapshots";
    case Operation::Checkpoint: return "memory checkpoints";
    case Operation::Restore: return "restore from a memory checkpoint";
    case Operation::Remove: return "remove";
    case Operation::Pause: return "pausing";
    case Operation::Processes: return "process listings";
    case Operation::Warm: return "warm sandboxes";
    case Operation::NetworkConnect: return "network connect/disconnect of a running sandbox";
  }
  return "?";
}

SandboxSpec SandboxRef::spec() const { return oci::from_runtime_config(fs::read_file(dir + "/config.json")); }

std::string Backend::refusal(Operation op) const { return std::string(operation_name(op)) + " are not supported"; }

void Backend::require(Operation op) const {
  if (!supports(op)) throw Error(std::string(name()) + ": " + refusal(op));
}

void Backend::signal(const SandboxRef& sb, int sig) {
  require(Operation::Signal);
  kill_sandbox(sb.dir, sig);
}

void Backend::stop(const SandboxRef& sb, std::chrono::milliseconds grace, int sig) {
  require(Operation::Signal);
  stop_sandbox(sb.dir, grace, sig, this);
}

std::optional<EndRecord> Backend::wait(const SandboxRef& sb, std::chrono::milliseconds timeout) {
  require(Operation::Wait);
  return wait_sandbox(sb.dir, timeout);
}

void Backend::reap(const SandboxState& st) noexcept {
  // Its init (native) or monitor (gVisor) is this process's child when this
  // process created it; waitpid says ECHILD when it is not.
  if (st.pid > 0)
    while (::waitpid(st.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
}

namespace {

/// The first number in DIR/FILE, or nullopt when the file is missing.
std::optional<uint64_t> read_number(const std::string& dir, const char* file) {
  try {
    std::string s = fs::read_file(dir + "/" + file);
    return std::strtoull(s.c_str(), nullptr, 10);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

Stats Backend::stats(const SandboxRef& sb) {
  require(Operation::Stats);
  Stats s;
  // Each cgroup dir of the sandbox (v1: one per controller; v2: one) has
  // some of these files; take each from the first dir that has it.
  for (const auto& cg : sb.state.cgroups) {
    if (!s.memory_bytes) {
      if (auto v = read_number(cg, "memory.current")) s.memory_bytes = *v;
      else if (auto v1 = read_number(cg, "memory.usage_in_bytes")) s.memory_bytes = *v1;
    }
    if (!s.pids) {
      if (auto v = read_number(cg, "pids.current")) s.pids = *v;
    }
    if (!s.cpu_ns) {
      if (auto v = read_number(cg, "cpuacct.usage")) s.cpu_ns = *v;
    }
  }
  auto info = inspect_dir(sb.dir);
  s.oom_kills = info.oom_kills;
  s.usage = info.usage;
  CgroupUsage cg = read_cgroup_usage(sb.state.cgroups);
  // Hybrid hosts: from /proc (cgroup_stats.h), in ns (usage.cpu_ms rounds down).
  if (!s.cpu_ns) s.cpu_ns = cg.cpu_ns ? *cg.cpu_ns : procs_cpu_ns(cg.procs);
  if (!s.cpu_ns) s.cpu_ns = s.usage.cpu_ms * 1000000;
  s.memory_limit_bytes = cg.memory_limit.value_or(0);
  s.pids_limit = cg.pids_limit.value_or(0);
  if (auto net = network_io_bytes(sb.state.id)) {
    s.net_rx_bytes = net->first;
    s.net_tx_bytes = net->second;
  }
  return s;
}

namespace {

/// The error of an operation a backend says it supports but does not
/// implement (a backend's bug, not the user's).
[[noreturn]] void not_implemented(const Backend& b, Operation op) {
  throw Error(std::string(b.name()) + ": " + operation_name(op) + " are not implemented by this backend");
}

}  // namespace

std::unique_ptr<WarmSandbox> Backend::start_warm(const SandboxSpec&, bool) {
  require(Operation::Warm);
  not_implemented(*this, Operation::Warm);
}

ProcessTable Backend::processes(const SandboxRef&) {
  require(Operation::Processes);
  not_implemented(*this, Operation::Processes);
}

void Backend::pause(const SandboxRef&) {
  require(Operation::Pause);
  not_implemented(*this, Operation::Pause);
}

void Backend::unpause(const SandboxRef&) {
  require(Operation::Pause);
  not_implemented(*this, Operation::Pause);
}

WritableLayer Backend::writable_layer(const SandboxRef&) {
  require(Operation::FsSnapshot);
  not_implemented(*this, Operation::FsSnapshot);
}

SnapshotView Backend::snapshot_view(const SandboxRef&) {
  require(Operation::DirSnapshot);
  not_implemented(*this, Operation::DirSnapshot);
}

void Backend::check_checkpoint(const SandboxRef& sb) {
  require(Operation::Checkpoint);
  if (!state_alive(sb.state))
    throw Error(ErrorKind::Conflict,
                "sandbox " + sb.state.id.substr(0, 12) + " is not running; only a running sandbox can be checkpointed");
}

CheckpointResult Backend::checkpoint(const SandboxRef& sb, const CheckpointRequest&) {
  check_checkpoint(sb);
  not_implemented(*this, Operation::Checkpoint);
}

std::vector<RestoredSandbox> Backend::restore(const RestoreRequest&) {
  require(Operation::Restore);
  not_implemented(*this, Operation::Restore);
}

void Backend::remove(const std::string& id, bool force) {
  require(Operation::Remove);
  remove_sandbox(opts_.run_root, id, force, this);
}

void Backend::end_all(const SandboxRef&) noexcept {}

std::string Backend::release(const SandboxRef&) noexcept { return ""; }

void Backend::accept_gpus(SandboxSpec&, const std::string&) const {}

PathStat Backend::stat_path(const SandboxRef& sb, const std::string& sandbox_path) {
  throw Error(ErrorKind::Unsupported, std::string("stat of ") + sandbox_path + " in sandbox " +
                                          sb.state.id.substr(0, 12) + ": not offered by runtime '" + name() +
                                          "' without a copy");
}

}  // namespace sbx::runtime
