#include "runtime/native/holder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <utility>

namespace sbx::runtime {

namespace {

int64_t clock_ms(clockid_t c) {
  struct timespec ts;
  ::clock_gettime(c, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

struct Holder {
  explicit Holder(const HolderConfig& c) : cfg(c), log(c.state_dirfd) {}
  HolderConfig cfg;
  SandboxLog log;  // STATE_DIR/log, through the state dir fd
  int64_t started_mono = 0;
  int64_t started_real = 0;

  // Records the end (first record wins: link(2) fails on an existing file).
  void record(const char* reason, int code, int sig) {
    // Accounting of the workload (runtime/state.h EndRecord::usage): what
    // this init reaped. The host cgroups are not visible in here.
    struct rusage ru {};
    ::getrusage(RUSAGE_CHILDREN, &ru);
    const unsigned long long cpu_ms =
        (static_cast<unsigned long long>(ru.ru_utime.tv_sec) + static_cast<unsigned long long>(ru.ru_stime.tv_sec)) * 1000 +
        (static_cast<unsigned long long>(ru.ru_utime.tv_usec) + static_cast<unsigned long long>(ru.ru_stime.tv_usec)) / 1000;
    char text[192];
    int len = std::snprintf(text, sizeof text, "%s %d %d %lld %llu %llu %llu %llu\n", reason, code, sig,
                            static_cast<long long>(clock_ms(CLOCK_REALTIME)), cpu_ms,
                            static_cast<unsigned long long>(ru.ru_maxrss) * 1024,
                            static_cast<unsigned long long>(ru.ru_inblock) * 512,
                            static_cast<unsigned long long>(ru.ru_oublock) * 512);
    int fd = ::openat(cfg.state_dirfd, "end.holder", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return;
    bool ok = ::write(fd, text, static_cast<size_t>(len)) == len;
    ::fsync(fd);
    ::close(fd);
    if (ok) (void)!::linkat(cfg.state_dirfd, "end.holder", cfg.state_dirfd, "end", 0);
    ::unlinkat(cfg.state_dirfd, "end.holder", 0);
  }

  [[noreturn]] void finish(const char* reason, int code, int sig) {
    // Kill everything else first, so nothing writes after the record says "ended".
    ::kill(-1, SIGKILL);
    if (cfg.log_fd >= 0) log.pump_from(cfg.log_fd, kStdout);
    if (cfg.err_fd >= 0) log.pump_from(cfg.err_fd, kStderr);
    record(reason, code, sig);
    ::_exit(code);
  }

  // Next wake-up in ms (-1: none); ends the sandbox when a deadline passed.
  int next_timeout() {
    int64_t wait = -1;
    if (cfg.timeout_ms > 0) {
      int64_t left = started_mono + cfg.timeout_ms - clock_ms(CLOCK_MONOTONIC);
      if (left <= 0) finish("timeout", 124, SIGKILL);
      wait = left;
    }
    if (cfg.idle_timeout_ms > 0) {
      int64_t last = started_real;
      struct stat st;
      if (::fstatat(cfg.state_dirfd, "activity", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        int64_t m = int64_t(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
        if (m > last) last = m;
      }
      int64_t left = last + cfg.idle_timeout_ms - clock_ms(CLOCK_REALTIME);
      if (left <= 0) finish("idle", 124, SIGKILL);
      if (wait < 0 || left < wait) wait = left;
    }
    if (wait > 0x3fffffff) wait = 0x3fffffff;
    return static_cast<int>(wait);
  }
};

}  // namespace

void run_holder(const HolderConfig& cfg) {
  Holder h(cfg);
  h.started_mono = clock_ms(CLOCK_MONOTONIC);
  h.started_real = clock_ms(CLOCK_REALTIME);
  // Not dumpable: /proc/1/{fd,exe,mem,environ} stay closed to the sandbox.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Keep nothing of sbx's caller but the state dir and the log pipe: an
  // inherited pipe held for the sandbox's lifetime would hang whoever waits
  // for its EOF (a CI runner, a `$(sbx create …)`).
  {
    int keep[3] = {cfg.state_dirfd, cfg.log_fd, cfg.err_fd};
    std::sort(keep, keep + 3);
    unsigned from = 3;
    for (int k : keep) {
      if (k < 0 || static_cast<unsigned>(k) < from) continue;
      if (static_cast<unsigned>(k) > from) ::syscall(SYS_close_range, from, static_cast<unsigned>(k) - 1, 0U);
      from = static_cast<unsigned>(k) + 1;
    }
    ::syscall(SYS_close_range, from, ~0U, 0U);
  }
  ::fcntl(cfg.state_dirfd, F_SETFD, FD_CLOEXEC);

  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, nullptr);
  int sfd = ::signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  for (int fd : {cfg.log_fd, cfg.err_fd}) {
    if (fd < 0) continue;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  if (cfg.log_fd >= 0 || cfg.err_fd >= 0) h.log.open();
  int out_fd = cfg.log_fd, err_fd = cfg.err_fd;  // -1 once at EOF

  for (;;) {
    // Reap first: the first process may have ended before we got here.
    for (;;) {
      int status;
      pid_t p = ::waitpid(-1, &status, WNOHANG);
      if (p <= 0) break;
      if (p == cfg.workload) {
        if (WIFEXITED(status)) h.finish("exit", WEXITSTATUS(status), 0);
        h.finish("signal", 128 + WTERMSIG(status), WTERMSIG(status));
      }
    }
    int timeout = h.next_timeout();
    struct pollfd pfd[3] = {{sfd, POLLIN, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int r = ::poll(pfd, 3, timeout);
    if (r < 0 && errno != EINTR) ::_exit(125);
    if (out_fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) && !h.log.pump_from(out_fd, kStdout)) {
      ::close(out_fd);
      out_fd = -1;
    }
    if (err_fd >= 0 && (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)) && !h.log.pump_from(err_fd, kStderr)) {
      ::close(err_fd);
      err_fd = -1;
    }
    if (pfd[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (::read(sfd, &si, sizeof si) == sizeof si) {
        int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) continue;
        if (sig == holder_dumpable_signal()) {
          // Only sbx on the host may ask (ssi_pid: the sender's pid in this
          // namespace, 0 from an ancestor namespace); the answer is the owner
          // of /proc/1, which sbx reads.
          if (si.ssi_pid == 0 && si.ssi_code == SI_QUEUE)
            ::prctl(PR_SET_DUMPABLE, si.ssi_int == 1 ? 1 : 0, 0, 0, 0);
          continue;
        }
        if (cfg.workload > 0) {
          ::kill(cfg.workload, sig);
        } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT || sig == SIGUSR1 ||
                   sig == SIGUSR2 || sig == SIGALRM) {
          // Holding only: a terminating signal ends the sandbox.
          h.finish("signal", 128 + sig, sig);
        }
      }
    }
  }
}

}  // namespace sbx::runtime
