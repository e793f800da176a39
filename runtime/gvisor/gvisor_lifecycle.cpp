#include "runtime/gvisor/gvisor_lifecycle.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "common/fd.h"
#include "common/fs.h"
#include "common/log.h"
#include "oci/runtime_config.h"
#include "runtime/linux/cgroups.h"
#include "runtime/linux/console_socket.h"
#include "runtime/gvisor/gvisor_backend.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/gvisor/gvisor_bundle.h"
#include "runtime/gvisor/gvisor_network.h"
#include "runtime/gvisor/runsc_features.h"
#include "runtime/lifecycle.h"
#include "runtime/linux/pty_relay.h"
#include "runtime/sandbox_log.h"
#include "runtime/user.h"

namespace sbx::runtime {

using nlohmann::json;
using namespace gvisor;

namespace {

// Where the pause helper appears inside a hold-only sandbox (read-only bind).
constexpr const char* kPauseInSandbox = "/.sbx/pause";

int64_t mono_ms() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string cgroup_name(const std::string& id) { return "sbx-" + id.substr(0, 12); }

std::vector<std::string> runsc_base(const GvisorLaunch& l, const std::string& dir, const std::string& log) {
  std::vector<std::string> a = {l.runsc, "--root", dir + "/runsc"};
  if (!log.empty()) a.insert(a.end(), {"--log", log, "--log-format", "json"});
  a.insert(a.end(), l.runsc_flags.begin(), l.runsc_flags.end());
  return a;
}

[[noreturn]] void exec_argv(const std::vector<std::string>& argv) {
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  ::execv(a[0], a.data());
  ::_exit(127);
}

int code_of(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

bool terminating(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT || sig == SIGUSR1 || sig == SIGUSR2 ||
         sig == SIGALRM;
}

// ---- the monitor ------------------------------------------------------------

struct Monitor {
  Monitor(std::string d, std::string i, GvisorLaunch l, int ready)
      : dir(std::move(d)), id(std::move(i)), launch(std::move(l)), ready_fd(ready),
        dirfd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)), log(dirfd) {}
  std::string dir, id;
  GvisorLaunch launch;
  int ready_fd = -1;           // to the creating sbx; -1 once answered
  int log_in[2] = {-1, -1};    // runsc's stdout and stderr (the first process's)
  int dirfd = -1;              // the state dir (O_PATH), for the log; lives as long as the monitor
  SandboxLog log;              // STATE_DIR/log
  pid_t runsc = -1;
  int last_signal = 0;         // last signal forwarded to the first process
  bool timed_out = false;
  int64_t started_mono = 0, started_real = 0;

  // Copies runsc's output into the log; false once both pipes are at EOF (closed).
  bool pump_log() {
    for (int i = 0; i < 2; ++i) {
      if (log_in[i] < 0 || log.pump_from(log_in[i], i == 0 ? kStdout : kStderr)) continue;
      ::close(log_in[i]);
      log_in[i] = -1;
    }
    return log_open();
  }
  bool log_open() const { return log_in[0] >= 0 || log_in[1] >= 0; }
  // Waits up to `ms` for output, then copies it into the log.
  void poll_log(int ms) {
    struct pollfd p[2] = {{log_in[0], POLLIN, 0}, {log_in[1], POLLIN, 0}};
    if (::poll(p, 2, ms) > 0) pump_log();
  }

  void answer(const std::string& msg) {
    if (ready_fd < 0) return;
    (void)!::write(ready_fd, msg.data(), msg.size());
    ::close(ready_fd);
    ready_fd = -1;
  }

  void runsc_kill(const std::string& sig, bool all) {
    std::vector<std::string> a = runsc_base(launch, dir, "");
    a.push_back("kill");
    if (all) a.push_back("--all");
    a.insert(a.end(), {id, sig});
    run_quiet(a);
  }

