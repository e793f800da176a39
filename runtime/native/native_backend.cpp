#include "runtime/native/native_backend.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/cgroup_stats.h"
#include "runtime/native/child_channel.h"
#include "runtime/linux/clone_child.h"
#include "runtime/linux/credentials.h"
#include "runtime/native/init.h"
#include "runtime/native/init_binary.h"
#include "runtime/native/pooled_command.h"
#include "runtime/linux/mounts.h"
#include "runtime/linux/namespaces.h"
#include "runtime/linux/time_namespace.h"
#include "runtime/linux/network.h"
#include "runtime/linux/pty.h"
#include "runtime/linux/pty_relay.h"
#include "runtime/linux/rlimits.h"
#include "runtime/linux/seccomp.h"
#include "runtime/linux/self_exec.h"
#include "runtime/state.h"
#include "runtime/user.h"
#include "runtime/linux/userns.h"
#include "spec/spec_json.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace sbx::runtime {

using nlohmann::json;

namespace {

// The error channel to sbx (send_error, send_fd) and the exec step are in
// runtime/native/child_channel.h, shared with sbx exec.

struct ChildCtx {
  const SandboxSpec* spec;
  const Cgroup* cgroup;
  std::string state_dir;
  std::string hostname;
  int sock;
  sigset_t caller_mask;
  // User namespace (runtime/linux/userns.h): detached trees opened by sbx before
  // the clone, so the child has the same fds; sbx idmaps them after it has
  // written the child's id maps, then sends 'U'.
  bool userns = false;
  std::vector<int> idmapped_layers;
  std::vector<BindSource> binds;
  // Detached (sbx create) only: the holder's state dir fd and the log pipe.
  bool detached = false;
  int state_dirfd = -1;
  int log_r = -1, log_w = -1;  ///< stdout pipe
  int err_r = -1, err_w = -1;  ///< stderr pipe (the log keeps the streams apart)
  int commit_r = -1, commit_w = -1;  ///< the commit socket pair (Sandbox::commit)
  int init_exe = -1;  ///< detached: sbx-init's detached mount (init_binary.h), which the init attaches and execs as the holder
  mutable int gate_r = -1, gate_w = -1;  ///< detached: the first process waits for a byte here (made by the init)
  int stdin_fd = -1;  ///< detached with spec.stdin_open: the first process's stdin (StartOptions::detached_stdin)
  // --network private: the sandbox's /etc/hosts and /etc/resolv.conf.
  std::string hosts{}, resolv{};
  // StartOptions::pooled: wait for run_pooled()'s command after setup; its
  // stdio fds (received then) become the workload's 0, 1, 2.
  bool pooled = false;
};

/// Pooled init: closes every fd but `keep` (all it inherited from a
/// multi-threaded owner: other sandboxes' channels, tasks' pipes) and makes
/// its stdio /dev/null. Throws sbx::Error.
void close_all_but(std::vector<int> keep) {
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) throw_errno("open /dev/null");
  for (int fd = 0; fd < 3; ++fd)
    if (::dup2(null, fd) < 0) throw_errno("dup2 /dev/null");
  if (null > 2) ::close(null);
  close_fds_except(3, std::move(keep));
}

/// Pooled init, in the sandbox's root: writes the command's files.
void write_command_files(const PooledCommand& cmd) {
  for (const auto& [path, content] : cmd.files) {
    if (path.empty() || path[0] != '/') throw Error("file path " + path + " is not absolute");
    auto slash = path.rfind('/');
    if (slash > 0) fs::mkdir_p(path.substr(0, slash));
    Fd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (f.fd < 0) throw_errno("write the file " + path + " in the sandbox");
    fs::write_all(f.fd, content, path);
  }
}

/// Reads one sync byte from sbx; exits quietly when sbx failed or went away
/// (sbx reports the error itself).
void wait_for(int sock, char want) {
  char go = 0;
  ssize_t got;
  do {
    got = ::recv(sock, &go, 1, 0);
  } while (got < 0 && errno == EINTR);
  if (got != 1 || go != want) ::_exit(kExitSbxFailed);
}

/// The workload: credentials, limits, privileges, seccomp, exec. Runs in the
/// sandbox after the init has built its file system. Never returns.
[[noreturn]] void workload_main(const ChildCtx& c, const SandboxSpec& spec, const int stdio[3],
                                const ResolvedUser& user, const std::vector<int>& caps, int pty_slave) noexcept {
  const Process& p = spec.process;
  int code = kExitSbxFailed;
  if (c.gate_r >= 0) {
    // Detached: wait until the holder (sbx-init, exec'd by the init) is
    // non-dumpable again; nothing of the sandbox runs before (its fds hold the
    // host's state dir). EOF: the init failed.
    ::close(c.gate_w);
    char go = 0;
    ssize_t got;
    do {
      got = ::read(c.gate_r, &go, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1 || go != 'g') ::_exit(kExitSbxFailed);
    ::close(c.gate_r);
  }
  try {
    // Signals: back to the caller's mask; dispositions reset at exec except
    // "ignored", so un-ignore the ones a shell may have ignored.
    for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &c.caller_mask, nullptr);
    // Pooled: the command's stdio, received by the init (run_pooled()).
    for (int fd = 0; fd < 3; ++fd)
      if (stdio[fd] >= 0 && ::dup2(stdio[fd], fd) < 0) throw_errno("dup2 the command's stdio");
    // Session and stdio: the pty slave becomes the controlling terminal.
    ::setsid();
    if (pty_slave >= 0) {
      make_controlling_terminal(pty_slave);
    } else if (c.detached && spec.stdin_open && c.stdin_fd >= 0) {
      if (::dup2(c.stdin_fd, 0) < 0) throw_errno("dup2 the stdin pipe");
    } else if (!spec.stdin_open || c.detached) {
      int fd = ::open("/dev/null", O_RDONLY);
      if (fd < 0 || ::dup2(fd, 0) < 0) throw_errno("open /dev/null as stdin");
      if (fd > 2) ::close(fd);
    }
    if (c.detached && pty_slave < 0 && (::dup2(c.log_w, 1) < 0 || ::dup2(c.err_w, 2) < 0))
      throw_errno("redirect output to the log");
    // Nothing of sbx's but stdio reaches the command.
    ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);

    std::vector<gid_t> groups(user.groups.begin(), user.groups.end());
    for (auto g : p.additional_gids) groups.push_back(g);
    apply_credentials(p, user, groups, caps);
    if (::chdir(p.cwd.c_str()) < 0) throw_errno("chdir to the working directory " + p.cwd);
    // A working directory outside the sandbox's root (e.g. -w /proc/self/fd/N
    // through an fd that leaked into the init: CVE-2024-21626) has no path
    // from "/": getcwd fails with ENOENT. Refuse to run there.
    {
      char cwd[4096];
      if (!::getcwd(cwd, sizeof cwd) || cwd[0] != '/')
        throw Error("the working directory " + p.cwd + " is outside the sandbox's root file system", ENOENT);
    }

    std::vector<std::string> env = p.env;
    bool has_home = false;
    for (const auto& e : env) has_home |= e.rfind("HOME=", 0) == 0;
    if (!has_home) env.push_back("HOME=" + user.home);
    exec_command(p.args, env, p.no_new_privileges);  // throws: 127 not found, 126 cannot exec
  } catch (const Error& e) {
    code = e.exit_code();
    send_error(c.sock, code, e.what());
  } catch (const std::exception& e) {
    send_error(c.sock, code, e.what());
  }
  ::_exit(code);
}

