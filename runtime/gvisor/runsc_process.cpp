#include "runtime/gvisor/runsc_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>
#include <optional>

#include "common/error.h"
#include "common/log.h"
#include "runtime/gvisor/gvisor_bundle.h"
#include "runtime/linux/forwarded_signals.h"
#include "runtime/linux/pty_relay.h"

namespace sbx::runtime {

bool runsc_left_state(const std::string& root) noexcept {
  DIR* d = ::opendir(root.c_str());
  if (!d) return errno != ENOENT;
  bool left = false;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      left = true;
      break;
    }
  }
  ::closedir(d);
  return left;
}

const sigset_t& runsc_wait_signals() {
  static const sigset_t set = [] {
    sigset_t s = forwarded_signals();
    sigaddset(&s, SIGCHLD);
    return s;
  }();
  return set;
}

RunscWaitResult wait_runsc(pid_t pid, const RunscWaitOptions& o) {
  using clock = std::chrono::steady_clock;
  RunscWaitResult out;
  auto kill_sandbox = [&](int sig) {
    try {
      gvisor::run_quiet({o.runsc, "--root", o.root, "kill", "--all", o.id, std::to_string(sig)});
    } catch (const Error& e) {  // fork failed: say so, the wait goes on
      log::warn("forwarding signal " + std::to_string(sig) + " to the gVisor sandbox: " + e.what());
    }
  };
  int sfd = ::signalfd(-1, &runsc_wait_signals(), SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) throw_errno("signalfd for the runsc wait");
  // kill_at: the sandbox's end after a forwarded INT/TERM; reap_by: runsc's own
  // end after the sandbox was killed (a runsc that does not return from a
  // killed sandbox is killed itself; cleanup then runs `runsc delete`).
  std::optional<clock::time_point> deadline, kill_at, reap_by;
  if (o.deadline != clock::time_point{}) deadline = o.deadline;
  // The sandbox is killed through runsc, and `runsc run` then ends by itself
  // with the container deleted: killing runsc run instead would leave the
  // container to `runsc delete`, which takes ~2 s to stop it.
  auto kill_all = [&] {
    kill_sandbox(SIGKILL);
    if (!reap_by) reap_by = clock::now() + std::chrono::seconds(3);
  };
  std::optional<PtyRelay> relay;  // restores the user's terminal on every exit path
  if (o.pty_master >= 0) relay.emplace(o.pty_master, o.stdin_fd, o.stdout_fd);
  int interrupts = 0;
  bool exited = false;
  try {
    // With a pty, the loop goes on after runsc's exit until the pty has given
    // its last output (EIO) or been quiet for 200 ms.
    while (!exited || (relay && relay->master_open())) {
      if (!exited) {
        pid_t r = ::waitpid(pid, &out.wait_status, WNOHANG);
        if (r == pid) {
          exited = true;
          continue;
        }
      }
      struct pollfd fds[3];
      int n = 0;
      fds[n++] = {sfd, POLLIN, 0};
      if (relay) n = relay->add_pollfds(fds, n, !exited);
      int timeout_ms = -1;
      auto now = clock::now();
      for (auto& t : {deadline, kill_at, reap_by})
        if (t && !exited) {
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*t - now).count() + 1;
          if (timeout_ms < 0 || left < timeout_ms) timeout_ms = static_cast<int>(std::max<int64_t>(left, 0));
        }
      if (exited) timeout_ms = 200;  // only draining the pty now
      int r = ::poll(fds, static_cast<nfds_t>(n), timeout_ms);
      if (r < 0 && errno != EINTR) throw_errno("poll while waiting for runsc");
      if (r == 0 && exited) break;
      now = clock::now();
      if (deadline && now >= *deadline && !exited) {
        out.timed_out = true;
        kill_all();
        deadline.reset();
      }
      if (kill_at && now >= *kill_at && !exited) {
        kill_all();
        kill_at.reset();
      }
      if (reap_by && now >= *reap_by && !exited) {
        ::kill(pid, SIGKILL);
        reap_by.reset();
      }
      if (r <= 0) continue;
      if (fds[0].revents & POLLIN) {
        struct signalfd_siginfo si;
        while (::read(sfd, &si, sizeof si) == sizeof si) {
          int sig = static_cast<int>(si.ssi_signo);
          if (sig == SIGCHLD) continue;  // waitpid at the top of the loop
          if (sig == SIGWINCH) {
            if (relay) relay->resize();
            continue;
          }
          if (exited) continue;
          out.forwarded_signal = sig;
          if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT) {
            // A second one: the user means it. After the first, a sandbox that
            // ignores it (gVisor's pid 1 is the command) is killed at kill_grace.
            if (++interrupts >= 2) {
              kill_all();
              continue;
            }
            kill_at = now + o.kill_grace;
          }
          kill_sandbox(sig);
        }
      }
      if (relay) relay->handle(fds);
    }
  } catch (...) {
    ::close(sfd);
    throw;
  }
  ::close(sfd);
  return out;
}

}  // namespace sbx::runtime
