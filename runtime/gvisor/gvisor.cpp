#include "runtime/gvisor/gvisor.h"

#include <signal.h>
#include <unistd.h>

#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/gvisor/gvisor_checkpoint.h"
#include "runtime/gvisor/gvisor_copy.h"
#include "runtime/gvisor/gvisor_lifecycle.h"
#include "runtime/gvisor/nvproxy.h"
#include "runtime/gvisor/runsc_features.h"
#include "runtime/lifecycle.h"

namespace sbx::runtime {

namespace {

/// What a start runs while it waits for runsc: the gc of dead sandboxes of
/// every backend, when the registry made this backend: a bounded step (the
/// next few entries of the run root); `sbx gc` checks them all.
std::function<void()> gc_while_starting(const BackendOptions& o) {
  if (!o.backend_of) return {};
  return [run_root = o.run_root, of = o.backend_of] { gc_step(run_root, of); };
}

}  // namespace

bool GvisorBackend::supports(Operation op) const noexcept {
  return op != Operation::FsSnapshot && op != Operation::DirSnapshot && op != Operation::Warm &&
         op != Operation::NetworkConnect;
}

std::string GvisorBackend::refusal(Operation op) const {
  if (op == Operation::DirSnapshot) return "directory snapshots need a native sandbox (its files live in runsc's memory)";
  if (op == Operation::FsSnapshot)
    return "file system snapshots need a native sandbox (its writes live in runsc's memory, not in a host directory); "
           "save it with 'sbx checkpoint' instead";
  if (op == Operation::Warm) return "the warm pool holds native sandboxes only (runsc cannot be set up ahead of its command)";
  if (op == Operation::NetworkConnect)
    return "runsc (gVisor) takes a sandbox's interfaces when it starts and keeps them; give the networks to "
           "'sbx create --network' instead";
  return Backend::refusal(op);
}

RuntimeSupport GvisorBackend::probe() const {
  RuntimeSupport gv{kName, false, "", {}};
  try {
    std::string path = find_runsc(opts_.runsc);
    RunscFeatures f = runsc_features(path);
    gv.detail = path + ": " + f.version + "; " + describe_runsc_features(f);
    gv.features = {{"nvproxy", f.nvproxy}, {"overlay_size", f.overlay_size}, {"exec_tty", f.exec_tty}};
    gv.usable = ::geteuid() == 0;
    if (!gv.usable) gv.detail += "; needs root";
  } catch (const Error& e) {
    gv.detail = e.what();
  }
  return gv;
}

ExitStatus GvisorBackend::run(const SandboxSpec& spec, bool /*userns: runsc runs the sandbox as its own user*/,
                              const RunIo& /*io: runsc_process relays sbx's own stdio*/) {
  // gVisor's own kernel is the boundary; runsc runs the sandbox's processes
  // as an unprivileged user of its own.
  GvisorOptions go;
  go.run_root = opts_.run_root;
  go.runsc = opts_.runsc;
  go.gc_stale = gc_while_starting(opts_);
  return run_gvisor(spec, go);
}

std::string GvisorBackend::create(SandboxSpec spec, bool /*userns*/, int stdin_fd, bool reuse_layer) {
  if (reuse_layer) remove(spec.id, true);  // (its layer was in runsc's memory)
  const int in = spec.stdin_open ? stdin_fd : -1;
  return create_gvisor_sandbox(std::move(spec), opts_.run_root, opts_.runsc, in, gc_while_starting(opts_));
}

int GvisorBackend::exec(const SandboxRef& sb, const ExecRequest& req) {
  return exec_in_gvisor(sb.dir, sb.state, sb.spec(), req);
}

CopyResult GvisorBackend::copy_in(const SandboxRef& sb, const std::string& host_path, const std::string& sandbox_path) {
  return copy_into_gvisor(sb.dir, sb.state, sb.spec(), host_path, sandbox_path);
}

CopyResult GvisorBackend::copy_out(const SandboxRef& sb, const std::string& sandbox_path, const std::string& host_path,
                                   uint64_t max_bytes) {
  return copy_from_gvisor(sb.dir, sb.state, sb.spec(), sandbox_path, host_path, max_bytes);
}

PathStat GvisorBackend::stat_path(const SandboxRef& sb, const std::string& sandbox_path) {
  require(Operation::CopyOut);
  return stat_in_gvisor(sb.dir, sb.state, sb.spec(), sandbox_path);
}

void GvisorBackend::signal(const SandboxRef& sb, int sig) {
  require(Operation::Signal);
  kill_gvisor(sb.dir, sb.state, sig);
}

ProcessTable parse_runsc_ps(std::string_view text) {
  ProcessTable t;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<std::string> cols;
    for (std::string w; ls >> w;) cols.push_back(w);
    if (cols.empty()) continue;
    if (t.titles.empty()) {
      if (cols.front() != "UID") continue;  // (a warning before the table)
      t.titles = cols;
      continue;
    }
    while (cols.size() > t.titles.size() && cols.size() >= 2) {
      cols[cols.size() - 2] += " " + cols.back();
      cols.pop_back();
    }
    t.rows.push_back(std::move(cols));
  }
  return t;
}