/// Runs the image's ldconfig on spec.ldconfig_dirs (GPU driver libraries,
/// see spec.h) inside the sandbox, with the workload's privileges (it is the
/// image's code): bounding set, capabilities, no_new_privs, seccomp. Its
/// failure is a warning, as the NVIDIA toolkit's update-ldcache hook.
void run_ldconfig(const SandboxSpec& spec, const std::vector<int>& caps) {
  std::string ldconfig;
  for (const char* p : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
    struct stat st {};
    if (::stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      ldconfig = p;
      break;
    }
  }
  if (ldconfig.empty()) {
    log::debug("no ldconfig in the image; the GPU library dirs are not added to its ld.so.cache");
    return;
  }
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork ldconfig");
  if (pid == 0) {
    try {
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
      }
      ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
      drop_bounding(caps);
      if (::syscall(SYS_setgroups, 0, nullptr) < 0) throw_errno("setgroups");  // raw: see credentials.cpp
      apply_capabilities(caps, true);
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) throw_errno("PR_SET_NO_NEW_PRIVS");
      install_default_seccomp();
      std::vector<char*> argv{const_cast<char*>(ldconfig.c_str())};
      for (const auto& d : spec.ldconfig_dirs) argv.push_back(const_cast<char*>(d.c_str()));
      argv.push_back(nullptr);
      char* envp[] = {const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};
      ::execve(ldconfig.c_str(), argv.data(), envp);
    } catch (...) {
    }
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    log::warn(ldconfig + " for the GPU libraries failed; programs may not find libcuda");
}

/// Detached: the init becomes the holder by exec'ing sbx-init (tools/sbx-init.cpp)
/// with the fds it needs, so that what stays resident is that small program,
/// not this fork of sbx. sbx-init makes itself non-dumpable first, then opens
/// the first process's gate, then does the rest of the detached start (sbx's
/// 'G' on the setup channel, its commit) and runs the holder. Only the fds
/// named here survive the exec (all others are close-on-exec, and sbx-init
/// closes anything else it inherited). Throws sbx::Error when the exec fails.
[[noreturn]] void exec_holder(const ChildCtx& c, pid_t workload, int log_fd, int err_fd) {
  std::vector<std::string> args{"sbx-init"};
  auto pass = [&](const char* name, int fd) {
    if (fd < 0) return;
    if (::fcntl(fd, F_SETFD, 0) < 0) throw_errno(std::string("keep the holder's ") + name + " open across its exec");
    args.push_back(std::string("--") + name + "=" + std::to_string(fd));
  };
  pass("state-fd", c.state_dirfd);
  pass("log-fd", log_fd);
  pass("err-fd", err_fd);
  pass("gate-fd", c.gate_w);
  pass("sync-fd", c.sock);
  pass("commit-fd", c.commit_r);
  if (workload > 0) args.push_back("--workload=" + std::to_string(workload));
  if (c.spec->timeout.count() > 0) args.push_back("--timeout-ms=" + std::to_string(c.spec->timeout.count()));
  if (c.spec->idle_timeout.count() > 0)
    args.push_back("--idle-timeout-ms=" + std::to_string(c.spec->idle_timeout.count()));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  ::syscall(SYS_execveat, c.init_exe, "", argv.data(), envp, AT_EMPTY_PATH);
  throw_errno("exec the sandbox's init program sbx-init (" + std::string(init_binary_sha256()).substr(0, 12) + ")");
}

