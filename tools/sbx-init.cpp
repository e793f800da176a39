// sbx-init: pid 1 of a long-lived native sandbox (`sbx create`), the holder
// (runtime/native/holder.h). The sandbox's init builds the sandbox as a fork
// of sbx, forks the first process (which waits at a gate), then execs this
// small static program, so that what stays resident per sandbox is this
// program's few pages, not a private copy of sbx's.
//
//   sbx-init --state-fd=N [--workload=PID] [--log-fd=N] [--err-fd=N]
//            [--timeout-ms=N] [--idle-timeout-ms=N]
//            [--gate-fd=N] [--sync-fd=N] [--commit-fd=N]
//
// --gate-fd: the write end of the first process's gate pipe: one byte lets
//   it go on to its execve; written only after this process is non-dumpable.
// --sync-fd: sbx's setup channel: wait for its 'G' (sbx has recorded the
//   sandbox), then close it.
// --commit-fd: the commit socket: wait for its 'C' (sbx recorded the sandbox
//   as running), then stop dying with sbx (PR_SET_PDEATHSIG) and close it;
//   EOF instead means sbx died before that, and the sandbox ends.
// Every fd but the state dir and the log pipes is closed before the loop.
// Exits 125 on bad arguments. Built static, without exceptions.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/native/holder.h"

namespace {

constexpr int kExitFailed = 125;

bool parse(const char* arg, const char* name, long long& out) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(arg + n + 1, &end, 10);
  if (errno || end == arg + n + 1 || *end) {
    static const char msg[] = "sbx-init: bad number in an argument\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(kExitFailed);
  }
  return true;
}

// One byte from `fd`; false on EOF or error.
bool recv_byte(int fd, char want) {
  char got = 0;
  ssize_t n;
  do {
    n = ::read(fd, &got, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1 && got == want;
}

}  // namespace

int main(int argc, char** argv) {
  // First: nothing of the sandbox may read this process's memory or fds
  // (/proc/1/{fd,mem,environ,maps,exe}). execve made it dumpable again; no
  // sandbox process exists yet (the first one waits at the gate).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

  sbx::runtime::HolderConfig cfg;
  long long gate = -1, sync = -1, commit = -1;
  for (int i = 1; i < argc; ++i) {
    long long v = 0;
    if (parse(argv[i], "--state-fd", v)) cfg.state_dirfd = static_cast<int>(v);
    else if (parse(argv[i], "--workload", v)) cfg.workload = static_cast<pid_t>(v);
    else if (parse(argv[i], "--log-fd", v)) cfg.log_fd = static_cast<int>(v);
    else if (parse(argv[i], "--err-fd", v)) cfg.err_fd = static_cast<int>(v);
    else if (parse(argv[i], "--timeout-ms", v)) cfg.timeout_ms = v;
    else if (parse(argv[i], "--idle-timeout-ms", v)) cfg.idle_timeout_ms = v;
    else if (parse(argv[i], "--gate-fd", v)) gate = v;
    else if (parse(argv[i], "--sync-fd", v)) sync = v;
    else if (parse(argv[i], "--commit-fd", v)) commit = v;
    else {
      static const char msg[] = "sbx-init: unknown argument (this program is started by sbx)\n";
      (void)!::write(2, msg, sizeof msg - 1);
      ::_exit(kExitFailed);
    }
  }
  if (cfg.state_dirfd < 0 || ::fcntl(cfg.state_dirfd, F_GETFD) < 0) {
    static const char msg[] = "sbx-init: --state-fd must name an open directory fd\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(kExitFailed);
  }
  // Whatever this process keeps stays out of anything it forks or execs.
  for (long long fd : {static_cast<long long>(cfg.state_dirfd), static_cast<long long>(cfg.log_fd),
                       static_cast<long long>(cfg.err_fd), sync, commit})
    if (fd >= 0) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);

  // Let the first process go on to its execve.
  if (gate >= 0) {
    (void)!::write(static_cast<int>(gate), "g", 1);
    ::close(static_cast<int>(gate));
  }
  // Outlive sbx only once sbx has recorded us in state.json ('G'), then
  // once it has recorded the sandbox as running ('C').
  if (sync >= 0) {
    if (!recv_byte(static_cast<int>(sync), 'G')) ::_exit(kExitFailed);
    // EOF on the setup channel: sbx learns that the workload was exec'd.
    ::close(static_cast<int>(sync));
  }
  if (commit >= 0) {
    if (!recv_byte(static_cast<int>(commit), 'C')) ::_exit(kExitFailed);
    ::prctl(PR_SET_PDEATHSIG, 0);
    ::close(static_cast<int>(commit));  // sbx waits for this EOF before it exits
  }
  // A session of its own: nothing of the caller's terminal or process group
  // reaches the sandbox, and CRIU dumps no session led outside the sandbox.
  ::setsid();
  // Let go of sbx's stdio (a `$(sbx create …)` must see EOF).
  if (int null = ::open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    if (null > 2) ::close(null);
  }
  sbx::runtime::run_holder(cfg);
}