  // True once runsc reports the container running (or already stopped). Read
  // from runsc's own state file under its --root (<id>_sandbox:<id>.state,
  // JSON with "status"), not with `runsc state`: that costs a Go process
  // start (~25 ms) per poll. A half-written file just reads as not yet.
  bool container_started() {
    DIR* d = ::opendir((dir + "/runsc").c_str());
    if (!d) return false;
    std::string file;
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 6 && n.compare(n.size() - 6, 6, ".state") == 0) file = dir + "/runsc/" + n;
    }
    ::closedir(d);
    if (file.empty()) return false;
    std::string text;
    try {
      text = fs::read_file(file);
    } catch (const Error&) {
      return false;
    }
    for (const char* st : {"\"status\":\"running\"", "\"status\":\"stopped\"", "\"status\": \"running\"", "\"status\": \"stopped\""})
      if (text.find(st) != std::string::npos) return true;
    return false;
  }

  // Waits for runsc up to `ms`; true when it ended (status in `status`).
  bool wait_runsc(int ms, int& status) {
    int64_t end = mono_ms() + ms;
    for (;;) {
      if (::waitpid(runsc, &status, WNOHANG) == runsc) return true;
      if (mono_ms() >= end) return false;
      if (log_open()) poll_log(5);
      else ::poll(nullptr, 0, 5);
    }
  }

  [[noreturn]] void finish(int status) {
    // The log's write ends die with runsc and its sandbox; read what is left.
    for (int i = 0; i < 40 && log_open(); ++i) poll_log(5);
    int code = code_of(status);
    if (!timed_out) {
      EndRecord end{"exit", code, 0, 0};
      int sig = code - 128;
      // runsc reports "killed by signal N" as exit status 128+N: it is a
      // signal when one was sent (or the pause helper ended on one).
      if (code > 128 && (sig == last_signal || (launch.hold_only && terminating(sig)))) {
        end.reason = "signal";
        end.signal = sig;
      }
      // gVisor has no OOM killer of its own: at --memory the host's memory
      // cgroup kills the Sentry, which ends the sandbox. Read the count now:
      // the cgroup goes with release_gvisor below (inspect cannot read it later).
      if (oom_kills() > 0) end = EndRecord{"oom", kExitOom, SIGKILL, 0};
      write_end_if_absent(dir, end);
    }
    SandboxState st;
    st.id = id;
    release_gvisor(dir, st);
    ::_exit(code);
  }

  // OOM kills in the sandbox's memory cgroup (v1 memory.oom_control, v2
  // memory.events: "oom_kill N").
  uint64_t oom_kills() {
    uint64_t n = 0;
    std::vector<std::string> dirs = sandbox_cgroup_dirs(id);
    for (const auto& d : runsc_cgroup_dirs(cgroup_name(id))) dirs.push_back(d);
    for (const auto& d : dirs)
      for (const char* f : {"/memory.oom_control", "/memory.events"}) {
        try {
          std::string text = fs::read_file(d + f);
          auto pos = text.find("oom_kill ");
          if (pos != std::string::npos) n += std::strtoull(text.c_str() + pos + 9, nullptr, 10);
        } catch (const Error&) {
        }
      }
    return n;
  }

  // Ends the sandbox for `reason` (timeout / idle).
  [[noreturn]] void expire(const char* reason) {
    timed_out = true;
    write_end_if_absent(dir, EndRecord{reason, kExitTimeout, SIGKILL, 0});
    runsc_kill("KILL", true);
    int status = 0;
    if (!wait_runsc(5000, status)) {
      ::kill(runsc, SIGKILL);
      wait_runsc(5000, status);
    }
    finish(status);
  }

  int next_timeout() {
    int64_t wait = -1;
    if (launch.timeout_ms > 0) {
      int64_t left = started_mono + launch.timeout_ms - mono_ms();
      if (left <= 0) expire("timeout");
      wait = left;
    }
    if (launch.idle_timeout_ms > 0) {
      int64_t last = started_real;
      struct stat sb;
      if (::stat((dir + "/activity").c_str(), &sb) == 0) {
        int64_t m = int64_t(sb.st_mtim.tv_sec) * 1000 + sb.st_mtim.tv_nsec / 1000000;
        last = std::max(last, m);
      }
      int64_t left = last + launch.idle_timeout_ms - now_ms();
      if (left <= 0) expire("idle");
      if (wait < 0 || left < wait) wait = left;
    }
    return static_cast<int>(std::min<int64_t>(wait, 0x3fffffff));
  }

  [[noreturn]] void run(const std::function<void(const std::string&)>& write_config) {
    started_mono = mono_ms();
    started_real = now_ms();
    sigset_t all;
    ::sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);
    int sfd = ::signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
    const std::string rootfs = dir + "/bundle/rootfs";
    int lp[2] = {-1, -1}, ep[2] = {-1, -1};
    int go[2] = {-1, -1};  // "in the cgroup, exec runsc" (EOF without it: give up)
    try {
      // A private mount namespace: the rootfs overlay exists only here (and in
      // runsc's gofer, our child) and vanishes with us.
      if (::unshare(CLONE_NEWNS) < 0) throw_errno("unshare a mount namespace for the gVisor monitor");
      if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) throw_errno("make / private");
      if (std::find(launch.runsc_flags.begin(), launch.runsc_flags.end(), "--network=sandbox") !=
          launch.runsc_flags.end())
        hide_host_net_sysctls_from_runsc();
      mount_rootfs(launch.layer_dirs, dir + "/scratch", rootfs);
      if (write_config) write_config(rootfs);
      if (::pipe2(lp, O_CLOEXEC) < 0 || ::pipe2(ep, O_CLOEXEC) < 0) throw_errno("pipe");
      if (::pipe2(go, O_CLOEXEC) < 0) throw_errno("pipe");
    } catch (const std::exception& e) {
      answer("E125 " + std::string(e.what()));
      ::_exit(125);
    }
    std::vector<std::string> argv = runsc_base(launch, dir, dir + "/runsc.log");
    if (!launch.cgroup_dirs.empty()) argv.push_back("--ignore-cgroups");  // it starts in them (below)
    if (launch.restore_image.empty()) {
      argv.insert(argv.end(), {"run", "--bundle", dir + "/bundle", "--pid-file", dir + "/pid", id});
    } else {
      argv.insert(argv.end(), {"restore", "--image-path", launch.restore_image, "--bundle", dir + "/bundle",
                               "--pid-file", dir + "/pid", id});
    }
    runsc = ::fork();
    if (runsc < 0) {
      answer("E125 fork runsc: " + std::string(std::strerror(errno)));
      ::_exit(125);
    }
    if (runsc == 0) {
      ::sigprocmask(SIG_UNBLOCK, &all, nullptr);
      // runsc (and its attached sandbox) die with the monitor: a SIGKILLed
      // monitor leaves no running sandbox, only state for gc.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(launch.stdin_fd >= 0 ? launch.stdin_fd : null, 0);
      ::dup2(lp[1], 1);
      ::dup2(ep[1], 2);
      ::close(go[1]);
      char g = 0;
      while (::read(go[0], &g, 1) < 0 && errno == EINTR) {
      }
      if (g != 'G') ::_exit(125);
      exec_argv(argv);
    }
    ::close(lp[1]);
    ::close(ep[1]);
    if (launch.stdin_fd >= 0) ::close(launch.stdin_fd);  // runsc has it
    ::close(go[0]);
    try {
      // Into the sandbox's cgroup before it becomes runsc: its whole sandbox
      // (sentry, gofer) then starts there, under the limits sbx applied.
      for (const auto& d : launch.cgroup_dirs) fs::write_existing(d + "/cgroup.procs", std::to_string(runsc));
    } catch (const std::exception& e) {
      ::kill(runsc, SIGKILL);
      while (::waitpid(runsc, nullptr, 0) < 0 && errno == EINTR) {
      }
      answer("E125 " + std::string(e.what()));
      ::_exit(125);
    }
    (void)!::write(go[1], "G", 1);
    ::close(go[1]);
    log_in[0] = lp[0];
    log_in[1] = ep[0];
    for (int fd : log_in) ::fcntl(fd, F_SETFL, O_NONBLOCK);
    log.open();

    // Until runsc runs the first process: answer the creating sbx.
    int status = 0;
    bool ended = false;
    while (ready_fd >= 0) {
      if (::waitpid(runsc, &status, WNOHANG) == runsc) {
        ended = true;
        break;
      }
      if (container_started()) {
        answer("OK");
        break;
      }
      poll_log(3);
    }
    if (ended && ready_fd >= 0) {
      std::string errors = runsc_errors(read_tail(dir + "/runsc.log", 64 * 1024));
      if (code_of(status) == 128 && !errors.empty()) {
        std::string cmd;
        try {
          auto c = json::parse(fs::read_file(dir + "/bundle/config.json"));
          cmd = c["process"]["args"][0].get<std::string>();
        } catch (const std::exception&) {
        }
        std::string msg = "E125 runsc failed to start the sandbox:\n" + errors;
        try {
          throw_if_command_error(errors, cmd);
        } catch (const Error& e) {
          msg = "E" + std::to_string(e.exit_code()) + " " + e.what();
        }
        answer(msg);
        write_end_if_absent(dir, EndRecord{"failed", code_of(status), 0, 0});
        SandboxState st;
        st.id = id;
        release_gvisor(dir, st);
        ::_exit(125);
      }
      answer("OK");  // it started and has already ended
    }
    if (ended) finish(status);

    for (;;) {
      if (::waitpid(runsc, &status, WNOHANG) == runsc) finish(status);
      int timeout = next_timeout();
      struct pollfd pfd[3] = {{sfd, POLLIN, 0}, {log_in[0], POLLIN, 0}, {log_in[1], POLLIN, 0}};
      int r = ::poll(pfd, 3, timeout);
      if (r < 0 && errno != EINTR) ::_exit(125);
      if ((pfd[1].revents | pfd[2].revents) & (POLLIN | POLLHUP | POLLERR)) pump_log();
      if (pfd[0].revents & POLLIN) {
        struct signalfd_siginfo si;
        while (::read(sfd, &si, sizeof si) == sizeof si) {
          int sig = static_cast<int>(si.ssi_signo);
          if (sig == SIGCHLD || sig == SIGPIPE) continue;
          last_signal = sig;
          runsc_kill(std::to_string(sig), false);  // to the first process, as the native holder
        }
      }
    }
  }
};