/// The sandbox's init: the ordered list of setup steps, then the pid-1 loop.
[[noreturn]] void init_main(const ChildCtx& c) noexcept {
  const SandboxSpec& spec = *c.spec;
  try {
    // No process of the sandbox may read or trace the init, nor the workload
    // it forks, which inherits this until its own execve (a change of ids
    // would make it non-dumpable too, but not every sandbox changes them).
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // Die with sbx: a SIGKILLed `sbx run` takes the whole pid namespace down.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Only sbx holds the other end of the commit socket: its EOF is sbx's death.
    if (c.commit_w >= 0) ::close(c.commit_w);
    struct pollfd pfd {c.sock, 0, 0};
    if (::poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLHUP)) ::_exit(kExitSbxFailed);  // sbx already gone
    if (c.pooled) {
      // Cloned from a thread of a busy owner: keep only our own fds.
      std::vector<int> keep{c.sock};
      for (int fd : c.idmapped_layers) keep.push_back(fd);
      for (const auto& b : c.binds) keep.push_back(b.tree_fd);
      close_all_but(std::move(keep));
    }

    // 1. user namespace: wait until sbx has written our id maps and idmapped
    //    the layers and volumes, then become the namespace's root (host uid =
    //    the start of our range) before anything creates a file.
    int state_fd = -1, upper_fd = -1;
    // Compiled now, while sbx writes our id maps and attaches our cgroups (idle
    // time here); the command's fork then only loads it (runtime/linux/seccomp.h).
    prepare_default_seccomp();
    if (c.userns) {
      wait_for(c.sock, 'U');
      // Still our host uid: the way to the state dir may be closed to the new one.
      state_fd = ::open(c.state_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (state_fd < 0) throw_errno("open the state dir " + c.state_dir);
      // And to a disk-backed upper dir (sbx create), opened here: overlayfs
      // needs its mount to be in our mount namespace.
      if (!spec.upper_dir.empty()) {
        upper_fd = ::open(spec.upper_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (upper_fd < 0) throw_errno("open the upper dir " + spec.upper_dir);
      }
      // Raw system calls: after a raw clone glibc's thread bookkeeping is the
      // parent's (its set*id wrappers signal every thread it knows of and
      // wait for them); the syscalls change this process's ids and no more.
      if (::syscall(SYS_setresgid, 0, 0, 0) < 0) throw_errno("setgid 0 in the user namespace");
      if (::syscall(SYS_setresuid, 0, 0, 0) < 0) throw_errno("setuid 0 in the user namespace");
      // A change of euid clears the parent-death signal (prctl(2)): set it
      // again, then make sure sbx did not die in between.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      struct pollfd again {c.sock, 0, 0};
      if (::poll(&again, 1, 0) > 0 && (again.revents & POLLHUP)) ::_exit(kExitSbxFailed);
    }

    // 2. file system, inside our own mount namespace (nothing on the host).
    make_mounts_private();
    int staging_fd = c.userns ? mount_staging_at(state_fd, spec.upper_dir.empty() ? spec.disk_bytes : 0) : -1;
    SandboxSpec through_fd;  // user namespace + disk-backed upper: reach it through upper_fd
    if (upper_fd >= 0) {
      through_fd = spec;
      through_fd.upper_dir = "/proc/self/fd/" + std::to_string(upper_fd);
    }
    std::string root = c.userns
                           ? mount_rootfs(upper_fd >= 0 ? through_fd : spec,
                                          "/proc/self/fd/" + std::to_string(staging_fd), c.idmapped_layers, true)
                           // Detached: stage below the state dir, so that a disk-backed upper
                           // dir in it (spec.upper_dir, for snapshots) is not hidden by the tmpfs.
                           : mount_rootfs(spec, c.detached ? c.state_dir + "/mnt" : c.state_dir);
    std::vector<BindSource> binds;
    UsernsSystem usys;
    if (c.userns) {
      binds = c.binds;
      usys = prepare_system_in_userns(spec, root);  // proc, sysfs, host device nodes: before pivot_root
    } else {
      binds = open_bind_sources(spec);  // host paths: before pivot_root
      // --userns host: the sandbox's ids are host ids; a read-write volume is
      // idmapped so that its root is not host root there (runtime/linux/userns.h).
      for (auto& b : binds) {
        bool ro = false, host = false;
        for (const auto& o : b.mount->options) {
          ro = ro || o == "ro";
          host = host || o == "idmap=host";
        }
        if (ro || host) continue;
        struct stat vst {};
        if (::fstat(b.tree_fd, &vst) < 0) throw_errno("stat the volume " + b.mount->source);
        Fd vns(host_ids_volume_userns(vst.st_uid, vst.st_gid));
        idmap_tree(b.tree_fd, vns.fd, true, false, b.mount->source);
      }
    }
    pivot_into(root);
    // Nothing that points into the host may stay open (CVE-2024-21626).
    if (staging_fd >= 0) ::close(staging_fd);
    if (upper_fd >= 0) ::close(upper_fd);
    if (state_fd >= 0) ::close(state_fd);
    if (c.userns)
      mount_system_in_userns(spec, usys);
    else
      mount_system(spec);
    // Detached: the holder's program, on the fresh /dev (before the user's
    // mounts, so that it is never made on one of their volumes).
    if (c.init_exe >= 0) attach_init_mount(c.init_exe);
    mount_user(spec, binds);
    mask_and_readonly_paths();

    // 3. identity and network.
    if (::sethostname(c.hostname.data(), c.hostname.size()) < 0) throw_errno("sethostname " + c.hostname);
    if (spec.network != NetworkMode::Host) bring_up_loopback();
    // (eth0 is sbx's to configure, from outside: runtime/linux/sandbox_network.h.)
    if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User)
      write_network_files(c.hostname, c.hosts, c.resolv);

    // 4. user (from the image's /etc/passwd) and working directory (created
    //    as docker does), before / may become read-only.
    ResolvedUser user;
    if (!spec.process.user.empty()) {
      user = resolve_user(spec.process.user, "/");
    } else {
      user.uid = spec.process.uid;
      user.gid = spec.process.gid;
      user.home = user.uid == 0 ? "/root" : "/";
    }
    struct stat st {};
    if (::stat(spec.process.cwd.c_str(), &st) < 0) fs::mkdir_p(spec.process.cwd);
    std::vector<int> caps = parse_capabilities(spec.process.capabilities);
    if (cgroup_mode() == CgroupMode::Unified) {
      // No device cgroup without BPF: never let the sandbox create device nodes.
      std::erase(caps, CAP_MKNOD);
    }
    if (!spec.ldconfig_dirs.empty()) run_ldconfig(spec, caps);
    finish_rootfs(spec);

    // 5. terminal: a pty from the sandbox's own devpts; the master goes to sbx.
    int slave = -1;
    if (spec.process.terminal) {
      PtyPair pty = open_pty();
      slave = pty.slave;
      send_fd(c.sock, pty.master);
      ::close(pty.master);
    } else if (c.detached && spec.stdin_pty_master && c.stdin_fd >= 0) {
      // The caller's pty (SandboxSpec::stdin_pty_master): its slave, through
      // the master (no path lookup); the holder logs from the master.
      slave = ::ioctl(c.stdin_fd, TIOCGPTPEER, O_RDWR | O_NOCTTY);
      if (slave < 0) throw_errno("open the slave of the container's pty");
    }

    // 6. cgroup: sbx moves us into the sandbox's cgroup while we build the
    //    file system (the move waits for an RCU grace period); wait for its
    //    go before anything runs, then make that cgroup our namespace's root.
    wait_for(c.sock, 'G');
    enter_cgroup_namespace();

    // 6b. pooled: ready; wait for the one command (run_pooled()): its argv,
    //     environment and stdio replace the spec's.
    const SandboxSpec* wspec = &spec;
    SandboxSpec pspec;
    int stdio[3] = {-1, -1, -1};
    if (c.pooled) {
      PooledCommand cmd = receive_command(c.sock, stdio);
      write_command_files(cmd);
      pspec = spec;
      pspec.process.args = std::move(cmd.args);
      pspec.process.env = std::move(cmd.env);
      pspec.stdin_open = true;  // the fd sbx sent
      wspec = &pspec;
    }

    // 7. the workload. Forwarded signals and SIGCHLD stay blocked in the init.
    pid_t pid = -1;
    if (c.detached && !wspec->process.args.empty()) {
      int gp[2];
      if (::pipe2(gp, O_CLOEXEC) < 0) throw_errno("create the first process's gate pipe");
      c.gate_r = gp[0];
      c.gate_w = gp[1];
    }
    if (!wspec->process.args.empty()) {
      // (A plain fork() also in a pooled init: the init never comes from a
      // process with other threads, runtime/linux/clone_child.h.)
      pid = ::fork();
      if (pid < 0) throw_errno("fork the workload");
      if (pid == 0) workload_main(c, *wspec, stdio, user, caps, slave);
    }
    for (int& fd : stdio)
      if (fd >= 0) ::close(std::exchange(fd, -1));
    if (slave >= 0) ::close(slave);
    // Only the first process holds its stdin: its writer's close is its EOF.
    // (A pty's master stays: the holder logs from it.)
    const int tty_master = c.detached && spec.stdin_pty_master ? c.stdin_fd : -1;
    if (c.stdin_fd >= 0 && tty_master < 0) ::close(c.stdin_fd);
    if (c.detached) {
      ::close(c.log_w);
      ::close(c.err_w);
      if (c.gate_r >= 0) ::close(std::exchange(c.gate_r, -1));
      exec_holder(c, pid, tty_master >= 0 ? tty_master : c.log_r, tty_master >= 0 ? -1 : c.err_r);
    }
    ::close(c.sock);
    run_init(pid);
  } catch (const std::exception& e) {
    send_error(c.sock, kExitSbxFailed, e.what());
  }
  ::_exit(kExitSbxFailed);
}

