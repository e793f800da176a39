// runtime/linux/clone_child.h: a sandbox's init cloned from a process with
// other threads gets a glibc it can use (a raw clone3 from such a process
// hangs in glibc's set*id wrappers, which wait for threads that are not
// there), and is the caller's own child either way.
#include <doctest.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/error.h"
#include "runtime/linux/clone_child.h"

using namespace sbx;
using namespace sbx::runtime;

namespace {

/// A thread that waits until the object goes: the process has two threads meanwhile.
struct OtherThread {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread t{[this] {
    std::unique_lock l(mu);
    cv.wait(l, [this] { return done; });
  }};
  ~OtherThread() {
    {
      std::lock_guard l(mu);
      done = true;
    }
    cv.notify_all();
    t.join();
  }
};

/// A plain clone3 (no namespaces: no root needed) as runtime/linux/namespaces.h's.
pid_t plain_clone(uint64_t extra, int* pidfd) {
  struct clone_args a;
  std::memset(&a, 0, sizeof a);
  int fd = -1;
  a.flags = CLONE_PIDFD | extra;
  a.pidfd = reinterpret_cast<uint64_t>(&fd);
  a.exit_signal = (extra & CLONE_PARENT) ? 0 : SIGCHLD;
  long pid = ::syscall(SYS_clone3, &a, sizeof a);
  if (pid < 0) throw_errno("clone3");
  if (pid > 0) *pidfd = fd;
  return static_cast<pid_t>(pid);
}

/// Starts a child that uses glibc (malloc, setgid: a broadcast to every
/// thread glibc knows of), reports its parent and whether it has an fd it
/// was not given, and exits 7; checks that it is our child, that its pidfd
/// works, that it ended within 10 s and (from a helper) kept only its fds.
void check_child(bool helper) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // another thread's, say
  REQUIRE(other >= 0);
  int pidfd = -1;
  pid_t pid = clone_from_single_thread(plain_clone,
                                       [&] {
                                         std::string s(1 << 20, 'x');  // malloc
                                         if (::setgid(::getgid()) < 0) ::_exit(1);
                                         int seen[2] = {::getppid(), ::fcntl(other, F_GETFD) >= 0};
                                         (void)!::write(p[1], seen, sizeof seen);
                                         ::_exit(s.size() == (1 << 20) ? 7 : 2);
                                       },
                                       &pidfd, {p[1]});
  ::close(p[1]);
  ::close(other);
  REQUIRE(pid > 0);
  REQUIRE(pidfd >= 0);
  struct pollfd pf {pidfd, POLLIN, 0};
  int ready = ::poll(&pf, 1, 10000);
  if (ready != 1) ::kill(pid, SIGKILL);
  CHECK_MESSAGE(ready == 1, "the child did not end within 10 s (a glibc lock it inherited?)");
  int seen[2] = {0, 0};
  CHECK(::read(p[0], seen, sizeof seen) == sizeof seen);
  CHECK(seen[0] == ::getpid());
  CHECK(seen[1] == (helper ? 0 : 1));  // the helper closes what is not kept
  int status = 0;
  CHECK(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
  ::close(pidfd);
  ::close(p[0]);
}

/// A joined thread leaves the kernel's thread group a moment after join()
/// returns: true once the process is down to one thread (within 1 s).
bool alone_soon() {
  for (int i = 0; i < 100; ++i) {
    if (!other_threads_exist()) return true;
    ::usleep(10000);
  }
  return false;
}

}  // namespace

TEST_CASE("other_threads_exist sees a second thread and its end") {
  {
    OtherThread t;
    CHECK(other_threads_exist());
  }
  CHECK(alone_soon());
}

TEST_CASE("clone_from_single_thread: the child of a multithreaded caller can use glibc and is its child") {
  OtherThread t;
  REQUIRE(other_threads_exist());
  for (int i = 0; i < 3; ++i) check_child(true);
}

TEST_CASE("clone_from_single_thread: a single-threaded caller clones directly") {
  REQUIRE(alone_soon());
  check_child(false);
}

TEST_CASE("clone_from_single_thread passes the clone's error on, with or without the helper") {
  auto failing = [](uint64_t, int*) -> pid_t { throw Error("clone3 into new namespaces: EPERM", EPERM); };
  auto never = [] { ::_exit(3); };
  int fd = -1;
  for (int threads = 0; threads < 2; ++threads) {
    std::optional<OtherThread> t;
    if (threads) t.emplace();
    try {
      clone_from_single_thread(failing, never, &fd);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "clone3 into new namespaces: EPERM");
      CHECK(e.err() == EPERM);
    }
    CHECK(fd == -1);
  }
}
