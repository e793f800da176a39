// runtime/linux/console_socket.h with a real peer: a forked process that opens a
// real pty and sends its master over the socket as an OCI runtime does
// (runsc itself is exercised by tests/integration/test_run_tty.sh).
#include <doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "runtime/linux/console_socket.h"
#include "test_util.h"

using namespace sbx;
using sbx::runtime::ConsoleSocket;

using sbx::test::TempDir;

namespace {

/// The runtime's side: connect to `path`, send `fd` (if >= 0) with a tag.
void send_master(const std::string& path, int fd) {
  int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a {};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path.c_str());
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) ::_exit(2);
  char tag[] = "/dev/pts/x";
  struct iovec iov {tag, sizeof tag};
  alignas(struct cmsghdr) char buf[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr m {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    m.msg_control = buf;
    m.msg_controllen = sizeof buf;
    struct cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (::sendmsg(s, &m, 0) < 0) ::_exit(3);
  ::close(s);
}

}  // namespace

TEST_CASE("console socket: receives the pty master a peer sends, and it is a working pty") {
  TempDir d;
  ConsoleSocket cs(d.path + "/console.sock");
  CHECK(std::filesystem::is_socket(cs.path()));
  int slave_name_pipe[2];
  REQUIRE(::pipe(slave_name_pipe) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int m = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || ::grantpt(m) < 0 || ::unlockpt(m) < 0) ::_exit(1);
    const char* name = ::ptsname(m);
    (void)!::write(slave_name_pipe[1], name, std::strlen(name));
    ::close(slave_name_pipe[1]);
    send_master(cs.path(), m);
    ::_exit(0);
  }
  ::close(slave_name_pipe[1]);
  int master = cs.receive_master(-1, 5000);
  REQUIRE(master >= 0);
  CHECK((::fcntl(master, F_GETFD) & FD_CLOEXEC) != 0);
  char name[128] = {};
  REQUIRE(::read(slave_name_pipe[0], name, sizeof name - 1) > 0);
  ::close(slave_name_pipe[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  // The received fd is the same pty: what the master writes, the slave reads.
  int slave = ::open(name, O_RDWR | O_NOCTTY);
  REQUIRE(slave >= 0);
  REQUIRE(::write(master, "hi\n", 3) == 3);
  char buf[16] = {};
  CHECK(::read(slave, buf, sizeof buf) == 3);
  CHECK(std::string(buf, 2) == "hi");
  ::close(slave);
  ::close(master);
  cs.close();
  CHECK(!std::filesystem::exists(d.path + "/console.sock"));
}

TEST_CASE("console socket: a runtime that ends without sending gives -1, not a hang") {
  TempDir d;
  ConsoleSocket cs(d.path + "/c.sock");
  int p[2];
  REQUIRE(::pipe(p) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    ::usleep(50000);
    ::_exit(0);  // closes p[1]: the abort fd hangs up
  }
  ::close(p[1]);
  CHECK(cs.receive_master(p[0], 5000) == -1);
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);

  // A peer that connects and hangs up without a descriptor: still waiting,
  // then the timeout.
  pid = ::fork();
  if (pid == 0) {
    int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a {};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, cs.path().c_str());
    ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::_exit(0);
  }
  CHECK(cs.receive_master(-1, 200) == -1);
  ::waitpid(pid, nullptr, 0);
}

TEST_CASE("console socket: a message without a descriptor is an error") {
  TempDir d;
  ConsoleSocket cs(d.path + "/c.sock");
  pid_t pid = ::fork();
  if (pid == 0) {
    send_master(cs.path(), -1);
    ::_exit(0);
  }
  CHECK_THROWS_AS(cs.receive_master(-1, 5000), Error);
  ::waitpid(pid, nullptr, 0);
}

TEST_CASE("console socket: a path too long for AF_UNIX is refused clearly") {
  std::string p = "/tmp/" + std::string(120, 'x');
  try {
    ConsoleSocket cs(p);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("shorter --run-root") != std::string::npos);
  }
}