/// The init's fresh helper's request (runtime/linux/self_exec.h): the
/// context, the spec, the clone flags and the log level. The fds keep their
/// numbers across the helper's exec.
std::string encode_init_request(const ChildCtx& c, uint64_t flags) {
  json blocked = json::array();
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&c.caller_mask, sig) == 1) blocked.push_back(sig);
  json binds = json::array();
  for (const auto& b : c.binds)
    binds.push_back({b.mount - c.spec->mounts.data(), b.tree_fd, b.is_dir});
  json j = {{"spec", spec::spec_to_json(*c.spec)},
            {"state_dir", c.state_dir},
            {"hostname", c.hostname},
            {"sock", c.sock},
            {"mask", blocked},
            {"userns", c.userns},
            {"idmapped_layers", c.idmapped_layers},
            {"binds", binds},
            {"detached", c.detached},
            {"fds", {c.state_dirfd, c.log_r, c.log_w, c.err_r, c.err_w, c.commit_r, c.commit_w, c.stdin_fd, c.init_exe}},
            {"hosts", c.hosts},
            {"resolv", c.resolv},
            {"pooled", c.pooled},
            {"flags", flags},
            {"log_level", static_cast<int>(log::level())}};
  return j.dump();
}

int reap(Sandbox& sb, bool block) {
  if (sb.exit_status >= 0 || sb.pid <= 0) return sb.exit_status;
  siginfo_t info{};
  int rc;
  do {
    // The raw syscall's fifth argument is the rusage glibc's waitid hides:
    // the CPU, max RSS and blocks of the init and of all it reaped.
    rc = static_cast<int>(::syscall(SYS_waitid, P_PIDFD, static_cast<id_t>(sb.pidfd), &info,
                                    WEXITED | (block ? 0 : WNOHANG), &sb.rusage));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0 || info.si_pid == 0) return -1;
  sb.exit_status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : (info.si_status & 0x7f);
  return sb.exit_status;
}

/// The clone that starts the sandbox's init (clone_sandbox), into a new time
/// namespace whose monotonic and boot clocks start at zero when the spec
/// asks for one (runtime/linux/time_namespace.h).
pid_t clone_init(const SandboxSpec& spec, uint64_t flags, int* pidfd) {
  if (!wants_time_namespace(spec)) return clone_sandbox(flags, pidfd);
  return clone_in_new_time_namespace([&] { return clone_sandbox(flags, pidfd); });
}

}  // namespace

Sandbox::Sandbox(Sandbox&& o) noexcept { *this = std::move(o); }

