#include "runtime/native/exec.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "common/error.h"
#include "common/fd.h"
#include "runtime/linux/capabilities.h"
#include "runtime/linux/cgroups.h"
#include "runtime/native/child_channel.h"
#include "runtime/linux/credentials.h"
#include "runtime/native/holder.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/pty.h"
#include "runtime/linux/pty_relay.h"
#include "runtime/linux/self_exec.h"
#include "runtime/user.h"
#include "spec/spec_json.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace sbx::runtime {

using nlohmann::json;

namespace {

// The channel to sbx and the exec step: runtime/native/child_channel.h.

const sigset_t& relayed_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM, SIGCHLD})
      sigaddset(&s, sig);
    return s;
  }();
  return set;
}

void set_env(std::vector<std::string>& env, const std::string& kv) {
  auto eq = kv.find('=');
  std::string key = kv.substr(0, eq == std::string::npos ? kv.size() : eq + 1);
  if (eq == std::string::npos) key += '=';
  for (auto& e : env)
    if (e.rfind(key, 0) == 0) {
      e = kv;
      return;
    }
  env.push_back(kv);
}

/// PATH search as execvp, with the sandbox's PATH. Returns "" (errno set) when
/// not found.

/// The exec'd process, inside every namespace of the sandbox, with the
/// sandbox's process settings `p`. Never returns.
[[noreturn]] void exec_child(const Process& p, const ExecRequest& req, int sock, const sigset_t& caller_mask) noexcept {
  int code = kExitSbxFailed;
  try {
    for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &caller_mask, nullptr);
    // Its own session: a pty becomes its controlling terminal, and a timeout
    // kills the whole process group.
    ::setsid();
    if (req.tty) {
      PtyPair pty = open_pty();  // the sandbox's devpts
      send_fd(sock, pty.master);
      ::close(pty.master);
      make_controlling_terminal(pty.slave);
    } else {
      if (req.stdin_fd >= 0) {
        if (::dup2(req.stdin_fd, 0) < 0) throw_errno("dup2 the exec's stdin");
      } else if (!req.interactive) {
        int fd = ::open("/dev/null", O_RDONLY);
        if (fd < 0 || ::dup2(fd, 0) < 0) throw_errno("open /dev/null as stdin");
        if (fd > 2) ::close(fd);
      }
      if (req.stdout_fd >= 0 && ::dup2(req.stdout_fd, 1) < 0) throw_errno("dup2 the exec's stdout");
      if (req.stderr_fd >= 0 && ::dup2(req.stderr_fd, 2) < 0) throw_errno("dup2 the exec's stderr");
    }
    ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);

    // Identity from the sandbox's own /etc/passwd: / is the sandbox's root now.
    ResolvedUser user;
    std::string who = !req.user.empty() ? req.user : p.user;
    if (!who.empty()) {
      user = resolve_user(who, "/");
    } else {
      user.uid = p.uid;
      user.gid = p.gid;
      user.home = user.uid == 0 ? "/root" : "/";
    }
    std::vector<int> caps = parse_capabilities(p.capabilities);
    if (cgroup_mode() == CgroupMode::Unified) std::erase(caps, CAP_MKNOD);  // as the first process

    // The first process's order (runtime/linux/credentials.h).
    std::vector<gid_t> groups(user.groups.begin(), user.groups.end());
    if (req.user.empty())
      for (auto g : p.additional_gids) groups.push_back(g);
    apply_credentials(p, user, groups, caps);
    std::string cwd = req.cwd.empty() ? p.cwd : req.cwd;
    if (::chdir(cwd.c_str()) < 0) throw_errno("chdir to the working directory " + cwd);

    std::vector<std::string> env = p.env;
    for (const auto& e : req.env) set_env(env, e);
    if (req.tty) set_env(env, "TERM=xterm");
    bool has_home = std::any_of(env.begin(), env.end(), [](const std::string& e) { return e.rfind("HOME=", 0) == 0; });
    if (!has_home || !req.user.empty()) set_env(env, "HOME=" + user.home);
    exec_command(req.args, env, p.no_new_privileges);  // throws: 127 not found, 126 cannot exec
  } catch (const Error& e) {
    code = e.exit_code();
    send_error(sock, code, e.what());
  } catch (const std::exception& e) {
    send_error(sock, code, e.what());
  }
  ::_exit(code);
}

