/* sbx-pause: the first process of a "hold only" gVisor sandbox (`sbx create
 * --runtime gvisor IMAGE` without a COMMAND). runsc needs some process to run;
 * this one does nothing but wait, so that no sandbox depends on the image
 * having `sleep`. sbx bind-mounts it read-only into the sandbox
 * (runtime/gvisor/gvisor_lifecycle.cpp). Static, no libc beyond a few system calls.
 *
 * As pid 1 of the sandbox it reaps orphaned `sbx exec` processes, and a
 * terminating signal (TERM, INT, HUP, QUIT, USR1, USR2, ALRM) ends it with
 * status 128+N, as the native holder does for a sandbox without a first process. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
  for (;;) {
    siginfo_t si;
    int sig = sigwaitinfo(&all, &si);
    if (sig < 0) {
      if (errno == EINTR) continue;
      pause();
      continue;
    }
    switch (sig) {
      case SIGCHLD:
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        break;
      case SIGTERM: case SIGINT: case SIGHUP: case SIGQUIT: case SIGUSR1: case SIGUSR2: case SIGALRM:
        _exit(128 + sig);
      default:
        break;
    }
  }
}