Sandbox& Sandbox::operator=(Sandbox&& o) noexcept {
  if (this != &o) {
    destroy();
    id = std::move(o.id);
    pid = std::exchange(o.pid, -1);
    pidfd = std::exchange(o.pidfd, -1);
    pty_master = std::exchange(o.pty_master, -1);
    cgroup = std::move(o.cgroup);
    state_dir = std::move(o.state_dir);
    id_range = std::exchange(o.id_range, IdRange{});
    started = o.started;
    exit_status = o.exit_status;
    rusage = o.rusage;
    saved_mask = o.saved_mask;
    commit_fd = std::exchange(o.commit_fd, -1);
    net = std::exchange(o.net, SandboxNetworks{});
    setup_sock = std::exchange(o.setup_sock, -1);
    owns_mask = o.owns_mask;
    o.state_dir.clear();
  }
  return *this;
}

Sandbox::~Sandbox() { destroy(); }

void Sandbox::signal(int sig) noexcept {
  if (pidfd >= 0 && exit_status < 0) ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0);
}

void Sandbox::commit() noexcept {
  if (commit_fd < 0) return;
  // Wait for the init's answer (EOF: it has cleared PR_SET_PDEATHSIG and
  // closed its end), or this sbx's exit right after would still kill it.
  if (::send(commit_fd, "C", 1, MSG_NOSIGNAL) == 1) {
    char c;
    while (::recv(commit_fd, &c, 1, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(std::exchange(commit_fd, -1));
}

void Sandbox::destroy() noexcept {
  if (commit_fd >= 0) ::close(std::exchange(commit_fd, -1));  // uncommitted: the init dies
  if (setup_sock >= 0) ::close(std::exchange(setup_sock, -1));  // an unused pooled one: EOF, it exits
  bool pid_reaped = false;  // its network namespace dies with it
  if (pid > 0) {
    if (exit_status < 0) {
      signal(SIGKILL);
      reap(*this, true);
    }
    pid_reaped = exit_status >= 0;
    pid = -1;
    if (owns_mask) {
      // Swallow forwarded signals that arrived after the last wait, then give
      // the caller its signal mask back.
      struct timespec zero {};
      sigset_t set = forwarded_signals();
      sigaddset(&set, SIGCHLD);
      while (::sigtimedwait(&set, nullptr, &zero) > 0) {
      }
      ::sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
    }
  }
  if (pidfd >= 0) ::close(std::exchange(pidfd, -1));
  if (pty_master >= 0) ::close(std::exchange(pty_master, -1));
  cgroup.destroy();
  // After the init is reaped: its namespace (and so eth0) is gone or going.
  if (!net.empty()) release_network(net, pid_reaped);
  if (id_range.slot >= 0) {
    release_id_range(id_range);
    id_range = {};
  }
  if (!state_dir.empty()) {
    // The whole tree: `sbx exec`/`ps` beside the run may have added files
    // (its lock). Nobody else removes it while this sbx lives (owner_pid);
    // ENOENT: `sbx rm -f` did.
    if (int e = remove_tree(state_dir); e && e != ENOENT)
      log::warn("cannot remove " + state_dir + ": " + std::strerror(e) + "; 'sbx gc' will retry");
    state_dir.clear();
  }
}

void Sandbox::release() noexcept {
  commit();
  if (setup_sock >= 0) ::close(std::exchange(setup_sock, -1));
  if (pid > 0 && owns_mask) ::sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
  pid = -1;
  if (pidfd >= 0) ::close(std::exchange(pidfd, -1));
  if (pty_master >= 0) ::close(std::exchange(pty_master, -1));
  cgroup.release();
  id_range = {};  // recorded in the state dir: freed when `sbx rm` removes it
  net = {};       // its lease and endpoints name the state dir: released when `sbx rm` removes it
  state_dir.clear();
}

Sandbox start(const SandboxSpec& spec, const StartOptions& opts) {
  if (opts.detached && spec.process.terminal)
    throw Error("a detached sandbox has no terminal to attach (-t): use 'sbx exec -it' to get one");
  if (opts.pooled && (opts.detached || spec.process.terminal))
    throw Error("a pooled sandbox cannot be detached or have a terminal (front-end bug)");
  if (spec.process.args.empty() && !opts.detached && !opts.pooled)
    throw Error("no command to run: give one after the image, or use an image with an Entrypoint or Cmd");
  Sandbox sb;
  sb.id = spec.id.empty() ? new_sandbox_id() : spec.id;
  sb.started = std::chrono::steady_clock::now();
  if (::mkdir(opts.run_root.c_str(), 0700) < 0 && errno != EEXIST) fs::mkdir_p(opts.run_root, 0700);
  std::string dir = opts.run_root + "/" + sb.id;
  if (::mkdir(dir.c_str(), 0700) < 0 && !(opts.detached && errno == EEXIST))
    throw_errno("create the sandbox state directory " + dir);
  // Detached: the dir is the caller's (sbx create removes it on failure with
  // everything in it); destroy() removes only a `sbx run` dir.
  if (!opts.detached) sb.state_dir = dir;
  sb.cgroup = Cgroup::create(sb.id, spec.resources);

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) throw_errno("socketpair");
  ChildCtx ctx{&spec, &sb.cgroup, dir, spec.hostname.empty() ? sb.id.substr(0, 12) : spec.hostname, sv[1], {}, false, {}, {}};
  struct CloseFds {
    int* fds[7];
    ~CloseFds() {
      for (int* f : fds)
        if (*f >= 0) ::close(std::exchange(*f, -1));
    }
  } close_fds{{&ctx.state_dirfd, &ctx.log_r, &ctx.log_w, &ctx.err_r, &ctx.err_w, &ctx.commit_r, &ctx.init_exe}};
  ctx.pooled = opts.pooled;
  if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User) {
    // The addresses first (recorded before anything is made); the veths and
    // rules once the sandbox's namespace exists (after the clone).
    try {
      sb.net = allocate_sandbox_networks(opts.run_root, sb.id, spec, ctx.hostname, opts.detached);
      ctx.hosts = sandbox_hosts(sb.net, ctx.hostname, spec.net);
      ctx.resolv = sandbox_resolv(sb.net, spec.net);
    } catch (...) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw;
    }
  }
  if (opts.detached) {
    ctx.detached = true;
    ctx.stdin_fd = spec.stdin_open ? opts.detached_stdin : -1;
    if (::mkdir((dir + "/mnt").c_str(), 0700) < 0 && errno != EEXIST) throw_errno("create " + dir + "/mnt");
    ctx.state_dirfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int lp[2] = {-1, -1}, ep[2] = {-1, -1};
    if (ctx.state_dirfd < 0 || ::pipe2(lp, O_CLOEXEC) < 0 || ::pipe2(ep, O_CLOEXEC) < 0) {
      int e = errno;
      for (int fd : {lp[0], lp[1]})
        if (fd >= 0) ::close(fd);
      ::close(sv[0]);
      ::close(sv[1]);
      throw_errno("open the state directory " + dir, e);
    }
    ctx.log_r = lp[0];
    ctx.log_w = lp[1];
    ctx.err_r = ep[0];
    ctx.err_w = ep[1];
    int cp[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cp) < 0) {
      int e = errno;
      ::close(sv[0]);
      ::close(sv[1]);
      throw_errno("create the commit socket pair", e);
    }
    ctx.commit_r = cp[0];
    ctx.commit_w = sb.commit_fd = cp[1];
    try {
      ctx.init_exe = open_init_mount(opts.run_root);
    } catch (...) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw;
    }
  }
  // User namespace: a host id range, and the layers and volumes opened as
  // detached trees now, so that the child inherits the same fds (runtime/linux/userns.h).
  struct Trees {
    std::vector<int> fds;
    ~Trees() {
      for (int fd : fds) ::close(fd);
    }
  } trees;
  std::vector<IdMapping> uid_maps, gid_maps;
  if (opts.userns) {
    try {
      if (!spec.uid_mappings.empty()) {
        // Allocated by the caller (sbx create records them in config.json).
        uid_maps = spec.uid_mappings;
        gid_maps = spec.gid_mappings.empty() ? spec.uid_mappings : spec.gid_mappings;
      } else {
        sb.id_range = allocate_id_range(opts.run_root, sb.id, id_pool());
        uid_maps = gid_maps = id_maps(sb.id_range);
      }
      const uint32_t root_uid = host_root_id(uid_maps), root_gid = host_root_id(gid_maps);
      // A disk-backed upper dir (sbx create): owned by the sandbox's root, so
      // its files land on disk with unprivileged host ids (the init opens it
      // itself, in its own mount namespace: init_main).
      if (!spec.upper_dir.empty()) prepare_upper_for_userns(spec.upper_dir, root_uid, root_gid);
      // The holder (the init, as the sandbox's root) writes its log and end
      // record into the state dir through state_dirfd.
      if (opts.detached && ::fchown(ctx.state_dirfd, root_uid, root_gid) < 0)
        throw_errno("chown the state directory " + dir + " to the sandbox's root");
    } catch (...) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw;
    }
    ctx.userns = true;
    for (const auto& l : spec.layer_dirs) {
      int fd = ::open_tree(AT_FDCWD, l.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
      if (fd < 0) {
        ::close(sv[0]);
        ::close(sv[1]);
        throw_errno("open the layer " + l + " (open_tree)");
      }
      trees.fds.push_back(fd);
      ctx.idmapped_layers.push_back(fd);
    }
    try {
      ctx.binds = open_bind_sources(spec);
    } catch (...) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw;
    }
    for (const auto& b : ctx.binds) trees.fds.push_back(b.tree_fd);
  }

  sigset_t block = forwarded_signals();
  sigaddset(&block, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &block, &sb.saved_mask);
  ctx.caller_mask = opts.pooled ? opts.command_mask : sb.saved_mask;
  pid_t pid;
  try {
    // The init runs sbx's code after a raw clone3: from a caller with other
    // threads (`sbx serve`, the pool's refill threads) the clone is made by
    // a single-threaded helper, or the init could wait forever on a glibc
    // lock one of them held (runtime/linux/clone_child.h).
    const uint64_t flags = clone_namespace_flags(spec) | (ctx.userns ? CLONE_NEWUSER : 0);
    // Every fd of the caller's that the init uses (ChildCtx):
    std::vector<int> keep{sv[1], ctx.state_dirfd, ctx.log_r, ctx.log_w, ctx.err_r, ctx.err_w, ctx.commit_r, ctx.commit_w, ctx.stdin_fd, ctx.init_exe};
    keep.insert(keep.end(), trees.fds.begin(), trees.fds.end());
    // A caller with secrets in memory (sbx serve) starts the init from a
    // fresh exec of sbx instead (runtime/linux/self_exec.h).
    if (fresh_helper_image() >= 0)
      pid = clone_from_fresh_helper("init", encode_init_request(ctx, flags), &sb.pidfd, std::move(keep));
    else
      pid = clone_from_single_thread([&](uint64_t extra, int* fd) { return clone_init(spec, flags | extra, fd); },
                                     [&] {
                                       ::close(sv[0]);
                                       init_main(ctx);
                                     },
                                     &sb.pidfd, std::move(keep));
  } catch (...) {
    ::sigprocmask(SIG_SETMASK, &sb.saved_mask, nullptr);
    ::close(sv[0]);
    ::close(sv[1]);
    throw;
  }
  sb.pid = pid;
  ::close(sv[1]);
  if (opts.pooled) {
    // No wait() forwards signals to a pooled sandbox: the caller's mask
    // stays its own (the init inherited the blocked set it needs).
    ::sigprocmask(SIG_SETMASK, &sb.saved_mask, nullptr);
    sb.owns_mask = false;
  }

  int sock = sv[0];
  try {
    if (ctx.userns) {
      // The child waits for 'U': its id maps, then the idmapped trees.
      write_id_maps(pid, uid_maps, gid_maps);
      std::string ns = "/proc/" + std::to_string(pid) + "/ns/user";
      int userns_fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
      if (userns_fd < 0) throw_errno("open " + ns);
      try {
        for (size_t i = 0; i < ctx.idmapped_layers.size(); ++i)
          idmap_tree(ctx.idmapped_layers[i], userns_fd, false, true, spec.layer_dirs[i]);
        for (const auto& b : ctx.binds) {
          // Read-only volumes and `:idmap=host`: the sandbox's own map (its ids
          // are the host's on disk). Read-write: never host root (volume_idmap_userns).
          bool ro = false, host = false;
          for (const auto& o : b.mount->options) {
            ro = ro || o == "ro";
            host = host || o == "idmap=host";
          }
          if (ro || host) {
            idmap_tree(b.tree_fd, userns_fd, true, false, b.mount->source);
            continue;
          }
          struct stat vst {};
          if (::fstat(b.tree_fd, &vst) < 0) throw_errno("stat the volume " + b.mount->source);
          Fd vns(volume_idmap_userns(host_root_id(uid_maps), vst.st_uid, vst.st_gid));
          if (vns.fd < 0) continue;  // the sandbox's ids land on disk as they are (unprivileged)
          idmap_tree(b.tree_fd, vns.fd, true, false, b.mount->source);
        }
      } catch (...) {
        ::close(userns_fd);
        throw;
      }
      ::close(userns_fd);
      (void)!::send(sock, "U", 1, MSG_NOSIGNAL);
      for (int fd : trees.fds) ::close(fd);
      trees.fds.clear();
    }
    if (!sb.net.empty()) {
      // While the init builds its file system; it waits for 'G' before the
      // workload runs, so the workload never sees a half-made network.
      Fd netns(::open(("/proc/" + std::to_string(pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
      if (netns.fd < 0) throw_errno("open the sandbox's network namespace");
      attach_sandbox_networks(sb.net, netns.fd, spec.net, opts.detached);
    }
    if (!sb.cgroup.empty()) sb.cgroup.add(pid);
    // (A failed send means the sandbox already failed: its message follows.)
    (void)!::send(sock, "G", 1, MSG_NOSIGNAL);
    if (opts.write_state) {
      // While the sandbox sets itself up.
      SandboxState st = opts.state_template ? *opts.state_template : SandboxState{};
      st.id = sb.id;
      st.name = spec.name;
      st.image_id = spec.image_id;
      st.image_ref = spec.image_ref;
      st.runtime = spec.runtime;
      st.pid = pid;
      st.pid_start = process_start_time(pid);
      if (!st.created_ms) st.created_ms = now_ms();
      st.cgroups = sb.cgroup.paths();
      if (!opts.detached) {
        // This sbx removes the dir when the run ends (destroy()): the gc of
        // another run starting meanwhile must leave it alone (runtime/state.h).
        st.owner_pid = ::getpid();
        st.owner_start = process_start_time(st.owner_pid);
      }
      write_state(dir, st);
    }
    // A detached init may now outlive us: it is on record.
    // (A failed send means the init already died: its error or EOF follows.)
    if (opts.detached) (void)!::send(sock, "G", 1, MSG_NOSIGNAL);
    // The sandbox is busy building its file system: use the time to remove
    // what an earlier, SIGKILLed sbx left behind (runtime/state.h gc()).
    if (opts.gc_stale) opts.gc_stale();
    // Until EOF: exec'd (or setup died); pooled: until 'R', the init waits.
    ChildReport report = read_child_report(sock, opts.pooled ? 'R' : 0);
    sb.pty_master = report.pty_master;
    if (report.read_errno) throw_errno("read the sandbox's setup status", report.read_errno);
    if (report.stopped) {
      sb.setup_sock = std::exchange(sock, -1);
      return sb;
    }
    if (opts.pooled && report.error.empty()) report.error = "the pooled sandbox " + sb.id + " ended during its setup";
    ::close(sock);
    sock = -1;
    if (!report.error.empty()) {
      // Uncommitted: the init (detached) waits for the commit or its EOF.
      if (sb.commit_fd >= 0) ::close(std::exchange(sb.commit_fd, -1));
      reap(sb, true);
      throw Error(report.error, 0, report.exit_code ? report.exit_code : kExitSbxFailed);
    }
  } catch (...) {
    if (sock >= 0) ::close(sock);
    sb.destroy();
    throw;
  }
  return sb;
}

void run_pooled(Sandbox& sb, const PooledCommand& cmd) {
  if (sb.setup_sock < 0 || sb.exit_status >= 0)
    throw Error("sandbox " + sb.id + " is not a pooled sandbox waiting for its command");
  for (int fd : cmd.stdio)
    if (fd < 0) throw Error("run_pooled: the command's three stdio fds are required");
  // The command's time starts now (timeout, wall time).
  sb.started = std::chrono::steady_clock::now();
  Fd sock(std::exchange(sb.setup_sock, -1));
  try {
    send_command(sock.fd, cmd, sb.id);
  } catch (...) {
    sock = Fd();
    reap(sb, true);
    throw;
  }
  ChildReport report = read_child_report(sock.fd);  // until EOF: exec'd (or failed)
  if (report.pty_master >= 0) ::close(report.pty_master);
  if (report.read_errno) throw_errno("read the pooled sandbox's status", report.read_errno);
  if (!report.error.empty()) {
    reap(sb, true);
    throw Error(report.error, 0, report.exit_code ? report.exit_code : kExitSbxFailed);
  }
}

ExitStatus wait(Sandbox& sb, const WaitOptions& opts) {
  ExitStatus out;
  using clock = std::chrono::steady_clock;
  sigset_t set = forwarded_signals();
  int sfd = opts.forward_signals ? ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK) : -1;
  std::optional<clock::time_point> deadline, kill_at;
  if (opts.timeout.count() > 0) deadline = sb.started + opts.timeout;

  std::optional<PtyRelay> relay;  // restores the user's terminal on every exit path
  if (sb.pty_master >= 0) relay.emplace(sb.pty_master, opts.stdin_fd, opts.stdout_fd);
  int interrupts = 0;
  bool exited = false;
  while (!exited || (relay && relay->master_open())) {
    struct pollfd fds[4];
    int n = 0;
    fds[n++] = {sb.pidfd, exited ? short(0) : short(POLLIN), 0};
    fds[n++] = {sfd, POLLIN, 0};
    if (relay) n = relay->add_pollfds(fds, n, !exited);
    int timeout_ms = -1;
    auto now = clock::now();
    for (auto& t : {deadline, kill_at})
      if (t) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*t - now).count() + 1;
        if (timeout_ms < 0 || left < timeout_ms) timeout_ms = static_cast<int>(std::max<int64_t>(left, 0));
      }
    if (exited) timeout_ms = 200;  // only draining the pty now
    int r = ::poll(fds, static_cast<nfds_t>(n), timeout_ms);
    if (r < 0 && errno != EINTR) throw_errno("poll");
    now = clock::now();
    if (r == 0 && exited) break;
    if (deadline && now >= *deadline && !exited && !out.timed_out) {
      out.timed_out = true;
      sb.signal(SIGKILL);
      deadline.reset();
    }
    if (kill_at && now >= *kill_at && !exited) {
      sb.signal(SIGKILL);
      kill_at.reset();
    }
    if (r <= 0) continue;
    if (fds[0].revents & POLLIN) exited = true;
    if (sfd >= 0 && (fds[1].revents & POLLIN)) {
      struct signalfd_siginfo si;
      while (::read(sfd, &si, sizeof si) == sizeof si) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGWINCH) {
          if (relay) relay->resize();
          continue;
        }
        out.forwarded_signal = sig;
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
          if (++interrupts >= 2) {
            sb.signal(SIGKILL);
            continue;
          }
          kill_at = now + opts.kill_grace;
        }
        sb.signal(sig);
      }
    }
    if (relay) relay->handle(fds);
  }
  if (sfd >= 0) ::close(sfd);
  int status = reap(sb, true);
  if (status < 0) throw_errno("wait for the sandbox");
  if (WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else {
    out.exit_code = 128 + WTERMSIG(status);
  }
  if (out.exit_code > 128 && out.exit_code < 128 + 65) out.signal = out.exit_code - 128;
  out.oom_kills = sb.cgroup.oom_kills();
  out.pids_max_hits = sb.cgroup.pids_max_hits();
  out.oom_killed = !out.timed_out && out.oom_kills > 0 && out.signal == SIGKILL;
  // Accounting, read while the cgroups still exist (destroy() removes them).
  const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - sb.started).count();
  out.usage = ended_usage(read_cgroup_usage(sb.cgroup.paths()), sb.rusage, static_cast<uint64_t>(std::max<int64_t>(wall, 0)));
  return out;
}