ProcessTable GvisorBackend::processes(const SandboxRef& sb) { return parse_runsc_ps(ps_gvisor(sb.dir, sb.state)); }

void GvisorBackend::pause(const SandboxRef& sb) { pause_gvisor(sb.dir, sb.state, true); }

void GvisorBackend::unpause(const SandboxRef& sb) { pause_gvisor(sb.dir, sb.state, false); }

CheckpointResult GvisorBackend::checkpoint(const SandboxRef& sb, const CheckpointRequest& req) {
  require(Operation::Checkpoint);
  GvisorCheckpointRequest g = gvisor_request(opts_.run_root, sb.state);
  g.runsc = find_runsc(opts_.runsc);
  // runsc's own --leave-running (destroy + restore in place) fails on
  // Debian's runsc 20221219 and kills the sandbox: sbx does the same two steps.
  if (req.leave_running) return checkpoint_gvisor_resume(req.dir, req.name, opts_.run_root, g);
  checkpoint_gvisor(req.dir, g);
  // runsc has stopped the sandbox; its monitor records the end a moment
  // later. Wait for that record so that `sbx ps` right after the checkpoint
  // says Exited, not Up (bounded: a monitor that never writes is gc's).
  wait_sandbox(sb.dir, std::chrono::seconds(10));
  CheckpointResult r;
  r.image = g.image;
  return r;
}

std::vector<RestoredSandbox> GvisorBackend::restore(const RestoreRequest& req) {
  require(Operation::Restore);
  GvisorRestoreOptions o;
  o.runsc = find_runsc(opts_.runsc);
  o.run_root = opts_.run_root;
  o.count = req.count;
  o.name = req.name;
  return restore_gvisor(req.dir, req.snapshot, o);
}

void GvisorBackend::end_all(const SandboxRef& sb) noexcept {
  // Through runsc (kill --all), so that the monitor ends it the normal way
  // and runsc deletes its own state: far quicker than `runsc delete --force`
  // on a sandbox whose runsc died with a SIGKILLed monitor.
  try {
    kill_gvisor(sb.dir, sb.state, SIGKILL);
  } catch (const std::exception&) {
  }
}

std::string GvisorBackend::release(const SandboxRef& sb) noexcept {
  // A monitor killed outright wrote no end record: its sandbox was killed.
  if (fs::exists(sb.dir + "/released")) return "";
  try {
    write_end_if_absent(sb.dir, EndRecord{"killed", 137, SIGKILL, 0});
  } catch (const std::exception&) {
  }
  release_gvisor(sb.dir, sb.state);
  return "runsc state and cgroups";
}

void GvisorBackend::accept_gpus(SandboxSpec& spec, const std::string& host_driver_version) const {
  require_nvproxy(opts_.runsc, host_driver_version);
  spec.annotations["dev.sbx.gvisor.nvproxy"] = "true";
}

}  // namespace sbx::runtime