/// What the process that joins the sandbox needs besides the request: the
/// fds sbx opened for it and where to report.
struct Join {
  std::string short_id;
  int ns_flags = 0;
  std::vector<int> procs;  ///< cgroup.procs of each of the sandbox's cgroups (write-only)
  int pidfd = -1;          ///< the sandbox's init
  int sock = -1;           ///< the child's end of the report channel (child_channel.h)
  int pid_w = -1;          ///< where the new process's pid goes
};

/// The joining process (a fork of sbx, or a fresh helper): joins the
/// cgroups (host paths: before setns), then every namespace at once, then
/// forks the process that ends up inside the pid namespace, as a child of
/// sbx itself (CLONE_PARENT; it inherits our non-dumpable state), writes its
/// pid to j.pid_w and exits. Never returns.
[[noreturn]] void join_and_start(const Join& j, const Process& p, const ExecRequest& req,
                                 const sigset_t& caller_mask) noexcept {
  // Read before setns: from then on "/" is the sandbox's (cgroup_mode looks at /sys/fs/cgroup).
  (void)cgroup_mode();
  int err = 0;
  for (int fd : j.procs)
    if (::write(fd, "0", 1) < 0) err = errno;
  if (err) {
    send_error(j.sock, kExitSbxFailed, "join the cgroup of sandbox " + j.short_id + ": " + std::strerror(err));
    ::_exit(kExitSbxFailed);
  }
  if (::setns(j.pidfd, j.ns_flags) < 0) {
    int e = errno;
    send_error(j.sock, kExitSbxFailed,
               "join the namespaces of sandbox " + j.short_id + " (setns): " + std::strerror(e) +
                   (e == ESRCH || e == EINVAL ? "; it has probably just ended" : ""));
    ::_exit(kExitSbxFailed);
  }
  pid_t child = static_cast<pid_t>(::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0));
  if (child == 0) exec_child(p, req, j.sock, caller_mask);
  if (child < 0) {
    int e = errno;
    send_error(j.sock, kExitSbxFailed, "fork into sandbox " + j.short_id + ": " + std::strerror(e));
    ::_exit(kExitSbxFailed);
  }
  (void)!::write(j.pid_w, &child, sizeof child);
  ::_exit(0);
}

/// The fresh helper's request (runtime/linux/self_exec.h): the join, the
/// sandbox's process settings, the exec request and the caller's signal mask.
std::string encode_request(const Join& j, const Process& p, const ExecRequest& req, const sigset_t& mask) {
  json blocked = json::array();
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&mask, sig) == 1) blocked.push_back(sig);
  json r = {{"args", req.args},       {"env", req.env},         {"cwd", req.cwd},
            {"user", req.user},       {"interactive", req.interactive}, {"tty", req.tty},
            {"stdin_fd", req.stdin_fd}, {"stdout_fd", req.stdout_fd}, {"stderr_fd", req.stderr_fd}};
  json out = {{"short_id", j.short_id}, {"ns_flags", j.ns_flags}, {"procs", j.procs},
              {"pidfd", j.pidfd},       {"sock", j.sock},         {"pid_w", j.pid_w},
              {"process", spec::process_to_json(p)}, {"request", r}, {"mask", blocked}};
  return out.dump();
}