void write_meta(const std::string& dir, const GvisorLaunch& l) {
  json meta = {{"runsc", l.runsc}, {"runsc_flags", l.runsc_flags}, {"layer_dirs", l.layer_dirs}, {"image", l.image}};
  fs::write_file_atomic(dir + "/meta.json", meta.dump(2), 0600);
}

void set_env(std::vector<std::string>& env, const std::string& kv) {
  auto eq = kv.find('=');
  std::string key = kv.substr(0, eq == std::string::npos ? kv.size() : eq + 1);
  for (auto& e : env)
    if (e.compare(0, key.size(), key) == 0) {
      e = kv;
      return;
    }
  env.push_back(kv);
}

}  // namespace

std::string find_pause_helper() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir;
  if (n > 0) {
    self[n] = 0;
    dir = self;
    dir = dir.substr(0, dir.rfind('/'));
  }
  for (const std::string& p : {dir + "/sbx-pause", dir + "/../libexec/sbx/sbx-pause", std::string("/usr/libexec/sbx/sbx-pause")})
    if (!dir.empty() && is_executable(p)) return p;
  throw Error("the helper sbx-pause (the first process of a gVisor sandbox created without a COMMAND) is not next to " +
              dir + "/sbx nor in ../libexec/sbx; reinstall sbx, or give 'sbx create' a COMMAND");
}

GvisorLaunch read_gvisor_meta(const std::string& dir) {
  GvisorLaunch l;
  if (!fs::exists(dir + "/meta.json")) {  // a `sbx run` sandbox: no later runsc calls but delete
    l.runsc = find_runsc("");
    return l;
  }
  try {
    auto m = json::parse(fs::read_file(dir + "/meta.json"));
    l.runsc = m.value("runsc", "");
    l.runsc_flags = m.value("runsc_flags", std::vector<std::string>{});
    l.layer_dirs = m.value("layer_dirs", std::vector<std::string>{});
    l.image = m.value("image", "");
  } catch (const json::exception& e) {
    throw Error(dir + "/meta.json is corrupt: " + e.what() + "; remove the sandbox with 'sbx rm -f'");
  }
  if (l.runsc.empty()) l.runsc = find_runsc("");
  return l;
}