void init_helper_main(int payload_fd, int answer_fd) {
  // The spec and context live as long as this process (the init is its clone).
  static SandboxSpec spec;
  static ChildCtx c{};
  uint64_t flags = 0;
  try {
    json j = json::parse(read_helper_payload(payload_fd));
    spec = spec::spec_from_json(j.at("spec"));
    c.spec = &spec;
    c.cgroup = nullptr;  // (sbx adds the init to its cgroups)
    c.state_dir = j.at("state_dir").get<std::string>();
    c.hostname = j.at("hostname").get<std::string>();
    c.sock = j.at("sock").get<int>();
    sigemptyset(&c.caller_mask);
    for (int sig : j.at("mask").get<std::vector<int>>()) sigaddset(&c.caller_mask, sig);
    c.userns = j.at("userns").get<bool>();
    c.idmapped_layers = j.at("idmapped_layers").get<std::vector<int>>();
    for (const auto& b : j.at("binds")) {
      size_t m = b.at(0).get<size_t>();
      if (m >= spec.mounts.size()) throw Error("a bind names mount " + std::to_string(m) + " of " + std::to_string(spec.mounts.size()));
      c.binds.push_back({&spec.mounts[m], b.at(1).get<int>(), b.at(2).get<bool>()});
    }
    c.detached = j.at("detached").get<bool>();
    auto fds = j.at("fds").get<std::vector<int>>();
    if (fds.size() != 9) throw Error("expected 9 fds");
    c.state_dirfd = fds[0], c.log_r = fds[1], c.log_w = fds[2], c.err_r = fds[3], c.err_w = fds[4];
    c.commit_r = fds[5], c.commit_w = fds[6], c.stdin_fd = fds[7], c.init_exe = fds[8];
    c.hosts = j.at("hosts").get<std::string>();
    c.resolv = j.at("resolv").get<std::string>();
    c.pooled = j.at("pooled").get<bool>();
    flags = j.at("flags").get<uint64_t>();
    static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
    int level = j.at("log_level").get<int>();
    if (level >= 0 && level < 6) log::set_level(kLevels[level]);
  } catch (const std::exception& e) {
    // The caller reads this as the clone's error.
    answer_clone(answer_fd, [&](uint64_t, int*) -> pid_t { throw Error(std::string("sbx init helper: ") + e.what()); },
                 [] {});
  }
  // Read on the host, as sbx itself would have before the clone: after
  // pivot_root "/" is the sandbox's (cgroup_mode looks at /sys/fs/cgroup).
  (void)cgroup_mode();
  answer_clone(answer_fd, [&](uint64_t extra, int* fd) { return clone_init(spec, flags | extra, fd); },
               [&] { init_main(c); });
}

}  // namespace sbx::runtime
