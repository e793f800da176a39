#include "ocirt/hooks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/error.h"

namespace sbx::ocirt {

namespace {

void run_one(const spec::Hook& h, const std::string& where, const std::string& state) {
  int in[2];
  if (::pipe2(in, O_CLOEXEC) < 0) throw_errno(where + ": pipe");
  std::vector<char*> argv, envp;
  std::vector<std::string> args = h.args.empty() ? std::vector<std::string>{h.path} : h.args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = h.env;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(in[0]);
    ::close(in[1]);
    throw_errno(where + ": fork", e);
  }
  if (pid == 0) {
    // A clean signal mask, as runc's hooks get (the caller may hold its
    // forwarded signals blocked: ForwardedSignalsBlocked).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(in[0], 0);
    ::execve(h.path.c_str(), argv.data(), envp.data());
    std::string msg = where + ": exec " + h.path + ": " + std::strerror(errno) + "\n";
    ssize_t n = ::write(2, msg.data(), msg.size());
    (void)n;
    ::_exit(127);
  }
  ::close(in[0]);
  // The state is small (well under a pipe buffer); a hook that does not read
  // stdin must not block us.
  // (restored after: a disposition of SIG_IGN would outlive execve in the
  // container's init, which runs hooks too.)
  struct sigaction ign {}, old {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &old);
  ssize_t n = ::write(in[1], state.data(), state.size());
  (void)n;
  ::close(in[1]);
  ::sigaction(SIGPIPE, &old, nullptr);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  int timeout_ms = h.timeout_s ? *h.timeout_s * 1000 : -1;
  bool timed_out = false;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int rc;
    do rc = ::poll(&p, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
    }
    ::close(pidfd);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) throw Error(where + " " + h.path + ": timed out after " + std::to_string(*h.timeout_s) + " s (killed)");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return;
  if (WIFEXITED(st)) throw Error(where + " " + h.path + ": exited with status " + std::to_string(WEXITSTATUS(st)));
  throw Error(where + " " + h.path + ": killed by signal " + std::to_string(WTERMSIG(st)));
}

}  // namespace

void run_hooks(const std::vector<spec::Hook>& hooks, const std::string& stage, const std::string& state_json) {
  for (size_t i = 0; i < hooks.size(); ++i)
    run_one(hooks[i], "hooks." + stage + "[" + std::to_string(i) + "]", state_json);
}

}  // namespace sbx::ocirt