int64_t mono_ms() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Namespaces of `pid` that differ from ours (setns into our own user ns fails).
int namespace_flags(pid_t pid) {
  static const struct {
    const char* name;
    int flag;
  } kNs[] = {{"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS},  {"pid", CLONE_NEWPID},     {"ipc", CLONE_NEWIPC},
             {"uts", CLONE_NEWUTS},   {"net", CLONE_NEWNET}, {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME}};
  int flags = 0;
  for (const auto& ns : kNs) {
    struct stat a, b;
    std::string theirs = "/proc/" + std::to_string(pid) + "/ns/" + ns.name;
    std::string ours = std::string("/proc/self/ns/") + ns.name;
    if (::stat(theirs.c_str(), &a) < 0) {
      if (errno == ENOENT) continue;  // kernel without this namespace type
      throw_errno("read the namespaces of sandbox pid " + std::to_string(pid));
    }
    if (::stat(ours.c_str(), &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) flags |= ns.flag;
  }
  return flags;
}

}  // namespace

int exec_in_sandbox(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req) {
  if (req.args.empty()) throw Error("sbx exec: no command given (sbx exec ID -- CMD ARGS...)");
  const std::string short_id = st.id.substr(0, 12);
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, st.pid, 0)));
  // The pidfd pins the process; check that it is still the sandbox's init.
  if (pidfd.fd < 0 || process_start_time(st.pid) != st.pid_start || read_end(dir))
    throw Error(ErrorKind::Conflict, "sandbox " + short_id + " is not running; see 'sbx inspect " + short_id + "'");
  int ns_flags = namespace_flags(st.pid);

  std::vector<Fd> procs;
  for (const auto& cg : st.cgroups) {
    int fd = ::open((cg + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open " + cg + "/cgroup.procs of sandbox " + short_id);
    procs.emplace_back(fd);
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) throw_errno("socketpair");
  Fd sock(sv[0]), child_sock(sv[1]);
  int pp[2];
  if (::pipe2(pp, O_CLOEXEC) < 0) throw_errno("pipe");
  Fd pid_r(pp[0]), pid_w(pp[1]);

  touch_activity(dir.c_str());
  sigset_t caller_mask;
  sigemptyset(&caller_mask);
  // Without forwarding (a server's thread) the caller's mask and pending
  // signals are left alone: another thread may be waiting for them.
  if (req.forward_signals) ::sigprocmask(SIG_BLOCK, &relayed_signals(), &caller_mask);
  struct MaskGuard {
    sigset_t m;
    bool on;
    ~MaskGuard() {
      if (!on) return;
      struct timespec zero {};
      while (::sigtimedwait(&relayed_signals(), nullptr, &zero) > 0) {
      }
      ::sigprocmask(SIG_SETMASK, &m, nullptr);
    }
  } mask_guard{caller_mask, req.forward_signals};

  Join join;
  join.short_id = short_id;
  join.ns_flags = ns_flags;
  for (const auto& fd : procs) join.procs.push_back(fd.fd);
  join.pidfd = pidfd.fd;
  join.sock = child_sock.fd;
  join.pid_w = pid_w.fd;
  // A caller with secrets in memory (sbx serve: runtime/linux/self_exec.h)
  // joins through a fresh exec of sbx; the CLI joins from a fork, as fast.
  Fd payload;
  std::string payload_arg;
  std::vector<int> keep;
  if (fresh_helper_image() >= 0) {
    payload = Fd(helper_payload(encode_request(join, spec.process, req, caller_mask)));
    payload_arg = std::to_string(payload.fd);
    keep = join.procs;
    keep.insert(keep.end(), {join.pidfd, join.sock, join.pid_w, payload.fd, req.stdin_fd, req.stdout_fd, req.stderr_fd});
  }
  char* const helper_argv[] = {const_cast<char*>("sbx"), const_cast<char*>(kHelperArg), const_cast<char*>("exec"),
                               payload_arg.data(), nullptr};
  const std::string exec_failed = "start sbx's helper to join sandbox " + short_id + " (execveat)";

  pid_t helper;
  if (payload.fd >= 0) {
    int exec_errno = 0;
    helper = spawn_fresh_helper(helper_argv, keep.data(), keep.size(), &exec_errno);
    if (helper < 0) throw_errno(exec_failed, exec_errno);
  } else {
    helper = ::fork();
    if (helper < 0) throw_errno("fork");
    if (helper == 0) {
      // No process of the sandbox may read or trace us or the process we
      // fork, until its exec (the workload's execve makes it dumpable again).
      ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
      join_and_start(join, spec.process, req, caller_mask);
    }
  }
  payload = Fd();
  child_sock = Fd();
  pid_w = Fd();
  pid_t child = -1;
  if (::read(pid_r.fd, &child, sizeof child) != sizeof child) child = -1;
  crash_point("exec-joined");

  // Wait for exec (EOF), an error, or the pty master; then reap the helper,
  // whose exit (after it sent the pid) overlaps the workload's exec.
  ChildReport report = read_child_report(sock.fd);  // a read error reads as EOF
  while (::waitpid(helper, nullptr, 0) < 0 && errno == EINTR) {
  }
  Fd master(report.pty_master);
  if (!report.error.empty() || child <= 0) {
    if (child > 0)
      while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
    touch_activity(dir.c_str());
    throw Error(report.error.empty() ? "could not start the process in sandbox " + short_id : report.error, 0,
                report.exit_code ? report.exit_code : kExitSbxFailed);
  }

  // Relay: signals to the process, pty both ways (runtime/linux/pty_relay.h: the
  // user's terminal in raw mode, window size, ^D at end of input), activity
  // for the idle timer.
  int sfd = req.forward_signals ? ::signalfd(-1, &relayed_signals(), SFD_CLOEXEC | SFD_NONBLOCK) : -1;
  Fd sigfd(sfd);
  // The end of the process wakes the loop through its pidfd, not SIGCHLD: in
  // a multi-threaded caller another thread's signalfd may take the SIGCHLD.
  // (It is our child and not reaped yet, so the pid cannot be reused.)
  Fd child_pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  if (req.on_pid) req.on_pid(child);
  std::optional<PtyRelay> relay;  // restores the user's terminal on every exit path
  if (master.fd >= 0) relay.emplace(master.fd, 0, 1);
  const int64_t start = mono_ms();
  int64_t last_touch = start;
  // Often enough that a running exec never looks idle (1/3 of the idle time, at most 10 s).
  const int64_t touch_every = st.idle_timeout_ms > 0 ? std::clamp<int64_t>(st.idle_timeout_ms / 3, 50, 10000) : 0;
  int status = -1;
  bool timed_out = false, cancelled = false;
  for (;;) {
    int wait_ms = -1;
    int64_t now = mono_ms();
    if (req.timeout.count() > 0) {
      int64_t left = start + req.timeout.count() - now;
      if (left <= 0 && !timed_out) {
        timed_out = true;
        ::kill(-child, SIGKILL);
        ::kill(child, SIGKILL);
        left = 1000;
      }
      wait_ms = static_cast<int>(std::max<int64_t>(left, 1));
    }
    if (touch_every > 0) {
      if (now - last_touch >= touch_every) {
        touch_activity(dir.c_str());
        last_touch = now;
      }
      int t = static_cast<int>(last_touch + touch_every - now);
      if (wait_ms < 0 || t < wait_ms) wait_ms = std::max(t, 1);
    }
    struct pollfd pfd[5] = {{sigfd.fd, POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
    int n = relay ? relay->add_pollfds(pfd, 1, req.interactive) : 1;
    const int pid_slot = n, cancel_slot = n + 1;
    pfd[pid_slot] = {child_pidfd.fd, POLLIN, 0};
    pfd[cancel_slot] = {cancelled ? -1 : req.cancel_fd, POLLIN, 0};
    if (child_pidfd.fd < 0 && wait_ms < 0) wait_ms = 100;  // no pidfd: poll waitpid
    int r = ::poll(pfd, static_cast<nfds_t>(n + 2), wait_ms);
    if (r < 0 && errno != EINTR) break;
    if (r > 0 && relay) relay->handle(pfd);
    if (r > 0 && (pfd[cancel_slot].revents & (POLLIN | POLLHUP | POLLERR))) {
      ::kill(-child, SIGKILL);  // the caller gave up (a client went away)
      ::kill(child, SIGKILL);
      cancelled = true;
    }
    if (pfd[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (::read(sigfd.fd, &si, sizeof si) == sizeof si) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) continue;
        if (sig == SIGWINCH && relay) {
          relay->resize();
          continue;
        }
        ::kill(child, sig);
      }
    }
    if (req.on_pid) {  // ended? (not reaped: the pid stays ours until on_pid(0) is told)
      siginfo_t ended{};
      if (::waitid(P_PID, static_cast<id_t>(child), &ended, WEXITED | WNOHANG | WNOWAIT) == 0 && ended.si_pid == child)
        req.on_pid(0);
    }
    int ws;
    pid_t w = ::waitpid(child, &ws, WNOHANG);
    if (w == child) {
      status = ws;
      break;
    }
  }
  // Drain what the process wrote last, until every slave end is closed (EIO)
  // or nothing came for 200 ms (a process it left behind may still hold the
  // pty). Not poll(0): the tty layer moves the slave's last writes to the
  // master from a workqueue, so right after the exit they may not be there
  // yet (seen under load: the final line of `exec -t` lost).
  while (relay && relay->master_open()) {
    struct pollfd pfd[2];
    int n = relay->add_pollfds(pfd, 0, false);
    if (n == 0 || ::poll(pfd, static_cast<nfds_t>(n), 200) <= 0) break;
    relay->handle(pfd);
  }
  relay.reset();
  touch_activity(dir.c_str());
  if (timed_out) return kExitTimeout;
  if (status < 0) throw Error("lost the process in sandbox " + short_id);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int exec_helper_main(int payload_fd) {
  Join j;
  Process p;
  ExecRequest req;
  sigset_t mask;
  sigemptyset(&mask);
  try {
    json in = json::parse(read_helper_payload(payload_fd));
    j.short_id = in.at("short_id").get<std::string>();
    j.ns_flags = in.at("ns_flags").get<int>();
    j.procs = in.at("procs").get<std::vector<int>>();
    j.pidfd = in.at("pidfd").get<int>();
    j.sock = in.at("sock").get<int>();
    j.pid_w = in.at("pid_w").get<int>();
    p = spec::process_from_json(in.at("process"));
    const json& rq = in.at("request");
    req.args = rq.at("args").get<std::vector<std::string>>();
    req.env = rq.at("env").get<std::vector<std::string>>();
    req.cwd = rq.at("cwd").get<std::string>();
    req.user = rq.at("user").get<std::string>();
    req.interactive = rq.at("interactive").get<bool>();
    req.tty = rq.at("tty").get<bool>();
    req.stdin_fd = rq.at("stdin_fd").get<int>();
    req.stdout_fd = rq.at("stdout_fd").get<int>();
    req.stderr_fd = rq.at("stderr_fd").get<int>();
    for (int sig : in.at("mask").get<std::vector<int>>()) sigaddset(&mask, sig);
  } catch (const std::exception& e) {
    // Without the channel's fd there is nobody to tell but stderr; sbx then
    // sees no pid and no report and says it could not start the process.
    if (j.sock >= 0) send_error(j.sock, kExitSbxFailed, std::string("sbx exec helper: ") + e.what());
    else ::dprintf(2, "sbx exec helper: %s\n", e.what());
    return kExitSbxFailed;
  }
  join_and_start(j, p, req, mask);
}

}  // namespace sbx::runtime
