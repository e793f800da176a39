#include "runtime/linux/clone_child.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "common/error.h"
#include "common/fd.h"
#include "runtime/linux/self_exec.h"

namespace sbx::runtime {

namespace {

/// The helper's answer: the new pid, or the clone's failure.
struct Answer {
  pid_t pid = -1;
  int err = 0;
  char msg[512] = {};
};

}  // namespace

bool other_threads_exist() noexcept {
  if (__libc_single_threaded) return false;
  // Made a thread once: are any still there? (If none is, none can appear
  // before our clone: only this thread could make one.)
  int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buf[4096];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return true;
  buf[n] = 0;
  const char* t = std::strstr(buf, "\nThreads:");
  return !t || std::atoi(t + 9) != 1;
}

namespace {

/// The parent's side of a helper: reads its answer, reaps it, and opens the
/// new process's pidfd into *pidfd. Throws sbx::Error.
pid_t take_answer(pid_t helper, Fd answer_r, int* pidfd) {
  Answer a;
  ssize_t got;
  do {
    got = ::read(answer_r.fd, &a, sizeof a);
  } while (got < 0 && errno == EINTR);
  int status = 0;
  while (::waitpid(helper, &status, 0) < 0 && errno == EINTR) {
  }
  if (got != static_cast<ssize_t>(sizeof a))
    throw Error("the helper process that starts the sandbox ended without an answer (wait status " +
                std::to_string(status) + ")");
  if (a.pid <= 0) throw Error(a.msg, a.err);
  // Our child (CLONE_PARENT), not reaped yet: its pid cannot have been reused.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, a.pid, 0));
  if (fd < 0) {
    int e = errno;
    ::kill(a.pid, SIGKILL);
    while (::waitpid(a.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw_errno("pidfd_open the sandbox's init " + std::to_string(a.pid), e);
  }
  *pidfd = fd;
  return a.pid;
}

}  // namespace

[[noreturn]] void answer_clone(int answer_fd, const CloneFn& clone, const std::function<void()>& child) noexcept {
  Answer a;
  try {
    int fd = -1;
    a.pid = clone(CLONE_PARENT, &fd);
    if (a.pid == 0) {
      ::close(answer_fd);
      child();
      ::_exit(kExitSbxFailed);
    }
  } catch (const Error& e) {
    a.pid = -1;
    a.err = e.err();
    std::strncpy(a.msg, e.what(), sizeof a.msg - 1);
  } catch (const std::exception& e) {
    a.pid = -1;
    std::strncpy(a.msg, e.what(), sizeof a.msg - 1);
  }
  (void)!::write(answer_fd, &a, sizeof a);  // (< PIPE_BUF: one atomic write)
  ::_exit(0);
}

pid_t clone_from_single_thread(const CloneFn& clone, const std::function<void()>& child, int* pidfd,
                               std::vector<int> keep) {
  if (!other_threads_exist()) {
    pid_t pid = clone(0, pidfd);
    if (pid == 0) {
      child();
      ::_exit(kExitSbxFailed);
    }
    return pid;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("create a pipe to start the sandbox from a single-threaded helper");
  Fd answer_r(p[0]), answer_w(p[1]);
  // glibc's fork(): the helper has one thread and glibc's locks reset.
  pid_t helper = ::fork();
  if (helper < 0) throw_errno("fork the helper that starts the sandbox");
  if (helper == 0) {
    keep.push_back(answer_w.fd);
    close_fds_except(3, std::move(keep));
    answer_clone(answer_w.fd, clone, child);
  }
  answer_w.reset();
  return take_answer(helper, std::move(answer_r), pidfd);
}

pid_t clone_from_fresh_helper(const char* entry, const std::string& payload, int* pidfd, std::vector<int> keep) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) throw_errno("create a pipe to start the sandbox from a fresh helper");
  Fd answer_r(p[0]), answer_w(p[1]);
  Fd request(helper_payload(payload));
  std::string request_arg = std::to_string(request.fd), answer_arg = std::to_string(answer_w.fd);
  char* const argv[] = {const_cast<char*>("sbx"), const_cast<char*>(kHelperArg), const_cast<char*>(entry),
                        request_arg.data(), answer_arg.data(), nullptr};
  keep.push_back(answer_w.fd);
  keep.push_back(request.fd);
  int exec_errno = 0;
  pid_t helper = spawn_fresh_helper(argv, keep.data(), keep.size(), &exec_errno);
  if (helper < 0) throw_errno("start sbx's helper that starts the sandbox (execveat)", exec_errno);
  answer_w.reset();
  request.reset();
  return take_answer(helper, std::move(answer_r), pidfd);
}

}  // namespace sbx::runtime
