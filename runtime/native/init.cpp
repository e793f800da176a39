#include "runtime/native/init.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace sbx::runtime {

void run_init(pid_t workload) {
  sigset_t wait_set = forwarded_signals();
  sigaddset(&wait_set, SIGCHLD);
  for (;;) {
    // Reap first: the workload may have exited before we got here.
    for (;;) {
      int status;
      pid_t p = ::waitpid(-1, &status, WNOHANG);
      if (p <= 0) break;
      if (p == workload) {
        if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
        ::_exit(128 + WTERMSIG(status));
      }
    }
    siginfo_t info;
    int sig = ::sigwaitinfo(&wait_set, &info);
    if (sig < 0) {
      if (errno == EINTR) continue;
      ::_exit(125);
    }
    if (sig != SIGCHLD) ::kill(workload, sig);
  }
}

}  // namespace sbx::runtime
