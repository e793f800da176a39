#include "runtime/gvisor/gvisor_backend.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/gvisor/nvproxy.h"
#include "oci/runtime_config.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/console_socket.h"
#include "runtime/gvisor/gvisor_bundle.h"
#include "runtime/gvisor/gvisor_network.h"
#include "runtime/lifecycle.h"
#include "runtime/gvisor/runsc_process.h"
#include "runtime/linux/mounts.h"
#include "runtime/state.h"
#include "runtime/user.h"

namespace sbx::runtime {

using namespace gvisor;  // the shared bundle helpers (runtime/gvisor/gvisor_bundle.h)

std::string runsc_version(const std::string& runsc) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("pipe");
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for runsc --version");
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    ::execl(runsc.c_str(), runsc.c_str(), "--version", nullptr);
    ::_exit(127);
  }
  ::close(p[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) throw Error(runsc + " --version failed: " + out);
  return out.substr(0, out.find('\n'));
}

ExitStatus run_gvisor(const SandboxSpec& spec, const GvisorOptions& opts) {
  if (spec.id.empty()) throw Error("gvisor: the sandbox has no id");
  if (spec.layer_dirs.empty()) throw Error("gvisor: the image has no layers to use as a rootfs");
  auto nv = spec.annotations.find("dev.sbx.gvisor.nvproxy");
  const bool nvproxy = nv != spec.annotations.end() && nv->second == "true";
  if (!spec.devices.empty() && !nvproxy)
    throw Error("gvisor: device passthrough under gVisor is for NVIDIA GPUs only (--gpus, through runsc --nvproxy); "
                "for --device use --runtime native");
  const std::string runsc = find_runsc(opts.runsc);
  // --gpus: the selected /dev/nvidia* nodes are in spec.devices and the driver
  // files in spec.mounts (gpu/nvidia.h, as on native); runsc --nvproxy takes
  // the GPUs from those device entries. A runsc without it is refused here too
  // (the CLI checked already; library callers may not have).
  if (nvproxy) require_nvproxy(runsc);

  // What killed sandboxes left behind (as the native start does); runsc's own
  // start takes far longer than this scan.
  if (opts.gc_stale) opts.gc_stale();
  const std::string dir = opts.run_root + "/" + spec.id;
  const std::string bundle = dir + "/bundle";
  const std::string rootfs = bundle + "/rootfs";
  const std::string scratch = dir + "/scratch";
  const std::string state = dir + "/runsc";
  const std::string logfile = dir + "/runsc.log";
  SandboxSpec resolved = spec;
  apply_pids_limit_as_nproc(resolved);
  fs::mkdir_p(rootfs, 0700);
  fs::mkdir_p(scratch, 0700);
  fs::mkdir_p(state, 0700);

  // sbx makes the sandbox's cgroup itself, as for the native backend (under
  // sbx's own cgroup, limits applied by runtime/linux/cgroups.h), and moves the
  // process that becomes `runsc run` into it before runsc starts: runsc, its
  // gofer and the Sentry are born inside, and sbx reads the OOM kill count
  // after runsc has ended. runsc does no cgroup work (--ignore-cgroups, no
  // cgroupsPath): given a cgroupsPath, it joins its cgroups and later leaves them again,
  // and each of those two moves waits for an RCU grace period (measured here:
  // 12-27 ms per start, a tenth of it); sbx's one move overlaps the mounts.
  // (runsc then sizes the Sentry from the host, as /proc/meminfo reads inside
  // a native sandbox, docker's or podman's; the limit itself is the cgroup's.)
  Cgroup cgroup;
  // --network private: the lease, veth, rules and DNS proxy, in a namespace
  // that runsc joins (runtime/gvisor/gvisor_network.h).
  GvisorNetwork net;
  // Removes everything this run created; safe to call more than once.
  auto cleanup = [&] {
    // `runsc run` deletes its container when it ends normally, leaving its
    // --root empty; a second runsc (~20 ms, a tenth of a start) is needed only
    // when it did not (killed at a timeout, failed, or SIGKILLed).
    if (runsc_left_state(state)) run_quiet({runsc, "--root", state, "delete", "--force", spec.id});
    cgroup.destroy();
    // What a runsc given a cgroupsPath would have made (state of an older sbx).
    destroy_cgroup_dirs(sandbox_cgroup_dirs(spec.id));
    // After runsc: its sandbox process held the namespace (and so the veth).
    release_network(net);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  try {
    cgroup = Cgroup::create(spec.id, resolved.resources);
    if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User)
      net = prepare_network(resolved, opts.run_root, dir + "/net", false);
  } catch (...) {
    cleanup();
    throw;
  }

  // config.json is written by the child once the rootfs is mounted: the
  // user (-u / the image's User) resolves in the image's own /etc/passwd.
  oci::RuntimeConfigOptions ro;
  ro.rootfs_path = rootfs;
  ro.network_namespace_path = net.netns_path;

  // --ignore-cgroups: runsc and its children stay in sbx's cgroup (without
  // it, runsc makes and joins a cgroup "/<id>" of its own at the top).
  std::vector<std::string> argv = {runsc, "--root", state, "--log", logfile, "--ignore-cgroups"};
  // Writes go to a memory-backed overlay inside the sandbox: the image
  // layers stay untouched and nothing is left on the host's disk (--disk:
  // through the gofer into the bounded tmpfs).
  const RootWrites writes = spec.readonly_rootfs ? RootWrites::ReadOnly
                            : spec.disk_bytes    ? RootWrites::Host
                                                 : RootWrites::Memory;
  for (auto& f : runsc_sandbox_flags(spec.network, writes, nvproxy)) argv.push_back(std::move(f));
  argv.insert(argv.end(), {"run", "--bundle", bundle});
  // -t: runsc makes the pty and sends its master over this socket
  // (runtime-spec process.terminal); sbx relays it as the native backend does.
  ConsoleSocket console;
  if (spec.process.terminal) {
    try {
      console = ConsoleSocket(dir + "/console.sock");
    } catch (...) {
      cleanup();
      throw;
    }
    argv.insert(argv.end(), {"--console-socket", console.path()});
  }
  argv.push_back(spec.id);

  // Signals to sbx are read through a signalfd by wait_runsc() and forwarded.
  sigset_t old;
  ::sigprocmask(SIG_BLOCK, &runsc_wait_signals(), &old);

  const auto started = std::chrono::steady_clock::now();  // --timeout counts from here
  // errpipe: the child's setup error (EOF at exec); gopipe: the parent's "you
  // are in the cgroup, start runsc" (EOF without it: the parent failed). A
  // socket, so that telling a child that already failed raises no SIGPIPE.
  int errpipe[2], gopipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) < 0) throw_errno("pipe");
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gopipe) < 0) {
    int e = errno;
    ::close(errpipe[0]);
    ::close(errpipe[1]);
    throw_errno("pipe", e);
  }
  // Output to a regular file goes through a pipe (runsc would write it from offset 0).
  FileOutput file_out(spec.process.terminal ? -1 : 1), file_err(spec.process.terminal ? -1 : 2);
  pid_t child = ::fork();
  if (child < 0) {
    int e = errno;
    for (int fd : {errpipe[0], errpipe[1], gopipe[0], gopipe[1]}) ::close(fd);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    cleanup();
    throw_errno("fork runsc", e);
  }
  if (child == 0) {
    ::close(errpipe[0]);
    ::close(gopipe[1]);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    std::string err;
    try {
      if (!spec.stdin_open || spec.process.terminal) {  // (with -t, sbx relays stdin)
        int fd = ::open("/dev/null", O_RDONLY);
        if (fd >= 0) ::dup2(fd, 0);
      }
      if (file_out.write_end >= 0) ::dup2(file_out.write_end, 1);
      if (file_err.write_end >= 0) ::dup2(file_err.write_end, 2);
      // A private mount namespace for runsc and its gofer: the rootfs overlay
      // exists only there and vanishes with them, so it can never leak.
      if (::unshare(CLONE_NEWNS) < 0) throw_errno("unshare mount namespace for runsc");
      if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) throw_errno("make / private");
      if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User) hide_host_net_sysctls_from_runsc();
      mount_rootfs(spec.layer_dirs, scratch, rootfs, spec.disk_bytes);
      resolve_process_user(resolved.process, rootfs);
      idmap_volumes_for_gvisor(resolved.mounts, bundle);  // never host root through a volume
      fs::write_file_atomic(bundle + "/config.json", oci::to_runtime_config(resolved, ro), 0600);
      char go = 0;
      while (::read(gopipe[0], &go, 1) < 0 && errno == EINTR) {
      }
      if (go != 'G') ::_exit(125);  // the parent failed and cleans up
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(runsc.c_str(), a.data());
      throw_errno("execute " + runsc);
    } catch (const std::exception& e) {
      err = e.what();
    }
    (void)!::write(errpipe[1], err.data(), err.size());
    ::_exit(125);
  }
  ::close(errpipe[1]);
  ::close(gopipe[0]);
  try {
    cgroup.add(child);
  } catch (const Error& e) {
    // (A child that failed its setup first is gone: its error is the one to report.)
    ::close(gopipe[1]);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    std::string child_err;
    char buf[1024];
    ssize_t n;
    while ((n = ::read(errpipe[0], buf, sizeof buf)) > 0) child_err.append(buf, static_cast<size_t>(n));
    ::close(errpipe[0]);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    cleanup();
    if (!child_err.empty()) throw Error("gvisor: " + child_err);
    throw;
  }
  (void)!::send(gopipe[1], "G", 1, MSG_NOSIGNAL);
  ::close(gopipe[1]);
  file_out.parent_side();
  file_err.parent_side();
  FileOutputPump pump(file_out, file_err);
  // state.json names the sandbox's holder (runsc) and cgroups, so that `sbx ps`,
  // `sbx rmi` and, if sbx itself is killed, `sbx gc` / the next start see it
  // and can remove everything (runtime/lifecycle.h remove_sandbox).
  try {
    SandboxState st;
    st.id = spec.id;
    st.name = spec.name;
    st.image_id = spec.image_id;
    st.image_ref = spec.image_ref;
    st.runtime = "gvisor";
    st.pid = child;
    st.pid_start = process_start_time(child);
    st.created_ms = st.started_ms = now_ms();
    st.cgroups = sandbox_cgroup_dirs(spec.id);
    st.command = spec.process.args;
    // This sbx removes the dir when the run ends (cleanup()): the gc of
    // another run starting meanwhile must leave it alone (runtime/state.h).
    st.owner_pid = ::getpid();
    st.owner_start = process_start_time(st.owner_pid);
    write_state(dir, st);
  } catch (const Error& e) {
    log::warn("gvisor: cannot write the state of sandbox " + spec.id.substr(0, 12) + ": " + e.what());
  }
  std::string child_err;
  {
    char buf[1024];
    ssize_t n;
    while ((n = ::read(errpipe[0], buf, sizeof buf)) > 0) child_err.append(buf, static_cast<size_t>(n));
    ::close(errpipe[0]);
  }

  // -t: the pty master arrives once runsc has set the sandbox up; a runsc
  // that fails first ends (its pidfd becomes readable) without sending one.
  int master = -1;
  if (spec.process.terminal && child_err.empty()) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
    try {
      master = console.receive_master(pidfd, -1);
    } catch (const Error& e) {
      log::warn("gvisor: no terminal from runsc: " + std::string(e.what()));
    }
    if (pidfd >= 0) ::close(pidfd);
    console.close();
  }
  RunscWaitOptions wo;
  wo.runsc = runsc;
  wo.root = state;
  wo.id = spec.id;
  if (spec.timeout.count() > 0) wo.deadline = started + spec.timeout;
  wo.pty_master = master;
  RunscWaitResult wr;
  try {
    wr = wait_runsc(child, wo);
  } catch (...) {
    if (master >= 0) ::close(master);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    cleanup();
    throw;
  }
  if (master >= 0) ::close(master);
  pump.finish(500);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  const int status = wr.wait_status;
  const bool timed_out = wr.timed_out;
  // gVisor has no OOM killer of its own: at --memory the host's memory cgroup
  // of the sandbox OOM-kills the Sentry or a stub process, which takes the
  // whole sandbox down. Read before cleanup().
  const uint64_t oom_kills = cgroup.oom_kills();

  std::string log = read_tail(logfile, 64 * 1024);
  cleanup();

  if (!child_err.empty()) throw Error("gvisor: " + child_err);
  ExitStatus st;
  st.forwarded_signal = wr.forwarded_signal;
  st.oom_kills = oom_kills;
  if (timed_out) {
    st.timed_out = true;
    st.exit_code = kExitTimeout;
    return st;
  }
  if (WIFSIGNALED(status)) {
    st.signal = WTERMSIG(status);
    st.exit_code = 128 + st.signal;
  } else {
    st.exit_code = WEXITSTATUS(status);
    if (st.exit_code > 128 && st.exit_code < 128 + 65) st.signal = st.exit_code - 128;  // runsc: 128+N for signal N
  }
  // gVisor has no OOM killer of its own: the host's memory cgroup kills the
  // Sentry, a stub, or (while it sets the sandbox up inside the cgroup) runsc
  // itself; each ends the sandbox, and runsc then reports a SIGKILL or its own
  // failure (128). Reported as on the native backend: 137, "out of memory".
  // runsc 20240729 (systrap platform) survives the kill of a stub process,
  // the host process holding one application process's memory: that
  // process then ends with status 1, no signal, so any failure after an OOM
  // kill counts (as a long-lived sandbox's monitor counts any OOM kill).
  if (oom_kills > 0 && (st.signal == SIGKILL || (WIFEXITED(status) && st.exit_code != 0))) {
    st.oom_killed = true;
    st.signal = SIGKILL;
    st.exit_code = 128 + SIGKILL;
    return st;
  }
  std::string errors = runsc_errors(log);
  if (WIFEXITED(status) && st.exit_code == 128 && !errors.empty()) {
    // runsc failed before or while starting the command.
    throw_if_command_error(errors, spec.process.args[0]);  // 127 / 126, as create and exec
    throw Error("runsc failed to start the sandbox:\n" + errors);
  }
  return st;
}

}  // namespace sbx::runtime