void start_gvisor_monitor(const std::string& dir, SandboxState st, const GvisorLaunch& launch,
                          const std::function<void(const std::string& rootfs)>& write_config) {
  fs::mkdir_p(dir + "/bundle/rootfs", 0700);
  fs::mkdir_p(dir + "/scratch", 0700);
  fs::mkdir_p(dir + "/runsc", 0700);
  write_meta(dir, launch);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) < 0) throw_errno("pipe");
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(ready[0]);
    ::close(ready[1]);
    throw_errno("fork the gVisor monitor", e);
  }
  if (pid == 0) {
    ::close(ready[0]);
    // Its own session, away from the caller's terminal; stdio on /dev/null and
    // no other inherited fd, so `$(sbx create …)` sees EOF when create returns.
    ::setsid();
    // The first process's stdin (fd 4 here, for runsc), above 3 first.
    int in = launch.stdin_fd >= 0 ? ::fcntl(launch.stdin_fd, F_DUPFD_CLOEXEC, 10) : -1;
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    if (ready[1] != 3) {
      ::dup2(ready[1], 3);
      ready[1] = 3;
    }
    if (in >= 0) ::dup2(in, 4);
    ::syscall(SYS_close_range, in >= 0 ? 5U : 4U, ~0U, 0U);
    ::fcntl(3, F_SETFD, FD_CLOEXEC);
    if (in >= 0) ::fcntl(4, F_SETFD, FD_CLOEXEC);
    GvisorLaunch ml = launch;
    ml.stdin_fd = in >= 0 ? 4 : -1;
    Monitor m(dir, st.id, ml, 3);
    m.run(write_config);
  }
  ::close(ready[1]);
  st.pid = pid;
  st.pid_start = process_start_time(pid);
  if (st.cgroups.empty()) st.cgroups = runsc_cgroup_dirs(cgroup_name(st.id));  // absolute cgroupsPath "/sbx-<id12>"
  try {
    write_state(dir, st);
  } catch (...) {
    ::kill(pid, SIGKILL);
    ::close(ready[0]);
    throw;
  }
  // The monitor's answer: "OK" once runsc runs the first process, "E<code> <text>", or EOF if it died.
  std::string msg;
  char buf[4096];
  for (ssize_t n; (n = ::read(ready[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    msg.append(buf, static_cast<size_t>(n));
  }
  ::close(ready[0]);
  if (msg == "OK") return;
  if (msg.size() > 1 && msg[0] == 'E') {
    int code = std::atoi(msg.c_str() + 1);
    auto sp = msg.find(' ');
    std::string text = sp == std::string::npos ? msg : msg.substr(sp + 1);
    // 126/127: the command's own error, worded as native create words it.
    if (code != kExitNotFound && code != kExitCannotExec) text = "gvisor: " + text;
    throw Error(text, 0, code ? code : kExitSbxFailed);
  }
  throw Error("gvisor: the monitor of sandbox " + st.id.substr(0, 12) + " died while starting runsc; see " + dir +
              "/runsc.log");
}

std::string create_gvisor_sandbox(SandboxSpec spec, const std::string& run_root, const std::string& runsc_path,
                                  int stdin_fd, const std::function<void()>& gc_stale) {
  if (spec.id.empty()) spec.id = new_sandbox_id();
  if (spec.layer_dirs.empty()) throw Error("gvisor: the image has no layers to use as a rootfs");
  if (!spec.devices.empty())
    throw Error("gvisor: device passthrough (--gpus/--device) needs runsc --nvproxy; use --runtime native");
  if (spec.process.terminal) throw Error(ErrorKind::Unsupported,
              "gvisor: -t is not supported by 'sbx create --runtime gvisor'");
  GvisorLaunch launch;
  launch.runsc = find_runsc(runsc_path);
  // A long-lived sandbox keeps its writes in runsc's memory overlay, so that
  // checkpoints include them. Bounding that overlay needs --overlay2's size
  // option (RunscFeatures::overlay_size), which no Debian runsc has yet
  // (20221219 and 20240729 reject "root:memory,size=N"); until one does the
  // writes count against --memory and --disk is refused here.
  if (spec.disk_bytes)
    throw Error("gvisor: --disk works with 'sbx run --runtime gvisor' only: a long-lived gVisor sandbox keeps its "
                "writes in runsc's memory overlay (so checkpoints include them), and " + launch.runsc + " (" +
                runsc_features(launch.runsc).version + ") cannot bound it (no --overlay2 size option); "
                "bound it with --memory, or use --runtime native");
  launch.layer_dirs = spec.layer_dirs;
  launch.image = spec.image_id.empty() ? spec.image_ref : spec.image_id;
  launch.timeout_ms = spec.timeout.count();
  launch.idle_timeout_ms = spec.idle_timeout.count();
  launch.hold_only = spec.process.args.empty();
  launch.stdin_fd = launch.hold_only ? -1 : stdin_fd;
  // Writes go to a memory-backed overlay inside the sandbox (as sbx run).
  launch.runsc_flags =
      gvisor::runsc_sandbox_flags(spec.network, spec.readonly_rootfs ? gvisor::RootWrites::ReadOnly : gvisor::RootWrites::Memory);
  std::string pause;
  if (launch.hold_only) pause = find_pause_helper();

  const std::string id = spec.id;
  fs::mkdir_p(run_root, 0700);
  // What killed sandboxes left behind (as every start does).
  if (gc_stale) gc_stale();
  const std::string dir = sandbox_dir(run_root, id);
  const std::string fresh = run_root + "/.new-" + id;
  if (::mkdir(fresh.c_str(), 0700) < 0) throw_errno("create the sandbox state directory " + fresh);
  SandboxState st;
  try {
    // config.json: what the sandbox was started with (inspect, exec), as native.
    SandboxSpec shown = spec;
    if (launch.hold_only) {
      shown.process.args = {"sbx-holder"};
      shown.annotations["org.sbx.hold-only"] = "true";
    }
    oci::RuntimeConfigOptions rc;
    rc.rootfs_path = dir + "/bundle/rootfs";
    fs::write_file_atomic(fresh + "/config.json", oci::to_runtime_config(shown, rc), 0600);
    st = creating_state(spec);
    st.runtime = "gvisor";
    // The cgroups: the one sbx makes below (and, for sandboxes of an older sbx,
    // those runsc made for a relative cgroupsPath: the same paths).
    st.cgroups = sandbox_cgroup_dirs(id);
    write_state(fresh, st);
    crash_point("create-dir");
    if (::rename(fresh.c_str(), dir.c_str()) < 0) throw_errno("rename " + fresh + " to " + dir);
  } catch (...) {
    remove_tree(fresh);
    throw;
  }
  crash_point("create-state");
  // A failed start is removed the gVisor way (runsc's state and cgroups too).
  BackendOptions bo;
  bo.run_root = run_root;
  bo.runsc = launch.runsc;
  GvisorBackend backend(bo);
  start_created(run_root, id, [&] {
    if (!spec.name.empty()) claim_name(run_root, spec.name, id);
    crash_point("create-name");
    // sbx makes the sandbox's cgroup itself, with its limits, as `sbx run
    // --runtime gvisor` does (runtime/gvisor/gvisor_backend.cpp): runsc uses the
    // pre-created dirs as they are, and the OOM count outlives runsc. The
    // monitor and runsc are our children, so "sbx-<id12>" resolves there.
    {
      SandboxSpec limits = spec;
      apply_pids_limit_as_nproc(limits);
      Cgroup cg = Cgroup::create(id, limits.resources);
      launch.cgroup_dirs = cg.paths();
      cg.release();  // state.json names it; rm removes it
    }
    // --network private (runtime/gvisor/gvisor_network.h): runsc joins the
    // namespace through this sbx's fd while it starts the sandbox (we wait for
    // that below); then the sandbox holds it. The lease names the state dir:
    // `sbx rm` / gc release it, as for a native sandbox.
    GvisorNetwork net;
    if (spec.network == NetworkMode::Private || spec.network == NetworkMode::User)
      net = prepare_network(spec, run_root, dir + "/net", true);
    // The bundle's config is written inside the monitor's mount namespace:
    // the user (-u / the image's User) resolves in the image's /etc/passwd.
    auto write_config = [spec, pause, dir, netns = net.netns_path](const std::string& rootfs) {
      SandboxSpec r = spec;
      if (!pause.empty()) {
        r.process.args = {kPauseInSandbox};
        Mount m;
        m.destination = kPauseInSandbox;
        m.type = "bind";
        m.source = pause;
        m.options = {"rbind", "ro", "nosuid", "nodev"};
        r.mounts.push_back(m);
      }
      resolve_process_user(r.process, rootfs);
      idmap_volumes_for_gvisor(r.mounts, dir + "/bundle");  // never host root through a volume
      apply_pids_limit_as_nproc(r);
      oci::RuntimeConfigOptions ro;
      ro.rootfs_path = rootfs;
      ro.network_namespace_path = netns;
      // No cgroupsPath: runsc starts in the cgroup sbx made (launch.cgroup_dirs).
      fs::write_file_atomic(dir + "/bundle/config.json", oci::to_runtime_config(r, ro), 0600);
    };
    try {
      start_gvisor_monitor(dir, st, launch, write_config);
    } catch (...) {
      release_network(net);
      throw;
    }
  }, {}, &backend);
  return id;
}

void kill_gvisor(const std::string& dir, const SandboxState& st, int sig) {
  int fd = open_init_pidfd(st);
  if (fd < 0) throw Error(ErrorKind::Conflict, "sandbox " + st.id.substr(0, 12) + " is not running; see 'sbx ps -a'");
  if (sig != SIGKILL) {
    // The monitor forwards it (and remembers it, to record "signal N").
    int r = static_cast<int>(::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
    int e = errno;
    ::close(fd);
    if (r < 0 && e != ESRCH) throw_errno("send signal " + std::to_string(sig) + " to sandbox " + st.id.substr(0, 12), e);
    return;
  }
  // SIGKILL cannot be forwarded: record it, then kill every process of the
  // sandbox through runsc; the monitor sees runsc end and cleans up.
  write_end_if_absent(dir, EndRecord{"killed", 137, SIGKILL, 0});
  GvisorLaunch l = read_gvisor_meta(dir);
  std::vector<std::string> a = runsc_base(l, dir, "");
  a.insert(a.end(), {"kill", "--all", st.id, "KILL"});
  run_quiet(a);
  // A container made by `runsc restore` (sbx restore) ignores `kill --all` in
  // runsc 20221219 (its processes stay); killing its init ends them all.
  a = runsc_base(l, dir, "");
  a.insert(a.end(), {"kill", st.id, "KILL"});
  run_quiet(a);
  struct pollfd p {fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) <= 0) ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
  ::close(fd);
}

void pause_gvisor(const std::string& dir, const SandboxState& st, bool pause) {
  if (!state_alive(st)) throw Error(ErrorKind::Conflict,
              "sandbox " + st.id.substr(0, 12) + " is not running; see 'sbx ps -a'");
  GvisorLaunch l = read_gvisor_meta(dir);
  std::vector<std::string> a = runsc_base(l, dir, "");
  a.insert(a.end(), {pause ? "pause" : "resume", st.id});
  int status = run_quiet(a);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(std::string("runsc ") + (pause ? "pause" : "resume") + " of sandbox " + st.id.substr(0, 12) +
                " failed (status " + std::to_string(status) + "); see " + dir + "/runsc.log");
}

std::string ps_gvisor(const std::string& dir, const SandboxState& st) {
  if (!state_alive(st)) throw Error(ErrorKind::Conflict,
              "sandbox " + st.id.substr(0, 12) + " is not running; see 'sbx ps -a'");
  GvisorLaunch l = read_gvisor_meta(dir);
  std::vector<std::string> a = runsc_base(l, dir, "");
  a.insert(a.end(), {"ps", st.id});  // (its --format json gives only pids)
  int fd = ::memfd_create("runsc-ps", MFD_CLOEXEC);
  if (fd < 0) throw_errno("memfd for runsc ps");
  std::string out;
  int status = run_with_output(a, fd);
  char buf[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("runsc ps of sandbox " + st.id.substr(0, 12) + " failed (status " + std::to_string(status) + "): " + out);
  return out;
}

void release_gvisor(const std::string& dir, const SandboxState& st) noexcept {
  try {
    if (fs::exists(dir + "/released")) return;
    std::string id = st.id.empty() ? dir.substr(dir.rfind('/') + 1) : st.id;
    // runsc keeps one state file per container under its root; none: nothing to delete.
    bool has_state = false;
    if (DIR* d = ::opendir((dir + "/runsc").c_str())) {
      while (struct dirent* e = ::readdir(d))
        if (e->d_name[0] != '.') has_state = true;
      ::closedir(d);
    }
    if (has_state) {
      GvisorLaunch l = read_gvisor_meta(dir);
      std::vector<std::string> a = runsc_base(l, dir, "");
      a.insert(a.end(), {"delete", "--force", id});
      run_quiet(a);
    }
    // Made by sbx under its own cgroup (create), or by runsc at the roots
    // (restore's absolute cgroupsPath); runsc leaves some it made behind.
    std::vector<std::string> cgs = runsc_cgroup_dirs(cgroup_name(id));
    for (const auto& c : sandbox_cgroup_dirs(id))
      if (std::find(cgs.begin(), cgs.end(), c) == cgs.end()) cgs.push_back(c);
    for (const auto& c : st.cgroups)
      if (std::find(cgs.begin(), cgs.end(), c) == cgs.end()) cgs.push_back(c);
    if (int e = destroy_cgroup_dirs(cgs)) log::warn("gvisor: remove the cgroups of sandbox " + id.substr(0, 12) + ": " + std::strerror(e));
    int fd = ::open((dir + "/released").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) ::close(fd);
  } catch (const std::exception& e) {
    log::warn(std::string("gvisor: release sandbox: ") + e.what());
  }
}

int exec_in_gvisor(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req) {
  return exec_in_gvisor_io(dir, st, spec, req, req.stdin_fd, req.stdout_fd, req.stderr_fd);
}

int exec_in_gvisor_io(const std::string& dir, const SandboxState& st, const SandboxSpec& spec, const ExecRequest& req,
                      int in_fd, int out_fd, int err_fd) {
  if (req.args.empty()) throw Error("sbx exec: give a COMMAND");
  if (!state_alive(st) || fs::exists(dir + "/end"))
    throw Error(ErrorKind::Conflict,
                "sandbox " + st.id.substr(0, 12) + " is not running; see 'sbx ps -a'", 0, kExitSbxFailed);
  GvisorLaunch l = read_gvisor_meta(dir);
  // Debian 12's runsc (20221219) does not give `exec --process` a pty of its
  // own through --console-socket reliably: the command's terminal is runsc
  // exec's own stdio, so without a terminal there its output is lost (status
  // 1); bookworm-backports' 20240729 still does in about half the runs.
  // Refuse rather than lose output, as docker refuses -it without a TTY,
  // unless the runsc is known to be fixed (exec_tty: runtime/gvisor/runsc_features.h).
  if (req.tty && (::isatty(0) == 0 || ::isatty(1) == 0) && !runsc_features(l.runsc).exec_tty)
    throw Error("sbx exec -t on a gVisor sandbox needs a terminal on stdin and stdout with " + l.runsc + " (" +
                    runsc_features(l.runsc).version +
                    ": it loses the command's output otherwise); run it from a terminal, or drop -t",
                0, kExitSbxFailed);
  touch_activity(dir.c_str());

  // The process exactly as native exec computes it (runtime/native/exec.cpp).
  SandboxSpec s = spec;
  Process& p = s.process;
  const std::string who = !req.user.empty() ? req.user : p.user;
  // The image's /etc/passwd, as the monitor's mount namespace sees the rootfs.
  ResolvedUser user = resolve_user(who, "/proc/" + std::to_string(st.pid) + "/root" + dir + "/bundle/rootfs");
  p.uid = user.uid;
  p.gid = user.gid;
  p.additional_gids = user.groups;
  if (!req.cwd.empty()) p.cwd = req.cwd;
  for (const auto& e : req.env) set_env(p.env, e);
  bool has_home = std::any_of(p.env.begin(), p.env.end(), [](const std::string& e) { return e.rfind("HOME=", 0) == 0; });
  if (!has_home || !req.user.empty()) set_env(p.env, "HOME=" + user.home);
  p.args = req.args;
  p.terminal = req.tty;
  if (req.tty) set_env(p.env, "TERM=xterm");  // as native exec -t
  apply_pids_limit_as_nproc(s);
  // Unique per call, not just per process: a server runs many execs at once.
  static std::atomic<uint64_t> exec_seq{0};
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(exec_seq.fetch_add(1));
  const std::string proc_file = dir + "/.exec-" + tag + ".json";
  const std::string ipid_file = dir + "/.exec-" + tag + ".pid";
  const std::string log_file = dir + "/.exec-" + tag + ".log";
  {
    oci::RuntimeConfigOptions ro;
    ro.rootfs_path = dir + "/bundle/rootfs";
    auto cfg = json::parse(oci::to_runtime_config(s, ro));
    fs::write_file_atomic(proc_file, cfg["process"].dump(), 0600);
  }
  auto cleanup = [&] {
    ::unlink(proc_file.c_str());
    ::unlink(ipid_file.c_str());
    ::unlink(log_file.c_str());
  };
  std::vector<std::string> argv = runsc_base(l, dir, log_file);
  argv.insert(argv.end(), {"exec", "--process", proc_file, "--internal-pid-file", ipid_file});
  // -t: runsc makes the pty in the sandbox and sends its master over a console
  // socket (in the run root: an AF_UNIX path must stay under 108 bytes).
  ConsoleSocket console;
  if (req.tty) {
    console = ConsoleSocket(dir.substr(0, dir.rfind('/')) + "/.exec-" + tag + ".sock");
    argv.insert(argv.end(), {"--console-socket", console.path()});
  }
  argv.push_back(st.id);

  FileOutput file_out(req.tty ? -1 : (out_fd >= 0 ? out_fd : 1)), file_err(req.tty ? -1 : (err_fd >= 0 ? err_fd : 2));
  sigset_t mask, old;
  sigemptyset(&mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCHLD}) sigaddset(&mask, sig);
  // Without forwarding (a server's thread: its signals are its own) the
  // mask and pending signals are left alone; the child starts unblocked.
  if (req.forward_signals) ::sigprocmask(SIG_BLOCK, &mask, &old);
  else sigemptyset(&old);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (req.forward_signals) ::sigprocmask(SIG_SETMASK, &old, nullptr);
    cleanup();
    throw_errno("fork runsc exec", e);
  }
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Without -t: out of the terminal's foreground process group, so that a
    // ^C reaches the command (sbx forwards it, runsc kill --pid) instead of
    // killing runsc exec and leaving the command running. With -t the user's
    // terminal is raw (^C travels through the pty) and runsc exec, which
    // sets that terminal up, must stay in the foreground (else SIGTTOU).
    if (!req.tty) ::setpgid(0, 0);
    if (in_fd >= 0) {
      ::dup2(in_fd, 0);
    } else if (!req.interactive && !req.tty) {  // (-t: the pty is the process's stdio)
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
    }
    if (out_fd >= 0) ::dup2(out_fd, 1);
    if (err_fd >= 0) ::dup2(err_fd, 2);
    if (file_out.write_end >= 0) ::dup2(file_out.write_end, 1);
    if (file_err.write_end >= 0) ::dup2(file_err.write_end, 2);
    exec_argv(argv);
  }
  file_out.parent_side();
  file_err.parent_side();
  crash_point("exec-joined");  // (test-only) runsc exec dies with us: PR_SET_PDEATHSIG
  int sfd = req.forward_signals ? ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK) : -1;
  // runsc exec's end wakes the loop through its pidfd, not SIGCHLD: in a
  // multi-threaded caller another thread's signalfd may take the SIGCHLD.
  Fd exit_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (req.on_pid) req.on_pid(pid);
  int master = -1;
  if (req.tty) {
    // A runsc that fails first ends (its pidfd turns readable) without one.
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    try {
      master = console.receive_master(pidfd, -1);
    } catch (const Error& e) {
      log::warn("gvisor: no terminal from runsc exec: " + std::string(e.what()));
    }
    if (pidfd >= 0) ::close(pidfd);
    console.close();
  }
  std::optional<PtyRelay> relay;
  if (master >= 0) relay.emplace(master, 0, 1);
  auto read_ipid = [&] {
    std::string ipid;
    try {
      ipid = fs::read_file(ipid_file);
    } catch (const Error&) {
    }
    while (!ipid.empty() && (ipid.back() == '\n' || ipid.back() == ' ')) ipid.pop_back();
    return ipid;
  };
  auto runsc_kill = [&](const std::string& ipid, int sig) {
    std::vector<std::string> a = runsc_base(l, dir, "");
    a.insert(a.end(), {"kill", "--pid", ipid, st.id, std::to_string(sig)});
    run_quiet(a);
  };
  auto kill_in_sandbox = [&](int sig) {
    // The process's pid inside the sandbox. runsc writes it only after the
    // process has started, so the process can already run (and print) while
    // the file is still empty: wait for it (up to 2 s, while runsc exec
    // lives) rather than signal runsc exec itself, which would die of a ^C
    // and leave the command running.
    std::string ipid;
    for (int i = 0; i < 100; ++i) {
      ipid = read_ipid();
      if (!ipid.empty() || sig == SIGKILL) break;
      siginfo_t ended{};  // runsc exec gone (not reaped here: the loop below does)
      if (::waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) != 0 || ended.si_pid != 0) break;
      ::usleep(20 * 1000);
    }
    if (ipid.empty()) {
      ::kill(pid, sig);
      return;
    }
    runsc_kill(ipid, sig);
  };
  const int64_t start = mono_ms();
  const int64_t touch_every = st.idle_timeout_ms > 0 ? std::clamp<int64_t>(st.idle_timeout_ms / 3, 50, 10000) : 0;
  int64_t last_touch = start;
  bool timed_out = false, cancelled = false;
  int status = 0;
  for (;;) {
    if (req.on_pid) {  // ended? (not reaped: the pid stays ours until on_pid(0) is told)
      siginfo_t ended{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) == 0 && ended.si_pid == pid)
        req.on_pid(0);
    }
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    int64_t now = mono_ms();
    int wait_ms = -1;
    if (req.timeout.count() > 0 && !timed_out) {
      int64_t left = start + req.timeout.count() - now;
      if (left <= 0) {
        timed_out = true;
        kill_in_sandbox(SIGKILL);
        continue;
      }
      wait_ms = static_cast<int>(left);
    }
    if (touch_every > 0) {
      if (now - last_touch >= touch_every) {
        touch_activity(dir.c_str());
        last_touch = now;
      }
      int left = static_cast<int>(last_touch + touch_every - now);
      wait_ms = wait_ms < 0 ? left : std::min(wait_ms, left);
    }
    struct pollfd pfd[8] = {{sfd, POLLIN, 0}, {file_out.read_end, POLLIN, 0}, {file_err.read_end, POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
    int n = relay ? relay->add_pollfds(pfd, 3, req.interactive) : 3;
    const int cancel_at = n;
    if (req.cancel_fd >= 0 && !cancelled) pfd[n++] = {req.cancel_fd, POLLIN, 0};
    if (exit_fd.fd >= 0) pfd[n++] = {exit_fd.fd, POLLIN, 0};
    if (exit_fd.fd < 0 && wait_ms < 0) wait_ms = 100;  // no pidfd: poll waitpid
    if (::poll(pfd, static_cast<nfds_t>(n), timed_out ? 100 : wait_ms) > 0) {
      if (cancel_at < n && pfd[cancel_at].fd == req.cancel_fd && pfd[cancel_at].revents) {  // the caller gave up on it (sbx cp: stalled, too big)
        cancelled = true;
        kill_in_sandbox(SIGKILL);
      }
      if (relay) relay->handle(pfd);
      if (pfd[1].revents) file_out.pump();
      if (pfd[2].revents) file_err.pump();
      struct signalfd_siginfo si;
      while (::read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;
        if (si.ssi_signo == SIGWINCH) {
          if (relay) relay->resize();
          continue;
        }
        kill_in_sandbox(static_cast<int>(si.ssi_signo));
      }
    }
  }
  // runsc exec forwards no signal: one that ended it from outside (a client
  // killing the exec's Pid, which is runsc exec's, as Docker's exec inspect
  // reports it) goes on to the command, or it would run on with no one
  // waiting for it. runsc exec is reaped: never kill(2) its pid now.
  if (WIFSIGNALED(status) && !timed_out && !cancelled) {
    if (std::string ipid = read_ipid(); !ipid.empty()) runsc_kill(ipid, WTERMSIG(status));
  }
  // The process ended: its last output to a file, from the pty.
  file_out.drain(500);
  file_err.drain(500);
  for (int i = 0; relay && relay->master_open() && i < 100; ++i) {
    struct pollfd pfd[2];
    int n = relay->add_pollfds(pfd, 0, false);
    if (n == 0 || ::poll(pfd, static_cast<nfds_t>(n), 20) <= 0) break;
    relay->handle(pfd);
  }
  relay.reset();
  if (master >= 0) ::close(master);
  // Signals still pending came after the process ended (seen: the SIGINT of
  // a ^C in `exec -it` reaches sbx's process group once runsc exec is gone):
  // drop them rather than die of them when the mask is restored.
  {
    struct signalfd_siginfo si;
    while (sfd >= 0 && ::read(sfd, &si, sizeof si) == sizeof si) {
    }
  }
  if (sfd >= 0) ::close(sfd);
  if (req.forward_signals) ::sigprocmask(SIG_SETMASK, &old, nullptr);
  touch_activity(dir.c_str());
  std::string log = read_tail(log_file, 64 * 1024);
  cleanup();
  if (timed_out) return kExitTimeout;
  int code = code_of(status);
  if (code == 128) {
    std::string errors = runsc_errors(log);
    if (!errors.empty()) {
      throw_if_command_error(errors, req.args[0]);
      // The sandbox itself ended under the command (its monitor records why).
      std::optional<EndRecord> end;
      for (int i = 0; i < 100 && !(end = read_end(dir)); ++i) ::usleep(10000);
      if (end && end->reason == "oom")
        throw Error("sandbox " + st.id.substr(0, 12) + " was killed while the command ran: out of memory (its --memory limit)",
                    0, kExitOom);
      if (end)
        throw Error("sandbox " + st.id.substr(0, 12) + " ended while the command ran (" + end->reason + ")", 0,
                    end->exit_code > 0 ? end->exit_code : kExitSbxFailed);
      if (!state_alive(st)) throw Error(ErrorKind::Conflict,
                  "sandbox " + st.id.substr(0, 12) + " is not running; see 'sbx ps -a'", 0, kExitSbxFailed);
      throw Error("runsc exec in sandbox " + st.id.substr(0, 12) + " failed:\n" + errors, 0, kExitSbxFailed);
    }
  }
  return code;
}

}  // namespace sbx::runtime
